"""Debate: argue a claim against the retrieval-augmented bot, turn by turn.

The student's messages are labelled with argument components (colours) and
every bot reply is judged on the four Grice maxims, in background workers, so
typing is never blocked. The side panel follows the focused message: the five
pipeline steps with the strategy card and the evidence for a bot reply, the
components (each openable to its debate transcript) for a student message.
"""

from __future__ import annotations

import asyncio
import dataclasses
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
from textual.worker import Worker

from engines.debate.claims import Claim, bundled_claims, cmv_claims
from engines.debate.messages import count_words, split_message, trim_message
from engines.debate.levels import FULL_LEVEL, LEVELS, OpponentLevel, default_level, get_level
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
from engines.debate.settings import DebateSettings
from engines.grice.judge import STRATEGIES as GRICE_STRATEGIES
from engines.grice.questions import METRICS, QUESTIONS
from engines.errors import ArgtuiError
from screens.choice import Answer, ChoiceDialog
from screens.demo_notice import DemoNotice
from screens.modes import Mode
from screens.services import services
from store.debates import DebateRepository
from store.grice import GriceRepository

LABEL_STYLES = {"MajorClaim": "bold white on dark_magenta", "Claim": "black on orange1", "Premise": "black on sky_blue2"}
STEP_TITLES = dict(STEPS)
REPLY_REFRESH_S = 0.05  # stream the reply at about 20 updates per second
TICK_S = 0.125  # the spinner and the clocks of running work advance at this pace
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
RETRY_KEY = "Ctrl+R"
QUESTIONS_KEY = "F2"
UNFINISHED = ("failed", "cancelled")  # what Retry runs again


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
    if result is None or not result.metrics:
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


def spinner(since: float) -> str:
    return SPINNER[int((time.perf_counter() - since) / TICK_S) % len(SPINNER)]


def shown_state(turn: StoredTurn) -> str:
    """A stored turn's state when the screen opens. Nothing of it runs in this process then,
    so one left running (argtui was killed) was interrupted: it shows as cancelled."""
    if turn.role == "user":  # a message's state is its labelling's
        if turn.components is not None:
            return "done"
        return "failed" if turn.state == "failed" else "cancelled"
    if turn.error is not None:
        return "failed"
    return "cancelled" if turn.state == "running" else turn.state


class MessageView(Static, can_focus=True):
    """One turn of the conversation. Focus it to see its details in the side panel.

    `state` is the bot turn's (running, done, failed, cancelled), for a student message its
    labelling's; `message` and `reply` link a message and the bot turn that answers it."""

    DEFAULT_CSS = """
    MessageView { padding: 0 1; margin: 0 0 1 0; height: auto; }
    MessageView.user { border-left: thick $accent; }
    MessageView.assistant { border-left: thick $success; background: $boost; }
    MessageView.failed { border-left: thick $error; }
    MessageView.cancelled { border-left: thick $warning; }
    MessageView:focus { background: $primary 20%; }
    """

    def __init__(self, role: str, content: str, turn: StoredTurn | None = None):
        super().__init__(classes=role)
        self.role = role
        self.content = content
        self.turn = turn
        self.components: list[ComponentRecord] | None = turn.components if turn else None
        self.grice: GriceRecord | None = turn.grice if turn else None
        self.status = ""  # why the labelling failed
        self.steps: TurnSteps = (turn.steps if turn else None) or TurnSteps()
        self.step_state: dict[str, str] = {
            step: "done" for step, _ in STEPS if getattr(self.steps, step) is not None
        }
        self.step_seconds: dict[str, float] = {}
        self.evidence: Sequence[EvidenceRow] = turn.evidence if turn else ()
        self.error: str | None = turn.error if turn else None
        self._state = ""
        self.state = shown_state(turn) if turn else "running"
        self.started = time.perf_counter()  # when the running work began
        self.step_started = self.started  # when the running step began
        self.limit_s: float | None = None  # the running work's deadline
        self.worker: Worker | None = None  # the running work
        self.message: MessageView | None = None
        self.reply: MessageView | None = None
        self.labels_after_reply = False  # a student message: its labelling waits for the reply

    def begin(self, limit_s: float | None = None) -> None:
        """The work on this turn (re)starts: what an earlier run showed is cleared."""
        self.state, self.limit_s = "running", limit_s
        self.started = self.step_started = time.perf_counter()
        self.status, self.error = "", None
        if self.role == "user":
            self.components = None
        else:
            self.content, self.steps, self.step_state, self.step_seconds = "", TurnSteps(), {}, {}
            self.evidence, self.grice = (), None
        self.refresh(layout=True)

    def cancelled(self) -> None:
        """Its work was cancelled: as in the store, no partial labels or reply are kept; the steps
        show where it stopped."""
        self.state = "cancelled"
        if self.role == "user":
            self.components = None
        else:
            self.content = ""
            self.step_state = {step: "cancelled" if state == "running" else state
                               for step, state in self.step_state.items()}
            # as the session stores it
            self.turn = dataclasses.replace(self.turn, state="cancelled", seconds=time.perf_counter() - self.started)

    @property
    def state(self) -> str:
        return self._state

    @state.setter
    def state(self, state: str) -> None:
        self._state = state
        for unfinished in UNFINISHED:
            self.set_class(self.role == "assistant" and state == unfinished, unfinished)

    @property
    def running_step(self) -> str | None:
        return next((step for step, _ in STEPS if self.step_state.get(step) == "running"), None)

    def _clock(self) -> str:
        """Seconds since the work began, over its deadline if it has one."""
        elapsed = f"{time.perf_counter() - self.started:.0f}"
        return f"{elapsed}/{self.limit_s:.0f} s" if self.limit_s else f"{elapsed} s"

    def render(self):
        who = "You" if self.role == "user" else "Bot"
        head = Text(f"{who}: ", style="bold")
        if self.role == "user":
            body = components_text(self.content, self.components)
            tail = self._labelling_line()
            return Group(head + body, tail) if tail else head + body
        if self.state == "running":
            step = self.running_step
            doing = f"{STEP_TITLES[step]} {time.perf_counter() - self.step_started:.0f} s" if step else "starting"
            return Group(head + Text(self.content or "…"),
                         Text(f"{spinner(self.started)} {doing} · turn {self._clock()} · Esc stops", style="dim"))
        if self.state == "failed":
            return head + Text(f"failed: {self.error} · {RETRY_KEY} runs the turn again", style="bold red")
        if self.state == "cancelled":
            took = f" after {self.turn.seconds:.0f} s" if self.turn is not None and self.turn.seconds else ""
            return head + Text(f"cancelled{took} · {RETRY_KEY} runs the turn again", style="yellow")
        parts = [head + Text(self.content)]
        if self.turn is not None and self.turn.length_action:
            parts.append(Text(f"(reply over 60 words: {self.turn.length_action})", style="dim italic"))
        parts.append(grice_line(self.grice))
        return Group(*parts)

    def _labelling_line(self) -> Text | None:
        if self.state == "running" and self.labels_after_reply and self.reply is not None and self.reply.state == "running":
            return Text("components follow the reply", style="dim")
        if self.state == "running":
            return Text(f"{spinner(self.started)} labelling components · {self._clock()}", style="dim")
        if self.state == "failed":
            why = f": {self.status}" if self.status else ""
            return Text(f"labelling failed{why} · {RETRY_KEY} labels it again", style="yellow")
        if self.state == "cancelled":
            return Text(f"labelling cancelled · {RETRY_KEY} labels it again", style="yellow")
        return None


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
    # Esc is "Stop turn" while work on a turn runs (it asks first), "Back" otherwise.
    BINDINGS = [
        Binding("escape", "stop_turn", "Stop turn"),
        Binding("escape", "back", "Back"),
        Binding("ctrl+r", "retry", "Retry"),
        Binding("ctrl+t", "open_transcript", "Transcript"),
        Binding("ctrl+l", "focus_input", "Type", show=False),
        Binding("ctrl+g", "next_grice_strategy", "Grice"),
        Binding("ctrl+o", "next_component_method", "Method"),
        Binding("f2", "toggle_questions", "Questions"),  # Ctrl+K deletes to the end of the message box
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
    DebateScreen #message.-over { border: tall $error; }
    """

    def __init__(self, debate_id: int):
        super().__init__()
        self.debate_id = debate_id
        self.session: DebateSession | None = None
        self.selected: MessageView | None = None
        self._streaming: MessageView | None = None
        self._pending_reply = ""
        self._queued: list[str] = []  # the parts of a split message not sent yet
        self.grice_strategy = DEFAULT_GRICE_STRATEGY
        self.component_method = DEFAULT_COMPONENT_METHOD
        self.show_questions = False  # the Grice panel shows the question behind each answer

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
        yield Footer(compact=True)

    @property
    def settings(self) -> DebateSettings:
        return services(self).debate_settings

    @property
    def level(self) -> OpponentLevel:
        """The opponent level of the open debate (the five steps until one is open)."""
        return get_level(self.session.debate.level if self.session is not None else FULL_LEVEL)

    def _show_methods(self) -> None:
        self.sub_title = (
            f"Debate · opponent {self.level.name} · Grice {self.grice_strategy} · components {self.component_method}"
        )

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
        views = [MessageView(turn.role, turn.content, turn) for turn in turns]
        if turns and turns[-1].role == "user":  # an earlier release stored a reply only once it was done
            views.append(MessageView("assistant", ""))
            views[-1].state = "cancelled"
        for previous, view in zip([None] + views, views):
            if view.role == "assistant" and previous is not None and previous.role == "user":
                previous.reply, view.message = view, previous
        log.mount_all(views)
        if turns:
            self.call_after_refresh(lambda: log.scroll_end(animate=False))
        self.query_one(Input).focus()
        self.set_interval(REPLY_REFRESH_S, self._flush_reply)
        self.set_interval(TICK_S, self._tick)
        self._open_session(debate)

    @work(exclusive=True, group="session")
    async def _open_session(self, debate) -> None:
        self._say("connecting to the backend and opening the argument index…")
        try:
            client = await services(self).client(debate.backend or None)
            retriever = await services(self).retriever(
                lambda p: self._say(f"building the argument index: {p.done}/{p.total}")
            )
        except ArgtuiError as exc:
            self._say(Text(f"cannot debate: {exc}", style="red"))
            return
        db = services(self).db
        self.session = DebateSession(
            DebateRepository(db), debate, client, retriever, reason_store=GriceRepository(db),
            grice_strategy=self.grice_strategy, component_method=self.component_method,
        )
        self._show_methods()
        unfinished = any(view.state in UNFINISHED for view in self._views())
        self._say("ready: type your argument and press Enter" + (f"; {RETRY_KEY} retries a turn" if unfinished else ""))
        self.refresh_bindings()
        for view in self.query(MessageView):  # resume judging what an earlier session left undone
            if view.role == "assistant" and view.state == "done" and view.grice is None:
                self._judge(view)

    # ------------------------------------------------------------ sending

    def _views(self) -> list[MessageView]:
        return list(self.query(MessageView))

    def _working(self) -> list[MessageView]:
        """The turns being worked on: the bot answering, messages being labelled."""
        return [view for view in self._views() if view.state == "running"]

    def _bot_working(self) -> MessageView | None:
        return next((view for view in self._working() if view.role == "assistant"), None)

    @on(Input.Changed, "#message")
    def show_word_count(self, event: Input.Changed) -> None:
        """The word count shows as the message nears the limit."""
        words, limit = count_words(event.value), self.settings.max_message_words
        event.input.border_subtitle = f"{words}/{limit} words" if words > limit * 0.8 else ""
        event.input.set_class(words > limit, "-over")

    @on(Input.Submitted, "#message")
    def send(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if self.session is None:
            self._say("not ready yet: the backend or the index is still starting")
            return
        if self._bot_working():
            self._say("the bot is still answering; your draft stays in the box")
            return
        if count_words(text) > self.settings.max_message_words:
            self._offer_shorter(text)
            return
        event.input.value = self._queued.pop(0) if self._queued else ""
        self._say(f"the next part is in the box; {len(self._queued)} more after it" if event.input.value
                  else "the bot is answering…")
        turn = self.session.add_user_message(text)
        user_view = MessageView("user", text, turn)
        self.query_one("#log", VerticalScroll).mount(user_view)
        self._start_label(user_view)
        self._start_answer(user_view)

    def _offer_shorter(self, text: str) -> None:
        """A message over the limit is not sent; trimming or splitting it is offered, never done unasked."""
        words, limit = count_words(text), self.settings.max_message_words
        parts = split_message(text, limit)
        question = Text.assemble(
            ("Your message is too long: ", "bold"), f"{words:,} words; a message may have at most {limit:,} ",
            ("(max_message_words under [debate] in the config file)", "dim"), ". Nothing was sent.",
        )
        answers = [Answer("trim", f"Trim to {limit:,} words", "t"),
                   Answer("split", f"Split into {len(parts)} messages", "s"), Answer("edit", "Keep editing", "e")]

        def answered(answer: str | None) -> None:
            box = self.query_one("#message", Input)
            if answer == "trim":
                box.value = trim_message(text, limit)
                self._say(f"trimmed to {limit:,} words ({words - limit:,} cut): Enter sends it")
            elif answer == "split":
                box.value, self._queued[:0] = parts[0], parts[1:]
                self._say(f"split into {len(parts)} messages: Enter sends the first; each next one "
                          "takes its place in the box")
            box.focus()

        self.app.push_screen(ChoiceDialog(question, answers), answered)

    def _start_label(self, view: MessageView) -> None:
        # No deadline: labelling a long message with the embedded model takes minutes, and
        # each request is bounded by the profile's timeout.
        view.begin()
        view.labels_after_reply = not self.session.label_during_reply
        view.worker = self._label(view)
        self.refresh_bindings()

    def _start_answer(self, message: MessageView | None, reply: MessageView | None = None) -> None:
        """The bot's turn answering `message`: a new one, or `reply` (failed or cancelled) again in its place."""
        if reply is None:
            reply = MessageView("assistant", "")
            reply.message, message.reply = message, reply
            self.query_one("#log", VerticalScroll).mount(reply, after=message)
        reply.turn = self.session.start_reply(again=reply.turn)
        reply.begin(self.settings.turn_timeout_s)
        reply.worker = self._answer(reply)
        self.query_one("#log", VerticalScroll).scroll_end(animate=False)
        self._show(reply)
        self.refresh_bindings()

    @work(group="bot")
    async def _answer(self, view: MessageView) -> None:
        self._pending_reply = ""  # the last turn's text must not leak into this one
        self._streaming = view
        try:
            stored, outcome, _failure = await self.session.bot_turn(
                lambda event: self._follow(view, event), turn=view.turn, deadline_s=self.settings.turn_timeout_s
            )
        except asyncio.CancelledError:
            view.cancelled()
            self._redraw(view)
            raise
        finally:
            self._streaming = None
            self.refresh_bindings()
        self._flush_reply()
        view.turn, view.state, view.error = stored, stored.state, stored.error
        view.content = stored.content
        view.refresh(layout=True)
        self._refresh_side(view)
        if outcome is None:
            self._say(Text(f"the bot's turn failed; {RETRY_KEY} runs it again, or send another message", style="red"))
            return
        self._say(f"reply in {outcome.seconds:.1f} s ({outcome.requests} requests); judging it…")
        self._judge(view)

    def _follow(self, view: MessageView, event) -> None:
        if isinstance(event, StepStarted):
            view.step_state[event.step] = "running"
            view.step_started = time.perf_counter()
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
        elif isinstance(event, TurnCompleted):
            return
        self._redraw(view)

    def _flush_reply(self) -> None:
        view = self._streaming
        if view is not None and self._pending_reply and self._pending_reply != view.content:
            view.content = self._pending_reply
            view.refresh(layout=True)

    def _tick(self) -> None:
        """Running work shows its spinner and clocks move, also while a step is silent."""
        for view in self._working():
            view.refresh()
            if self.selected is view and view.role == "assistant":
                self.query_one("#steps", Static).update(self._steps_panel(view))

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
            self._say(Text(f"Grice judging failed: {exc}", style="red"))
            return
        view.grice = judgment
        view.refresh(layout=True)
        self._say(Text(f"judged ({judgment.strategy}) in {judgment.seconds:.1f} s, {judgment.calls} calls"))
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
        except asyncio.CancelledError:
            view.cancelled()
            self._redraw(view)
            raise
        except ArgtuiError as exc:
            view.state, view.status, view.components = "failed", str(exc), None
            self._redraw(view)
            return
        finally:
            self.refresh_bindings()
        view.components = results
        view.state = "done"
        self._redraw(view)

    # ------------------------------------------------------------ stopping and retrying

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_turn":
            return bool(self._working())
        if action == "back":
            return not self._working()
        if action == "retry":
            return self.session is not None and self._retry_target() is not None
        if action == "open_transcript":  # shown while a labelled message is selected: the footer is short
            return self.selected is not None and bool(self.selected.components)
        return True

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_stop_turn(self) -> None:
        """Asks first: stop the running work and stay, stop it and leave, or keep waiting."""
        bot = self._bot_working()
        if bot is not None:
            step = bot.running_step
            doing = f"at {STEP_TITLES[step]}, " if step else ""
            question = Text(f"The bot is answering ({doing}{time.perf_counter() - bot.started:.0f} s so far). "
                            "Stop its turn? The message keeps a Retry.")
        else:
            question = Text("Your message is still being labelled. Stop the labelling? The message keeps a Retry.")
        answers = [Answer("stop", "Stop", "s"), Answer("leave", "Stop and leave", "l"),
                   Answer("wait", "Keep waiting", "w")]

        def answered(answer: str | None) -> None:
            working = self._working() if answer in ("stop", "leave") else []
            for view in working:
                view.worker.cancel()  # cancels the client's requests in flight too
            if working:
                self._say(f"stopped; {RETRY_KEY} runs it again")
            if answer == "leave":
                self.app.pop_screen()

        self.app.push_screen(ChoiceDialog(question, answers), answered)

    def _pair(self, view: MessageView) -> tuple[MessageView | None, MessageView | None]:
        return (view, view.reply) if view.role == "user" else (view.message, view)

    def _needs_label(self, message: MessageView | None) -> bool:
        return message is not None and message.state in UNFINISHED

    def _needs_answer(self, reply: MessageView | None) -> bool:
        return reply is not None and reply.state in UNFINISHED

    def _retry_target(self) -> tuple[MessageView | None, MessageView | None] | None:
        """The selected message's turn when it has something to run again, else the latest such turn."""
        candidates = [self.selected] if self.selected is not None else []
        candidates += reversed(self._views())
        for view in candidates:
            message, reply = self._pair(view)
            if self._needs_label(message) or self._needs_answer(reply):
                return message, reply
        return None

    def action_retry(self) -> None:
        target = self._retry_target()
        if self.session is None or target is None:
            self._say("nothing to retry" if self.session else "not ready yet: the backend is still starting")
            return
        message, reply = target
        if self._needs_label(message):
            self._start_label(message)
        if self._needs_answer(reply):
            if self._bot_working():
                self._say(f"the bot is answering another turn; {RETRY_KEY} again when it is done")
            else:
                self._say("the bot is answering…")
                self._start_answer(message, reply)

    # ------------------------------------------------------------ side panel

    def _say(self, message: str | Text) -> None:
        if self.app.is_running:  # else the app is closing and its widgets are going
            self.query_one("#status", Static).update(message)

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
        self.refresh_bindings()
        self._refresh_side(view)
        tabs = self.query_one(TabbedContent)
        if view.role == "user":
            tabs.active = "components-tab"
        elif tabs.active == "components-tab":
            tabs.active = "steps-tab"

    def _refresh_side(self, view: MessageView) -> None:
        if not self.app.is_running:  # the app is closing and its widgets are going
            return
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
                waiting = {"running": "labelling…", "failed": "labelling failed"}.get(view.state)
                options.add_option(Option(waiting or "labelling cancelled", disabled=True))

    def _steps_panel(self, view: MessageView):
        lines = Text()
        marks = {"done": ("✓", "green"), "running": (spinner(view.started), "yellow"), "failed": ("✗", "red"),
                 "cancelled": ("■", "yellow")}
        for step, title in self.level.steps:
            state = view.step_state.get(step, "")
            mark, style = marks.get(state, ("·", "dim"))
            seconds = time.perf_counter() - view.step_started if state == "running" else view.step_seconds.get(step)
            lines.append(f"{mark} {title}", style=style)
            lines.append(f"  {seconds:.1f} s" if seconds is not None else "", style="dim")
            lines.append(f"  {state}\n" if state in UNFINISHED else "\n", style=style)
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
            # A context row is the hit a chain starts from: shown, never offered for selection.
            how = Text(f"Q{row.query} {row.strategy}\n{relation}", style="dim")
            if row.context:
                how.append("\ncontext", style="italic")
            table.add_row(
                Text(use, style="bold green" if use == "used" else ""),
                how,
                Text.assemble((row.text, "dim" if row.context else ""), (f"\n{row.id} · {row.topic}", "dim")),
            )
        return table

    def _grice_panel(self, view: MessageView):
        hint = Text(f"{QUESTIONS_KEY} {'hides' if self.show_questions else 'shows'} the question behind each answer",
                    style="dim")
        if view.error:
            return Text(f"No reply to judge: {view.error}", style="red")
        metrics = view.grice.metrics if view.grice is not None else {}
        if not metrics and not self.show_questions:
            return Group(Text("Judging starts when the reply is complete.", style="dim"), hint)
        parts = []
        for metric in METRICS:
            judgment = metrics.get(metric)
            if judgment is None and not self.show_questions:
                continue
            head = Text(metric.capitalize(), style="bold")
            if judgment is None:
                head.append("  not judged yet", style="dim")
            else:
                head.append(f"  {judgment.answer or 'invalid'}")
                head.append(f"  P(yes) {judgment.p_yes:.2f}" if judgment.p_yes is not None else "", style="dim")
                head.append(f"  [{judgment.method}]", style="dim")
            parts.append(head)
            if self.show_questions:
                parts.append(Text(QUESTIONS[metric].question, style="cyan"))
            if judgment is not None:
                parts.append(Text(judgment.rationale or judgment.error or "", style="italic"))
            parts.append(Text(""))
        return Group(*parts, hint)

    def action_toggle_questions(self) -> None:
        self.show_questions = not self.show_questions
        replies = [view for view in self._views() if view.role == "assistant"]
        view = self.selected if self.selected is not None and self.selected.role == "assistant" else None
        view = view or (replies[-1] if replies else None)
        if view is not None:
            self._show(view)
        self.query_one("#side", TabbedContent).active = "grice-tab"

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
    NewDebateScreen #start { width: 3fr; padding: 0 1; }
    NewDebateScreen #past { width: 2fr; padding: 0 1; }
    NewDebateScreen #claims { height: 1fr; }
    NewDebateScreen #debates { height: 1fr; }
    NewDebateScreen RadioSet { layout: horizontal; height: auto; }
    NewDebateScreen RadioSet > RadioButton { width: auto; margin-right: 1; }
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
                yield Label("Pick a claim or type one; Enter starts")
                yield Input(value=self.preset_claim or "", placeholder="a claim to debate…", id="claim-input")
                with RadioSet(id="side"):
                    yield RadioButton("I argue pro", value=self.preset_side == "pro", id="pro")
                    yield RadioButton("I argue con", value=self.preset_side == "con", id="con")
                default = default_level(services(self).profile(getattr(self.app, "backend_name", None)))
                with RadioSet(id="level"):
                    for level in LEVELS:
                        yield RadioButton(
                            f"{level.number} {level.name}", value=level.number == default, id=f"level-{level.number}"
                        )
                yield Static(id="level-description")
                yield OptionList(Option("loading claims…", disabled=True), id="claims")
            with Vertical(id="past"):
                yield Label("Past debates; Enter continues")
                yield DataTable(id="debates", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "New debate"
        table = self.query_one("#debates", DataTable)
        table.add_columns("id", "side", "opponent", "turns", "claim")
        for debate, turns in DebateRepository(services(self).db).list():
            table.add_row(
                str(debate.id), debate.user_side, get_level(debate.level).name, str(turns), Text(debate.claim),
                key=str(debate.id),
            )
        self.query_one("#claim-input", Input).focus()
        self._describe_level()
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

    def _level(self) -> OpponentLevel:
        pressed = self.query_one("#level", RadioSet).pressed_button
        return get_level(int(pressed.id.removeprefix("level-")) if pressed is not None else FULL_LEVEL)

    @on(RadioSet.Changed, "#level")
    def _describe_level(self) -> None:
        level = self._level()
        self.query_one("#level-description", Static).update(
            Text(f"Opponent: {level.description}.", style="italic")
        )

    def _start(self, claim: str) -> None:
        claim = claim.strip()
        if not claim:
            self.notify("type a claim or pick one from the list", severity="warning")
            return
        debate = DebateRepository(services(self).db).create(
            claim, self._side(), backend=getattr(self.app, "backend_name", ""), level=self._level().number
        )
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
