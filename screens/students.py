"""Student profiles: pick who is debating, or add a new student.

The picked student is the app's current one (`app.student`): debates are theirs, ballots move
their rating, Progress and Drills show their work.
"""

from __future__ import annotations

from typing import Callable, Protocol, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult, active_app
from textual.binding import Binding
from textual.containers import Vertical
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from engines.student.names import StudentNameError, student_name
from engines.student.ratings import student_rating
from screens.navigation import in_field
from screens.services import services
from store import StoreError
from store.students import Student, StudentRepository


class StudentShell(Protocol):
    """What the coach's screens use of the app: the current student."""

    student: Student | None


def student_shell(node: DOMNode) -> StudentShell:
    return cast(StudentShell, node.app)


def current_student(node: DOMNode) -> Student | None:
    return student_shell(node).student


def student_line(node: DOMNode, student: Student) -> Text:
    """A student's name with their rating and how many debates moved it."""
    db = services(node).db
    rated = len(StudentRepository(db).rating_events(student.id))
    debates = f"{rated} rated debate{'s' if rated != 1 else ''}" if rated else "no rated debate yet"
    return Text.assemble((student.name, "bold"), f"  rating {student_rating(db, student.id):.0f} · {debates}")


def for_current_student(make: Callable[[int], Screen]) -> Screen:
    """`make(id)` of the current student; with none, the picker, which opens it for the one picked."""
    student = current_student(active_app.get())
    return make(student.id) if student is not None else StudentPickerScreen(then=make)


class StudentPickerScreen(ModalScreen[Student | None]):
    """The database's students with their ratings, and a box to add one. Picking (or adding)
    makes the student current and dismisses with it; Esc dismisses with None."""

    BINDINGS = [
        Binding("n", "new_student", "New student"),
        Binding("escape", "leave_field", "Back to the list"),
        Binding("escape", "skip", "Skip"),
    ]

    def __init__(self, then: Callable[[int], Screen] | None = None):
        super().__init__()
        self.then = then  # the screen the picked student's id opens, if any
        self.students: list[Student] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static(Text("Who is debating?", style="bold"), id="picker-title")
            yield OptionList(id="students")
            yield Input(placeholder="a new student's name (Enter adds)", id="new-student")
            yield Static(id="picker-error")
            yield Static(id="picker-keys")

    def on_mount(self) -> None:
        current = current_student(self)
        self.students = StudentRepository(services(self).db).list()
        options = self.query_one("#students", OptionList)
        options.add_options([Option(student_line(self, s), id=str(s.id)) for s in self.students])
        options.display = bool(self.students)
        keys = "Enter picks · n adds a new student · Esc skips" if self.students else "Enter adds · Esc skips"
        self.query_one("#picker-keys", Static).update(Text(keys, style="dim"))
        if self.students:
            ids = [s.id for s in self.students]
            options.highlighted = ids.index(current.id) if current is not None and current.id in ids else 0
            options.focus()
        else:
            self.query_one("#new-student", Input).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "leave_field":  # back to the list, when there is one
            return in_field(self) and bool(self.students)
        if action == "skip":
            return not (in_field(self) and self.students)
        if action == "new_student":
            return not in_field(self)
        return True

    @on(OptionList.OptionSelected, "#students")
    def picked(self, event: OptionList.OptionSelected) -> None:
        self._choose(next(s for s in self.students if str(s.id) == event.option.id))

    @on(Input.Submitted, "#new-student")
    def added(self, event: Input.Submitted) -> None:
        try:
            student = StudentRepository(services(self).db).add(student_name(event.value))
        except (StudentNameError, StoreError) as exc:
            self.query_one("#picker-error", Static).update(Text(str(exc), style="red"))
            return
        self._choose(student)

    def _choose(self, student: Student) -> None:
        student_shell(self).student = student
        self.dismiss(student)
        if self.then is not None:
            self.app.push_screen(self.then(student.id))

    def action_new_student(self) -> None:
        self.query_one("#new-student", Input).focus()

    def action_leave_field(self) -> None:
        self.query_one("#students", OptionList).focus()

    def action_skip(self) -> None:
        self.dismiss(None)
