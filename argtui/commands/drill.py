"""`argtui drill [--student NAME] [--answer TEXT] [--list]`: practise a weak skill in the terminal.

New drills are planned first from the student's weakest skills over their debates; then the first
drill due is shown, the answer (--answer, else standard input) judged, and the next due date said."""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "drill", help="practise a weak skill: the first drill due, judged, then scheduled again",
        description="Drills come from the weakest skills of a student's debates and return on a spaced-repetition "
        "schedule: a failed drill comes back soon, a good answer pushes it further out.",
    )
    parser.add_argument("--student", metavar="NAME", help="the student (default: the only one stored)")
    parser.add_argument("--answer", metavar="TEXT", help="the answer to the drill (default: read standard input)")
    parser.add_argument("--list", action="store_true", help="list the student's drills and when each is due")
    parser.add_argument("--judge", metavar="PROFILE", help="backend profile of the judges (default: the default)")
    parser.set_defaults(handler=_drill)


def _drill(args) -> int:
    from argtui.commands import run_with_runtime

    return run_with_runtime(lambda runtime: _run(runtime, args))


def _student(db, name: str | None):
    from engines.errors import ArgtuiError
    from store.students import StudentRepository

    repository = StudentRepository(db)
    students = repository.list()
    names = ", ".join(student.name for student in students)
    if name is not None:
        found = repository.get(name)
        if found is None:
            raise ArgtuiError(f"no student named {name!r}" + (f"; the students are {names}" if names else ""))
        return found
    if len(students) == 1:
        return students[0]
    if not students:
        raise ArgtuiError("no students yet: debate as a student first (--student NAME), then drill")
    raise ArgtuiError(f"give --student NAME: one of {names}")


def when(moment) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


async def _run(runtime, args) -> int:
    from rich.text import Text

    from argtui.commands import output_console
    from argtui.progress import StepCounts, batch_progress_bar
    from engines.student.drills import (
        JUDGING_STEPS,
        SKILL_KINDS,
        answer_drill,
        due_drills,
        plan_drills,
        student_drills,
    )
    from engines.student.progress import student_progress

    student = _student(runtime.db, args.student)
    weak = student_progress(runtime.db, student.id).weakest
    needs_base = any(SKILL_KINDS.get(spot.dimension) == "rebut" for spot in weak)
    await plan_drills(runtime.db, student.id, weak, await runtime.retriever() if needs_base else None)
    console = output_console()
    if args.list:
        drills = student_drills(runtime.db, student.id)
        if not drills:
            console.print(Text(f"{student.name} has no drills yet: they come from the weak skills of debates"))
        for drill in drills:
            console.print(Text(f"{drill.id:>4}  due {when(drill.due)}  {drill.title} ({drill.skill_title})"))
        return 0
    due = due_drills(runtime.db, student.id)
    if not due:
        upcoming = student_drills(runtime.db, student.id)
        console.print(Text(f"no drill due for {student.name}" + (
            f"; the next is due {when(upcoming[0].due)}" if upcoming else
            ": drills come from the weak skills of debates")))
        return 0
    drill = due[0]
    console.print(Text.assemble((f"Drill {drill.id}: {drill.title}", "bold"), f" ({drill.skill_title})"))
    if drill.topic:
        console.print(Text(f"Topic: {drill.topic}"))
    console.print(Text(drill.material), Text(drill.prompt, style="italic"), sep="\n\n")
    answer = args.answer if args.answer is not None else _read_answer()
    client = await runtime.client(args.judge) if drill.needs_model else None
    counts = StepCounts(JUDGING_STEPS)
    with batch_progress_bar(f"Judging drill {drill.id}") as show:  # on stderr: a model's judgment takes a while

        def step(what: str) -> None:  # a step begins: the ones before it are done
            show(counts)
            counts.done += 1

        result = await answer_drill(runtime, client, drill, answer, on_progress=step)
        show(counts)
    score = "no score" if result.score is None else f"score {result.score:.2f}"
    console.print(Text.assemble(("\n" + result.grade_name, "bold"), f" ({score}): ", result.feedback))
    console.print(Text(f"next due {when(result.next_due)}"))
    return 0


def _read_answer() -> str:
    if sys.stdin.isatty():
        print("Your answer (end with Ctrl-D):", file=sys.stderr)
    return sys.stdin.read()
