"""Help: the keys in force on the screen it was opened from, then where things live.

The key tables are generated from the bindings the screen has at that moment (its own, the
focused widget's, the app's), so they cannot drift from what the keys do.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult, active_app
from textual.binding import ActiveBinding, Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Markdown, Static

from screens.modes import Mode
from screens.services import services

BACKENDS_TEXT = """\
## Backends

With no configuration argtui starts its **embedded** backend: llama.cpp's
`llama-server` with SmolLM2-135M-Instruct on a free loopback port. It is for
plumbing and demos; its judgments are near random. For real judging point
argtui at a vLLM server:

* on a GPU machine, `argtui serve --model meta-llama/Llama-3.3-70B-Instruct`
  starts vLLM with prefix caching and registers it as the default profile;
* for a server elsewhere, add a profile to the config file (below), or set
  `ARGTUI_BASE_URL`, `ARGTUI_MODEL` and `ARGTUI_API_KEY_ENV` (the *name* of the
  variable that holds the key; keys are never stored).

`argtui doctor` checks every backend; `argtui config show` prints the profiles.
"""

COACH_TEXT = """\
## Student coach

Each student has a profile (a name; several per database). The current one
debates: **Ctrl+E** ends a debate with a **ballot** (who won and why, speaker
points on the 25–30 scale, the strongest and weakest turn, one fix with a
rewrite) and moves the student's **rating** against the opponent's level.
**Progress** (Home or the palette) plots the rating, the InspireScore
dimensions and the Grice maxims over the debates; **Drills** exercises the
weakest skills, scheduled by spaced repetition. **Student** on Home (key `s`)
switches student; `argtui --student NAME` starts with one.
"""


@dataclass(frozen=True)
class KeyHelp:
    """One action and every key bound to it, as the help lists it."""

    keys: str
    description: str
    enabled: bool  # False: bound, but not possible right now


def describe(binding: Binding) -> str:
    return binding.description or binding.action.removeprefix("app.").replace("_", " ")


def key_help(app, bindings: dict[str, ActiveBinding]) -> dict[str, list[KeyHelp]]:
    """The bindings in force grouped by where they come from: "screen", "widget", "app".
    Textual's system bindings (e.g. the Ctrl+C hint) are left out."""
    grouped: dict[tuple[str, str, str], list[str]] = {}
    enabled: dict[tuple[str, str, str], bool] = {}
    for active in bindings.values():
        binding = active.binding
        if binding.system:
            continue
        origin = "app" if active.node is app else "screen" if isinstance(active.node, Screen) else "widget"
        entry = (origin, binding.action, describe(binding))
        grouped.setdefault(entry, []).append(app.get_key_display(binding))
        enabled[entry] = enabled.get(entry, False) or active.enabled
    result: dict[str, list[KeyHelp]] = {"screen": [], "widget": [], "app": []}
    for entry, keys in grouped.items():
        origin, _, description = entry
        result[origin].append(KeyHelp(" / ".join(keys), description, enabled[entry]))
    return result


def keys_table(title: str, keys: list[KeyHelp]) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", show_edge=False, expand=True)
    table.add_column("key", no_wrap=True)
    table.add_column("action", ratio=1)
    for key in keys:
        table.add_row(Text(key.keys, style="bold"),
                      Text(key.description + ("" if key.enabled else "  (not now)"),
                           style="" if key.enabled else "dim"))
    return table


class HelpScreen(Screen):
    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("g", "app.glossary", "Glossary"),
    ]

    def __init__(self, origin: Screen | None = None):
        super().__init__()
        self.origin = origin if origin is not None else active_app.get().screen
        self.keys = key_help(self.origin.app, self.origin.active_bindings)

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="help-scroll"):  # focused, so the arrow keys and PgUp/PgDn scroll the text
            title = self.origin.sub_title or type(self.origin).__name__
            if self.keys["screen"]:
                yield Static(keys_table(f"Keys on {title}", self.keys["screen"]), id="screen-keys")
            if self.keys["widget"]:
                focused = self.origin.focused
                name = type(focused).__name__ if focused is not None else "the focused widget"
                yield Static(keys_table(f"Keys of the focused {name}", self.keys["widget"]), id="widget-keys")
            yield Static(keys_table("Keys everywhere", self.keys["app"]), id="app-keys")
            yield Static(Text("Ctrl+P opens the command palette: every action above, the modes, the glossary.",
                              style="italic"), id="palette-hint")
            yield Markdown(BACKENDS_TEXT, id="help")
            yield Markdown(COACH_TEXT, id="coach-help")
            yield Static(self._student(), id="current-student")
            yield Static(self._places(), id="places")

    def _student(self) -> Text:
        student = self.app.student  # type: ignore[attr-defined]  # the app's current student
        if student is None:
            return Text("No current student: Student on Home picks or adds one.", style="dim")
        return Text.assemble("Current student: ", (student.name, "bold"))

    def _places(self) -> Text:
        paths = services(self).config.paths
        text = Text("Where things live\n", style="bold")
        for name, path in (
            ("config file", paths.config_file),
            ("data (database, indexes, screenshots)", paths.data_dir),
            ("logs", paths.data_dir / "logs"),
        ):
            text.append(f"{name}: ", style="bold")
            text.append(f"{path}\n")
        text.append("ARGTUI_HOME=DIR puts both under DIR; `argtui config path` prints them.", style="dim")
        return text

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
