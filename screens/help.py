"""Help: keys, modes, and where things live."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown

from screens.modes import Mode

HELP_TEXT = """\
# argtui help

argtui is a debate trainer and judge console. Pick a mode on **Home** with the
arrow keys and **Enter**.

## Keys everywhere

| key | action |
|---|---|
| `?` / `F1` | this help |
| `Ctrl+P` | command palette: every action, mode and theme |
| `Esc` | back to the previous screen |
| `Ctrl+S` | save an SVG screenshot (path shown in a notification) |
| `Ctrl+Q` | quit (stops the embedded model server) |

## Backends

With no configuration argtui starts its **embedded** backend: llama.cpp's
`llama-server` with SmolLM2-135M-Instruct on a free loopback port. It is for
plumbing and demos; its judgments are near random. For real judging point
argtui at a vLLM server:

* on a GPU machine, `argtui serve --model meta-llama/Llama-3.3-70B-Instruct`
  starts vLLM with prefix caching and registers it as the default profile;
* for a server elsewhere, add a profile to the config file
  (`argtui config path` prints where it is), or set `ARGTUI_BASE_URL`,
  `ARGTUI_MODEL` and `ARGTUI_API_KEY_ENV` (the *name* of the variable that holds
  the key; keys are never stored).

`argtui doctor` checks every backend; `argtui config show` prints the profiles.
"""


class HelpScreen(Screen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="help-scroll"):  # focused, so the arrow keys and PgUp/PgDn scroll the text
            yield Markdown(HELP_TEXT, id="help")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Help"
        self.query_one("#help-scroll").focus()


MODE = Mode(
    name="help",
    title="Help",
    description="Keys, backends, and where config and data live.",
    make_screen=HelpScreen,
    order=90,
)
