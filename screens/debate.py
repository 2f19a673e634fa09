"""Debate: argue a claim against the retrieval-augmented bot, turn by turn.

The student's messages are labelled with argument components (colours) and
every bot reply is judged on the four Grice maxims, in background workers, so
typing is never blocked. The side panel follows the focused message: the five
pipeline steps with the strategy card and the evidence for a bot reply, the
components (each openable to its debate transcript) for a student message.
"""

from __future__ import annotations

import time
from typing import Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import (
    DataTable,
    Footer,
    Header,
    Input,
    Label,
    OptionList,
    RadioButton,
    RadioSet,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.option_list import Option

from engines.debate.claims import Claim, bundled_claims, cmv_claims
from engines.debate.pipeline import STEPS, ReplyProgress, StepFinished, StepStarted, TurnCompleted, TurnFailed
from engines.components.types import METHODS as COMPONENT_METHODS
from engines.debate.records import (
    ComponentRecord,
    DebateRecords,
    EvidenceRow,
    GriceRecord,
    MetricRecord,
    StoredTurn,
    TurnSteps,
)
from engines.debate.session import DEFAULT_COMPONENT_METHOD, DEFAULT_GRICE_STRATEGY, DebateSession
from engines.grice.judge import STRATEGIES as GRICE_STRATEGIES
from engines.errors import ArgtuiError
from screens.demo_notice import DemoNotice
from screens.modes import Mode
from screens.services import services
from store.debates import DebateRepository
from store.grice import GriceRepository

LABEL_STYLES = {"MajorClaim": "bold white on dark_magenta", "Claim": "black on orange1", "Premise": "black on sky_blue2"}
STEP_TITLES = dict(STEPS)
REPLY_REFRESH_S = 0.05  # stream the reply at about 20 updates per second


def components_text(content: str, components: list[ComponentRecord] | None) -> Text:
    """The message with each labelled component on its label's colour."""
    text = Text(content)
    for component in components or []:
        text.stylize(LABEL_STYLES.get(component.label, "reverse"), component.span.start, component.span.end)
    return text


def legend() -> Text:
    text = Text("components: ")
    for label, style in LABEL_STYLES.items():
        text.append(f" {label} ", style=style)
        text.append(" ")
    text.append(" invalid ", style="reverse")
    return text


def grice_line(result: GriceRecord | None) -> Text:
    if result is None:
        return Text("Grice: judging…", style="dim")
    text = Text("Grice: ", style="bold")
    for metric, judgment in result.metrics.items():
        style = {"yes": "green", "no": "red"}.get(judgment.answer, "yellow")
        text.append(f"{metric} ", style="bold")
        text.append(judgment.answer or "invalid", style=style)
        if judgment.p_yes is not None:
            text.append(f" {judgment.p_yes:.2f}", style="dim")
        text.append("  ")
    return text


class MessageView(Static, can_focus=True):
    """One turn of the conversation. Focus it to see its details in the side panel."""

    DEFAULT_CSS = """
    MessageView { padding: 0 1; margin: 0 0 1 0; height: auto; }
    MessageView.user { border-left: thick $accent; }
    MessageView.assistant { border-left: thick $success; background: $boost; }
    MessageView.failed { border-left: thick $error; }
    MessageView:focus { background: $primary 20%; }
    """

    def __init__(self, role: str, content: str, turn: StoredTurn | None = None):
        super().__init__(classes=role)
        self.role = role
        self.content = content
        self.turn = turn
        self.components: list[ComponentRecord] | None = turn.components if turn else None
        self.grice: GriceRecord | None = turn.grice if turn else None
        self.status = ""
        self.steps: TurnSteps = (turn.steps if turn else None) or TurnSteps()
        self.step_state: dict[str, str] = {
            step: "done" for step, _ in STEPS if getattr(self.steps, step) is not None
        }
        self.step_seconds: dict[str, float] = {}
        self.evidence: Sequence[EvidenceRow] = turn.evidence if turn else ()
        self.error: str | None = turn.error if turn else None

    def render(self):
        who = "You" if self.role == "user" else "Bot"
        head = Text(f"{who}: ", style="bold")
        if self.role == "user":
            body = components_text(self.content, self.components)
            tail = Text(self.status or ("" if self.components is not None else "labelling components…"), style="dim")
            return Group(head + body, tail) if tail.plain else head + body
        if self.error:
            return Group(head + Text(self.content or ""), Text(f"failed: {self.error}", style="bold red"))
        body = Text(self.content or self.status or "…")
        parts = [head + body]
        if self.turn is not None and self.turn.length_action:
            parts.append(Text(f"(reply over 60 words: {self.turn.length_action})", style="dim italic"))
        if self.turn is not None:  # stored: the reply is complete
            parts.append(grice_line(self.grice))
        return Group(*parts)


class TranscriptScreen(ModalScreen):
    """A component's manager distribution, the debate transcript and the judge's reason."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close")]
    DEFAULT_CSS = """
    TranscriptScreen { align: center middle; }
    TranscriptScreen > VerticalScroll { width: 90%; height: 85%; border: round $accent; background: $surface; padding: 0 1; }
    """

    def __init__(self, component: ComponentRecord):
        super().__init__()
        self.component = component

    def compose(self) -> ComposeResult:
        c = self.component
        with VerticalScroll():
            yield Static(Text.assemble(("Component: ", "bold"), c.span.text))
            label = c.label or "invalid"
            yield Static(Text.assemble(("Label: ", "bold"), (f" {label} ", LABEL_STYLES.get(label, "reverse")),
                                       f"  method {c.method}" + ("  (manager skip)" if c.skipped else "")))
            if c.distribution:
                table = Table(title="Manager distribution", show_edge=False)
                table.add_column("label")
                table.add_column("P", justify="right")
                for name, p in sorted(c.distribution.items(), key=lambda kv: -kv[1]):
                    table.add_row(Text(name), f"{p:.3f}")
                yield Static(table)
            for turn in c.transcript:
                role = turn.role.capitalize() + (f" ({turn.label})" if turn.label else "")
                yield Static(Text.assemble((f"{role}: ", "bold"), turn.text))
            if c.reason:
                yield Static(Text.assemble(("Judge's reason: ", "bold"), c.reason))
            if c.raw and not c.label:
                yield Static(Text.assemble(("Raw output: ", "bold red"), c.raw))
            yield Static(Text("Esc closes.", style="dim"))


class DebateScreen(Screen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("ctrl+t", "open_transcript", "Transcript"),
        Binding("ctrl+l", "focus_input", "Type"),
        Binding("ctrl+g", "next_grice_strategy", "Grice strategy"),
        Binding("ctrl+o", "next_component_method", "Component method"),
    ]
    DEFAULT_CSS = """
    DebateScreen #claim { padding: 0 1; background: $panel; height: auto; }
    DebateScreen #body { height: 1fr; }
    DebateScreen #conversation { width: 3fr; }
    DebateScreen #log { height: 1fr; }
    DebateScreen #side { width: 2fr; min-width: 30; border-left: solid $panel-lighten-2; }
    DebateScreen #status { height: auto; color: $text-muted; padding: 0 1; }
    DebateScreen #legend { height: auto; padding: 0 1; }
    DebateScreen #component-list { height: 1fr; }
    """

    def __init__(self, debate_id: int):
        super().__init__()
        self.debate_id = debate_id
        self.session: DebateSession | None = None
        self.selected: MessageView | None = None
        self._streaming: MessageView | None = None
        self._pending_reply = ""
        self._bot_busy = False
        self.grice_strategy = DEFAULT_GRICE_STRATEGY
        self.component_method = DEFAULT_COMPONENT_METHOD

    def compose(self) -> ComposeResult:
        yield Header()
        yield DemoNotice()
        yield Static(id="claim")
        with Horizontal(id="body"):
            with Vertical(id="conversation"):
                yield VerticalScroll(id="log")
                yield Static(legend(), id="legend")
                yield Static("", id="status")
                yield Input(placeholder="Your argument… (Enter sends)", id="message")
            with TabbedContent(id="side", initial="steps-tab"):
                with TabPane("Steps", id="steps-tab"):
                    yield VerticalScroll(Static(id="steps"))
                with TabPane("Evidence", id="evidence-tab"):
                    yield VerticalScroll(Static(id="evidence"))
                with TabPane("Grice", id="grice-tab"):
                    yield VerticalScroll(Static(id="grice"))
                with TabPane("Components", id="components-tab"):
                    yield OptionList(id="component-list")
        yield Footer()

    def _show_methods(self) -> None:
        self.sub_title = f"Debate · Grice {self.grice_strategy} · components {self.component_method}"

    def _cycle(self, current: str, choices: tuple[str, ...]) -> str:
        return choices[(choices.index(current) + 1) % len(choices)]

    def action_next_grice_strategy(self) -> None:
        """Later replies are judged with the next strategy."""
        self.grice_strategy = self._cycle(self.grice_strategy, GRICE_STRATEGIES)
        if self.session is not None:
            self.session.grice_strategy = self.grice_strategy
        self._show_methods()

    def action_next_component_method(self) -> None:
        """Later messages are labelled with the next method."""
        self.component_method = self._cycle(self.component_method, COMPONENT_METHODS)
        if self.session is not None:
            self.session.component_method = self.component_method
        self._show_methods()

    def on_mount(self) -> None:
        self._show_methods()
        repository = DebateRepository(services(self).db)
        debate = repository.get(self.debate_id)
        if debate is None:
            self.notify(f"no debate {self.debate_id}", severity="error")
            self.app.pop_screen()
            return
        bot_side = "con" if debate.user_side == "pro" else "pro"
        self.query_one("#claim", Static).update(Text.assemble(
            ("Claim: ", "bold"), debate.claim, f"   you: {debate.user_side}, bot: {bot_side}"
        ))
        turns = DebateRecords(repository).turns(debate.id)
        log = self.query_one("#log", VerticalScroll)
        for turn in turns:
            log.mount(MessageView(turn.role, turn.content, turn))
        if turns:
            self.call_after_refresh(lambda: log.scroll_end(animate=False))
        self.query_one(Input).focus()
        self.set_interval(REPLY_REFRESH_S, self._flush_reply)
        self._open_session(debate)

    @work(exclusive=True, group="session")
    async def _open_session(self, debate) -> None:
        status = self.query_one("#status", Static)
        status.update("connecting to the backend and opening the argument index…")
        try:
            client = await services(self).client(debate.backend or None)
            retriever = await services(self).retriever(
                lambda p: status.update(f"building the argument index: {p.done}/{p.total}")
            )
        except ArgtuiError as exc:
            status.update(Text(f"cannot debate: {exc}", style="red"))
            return
        db = services(self).db
        self.session = DebateSession(
            DebateRepository(db), debate, client, retriever, reason_store=GriceRepository(db),
            grice_strategy=self.grice_strategy, component_method=self.component_method,
        )
        status.update("ready: type your argument and press Enter")
        for view in self.query(MessageView):  # resume judging what an earlier session left undone
            if view.turn is not None and view.role == "user" and view.components is None:
                self._label(view)
            elif view.turn is not None and view.role == "assistant" and not view.error and view.grice is None:
                self._judge(view)

    # ------------------------------------------------------------ sending

    @on(Input.Submitted, "#message")
    def send(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        status = self.query_one("#status", Static)
        if not text:
            return
        if self.session is None:
            status.update("not ready yet: the backend or the index is still starting")
            return
        if self._bot_busy:
            status.update("the bot is still answering; your draft stays in the box")
            return
        event.input.value = ""
        status.update("the bot is answering…")
        turn = self.session.add_user_message(text)
        log = self.query_one("#log", VerticalScroll)
        user_view = MessageView("user", text, turn)
        bot_view = MessageView("assistant", "")
        bot_view.status = "thinking…"
        log.mount(user_view)
        log.mount(bot_view)
        log.scroll_end(animate=False)
        self._show(bot_view)
        self._label(user_view)
        self._answer(bot_view)

    @work(group="bot")
    async def _answer(self, view: MessageView) -> None:
        self._bot_busy = True
        started = time.perf_counter()
        self._pending_reply = ""  # the last turn's text must not leak into this one
        self._streaming = view
        try:
            stored, outcome, failure = await self.session.bot_turn(lambda event: self._follow(view, event))
        except ArgtuiError as exc:
            view.error = str(exc)
            view.status = ""
            view.refresh(layout=True)
            return
        finally:
            self._bot_busy = False
            self._streaming = None
        self._flush_reply()
        view.turn = stored
        view.status = ""
        if outcome is not None:
            view.content = outcome.reply
            self.query_one("#status", Static).update(
                f"reply in {time.perf_counter() - started:.1f} s ({outcome.requests} requests); judging it…"
            )
            self._judge(view)
        else:
            view.error = stored.error
        view.refresh(layout=True)
        self._refresh_side(view)

    def _follow(self, view: MessageView, event) -> None:
        if isinstance(event, StepStarted):
            view.step_state[event.step] = "running"
            view.status = f"{STEP_TITLES[event.step]}…"
        elif isinstance(event, StepFinished):
            view.step_state[event.step] = "done"
            view.steps = event.steps
            view.evidence = event.evidence
            view.step_seconds[event.step] = event.seconds
        elif isinstance(event, ReplyProgress):
            self._pending_reply = event.text  # flushed by the timer
            return
        elif isinstance(event, TurnFailed):
            view.step_state[event.step] = "failed"
            view.error = f"step {event.step}: {event.error}"
        elif isinstance(event, TurnCompleted):
            return
        self._redraw(view)

    def _flush_reply(self) -> None:
        view = self._streaming
        if view is not None and self._pending_reply and self._pending_reply != view.content:
            view.content = self._pending_reply
            view.status = ""
            view.refresh(layout=True)

    @work(group="judging")
    async def _judge(self, view: MessageView) -> None:
        partial = GriceRecord(strategy=self.session.grice_strategy)
        view.grice = partial

        def arrived(judgment: MetricRecord) -> None:
            partial.metrics[judgment.metric] = judgment
            self._redraw(view)

        try:
            judgment = await self.session.judge_reply(view.turn, arrived)
        except ArgtuiError as exc:
            self.query_one("#status", Static).update(Text(f"Grice judging failed: {exc}", style="red"))
            return
        view.grice = judgment
        view.refresh(layout=True)
        self.query_one("#status", Static).update(
            Text(f"judged ({judgment.strategy}) in {judgment.seconds:.1f} s, {judgment.calls} calls")
        )
        if self.selected is view:
            self._refresh_side(view)

    @work(group="labelling")
    async def _label(self, view: MessageView) -> None:
        found: list[ComponentRecord] = []

        def arrived(_index: int, component: ComponentRecord) -> None:
            found.append(component)
            view.components = sorted(found, key=lambda c: c.span.start)
            self._redraw(view)

        try:
            results = await self.session.label_message(view.turn, arrived)
        except ArgtuiError as exc:
            view.status = f"labelling failed: {exc}"
            view.refresh(layout=True)
            return
        view.components = results
        view.status = ""
        self._redraw(view)

    # ------------------------------------------------------------ side panel

    def _redraw(self, view: MessageView) -> None:
        """A message changed: repaint it, and the side panel when it shows that message."""
        view.refresh(layout=True)
        if self.selected is view:
            self._refresh_side(view)

    def on_descendant_focus(self, event) -> None:
        if isinstance(event.widget, MessageView):
            self._show(event.widget)

    def _show(self, view: MessageView) -> None:
        self.selected = view
        self._refresh_side(view)
        tabs = self.query_one(TabbedContent)
        if view.role == "user":
            tabs.active = "components-tab"
        elif tabs.active == "components-tab":
            tabs.active = "steps-tab"

    def _refresh_side(self, view: MessageView) -> None:
        if view.role == "assistant":
            self.query_one("#steps", Static).update(self._steps_panel(view))
            self.query_one("#evidence", Static).update(self._evidence_panel(view))
            self.query_one("#grice", Static).update(self._grice_panel(view))
        else:
            options = self.query_one("#component-list", OptionList)
            options.clear_options()
            for index, component in enumerate(view.components or []):
                label = component.label or "invalid"
                options.add_option(Option(
                    Text.assemble((f" {label} ", LABEL_STYLES.get(label, "reverse")), " ", component.span.text),
                    id=str(index),
                ))
            if view.components is None:
                options.add_option(Option("labelling…", disabled=True))

    def _steps_panel(self, view: MessageView):
        lines = Text()
        marks = {"done": ("✓", "green"), "running": ("…", "yellow"), "failed": ("✗", "red")}
        for step, title in STEPS:
            mark, style = marks.get(view.step_state.get(step, ""), ("·", "dim"))
            seconds = view.step_seconds.get(step)
            lines.append(f"{mark} {title}", style=style)
            lines.append(f"  {seconds:.1f} s\n" if seconds is not None else "\n", style="dim")
        parts = [lines]
        strategy = view.steps.strategy
        if strategy:
            card = Table(title="Strategy", show_header=False, expand=True)
            card.add_column(ratio=1)
            card.add_column(ratio=3)
            for name, choice, why in (
                ("tone", strategy.tone, strategy.justification_tone),
                ("style", strategy.style, strategy.justification_style),
                ("approach strategy", strategy.approach_strategy, strategy.justification_approach),
                ("type of arguments", strategy.type_of_arguments, strategy.justification_type),
                ("perspective", strategy.perspective, strategy.justification_perspective),
            ):
                card.add_row(Text(name, style="bold"), Text.assemble((choice, "bold"), "\n", why))
            parts.append(card)
        plan = view.steps.queries
        if plan:
            text = Text("\nQueries\n", style="bold")
            for name, query in plan:  # SEARCH_1…SEARCH_3, unused ones None
                if query is not None:
                    text.append(f"{name}: {query.field_to_look} ", style="bold")
                    text.append(f"{query.opponent_idea}\n")
            parts.append(text)
        return Group(*parts)

    def _evidence_panel(self, view: MessageView):
        if not view.evidence:
            return Text("No evidence yet.", style="dim")
        table = Table(expand=True, show_lines=True)
        table.add_column("use", width=5)
        table.add_column("how", width=9)
        table.add_column("argument", ratio=1)
        for row in view.evidence:
            use = "used" if row.used else "final" if row.final else "sel." if row.selected else ""
            relation = row.relation_found or row.relation or ""
            table.add_row(
                Text(use, style="bold green" if use == "used" else ""),
                Text(f"Q{row.query} {row.strategy}\n{relation}", style="dim"),
                Text.assemble(row.text, (f"\n{row.id} · {row.topic}", "dim")),
            )
        return table

    def _grice_panel(self, view: MessageView):
        if view.error:
            return Text(f"No reply to judge: {view.error}", style="red")
        if view.grice is None or not view.grice.metrics:
            return Text("Judging starts when the reply is complete.", style="dim")
        parts = []
        for metric, judgment in view.grice.metrics.items():
            head = Text.assemble((metric.capitalize(), "bold"), f"  {judgment.answer or 'invalid'}",
                                 (f"  P(yes) {judgment.p_yes:.2f}" if judgment.p_yes is not None else "", "dim"),
                                 (f"  [{judgment.method}]", "dim"))
            body = Text(judgment.rationale or judgment.error or "", style="italic")
            parts += [head, body, Text("")]
        return Group(*parts)

    # ------------------------------------------------------------ actions

    @on(OptionList.OptionSelected, "#component-list")
    def open_component(self, event: OptionList.OptionSelected) -> None:
        self._open_component(int(event.option.id))

    def action_open_transcript(self) -> None:
        options = self.query_one("#component-list", OptionList)
        if self.selected is not None and self.selected.role == "user" and options.highlighted is not None:
            self._open_component(options.highlighted)

    def _open_component(self, index: int) -> None:
        view = self.selected
        if view is not None and view.components and index < len(view.components):
            self.app.push_screen(TranscriptScreen(view.components[index]))

    def action_focus_input(self) -> None:
        self.query_one(Input).focus()


class NewDebateScreen(Screen):
    """Start a debate (claim and side) or reopen a past one."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]
    DEFAULT_CSS = """
    NewDebateScreen #columns { height: 1fr; }
    NewDebateScreen #start { width: 1fr; padding: 0 1; }
    NewDebateScreen #past { width: 1fr; padding: 0 1; }
    NewDebateScreen #claims { height: 1fr; }
    NewDebateScreen #debates { height: 1fr; }
    NewDebateScreen RadioSet { layout: horizontal; height: auto; }
    """

    def __init__(self, claim: str | None = None, side: str = "pro"):
        super().__init__()
        self.preset_claim = claim
        self.preset_side = side
        self.claims: list[Claim] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="columns"):
            with Vertical(id="start"):
                yield Label("New debate: pick a claim, or type your own and press Enter")
                yield Input(value=self.preset_claim or "", placeholder="a claim to debate…", id="claim-input")
                with RadioSet(id="side"):
                    yield RadioButton("I argue for it (pro)", value=self.preset_side == "pro", id="pro")
                    yield RadioButton("I argue against it (con)", value=self.preset_side == "con", id="con")
                yield OptionList(Option("loading claims…", disabled=True), id="claims")
            with Vertical(id="past"):
                yield Label("Past debates: Enter continues one")
                yield DataTable(id="debates", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "New debate"
        table = self.query_one("#debates", DataTable)
        table.add_columns("id", "side", "turns", "claim")
        for debate, turns in DebateRepository(services(self).db).list():
            table.add_row(str(debate.id), debate.user_side, str(turns), Text(debate.claim), key=str(debate.id))
        self.query_one("#claim-input", Input).focus()
        self._load_claims()

    @work(thread=True, exclusive=True)
    def _load_claims(self) -> None:
        claims = bundled_claims()
        rad_path = services(self).dataset_path("touche-rad")
        if rad_path:
            try:
                claims = cmv_claims(rad_path) + claims
            except ArgtuiError as exc:
                self.app.call_from_thread(
                    self.notify, f"Touché claims not loaded: {exc}", severity="warning", markup=False
                )
        self.app.call_from_thread(self._show_claims, claims)

    def _show_claims(self, claims: list[Claim]) -> None:
        self.claims = claims
        options = self.query_one("#claims", OptionList)
        options.clear_options()
        options.add_options(
            Option(Text.assemble(claim.text, (f"  {claim.source}", "dim")), id=str(i)) for i, claim in enumerate(claims)
        )

    def _side(self) -> str:
        pressed = self.query_one("#side", RadioSet).pressed_button
        return pressed.id if pressed is not None else "pro"

    def _start(self, claim: str) -> None:
        claim = claim.strip()
        if not claim:
            self.notify("type a claim or pick one from the list", severity="warning")
            return
        debate = DebateRepository(services(self).db).create(claim, self._side(), backend=getattr(self.app, "backend_name", ""))
        self.app.switch_screen(DebateScreen(debate.id))

    @on(Input.Submitted, "#claim-input")
    def claim_typed(self, event: Input.Submitted) -> None:
        self._start(event.value)

    @on(OptionList.OptionSelected, "#claims")
    def claim_picked(self, event: OptionList.OptionSelected) -> None:
        self._start(self.claims[int(event.option.id)].text)

    @on(DataTable.RowSelected, "#debates")
    def reopen(self, event: DataTable.RowSelected) -> None:
        self.app.switch_screen(DebateScreen(int(event.row_key.value)))


MODE = Mode(
    name="debate",
    title="Debate",
    description="Debate the retrieval-augmented bot on a claim; see its strategy, evidence and Grice "
    "judgments of every reply, and the argument components of your own messages.",
    make_screen=NewDebateScreen,
    order=10,
)
