"""Components: a document with its argument components coloured by label, and why each got its label.

Documents come from the store (UKP essays evaluated with `argtui eval
components`, texts labelled with `argtui components`) or are typed here and
labelled live. Selecting a component shows the Manager's distribution, the
debate transcript and the Judge's reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, OptionList, Static
from textual.widgets.option_list import Option

from engines.components import LABELS, METHODS, ComponentResult, Span, segment
from engines.components.prompts import ROLE_NAMES
from engines.components.records import LabelledDocument, document_components, labelled_documents
from engines.errors import ArgtuiError
from engines.judging.task import default_options
from engines.tasks.components import TASK, label_text
from screens.demo_notice import DemoNotice
from screens.modes import Mode
from screens.services import services

LABEL_COLOURS = {"MajorClaim": "#8e3b9e", "Claim": "#2160b0", "Premise": "#7cc47f"}
LABEL_STYLES = {
    "MajorClaim": f"bold white on {LABEL_COLOURS['MajorClaim']}",
    "Claim": f"white on {LABEL_COLOURS['Claim']}",
    "Premise": f"black on {LABEL_COLOURS['Premise']}",
}
PENDING_STYLE = "underline"
INVALID_STYLE = "strike red"
SELECTED_STYLE = "reverse"
BAR_WIDTH = 20


@dataclass
class ShownDocument:
    """The document on screen: its text, its components and what is known about each."""

    title: str
    text: str
    spans: list[Span]
    results: dict[int, ComponentResult] = field(default_factory=dict)
    gold: dict[int, str] = field(default_factory=dict)


def document_content(shown: ShownDocument, selected: int | None) -> Content:
    """The text with each component coloured by its label; clicking one selects it."""
    content = Content(shown.text)
    for index, span in enumerate(shown.spans):
        result = shown.results.get(index)
        if result is None:
            style = PENDING_STYLE
        elif result.label is None:
            style = INVALID_STYLE
        else:
            style = LABEL_STYLES[result.label]
        if index == selected:
            style += f" {SELECTED_STYLE}"
        content = content.stylize(f"{style} @click=screen.select_component({index})", span.start, span.end)
    return content


def legend() -> Text:
    text = Text()
    for label, style in LABEL_STYLES.items():
        text.append(f" {label} ", style=style)
        text.append(" ")
    text.append(" invalid ", style=INVALID_STYLE)
    text.append(" ")
    text.append("pending", style=PENDING_STYLE)
    return text


def distribution_bars(distribution: dict[str, float]) -> Text:
    text = Text()
    for label in LABELS:
        share = distribution.get(label, 0.0)
        filled = round(share * BAR_WIDTH)
        text.append(f"{label:<11}")
        text.append("█" * filled, style=LABEL_COLOURS[label])
        text.append("·" * (BAR_WIDTH - filled), style="dim")
        text.append(f" {share:.2f}\n")
    return text


def component_detail(shown: ShownDocument, index: int) -> Text:
    """Everything behind one component's label."""
    span = shown.spans[index]
    result = shown.results.get(index)
    text = Text()
    text.append(f"Component {index + 1} of {len(shown.spans)}\n", style="bold")
    text.append(f"“{span.text}”\n\n", style="italic")
    if index in shown.gold:
        text.append("gold: ", style="bold")
        text.append(f"{shown.gold[index]}\n")
    if result is None:
        text.append("not labelled yet", style="dim")
        return text
    text.append("label: ", style="bold")
    if result.label is None:
        text.append("invalid", style="bold red")
        text.append(f" (model said {result.raw[:80]!r})\n")
    else:
        text.append(f" {result.label} ", style=LABEL_STYLES[result.label])
        text.append(f"  by {result.method}\n")
    if result.distribution:
        title = "Manager distribution" if result.method == "mad" else "Distribution"
        text.append(f"\n{title} ({result.distribution_source})\n", style="bold")
        text.append(distribution_bars(result.distribution))
    if result.skipped:
        text.append(f"\n{result.reason}\n", style="italic")
    if result.proponent_label:
        text.append(
            f"\nDebate: Proponent defends {result.proponent_label}, Opponent defends {result.opponent_label}\n",
            style="bold",
        )
    for turn in result.transcript:
        if turn.role == "judge":
            continue
        who = ROLE_NAMES.get(turn.role, turn.role) + (f" ({turn.label})" if turn.label else "")
        text.append(f"\n{who}\n", style="bold underline")
        text.append(f"{turn.text}\n")
    if result.method == "mad" and not result.skipped:
        text.append("\nJudge's reason\n", style="bold underline")
        text.append(f"{result.reason}\n")
    usage = result.usage
    calls = f"{usage.calls} call{'s' if usage.calls != 1 else ''}"
    text.append(f"\n{calls} ({usage.cached_calls} cached), {result.seconds:.1f} s, {usage.tokens} tokens", style="dim")
    return text


class ComponentsScreen(Screen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("n", "step(1)", "Next"),
        Binding("p", "step(-1)", "Prev"),
        Binding("m", "cycle_method", "Method"),
        Binding("t", "type_text", "Type"),
        Binding("r", "reload", "Reload"),
    ]
    DEFAULT_CSS = """
    ComponentsScreen #body { height: 1fr; }
    ComponentsScreen #left { width: 1fr; }
    ComponentsScreen #documents { height: 6; }
    ComponentsScreen #legend { height: auto; }
    ComponentsScreen #document-scroll { height: 1fr; border: round $primary-muted; }
    ComponentsScreen #detail-scroll { width: 1fr; border: round $secondary-muted; }
    ComponentsScreen #text { dock: bottom; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.method = "mad"
        self.stored: list[LabelledDocument] = []
        self.shown: ShownDocument | None = None
        self.selected: int | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield DemoNotice()
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield OptionList(id="documents")
                yield Static(legend(), id="legend")
                with VerticalScroll(id="document-scroll"):
                    yield Static(id="document")
            with VerticalScroll(id="detail-scroll"):
                yield Static(id="detail")
        yield Input(id="text")
        yield Footer(compact=True)  # every key fits in 80 columns

    def on_mount(self) -> None:
        self._update_subtitle()
        self.action_reload()
        self.query_one("#documents").focus()

    # ------------------------------------------------------------------ stored documents

    def action_reload(self) -> None:
        self.stored = labelled_documents(services(self).db)
        documents = self.query_one("#documents", OptionList)
        documents.clear_options()
        documents.add_options(
            Option(Text(f"{entry.name} · {entry.judge.name} ({len(entry.items)})"), id=str(i))
            for i, entry in enumerate(self.stored)
        )
        if self.stored:
            documents.highlighted = 0
        if self.shown is None:
            hint = (
                "Pick a document above, or press t and type a paragraph to label it."
                if self.stored
                else "No labelled documents yet. Press t and type a paragraph to label it, or run "
                "`argtui eval components` / `argtui components \"TEXT\"`."
            )
            self.query_one("#document", Static).update(hint)
            self.query_one("#detail", Static).update("")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        entry = self.stored[int(event.option.id)]
        components = document_components(services(self).db, entry)
        self._show(ShownDocument(
            title=entry.name,
            text=entry.text,
            spans=[component.result.span for component in components],
            results={i: component.result for i, component in enumerate(components)},
            gold={i: component.gold for i, component in enumerate(components) if component.gold},
        ))

    # ------------------------------------------------------------------ typed text

    def action_type_text(self) -> None:
        self.query_one("#text", Input).focus()

    def action_cycle_method(self) -> None:
        self.method = METHODS[(METHODS.index(self.method) + 1) % len(METHODS)]
        self._update_subtitle()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        spans = segment(text)
        if not spans:
            self.notify("No argument component found: type at least one sentence.", severity="warning")
            return
        self._show(ShownDocument(title="typed text", text=text, spans=spans))
        self.label_typed(text, spans, self.method)

    @work(exclusive=True, group="label")
    async def label_typed(self, text: str, spans: list[Span], method: str) -> None:
        shown = self.shown

        def on_component(index: int, result: ComponentResult) -> None:
            if shown is self.shown:
                shown.results[index] = result
                self._redraw()

        try:
            client = await services(self).client(getattr(self.app, "backend_name", None))
            _, results = await label_text(
                services(self).db, client, text, method, default_options(TASK), spans, on_component
            )
        except ArgtuiError as exc:  # the backend failed: say so, keep the screen
            self.notify(str(exc), title="Labelling stopped", severity="error", markup=False)
            return
        self.action_reload()
        self.notify(f"Labelled {len(results)} components with {method}.")

    # ------------------------------------------------------------------ selection

    def action_select_component(self, index: int) -> None:
        """Select a component (clicking one in the document runs this action)."""
        if self.shown is not None and 0 <= index < len(self.shown.spans):
            self.selected = index
            self._redraw()

    def action_step(self, delta: int) -> None:
        if self.shown is None or not self.shown.spans:
            return
        current = -1 if self.selected is None and delta > 0 else (self.selected or 0)
        self.action_select_component((current + delta) % len(self.shown.spans))

    # ------------------------------------------------------------------ drawing

    def _show(self, shown: ShownDocument) -> None:
        self.shown = shown
        self.selected = 0 if shown.spans else None
        self._update_subtitle()
        self._redraw()

    def _redraw(self) -> None:
        if self.shown is None:
            return
        self.query_one("#document", Static).update(document_content(self.shown, self.selected))
        detail = self.query_one("#detail", Static)
        detail.update(component_detail(self.shown, self.selected) if self.selected is not None else "")
        if self.selected is not None:
            self.call_after_refresh(self._scroll_to_selected)

    def _scroll_to_selected(self) -> None:
        """Bring the selected component into view (its line estimated from its offset in the text)."""
        if self.shown is None or self.selected is None or not self.shown.text:
            return
        scroll = self.query_one("#document-scroll", VerticalScroll)
        share = self.shown.spans[self.selected].start / len(self.shown.text)
        line = share * scroll.virtual_size.height
        if not scroll.scroll_y <= line < scroll.scroll_y + scroll.size.height - 2:
            scroll.scroll_to(y=max(0.0, line - scroll.size.height / 3), animate=False)

    def _update_subtitle(self) -> None:
        title = f" · {self.shown.title}" if self.shown else ""
        self.sub_title = f"Components{title} · typed text uses {self.method}"
        self.query_one("#text", Input).placeholder = (
            f"Type a paragraph and press Enter to label its components with {self.method} (m: method)"
        )


MODE = Mode(
    name="components",
    title="Components",
    description="Argument components (MajorClaim / Claim / Premise) of essays and typed text, coloured by "
    "label, with the debate transcript behind each label (MAD-ACC).",
    make_screen=ComponentsScreen,
    order=40,
)
