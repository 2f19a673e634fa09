"""Debate: argue a claim against the retrieval-augmented bot, turn by turn.

The student's messages are labelled with argument components (colours) and
every bot reply is judged on the four Grice maxims while the student types.
The side panel follows the focused message: the five pipeline steps with the
strategy card and the evidence for a bot reply, the components (each openable to
its debate transcript) for a student message.

When the backend cannot start, a level-0 debate goes on without a model (the bot answers
from the argument base, nothing is judged) and any other says why it cannot, until a retry.

The debate ends when the student says so (Ctrl+E) or after `[debate] max_turns` exchanges:
its ballot opens (`screens.ballot`), and from then on the debate is read-only.

What the screen shows lives in `screens/debate_state.py`, how each part is drawn in
`screens/widgets/`. A send (or a retry) is one call into the exchange
(`engines.debate.exchange`), run in a worker; this module only renders its events.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import aclosing
from typing import TYPE_CHECKING, Awaitable, Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Header, Input, OptionList, Static, TabbedContent, TabPane, Tabs

from engines.components.segmentation import segment
from engines.components.types import METHODS as COMPONENT_METHODS
from engines.debate.levels import LEVELS, OpponentLevel, get_level
from engines.debate.messages import count_words, split_message, trim_message
from engines.debate.exchange import (
    BotProgress,
    CoachFailed,
    CoachProgress,
    CoachScored,
    CoachStarted,
    ComponentLabelled,
    DebateExchange,
    Emit,
    ExchangeDone,
    ExchangeEvent,
    GriceFailed,
    GriceStarted,
    GriceStored,
    LabellingFailed,
    LabellingStarted,
    LabelsStored,
    MaximJudged,
    MessageStored,
    ReplyStarted,
    ReplyStored,
)
from engines.debate.opponent import DraftWriting, ReplyProgress, ReplyRejected, TurnCompleted
from engines.debate.records import ComponentRecord, DebateRecords, GriceRecord
from engines.debate.session import DebateSession, JudgingChoice
from engines.debate.settings import DebateSettings
from engines.errors import ArgtuiError
from engines.grice.judge import STRATEGIES as GRICE_STRATEGIES
from engines.student.ratings import level_rating, student_rating
from screens.choice import Answer, ChoiceDialog
from screens.debate_state import (
    NO_MODEL,
    DebateState,
    Message,
    drafting_text,
    players_title,
    turns_text,
)
from screens.demo_notice import DemoNotice
from screens.glossary import component_method_title, grice_strategy_title
from screens.mounted import MountedScreen
from screens.services import services
from screens.widgets.chips import chip_legend
from screens.widgets.coach import CoachPanel
from screens.widgets.evidence import EvidencePanel
from screens.widgets.judgment import GricePanel
from screens.widgets.parts import ComponentList
from screens.widgets.strategy import StepsPanel
from screens.widgets.transcript import RETRY_KEY, TICK_S, MessageView, component_transcript
from store import StoreError
from store.debates import Debate, DebateRepository, TurnState
from store.students import StudentRepository

if TYPE_CHECKING:  # named in annotations only: the tasks load as the exchange opens
    from engines.tasks.inspire_turns import TurnJudgment

REPLY_REFRESH_S = 0.05  # stream the reply at about 20 updates per second
QUESTIONS_KEY = "F2"
NOTICE_KEY = "F8"
COACH_DETAILS_KEY = "F6"
END_KEY = "Ctrl+E"
EMPTY_MESSAGE = "Type a message first"
# The side panel's tabs, named once; app.tcss fits them whole in its narrowest width (at 80×24).
SIDE_TABS = {"steps-tab": "Steps", "evidence-tab": "Evidence", "grice-tab": "Grice", "components-tab": "Parts",
             "coach-tab": "Coach"}
STILL_STARTING = "not ready yet: the backend or the index is still starting"
NO_MODEL_LEVEL = next(level for level in LEVELS if not level.needs_model)  # what a debate without a model can be


def reason_line(error: str) -> str:
    """What went wrong, in one line: a server that did not start quotes its log after it."""
    return error.partition("\n")[0].rstrip(":")


class TranscriptScreen(ModalScreen):
    """A component's manager distribution, the debate transcript and the judge's reason."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, component: ComponentRecord):
        super().__init__()
        self.component = component

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            for line in component_transcript(self.component):
                yield Static(line)
            yield Static(Text("Esc closes.", style="dim"))


class DebateScreen(MountedScreen):
    # Esc goes back one level: from the side panel to the message box; then "Stop turn" while
    # work on a turn runs (it asks first, and offers to leave), "Back" otherwise.
    BINDINGS = [
        Binding("escape", "to_message", "To message", tooltip="Back to the message box"),
        Binding("escape", "stop_turn", "Stop turn"),
        Binding("escape", "back", "Back"),
        Binding("ctrl+r", "retry", "Retry", tooltip="Run a failed or cancelled turn again, or try the backend again"),
        Binding("ctrl+t", "open_transcript", "Transcript", tooltip="Open a component's debate transcript"),
        # Over the message box's own Ctrl+E (to the end of the line, which End does too).
        Binding("ctrl+e", "end_debate", "End debate", priority=True,
                tooltip="End the debate and see its ballot (once it has ended: the ballot again)"),
        Binding("ctrl+l", "focus_input", "Type", show=False, tooltip="Back to the message box"),
        # Ctrl+G, Ctrl+O and F2 are listed on the line that shows what they change, not in the short footer.
        Binding("ctrl+g", "next_grice_strategy", "Grice", show=False, tooltip="Judge later replies with the next Grice strategy"),
        Binding("ctrl+o", "next_component_method", "Method", show=False,
                tooltip="Label later messages with the next component method"),
        Binding("f2", "toggle_questions", "Questions", show=False,  # Ctrl+K deletes to the end of the message box
                tooltip="Show or hide the question behind each Grice answer"),
        Binding("f4", "next_tab", "Tabs", key_display="f3/f4", tooltip="Next tab of the side panel"),
        Binding("f3", "previous_tab", "Previous panel", show=False, tooltip="Previous tab of the side panel"),
        Binding("f8", "toggle_notice", "Demo notice", show=False, tooltip="Show the whole demo notice or one line"),
        Binding("f6", "toggle_coach_details", "Coach details", show=False,  # the Coach tab names it
                tooltip="Show or hide what the Coach could not read (parser diagnostics, unreadable answers)"),
    ]

    def __init__(self, debate_id: int):
        super().__init__()
        self.debate_id = debate_id
        self.debate: Debate | None = None  # loaded on mount
        self.session: DebateSession | None = None
        self.exchange: DebateExchange[TurnJudgment] | None = None  # what a send or a retry runs
        self.open_failure: str | None = None  # why the session could not open (None: open, or opening)
        self._note: Static | None = None  # in the conversation: why the debate cannot go on, or goes on unjudged
        self.state = DebateState()
        self._streaming: MessageView | None = None
        self._pending_reply = ""
        self._queued: list[str] = []  # the parts of a split message not sent yet
        self._ending = False  # the student ended the debate while its last turn was still worked on
        self._closed_reason = ""  # why the message box takes no more messages ("": it does)
        self._exchanges_running = 0  # calls into the exchange not over yet: the debate ends after them
        self._players = ""  # the header's student and opponent with their ratings
        self.choice = JudgingChoice()  # the one copy, shared with the session: later turns are judged so

    def compose(self) -> ComposeResult:
        yield Header()
        yield DemoNotice(compact=True, expand_key=NOTICE_KEY)
        yield Static(id="claim")
        yield Static(id="judges")
        with Horizontal(id="body"):
            with Vertical(id="conversation"):
                yield VerticalScroll(id="log")
                yield Static(chip_legend("parts:"), id="legend")
                yield Static("", id="status")
                yield Input(placeholder="Your argument… (Enter sends)", id="message")
            with TabbedContent(id="side", initial="steps-tab"):
                with TabPane(SIDE_TABS["steps-tab"], id="steps-tab"):
                    yield VerticalScroll(StepsPanel(id="steps"))
                with TabPane(SIDE_TABS["evidence-tab"], id="evidence-tab"):
                    yield VerticalScroll(EvidencePanel(id="evidence"))
                with TabPane(SIDE_TABS["grice-tab"], id="grice-tab"):
                    yield VerticalScroll(GricePanel(QUESTIONS_KEY, id="grice"))
                with TabPane(SIDE_TABS["components-tab"], id="components-tab"):
                    yield ComponentList(id="component-list")
                with TabPane(SIDE_TABS["coach-tab"], id="coach-tab"):
                    yield VerticalScroll(CoachPanel(COACH_DETAILS_KEY, enabled=self.settings.coach, id="coach"))
        yield Footer(compact=True)

    @property
    def settings(self) -> DebateSettings:
        return services(self).debate_settings

    @property
    def level(self) -> OpponentLevel:
        """The opponent level the debate was started with."""
        assert self.debate is not None, "the debate is loaded on mount"
        return get_level(self.debate.level)

    @property
    def grice_strategy(self) -> str:
        return self.choice.grice_strategy

    @property
    def component_method(self) -> str | None:
        """None until the session opens and picks the backend's default."""
        return self.choice.component_method

    @property
    def judging_off(self) -> bool:
        """The session is open without a model: the bot answers, nothing is judged."""
        return self.session is not None and self.session.judging_off is not None

    @property
    def ended(self) -> bool:
        """Ended by the student or after its last turn: read-only."""
        return self.debate is not None and self.debate.ended_at is not None

    def _rate_players(self) -> None:
        """The header's student (when one argues) and opponent level, rated as they stand now."""
        db = services(self).db
        student = StudentRepository(db).by_id(self.debate.student_id) if self.debate.student_id is not None else None
        self._players = players_title(self.level, level_rating(db, self.level.number),
                                      student.name if student else None, student_rating(db, student.id) if student else 0)

    def _show_methods(self) -> None:
        self.sub_title = f"Debate · {self._players} · {turns_text(self.state.turn_count)} of {self.settings.max_turns}"
        if self.judging_off:
            judges = Text.assemble(("Judging off", "bold yellow"), f" (Grice, parts, Coach): {NO_MODEL}",
                                   (f" · {RETRY_KEY} tries again", "dim"))
        else:
            judges = Text.assemble(
                "Grice judge: ", (grice_strategy_title(self.grice_strategy), "bold"), (" ^g · f2 why", "dim"),
                " · parts: ", (component_method_title(self.component_method) if self.component_method
                               else "the backend's default", "bold"), (" ^o", "dim"),
            )
        self.query_one("#judges", Static).update(judges)

    def _cycle(self, current: str | None, choices: tuple[str, ...]) -> str:
        """The choice after `current`; the first after none."""
        return choices[(choices.index(current) + 1) % len(choices)] if current in choices else choices[0]

    def action_next_grice_strategy(self) -> None:
        """Later replies are judged with the next strategy."""
        self.choice.grice_strategy = self._cycle(self.grice_strategy, GRICE_STRATEGIES)
        self._show_methods()

    def action_next_component_method(self) -> None:
        """Later messages are labelled with the next method."""
        self.choice.component_method = self._cycle(self.component_method, COMPONENT_METHODS)
        self._show_methods()

    def on_mount(self) -> None:
        repository = DebateRepository(services(self).db)
        debate = repository.get(self.debate_id)
        if debate is None:
            self.notify(f"no debate {self.debate_id}", severity="error")
            self.app.pop_screen()
            return
        self.debate = debate
        bot_side = "con" if debate.user_side == "pro" else "pro"
        self.query_one("#claim", Static).update(Text.assemble(
            ("Claim: ", "bold"), debate.claim, f"   you: {debate.user_side}, bot: {bot_side}"
        ))
        self.state = DebateState.opened(DebateRecords(repository).turns(debate.id), self.level.steps)
        self._rate_players()
        self._show_methods()
        log = self.query_one("#log", VerticalScroll)
        log.mount_all([MessageView(message) for message in self.state.messages])
        log.anchor()  # the latest turn stays in view as replies grow and the terminal resizes
        self._show_parts()
        self.query_one(Input).focus()
        self.set_interval(REPLY_REFRESH_S, self._flush_reply)
        self.set_interval(TICK_S, self._tick)
        if self.ended:  # nothing more is said or judged: no backend needed
            self._show_ended()
            return
        if self.state.exchanges_done >= self.settings.max_turns:  # played before the limit was lowered
            self._close_message_box(f"all {self.settings.max_turns} turns are played: {END_KEY} ends the debate")
        self._open_session()

    def on_screen_resume(self) -> None:
        """Back from the ballot: it moved the ratings."""
        if self.debate is not None:
            self._rate_players()
            self._show_methods()

    @work(exclusive=True, group="session")
    async def _open_session(self) -> None:
        """Connect to the debate's backend and open the argument index. A level that needs no
        model opens without one when the backend cannot start; any other failure is kept (and
        shown) until a retry."""
        debate = self.debate
        self.open_failure = None
        self._say("connecting to the backend and opening the argument index…")
        self.refresh_bindings()
        client, no_model = None, ""
        try:
            client = await services(self).client(debate.backend or None)
        except ArgtuiError as exc:
            if self.level.needs_model:
                self._cannot_debate(reason_line(str(exc)), backend=True)
                return
            no_model = reason_line(str(exc))
        try:
            self.exchange = await services(self).debate_exchange(
                debate, client, no_model_reason=no_model, choice=self.choice,
                on_progress=lambda p: self._say(f"building the argument index: {p.done}/{p.total}"),
            )
        except ArgtuiError as exc:
            self._cannot_debate(reason_line(str(exc)), backend=False)
            return
        self.session = self.exchange.session
        self._show_methods()
        self._show_judging()
        retries = f"; {RETRY_KEY} retries a turn" if self.state.has_unfinished() else ""
        self._say(self._closed_reason or "ready: type your argument and press Enter" + retries)
        self.refresh_bindings()
        if self.judging_off:
            return
        self._prepare_judges()
        unjudged = [message.turn for message in self.state.messages  # what an earlier session left undone
                    if message.role == "assistant" and message.state == TurnState.DONE and message.grice is None]
        if unjudged:
            self._run_exchange(lambda emit: self.exchange.judge(unjudged, emit))

    @work(group="prepare", exit_on_error=False)
    async def _prepare_judges(self) -> None:
        """The judges' shared work while the student writes; a failure is left for the first turn
        that needs the work, which asks again and shows it."""
        try:
            await self.exchange.prepare()
        except (ArgtuiError, StoreError):
            pass

    def _cannot_debate(self, reason: str, backend: bool) -> None:
        """The session did not open: the reason in the status line and, whole, in the conversation,
        with what to do."""
        self.open_failure = reason
        self._say(self._cannot_debate_line())
        advice = [f"{RETRY_KEY} tries again."]
        if backend:
            advice.append(f"Level {NO_MODEL_LEVEL.number} ({NO_MODEL_LEVEL.name}) needs no model: Esc, then start a "
                          f"debate at level {NO_MODEL_LEVEL.number}. Or use another backend: argtui --backend NAME.")
        self._show_note(Text.assemble(("Cannot debate: ", "bold red"), reason, "\n", " ".join(advice)))
        self.refresh_bindings()

    def _cannot_debate_line(self) -> Text:
        return Text(f"cannot debate ({RETRY_KEY} tries again): {self.open_failure}", style="red")

    def _show_judging(self) -> None:
        """Where the session has no model, each part it cannot judge says so, and a note in the
        conversation why; once a model answers, what was left unjudged can be judged."""
        coach = self.query_one(CoachPanel)
        if not self.judging_off:
            if self._note is None:  # nothing was off
                return
            self._note.remove()
            self._note = None
            coach.show_off(None)
            for view in self._views():
                if view.message.judging_off:
                    view.message.judging_off = ""
                    if view.message.role == "user" and view.message.components is None:
                        view.message.state = TurnState.CANCELLED  # Retry labels it
                    self._redraw(view)
            return
        coach.show_off(NO_MODEL)
        self._show_note(Text.assemble(
            ("No model answers: ", "bold yellow"), self.session.judging_off, "\n",
            "The bot still answers from the argument base; the judging needs a model.",
        ))
        for view in self._views():  # replies an earlier session left unjudged
            if view.message.role == "assistant" and view.message.state == TurnState.DONE and view.message.grice is None:
                view.message.judging_off = NO_MODEL
                self._redraw(view)

    def _show_note(self, text: Text) -> None:
        log = self.query_one("#log", VerticalScroll)
        if self._note is None:
            self._note = Static(id="note")
            log.mount(self._note)
        self._note.update(text)
        log.scroll_end(animate=False)

    # ------------------------------------------------------------ sending

    def _views(self) -> list[MessageView]:
        return list(self.query(MessageView))

    def _view_of(self, message: Message | None) -> MessageView | None:
        return next((view for view in self._views() if view.message is message), None) if message else None

    @on(Input.Changed, "#message")
    def show_word_count(self, event: Input.Changed) -> None:
        """The word count shows as the message nears the limit."""
        words, limit = count_words(event.value), self.settings.max_message_words
        event.input.border_subtitle = f"{words}/{limit} words" if words > limit * 0.8 else ""
        event.input.set_class(words > limit, "-over")

    @on(Input.Submitted, "#message")
    def send(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if self._closed_reason:
            self._say(Text(f"not sent: {self._closed_reason}", style="yellow"))
            return
        if not text:
            self._say(Text(EMPTY_MESSAGE, style="yellow"))
            return
        if self.session is None:
            if self.open_failure is None:
                self._say(STILL_STARTING)
            else:
                self._say(Text.assemble("not sent, ", self._cannot_debate_line()))
            return
        if self.state.bot_working():
            self._say("the bot is still answering; your draft stays in the box")
            return
        if count_words(text) > self.settings.max_message_words:
            self._offer_shorter(text)
            return
        event.input.value = self._queued.pop(0) if self._queued else ""
        self._say(f"the next part is in the box; {len(self._queued)} more after it" if event.input.value
                  else "the bot is answering…")
        self._run_exchange(lambda emit: self.exchange.send(text, emit))

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

    # ------------------------------------------------------------ the exchange's events

    @work(group="exchange")
    async def _run_exchange(self, run: Callable[[Emit[TurnJudgment]], Awaitable[object]]) -> None:
        """Render the events of one call into the exchange; stopped, what it left running shows as
        cancelled, as the exchange stores it."""
        touched: list[Message] = []
        self._exchanges_running += 1
        try:
            async with aclosing(self.exchange.events(run)) as events:
                async for event in events:
                    self._show_event(event, touched)
        except asyncio.CancelledError:
            self._streaming = None
            for message in touched:
                message.grice_started = None  # its judging stopped too
                if message.state == TurnState.RUNNING:
                    message.cancel()
                    self._redraw(self._view_of(message))
            raise
        except (ArgtuiError, StoreError) as exc:
            self._say(Text(f"the turn stopped: {exc}", style="red"))
        finally:
            self._exchanges_running -= 1
            self.refresh_bindings()
            if not self._exchanges_running:
                self._end_if_due()

    def _show_event(self, event: ExchangeEvent[TurnJudgment], touched: list[Message]) -> None:
        if isinstance(event, MessageStored):
            message = self.state.add_message(event.turn)
            if self.judging_off:
                message.state, message.judging_off = TurnState.DONE, NO_MODEL
            self.query_one("#log", VerticalScroll).mount(MessageView(message))
            self._show_methods()
        elif isinstance(event, ReplyStarted):
            message = self._started_reply(event)
        elif isinstance(event, CoachStarted | CoachProgress | CoachScored | CoachFailed):
            self._coach(event)
            return
        elif isinstance(event, ExchangeDone):
            return
        else:
            message = self.state.message_of(event.turn.id)
            if message is None:
                return
            self._follow(message, event)
        touched.append(message)
        self._redraw(self._view_of(message))
        self.refresh_bindings()

    def _started_reply(self, event: ReplyStarted) -> Message:
        """The bot's turn starts: a new message after the student's, or the failed one's place."""
        message = self.state.message_of(event.message.id)
        reply = message.reply
        if reply is None:
            reply = self.state.add_reply(message)
            self.query_one("#log", VerticalScroll).mount(MessageView(reply), after=self._view_of(message))
        reply.turn = event.turn
        reply.begin(event.limit_s)
        self._pending_reply = ""  # the last turn's text must not leak into this one
        self._streaming = self._view_of(reply)
        self.query_one("#log", VerticalScroll).scroll_end(animate=False)
        self._show(self._streaming)
        return reply

    def _follow(self, message: Message, event: ExchangeEvent[TurnJudgment]) -> None:
        """What an event changes of its message, and the status line."""
        if isinstance(event, BotProgress):
            progress = event.event
            if isinstance(progress, ReplyProgress):  # a draft that passed its checks, or the reply itself
                message.drafting = None
                self._pending_reply = progress.text  # flushed by the timer
            elif isinstance(progress, ReplyRejected):  # its text goes from the bubble; the next draft streams
                message.drafting, message.streamed, self._pending_reply = None, "", ""
                self._say(f"draft {progress.attempt} rejected: {progress.reason}")
            elif not isinstance(progress, TurnCompleted):
                message.follow(progress)
                if isinstance(progress, DraftWriting):
                    self._pending_reply = progress.text  # streams into the bubble, marked as a draft
                    self._say(drafting_text(progress))
        elif isinstance(event, ReplyStored):
            self._flush_reply()
            self._streaming = None
            stored = event.turn
            message.turn, message.state = stored, stored.state
            if event.bot is None:
                self._say(Text(f"the bot's turn failed; {RETRY_KEY} runs it again, or send another message",
                               style="red"))
            elif self.judging_off:
                message.judging_off = NO_MODEL
                self._say(f"reply in {event.bot.seconds:.1f} s, from the argument base; not judged: {NO_MODEL}")
            else:
                self._say(f"reply in {event.bot.seconds:.1f} s ({event.bot.requests} requests); judging it…")
            if event.bot is not None and self.state.exchanges_done >= self.settings.max_turns:
                self._close_message_box(f"that was the last of {self.settings.max_turns} turns: "
                                        "the ballot follows once it is judged")
        elif isinstance(event, LabellingStarted):
            message.begin()
            message.labels_after_reply = event.after_reply
            message.components_total = len(segment(event.turn.content))  # what the labelling labels
        elif isinstance(event, ComponentLabelled):
            message.components = sorted([*(message.components or []), event.component], key=lambda c: c.span.start)
        elif isinstance(event, LabelsStored):
            message.components, message.state = list(event.components), TurnState.DONE
        elif isinstance(event, LabellingFailed):
            message.state, message.status, message.components = TurnState.FAILED, event.error, None
        elif isinstance(event, GriceStarted):
            message.grice, message.grice_error = GriceRecord(strategy=event.strategy), ""  # no maxim yet
            message.grice_started = time.perf_counter()
        elif isinstance(event, MaximJudged):
            judged = message.grice  # GriceStarted came first
            message.grice = judged.model_copy(update={"metrics": {**judged.metrics, event.metric.metric: event.metric}})
        elif isinstance(event, GriceStored):
            message.grice, message.grice_started = event.result, None
            self._say(Text(f"judged ({grice_strategy_title(event.result.strategy)}) in "
                           f"{event.result.seconds:.1f} s, {event.result.calls} calls"))
        elif isinstance(event, GriceFailed):
            message.grice_error, message.grice_started = event.error, None
            self._say(Text(f"Grice judging failed: {event.error}", style="red"))

    def _coach(self, event: CoachStarted | CoachProgress | CoachScored[TurnJudgment] | CoachFailed) -> None:
        panel = self.query_one(CoachPanel)
        if isinstance(event, CoachStarted):
            panel.post_message(CoachPanel.Scoring())
        elif isinstance(event, CoachProgress):
            panel.post_message(CoachPanel.Progress(event.done, event.total))
        elif isinstance(event, CoachScored):
            panel.post_message(CoachPanel.Scored(event.judgment, event.debate_overall))
        else:
            panel.post_message(CoachPanel.Failed(event.error))

    def _flush_reply(self) -> None:
        view = self._streaming
        if view is not None and self._pending_reply and self._pending_reply != view.message.streamed:
            view.message.streamed = self._pending_reply
            view.refresh(layout=True)

    def _tick(self) -> None:
        """Running work shows its spinner and clocks move, also while a step is silent."""
        for message in [*self.state.working(), *self.state.judging()]:
            view = self._view_of(message)
            if view is not None:
                view.refresh()

    # ------------------------------------------------------------ stopping and retrying

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not super().check_action(action, parameters):  # the widgets are not there (yet)
            return False
        if action == "to_message":
            return self._in_side_panel()
        if action == "stop_turn":
            return bool(self.state.working())
        if action == "back":
            return not self.state.working()
        if action == "retry":  # a turn to run again, or the backend to try again
            return not self.ended and (self.open_failure is not None or self.judging_off or (
                self.session is not None and self.state.retry_target() is not None))
        if action == "open_transcript":  # shown once a message has components: the footer is short
            return self.state.transcript_message() is not None
        return True

    def _in_side_panel(self) -> bool:
        focused = self.focused
        return focused is not None and self.query_one("#side", TabbedContent) in focused.ancestors_with_self

    def action_to_message(self) -> None:
        self.query_one("#message", Input).focus()

    def action_back(self) -> None:
        self.app.pop_screen()

    # ------------------------------------------------------------ ending

    def action_end_debate(self) -> None:
        """End the debate and open its ballot, once the turn worked on is judged; an ended
        debate's ballot opens again."""
        if self.ended:
            self._open_ballot()
        elif not self.state.exchanges_done:
            self._say("nothing to judge yet: the debate can end once the bot has answered a message")
        elif self._exchanges_running:
            self._ending = True
            self._close_message_box("the debate ends once the last turn is judged")
            self._say(self._closed_reason)
        else:
            self._end()

    def _end_if_due(self) -> None:
        """No turn is worked on any more: the debate ends if the student asked, or all its turns are played."""
        if self.ended or self not in self.app.screen_stack:  # ended, or left (or closing)
            return
        if self._ending or self.state.exchanges_done >= self.settings.max_turns:
            self._end()

    def _end(self) -> None:
        """Stored as ended (the ballot does it too; once is kept), read-only from now on; the ballot opens."""
        self.debate = DebateRepository(services(self).db).end(self.debate_id)
        self._show_ended()
        self._open_ballot()

    def _open_ballot(self) -> None:
        from screens.ballot import BallotScreen  # its task and the ratings load when a ballot is asked for

        self.app.push_screen(BallotScreen(self.debate_id))

    def _close_message_box(self, why: str) -> None:
        """No more messages: the box says why, and so does a send."""
        self._closed_reason = why
        self.query_one("#message", Input).placeholder = why

    def _show_ended(self) -> None:
        """An ended debate: a line after its turns says so, and how to see the ballot again."""
        self._close_message_box(f"the debate has ended: {END_KEY} shows its ballot")
        log = self.query_one("#log", VerticalScroll)
        log.mount(Static(Text.assemble(
            ("The debate has ended", "bold"), f" after {turns_text(self.state.exchanges_done)}",
            f" ({self.debate.ended_at:%Y-%m-%d %H:%M} UTC). {END_KEY} shows its ballot again.",
        ), id="ended"))
        log.scroll_end(animate=False)
        self._say(self._closed_reason)
        self.refresh_bindings()

    def _switch_tab(self, step: int) -> None:
        """The next (or previous) tab, and the focus on the tabs: Esc goes back to the message box."""
        tabs = self.query_one("#side", TabbedContent)
        ids = list(SIDE_TABS)
        tabs.active = ids[(ids.index(tabs.active) + step) % len(ids)]
        tabs.query_one(Tabs).focus()

    def action_next_tab(self) -> None:
        self._switch_tab(1)

    def action_previous_tab(self) -> None:
        self._switch_tab(-1)

    def action_toggle_notice(self) -> None:
        self.query_one(DemoNotice).toggle()

    def action_stop_turn(self) -> None:
        """Asks first: stop the running work and stay, stop it and leave, or keep waiting."""
        bot = self.state.bot_working()
        if bot is not None:
            step = bot.running_step
            doing = f"at {bot.step_titles.get(step, step)}, " if step else ""
            question = Text(f"The bot is answering ({doing}{time.perf_counter() - bot.started:.0f} s so far). "
                            "Stop its turn? The message keeps a Retry.")
        else:
            question = Text("Your message is still being labelled. Stop the labelling? The message keeps a Retry.")
        answers = [Answer("stop", "Stop", "s"), Answer("leave", "Stop and leave", "l"),
                   Answer("wait", "Keep waiting", "w")]

        def answered(answer: str | None) -> None:
            if answer not in ("stop", "leave"):
                return
            working = bool(self.state.working())
            self.workers.cancel_group(self, "exchange")  # cancels the client's requests in flight too
            self.query_one(CoachPanel).post_message(CoachPanel.Stopped())
            if working:
                self._say(f"stopped; {RETRY_KEY} runs it again")
            if answer == "leave":
                self.app.pop_screen()

        self.app.push_screen(ChoiceDialog(question, answers), answered)

    def action_retry(self) -> None:
        """Run a failed or cancelled turn again; with no session, or one without a model (and no
        reply to run again), try the backend again."""
        target = self.state.retry_target()
        reply_again = target is not None and target[1] is not None and target[1].unfinished
        if self.session is None or (self.judging_off and not reply_again):
            self._reopen_session()
            return
        if target is None:
            self._say("nothing to retry")
            return
        message, reply = target
        label = message.unfinished and not self.judging_off
        answer = reply is not None and reply.unfinished
        if answer and self.state.bot_working():
            self._say(f"the bot is answering another turn; {RETRY_KEY} again when it is done")
            answer = False
        elif answer:
            self._say("the bot is answering…")
        if label or answer:
            again = reply.turn if answer else None
            self._run_exchange(
                lambda emit: self.exchange.again(message.turn, again, label=label, answer=answer, emit=emit))

    def _reopen_session(self) -> None:
        if self.session is None and self.open_failure is None:
            self._say(STILL_STARTING)
        elif self.state.working():
            self._say(f"the bot is answering; {RETRY_KEY} tries the backend again when it is done")
        else:
            self._open_session()

    # ------------------------------------------------------------ side panel

    def _say(self, status: str | Text) -> None:
        self.state.status = status
        if self.app.is_running:  # else the app is closing and its widgets are going
            self.query_one("#status", Static).update(status)

    def _redraw(self, view: MessageView | None) -> None:
        """A message changed: repaint it, and the side panel's tabs that show that message (None: the
        screen is closing and its views are gone)."""
        if view is None:
            return
        view.changed()
        if view.message is self.state.selected and view.message.role == "assistant":
            self._show_reply(view.message)
        if view.message is self.state.parts_message():
            self._show_parts()

    def on_descendant_focus(self, event) -> None:
        if isinstance(event.widget, MessageView):
            self._show(event.widget)
            tabs = self.query_one(TabbedContent)
            if event.widget.message.role == "assistant" and tabs.active == "components-tab":
                tabs.active = "steps-tab"  # a reply the student moves to is read in its own tabs

    def _show(self, view: MessageView) -> None:
        """The side panel shows this message: a reply in its tabs, a student message (or the one
        the reply answers) in the Parts tab."""
        self.state.selected = view.message
        self.refresh_bindings()
        if view.message.role == "assistant":
            self._show_reply(view.message)
        else:
            self.query_one(TabbedContent).active = "components-tab"
        self._show_parts()

    def _show_reply(self, reply: Message) -> None:
        if not self.app.is_running:  # the app is closing and its widgets are going
            return
        self.query_one(StepsPanel).post_message(StepsPanel.Show(reply, self.level.steps))
        self.query_one(EvidencePanel).post_message(EvidencePanel.Show(reply.evidence))
        self.query_one(GricePanel).post_message(
            GricePanel.Show(reply.grice, reply.error, reply.grice_error, reply.judging_off))

    def _show_parts(self) -> None:
        """The Parts tab follows the student message in view, else the latest."""
        message = self.state.parts_message()
        if message is not None and self.app.is_running:
            self.query_one(ComponentList).post_message(
                ComponentList.Show(message.components, message.state, message.judging_off))

    def action_toggle_coach_details(self) -> None:
        panel = self.query_one(CoachPanel)
        panel.show_details = not panel.show_details
        self.query_one("#side", TabbedContent).active = "coach-tab"

    def action_toggle_questions(self) -> None:
        panel = self.query_one(GricePanel)
        panel.show_questions = not panel.show_questions
        view = self._view_of(self.state.reply_to_explain())
        if view is not None:
            self._show(view)
        self.query_one("#side", TabbedContent).active = "grice-tab"

    # ------------------------------------------------------------ actions

    @on(OptionList.OptionSelected, "#component-list")
    def open_component(self, event: OptionList.OptionSelected) -> None:
        self._open_component(int(event.option.id))

    def action_open_transcript(self) -> None:
        """The component highlighted in the Parts tab, else the message's first."""
        message = self.state.transcript_message()
        if message is None:
            return
        if message is not self.state.parts_message():  # its list is posted, not drawn yet: its first component
            self._show(self._view_of(message))
            self._open_component(0)
            return
        self._open_component(self.query_one(ComponentList).highlighted or 0)

    def _open_component(self, index: int) -> None:
        message = self.state.parts_message()
        if message is not None and message.components and index < len(message.components):
            self.app.push_screen(TranscriptScreen(message.components[index]))

    def action_focus_input(self) -> None:
        self.query_one(Input).focus()
