"""The Textual application: Home first, the embedded backend started in the background."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import rich.control
import textual.content
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.command import Provider
from textual.reactive import reactive
from textual.screen import Screen
from textual.strip import Strip

from argtui.runtime import Runtime
from engines.errors import ArgtuiError
from engines.output import write_text_file
from engines.terminal_text import CONTROL_PICTURES, VisibleControlsConsole, has_controls, visible, visible_segment
from screens.home import HomeScreen, home_modes, open_mode

if TYPE_CHECKING:
    from rich.console import Console

    from engines.llm.status import BackendStatus
    from store.students import Student


log = logging.getLogger("argtui.app")
_render_strip = Strip.render


def _render_visible_strip(strip: Strip, console: Console) -> str:
    if not has_controls(strip.text):
        return _render_strip(strip, console)
    # A picture takes a cell where its control took none: crop the line back to its laid-out width.
    return _render_strip(Strip(map(visible_segment, strip)).crop(0, strip.cell_length), console)


def show_control_characters() -> None:
    """Show the control characters in the text of every line Textual sends to the terminal.

    Textual drops only BEL, BS, VT, FF and CR, so an ESC in a critique, a model's reply or a
    server's message would reach the terminal as a sequence (a window title, a cleared screen,
    a clipboard write). Rich's Text and Textual's Content, which every widget's text becomes,
    drop those five through one table each: the other controls they are given their pictures
    there, one character for one, so that a line is laid out at the width it shows (a control
    measures no cell, its picture one). Every line of every update is then rendered by
    `Strip.render`, whatever widget drew it, which shows what reached a line some other way.
    """
    for table in (rich.control._CONTROL_STRIP_TRANSLATE, textual.content._CONTROL_STRIP_TRANSLATE):
        table.update({code: picture for code, picture in CONTROL_PICTURES.items() if code not in table})
    Strip.render = _render_visible_strip


# What Home does not show is imported when first used: the palette's entries, the
# help and glossary screens, and a debate opened from the command line.


def screen_commands() -> type[Provider]:
    from screens.palette import ScreenCommands

    return ScreenCommands


@runtime_checkable
class HoldsUnconfirmedWork(Protocol):
    """A screen with work not stored yet (the Rating screen's unconfirmed values): quitting asks first."""

    def unconfirmed_question(self, leaving: str) -> Screen[str | None] | None:
        """The dialog asking whether to `leaving` without it (answered "leave"), or None when there is none."""


class ArgtuiApp(App):
    TITLE = "argtui"
    CSS_PATH = "../screens/app.tcss"
    COMMANDS = App.COMMANDS | {screen_commands}
    BINDINGS = [
        Binding("question_mark,f1", "help", "Help"),
        Binding("f9", "glossary", "Glossary", show=False),
        Binding("ctrl+s", "screenshot", "Screenshot", show=False, priority=True),  # over dialogs and inputs
        Binding("ctrl+q", "quit", "Quit"),
    ]

    backend_status: reactive[BackendStatus | None] = reactive(None)
    student: reactive[Student | None] = reactive(None)  # whose debates, ballots, progress and drills
    database_problem: reactive[str | None] = reactive(None)  # why the database cannot be opened, if it cannot

    def __init__(
        self,
        runtime: Runtime | None = None,
        backend: str | None = None,
        debate: tuple[str, str, int | None] | None = None,
        student: str | None = None,
    ):
        super().__init__()
        show_control_characters()
        self.error_console = VisibleControlsConsole(markup=False, highlight=False, stderr=True)  # after exit
        self.services = runtime or Runtime()
        self.backend_name = self.services.config.profile(backend).name
        self.start_debate = debate  # (claim, side, level or None for the backend's): open the Debate screen on it
        self.start_student = student  # `--student NAME`: the current student from the start (added if new)

    def on_mount(self) -> None:
        self.push_screen(HomeScreen())
        # Home is drawn first: starting the backend and its HTTP client takes a few tenths of a second,
        # and the store is imported then.
        self.call_after_refresh(self.action_check_backend)
        self.call_after_refresh(self.run_worker, self._open_database(), name="database", group="database")

    async def _open_database(self) -> None:
        """The database, opened in a thread (a server that does not answer holds it for its
        connect_timeout, Home on screen meanwhile), then the student; when it cannot be opened,
        Home says why and what to do."""
        from store import StoreError

        try:
            await self.services.open_db()
        except StoreError as exc:
            self.database_problem = str(exc)
            return
        self._choose_student()

    def _choose_student(self) -> None:
        """The `--student` one; else, when the database has students, the picker is offered; then
        the debate the command line asked for opens, the student's."""
        from screens.students import StudentPickerScreen
        from store import StoreError
        from store.students import StudentRepository

        students = StudentRepository(self.services.db)
        if self.start_student is not None:
            try:
                student = students.get_or_add(self.start_student)
            except StoreError as exc:  # a blank name
                self.notify(str(exc), title="--student", severity="error", markup=False)
                student = None
            self._begin(student)
        elif students.list() and self.student is None and isinstance(self.screen, HomeScreen):
            self.push_screen(StudentPickerScreen(), self._begin)
        else:  # never on top of a screen the user went on to: `s` on Home picks a student then
            self._begin(None)

    def _begin(self, student: Student | None) -> None:
        if student is not None:
            self.student = student
        if self.start_debate:
            from engines.debate.levels import default_level
            from screens.debate import DebateScreen
            from store.debates import DebateRepository

            claim, side, level = self.start_debate
            if level is None:
                level = default_level(self.services.config.profile(self.backend_name))
            debate = DebateRepository(self.services.db).create(
                claim, side, backend=self.backend_name, level=level,
                student_id=self.student.id if self.student is not None else None,
            )
            self.push_screen(DebateScreen(debate.id))

    def action_check_backend(self) -> None:
        self.backend_status = None
        # An async worker runs on the app's thread, which outlives the server process
        # (its PDEATHSIG is tied to the thread that started it).
        self.run_worker(self._check_backend(), name="backend-status", exclusive=True, group="backend")

    async def _check_backend(self) -> None:
        self.backend_status = await self.services.status(self.backend_name)

    async def action_quit(self) -> None:
        for screen in reversed(self.screen_stack):
            dialog = screen.unconfirmed_question("Quit") if isinstance(screen, HoldsUnconfirmedWork) else None
            if dialog is not None:
                self.push_screen(dialog, lambda answer: self.exit() if answer == "leave" else None)
                return
        self.exit()

    def action_help(self) -> None:
        from screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_glossary(self) -> None:
        from screens.glossary import GlossaryScreen

        if not isinstance(self.screen, GlossaryScreen):
            self.push_screen(GlossaryScreen())

    def action_screenshot(self) -> None:
        folder = self.services.config.paths.data_dir / "screenshots"
        # A control character that reached a line raw is not allowed in XML: shown, as on the screen.
        svg = visible(self.export_screenshot())
        try:
            path = write_text_file(folder / f"argtui_{datetime.now():%Y-%m-%dT%H_%M_%S_%f}.svg", svg,
                                   make_parents=True)
        except ArgtuiError as exc:
            self.notify(str(exc), title="Screenshot not saved", severity="error", markup=False)
            return
        self.notify(f"saved {path}", title="Screenshot", markup=False)  # ARGTUI_HOME may hold brackets

    def get_system_commands(self, screen: Screen):
        yield from super().get_system_commands(screen)
        for mode in home_modes():
            yield SystemCommand(
                f"Open {mode.title}", mode.description,
                lambda mode=mode: open_mode(self, mode),
            )
        yield SystemCommand("Recheck backend", "Probe the active backend again", self.action_check_backend)
        yield SystemCommand("Save screenshot", "Save an SVG screenshot of this screen", self.action_screenshot)

    async def on_unmount(self) -> None:
        await self.services.aclose()

    def _handle_exception(self, error: Exception) -> None:
        """An error no screen handled ends the app: logs/argtui.log keeps its traceback (without the
        local variables Textual prints, which may hold a key) for a bug report."""
        log.error("the app stopped on an unhandled error", exc_info=error)
        super()._handle_exception(error)


def run_app(
    backend: str | None = None, debate: tuple[str, str, int | None] | None = None, student: str | None = None
) -> int:
    ArgtuiApp(backend=backend, debate=debate, student=student).run()
    return 0
