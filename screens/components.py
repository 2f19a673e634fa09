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

from engines.components import METHODS, ComponentResult, Span, segment
from engines.components.records import LabelledDocument, document_components, labelled_documents
from engines.debate.records import ComponentRecord
from engines.errors import ArgtuiError
from engines.judging.task import default_options
from engines.tasks.components import TASK, label_text
from screens.demo_notice import DemoNotice
from screens.glossary import JudgeName, titled_variant
from screens.modes import Mode
from screens.navigation import back
from screens.services import backend_name, services
from screens.widgets.chips import chip_legend, label_chip
from screens.widgets.transcript import component_transcript

PENDING_STYLE = "underline"
SELECTED_STYLE = "reverse"


@dataclass
class ShownDocument:
    """The document on screen: its text, its components and what is known about each."""

    title: str
    text: str
    spans: list[Span]
    results: dict[int, ComponentResult] = field(default_factory=dict)
    gold: dict[int, str] = field(default_factory=dict)


def document_content(shown: ShownDocument, selected: int | None) -> Content:
    """The text with each component on its label's colour (underlined until labelled); clicking one
    selects it."""
    content = Content(shown.text)
    for index, span in enumerate(shown.spans):
        result = shown.results.get(index)
        style = PENDING_STYLE if result is None else str(label_chip(result.label).style)
        if index == selected:
            style += f" {SELECTED_STYLE}"
        content = content.stylize(f"{style} @click=screen.select_component({index})", span.start, span.end)
    return content


def legend() -> Text:
    return chip_legend("") + Text(" ") + Text("pending", style=PENDING_STYLE)


def component_detail(shown: ShownDocument, index: int) -> Text:
    """Everything behind one component's label: the shared transcript, with the gold label and what
    the labelling cost."""
    result = shown.results.get(index)
    lines = [Text(f"Component {index + 1} of {len(shown.spans)}", style="bold")]
    if index in shown.gold:
        lines.append(Text.assemble(("gold: ", "bold"), label_chip(shown.gold[index])))
    if result is None:
        lines += [Text(f"“{shown.spans[index].text}”", style="italic"), Text("not labelled yet", style="dim")]
        return Text("\n").join(lines)
    lines += component_transcript(ComponentRecord.of(result))
    usage = result.usage
    calls = f"{usage.calls} call{'s' if usage.calls != 1 else ''}"
    lines.append(Text(f"{calls} ({usage.cached_calls} cached), {result.seconds:.1f} s, {usage.tokens} tokens",
                      style="dim"))
    return Text("\n\n").join(lines)


class ComponentsScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("n", "step(1)", "Next"),
        Binding("p", "step(-1)", "Prev"),
        Binding("m", "cycle_method", "Method"),
        Binding("t", "type_text", "Type"),
        Binding("r", "reload", "Reload"),
    ]

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
            Option(Text(f"{entry.name} · {self._judge_words(entry)} ({len(entry.items)})"), id=str(i))
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

    @staticmethod
    def _judge_words(entry: LabelledDocument) -> str:
        """The judge in a narrow list: its backend and its method's short name."""
        judge = JudgeName(TASK.name, entry.judge)
        return f"{judge.backend} {judge.short_variant}"

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

    def action_back(self) -> None:
        back(self)

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
            client = await services(self).client(backend_name(self))
            _, results = await label_text(
                services(self), client, text, method, default_options(TASK), spans, on_component
            )
        except ArgtuiError as exc:  # the backend failed: say so, keep the screen
            self.notify(str(exc), title="Labelling stopped", severity="error", markup=False)
            return
        self.action_reload()
        self.notify(f"Labelled {len(results)} components with {titled_variant(TASK.name, method)}.")

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
        method = titled_variant(TASK.name, self.method)
        self.sub_title = f"Components{title} · typed text uses {method}"
        self.query_one("#text", Input).placeholder = (
            f"Type a paragraph and press Enter to label its components with {method} (m: method)"
        )


MODE = Mode(
    name="components",
    title="Components",
    description="Argument components (MajorClaim / Claim / Premise) of essays and typed text, coloured by "
    "label, with the debate transcript behind each label (MAD-ACC).",
    make_screen=ComponentsScreen,
    order=40,
)
