"""Home: pick a mode, see which backend answers and how fast."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from engines.llm.status import BackendStatus
from screens.demo_notice import DemoNotice
from screens.modes import Mode, discover_modes
from screens.services import backend_name, shell


LOG_TAIL_LINES = 3  # of the server log a start failure quotes: one row each, under the reason


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
    ]

    def __init__(self) -> None:
        super().__init__()
        self.modes: list[Mode] = discover_modes()

    def compose(self) -> ComposeResult:
        yield Header()
        yield DemoNotice()
        with Horizontal(id="body"):
            yield OptionList(
                *(Option(f"{mode.title}", id=mode.name) for mode in self.modes), id="modes"
            )
            with Vertical(id="side"):
                yield Static(id="backend")
                yield Static(id="backend-log")
                yield Static(id="mode-description")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Home"
        self.watch(self.app, "backend_status", self._show_status, init=True)
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

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        mode = self._mode(event.option.id)
        if mode:
            self.query_one("#mode-description", Static).update(mode.description)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        mode = self._mode(event.option.id)
        if mode:
            self.app.push_screen(mode.make_screen())

    def action_open_mode(self) -> None:
        self.query_one(OptionList).action_select()

    def action_refresh_backend(self) -> None:
        shell(self).action_check_backend()

    def _mode(self, name: str | None) -> Mode | None:
        return next((mode for mode in self.modes if mode.name == name), None)
