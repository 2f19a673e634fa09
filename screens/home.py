"""Home: pick a mode, see which backend answers and how fast."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from engines.llm.status import BackendStatus
from screens.demo_notice import DemoNotice
from screens.modes import Mode, discover_modes
from screens.services import backend_name, services, shell

if TYPE_CHECKING:
    from store.students import Student


LOG_TAIL_LINES = 3  # of the server log a start failure quotes: one row each, under the reason


# The student coach's modes open for the current student (the picker first when there is none);
# their screens, and the store they read, are imported when one is opened.
def _progress(student_id: int) -> Screen:
    from screens.progress import ProgressScreen

    return ProgressScreen(student_id)


def _drills(student_id: int) -> Screen:
    from screens.drills import DrillsScreen

    return DrillsScreen(student_id)


def _for_student(make: Callable[[int], Screen]) -> Screen:
    from screens.students import for_current_student

    return for_current_student(make)


def _picker() -> Screen:
    from screens.students import StudentPickerScreen

    return StudentPickerScreen()


COACH_MODES = (
    Mode("progress", "Progress", "The current student's rating, InspireScore dimensions and Grice maxims "
         "over their debates, and their three weakest skills with an example turn each.",
         partial(_for_student, _progress), order=20),
    Mode("drills", "Drills", "Short exercises on the current student's weakest skills, scheduled by spaced "
         "repetition: what is due today, judged by the same judges as a debate.",
         partial(_for_student, _drills), order=21),
    Mode("student", "Student", "Switch student: pick who is debating, or add a new student.", _picker, order=22),
)


def home_modes() -> list[Mode]:
    """What Home lists and the palette opens: the screen modules' modes and the coach's."""
    return sorted([*discover_modes(), *COACH_MODES], key=lambda mode: (mode.order, mode.title))


def open_mode(node: DOMNode, mode: Mode) -> None:
    """Opens a mode's screen. The modes keep their work in the database: while it cannot be opened,
    the reason instead (Home says what to do)."""
    from store import StoreError

    try:
        services(node).db  # opened here, if no screen opened it yet
    except StoreError as exc:
        node.notify(f"{mode.title} needs the database, which cannot be opened: {exc}", title="Database",
                    severity="error", markup=False)
        return
    node.app.push_screen(mode.make_screen())


def describe_database_problem(problem: str) -> Text:
    """Why the database cannot be opened, and what to do about it."""
    return Text.assemble(
        ("Database\n", "bold"), ("cannot be opened\n", "bold red"), f"{problem}\n",
        ("What to do: ", "bold"),
        "fix it as said, or point argtui at another database (ARGTUI_DATABASE_URL, or ARGTUI_HOME for another "
        "data folder), then start argtui again. Until then the modes stay closed; Help (F1) and the glossary "
        "(F9) work.\n",
    )


def describe_student(student: Student | None, rating: float | None) -> Text:
    if student is None:
        return Text.assemble(("Student ", "bold"), ("none chosen: s picks or adds one", "dim"))
    return Text.assemble(("Student ", "bold"), (student.name, "bold"), f"  rating {rating:.0f}")


def describe_status(status: BackendStatus | None, backend_name: str) -> Text:
    """The backend's name, kind and state; when unreachable, the reason whole (for a server that
    did not start: how it ended, what to do and its log's path)."""
    text = Text()
    text.append("Backend\n", style="bold")
    if status is None:
        text.append(f"{backend_name}: starting…\n", style="yellow")
        return text
    text.append(f"{status.name}", style="bold")
    text.append(f" ({status.kind or 'kind not detected yet'}{', started by argtui' if status.managed else ''})\n")
    if status.reachable:
        text.append("ready", style="bold green")
        text.append(f"  model {status.model}\n")
        if status.latency_s is not None:
            text.append(f"round trip {status.latency_s * 1000:.0f} ms")
        if status.start_s is not None:
            text.append(f", started in {status.start_s:.2f} s")
        text.append("\n")
    else:
        text.append("unreachable\n", style="bold red")
        reason = (status.error or "").partition("\n")[0]
        text.append(f"{reason}\n")
    return text


def log_tail(status: BackendStatus | None) -> str:
    """The last lines of the server's log that an error quotes after its first line, the reason."""
    if status is None or status.reachable or not status.error:
        return ""
    return "\n".join(status.error.splitlines()[1:][-LOG_TAIL_LINES:])


class HomeScreen(Screen):
    BINDINGS = [
        Binding("enter", "open_mode", "Open", show=True),
        Binding("r", "refresh_backend", "Recheck backend"),
        Binding("s", "switch_student", "Student", tooltip="Pick who is debating, or add a new student"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.modes: list[Mode] = home_modes()

    def compose(self) -> ComposeResult:
        yield Header()
        yield DemoNotice()
        with Horizontal(id="body"):
            yield OptionList(
                *(Option(f"{mode.title}", id=mode.name) for mode in self.modes), id="modes"
            )
            with Vertical(id="side"):
                yield Static(id="database")
                yield Static(id="student")
                yield Static(id="backend")
                yield Static(id="backend-log")
                yield Static(id="mode-description")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Home"
        self.watch(self.app, "backend_status", self._show_status, init=True)
        self.watch(self.app, "student", self._show_student, init=True)
        self.watch(self.app, "database_problem", self._show_database_problem, init=True)
        self.query_one(OptionList).focus()
        if self.modes:
            self.query_one(OptionList).highlighted = 0

    def _show_status(self, status: BackendStatus | None) -> None:
        self.query_one("#backend", Static).update(
            describe_status(status, backend_name(self))
        )
        tail = log_tail(status)
        log = self.query_one("#backend-log", Static)
        log.update(Text(tail))
        log.display = bool(tail)

    def _show_database_problem(self, problem: str | None) -> None:
        panel = self.query_one("#database", Static)
        panel.update(describe_database_problem(problem) if problem else "")
        panel.display = problem is not None

    def on_screen_resume(self) -> None:
        self._show_student(self.app.student)  # a ballot may have moved the rating meanwhile

    def _show_student(self, student: Student | None) -> None:
        rating = None
        if student is not None:
            from engines.student.ratings import student_rating

            rating = student_rating(services(self).db, student.id)
        self.query_one("#student", Static).update(describe_student(student, rating))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        mode = self._mode(event.option.id)
        if mode:
            self.query_one("#mode-description", Static).update(mode.description)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        mode = self._mode(event.option.id)
        if mode:
            open_mode(self, mode)

    def action_open_mode(self) -> None:
        self.query_one(OptionList).action_select()

    def action_switch_student(self) -> None:
        open_mode(self, self._mode("student"))

    def action_refresh_backend(self) -> None:
        shell(self).action_check_backend()

    def _mode(self, name: str | None) -> Mode | None:
        return next((mode for mode in self.modes if mode.name == name), None)
