"""`argtui students [--add NAME]`: the student profiles of the database, each with its rating
and debates; `--add NAME` adds a profile."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from argtui.commands import output_console, run_with_runtime
from argtui.runtime import Runtime
from engines.student.names import student_name
from engines.student.ratings import START_STUDENT, student_rating
from store.students import Student, StudentRepository


def register(subparsers) -> None:
    parser = subparsers.add_parser("students", help="student profiles with their ratings and debates")
    parser.add_argument("--add", metavar="NAME", help="add a student profile named NAME")
    parser.set_defaults(handler=_students)


async def _rows(runtime: Runtime) -> list[tuple[Student, float, int]]:
    students = StudentRepository(runtime.db)
    return [
        (student, student_rating(runtime.db, student.id), len(students.debates_of(student.id)))
        for student in students.list()
    ]


async def _add(runtime: Runtime, name: str) -> Student:
    return StudentRepository(runtime.db).add(student_name(name))


def _students(args) -> int:
    console = output_console()
    if args.add is not None:
        student = run_with_runtime(lambda runtime: _add(runtime, args.add))
        console.print(Text(f"added student {student.name} (rating {START_STUDENT:.0f})"))
        return 0
    rows = run_with_runtime(_rows)
    if not rows:
        console.print("No students yet: `argtui students --add NAME` adds one.")
        return 0
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for column in ("student", "rating", "debates"):
        table.add_column(column, justify="left" if column == "student" else "right")
    for student, rating, debates in rows:
        table.add_row(Text(student.name), f"{rating:.0f}", str(debates))
    console.print(table)
    return 0
