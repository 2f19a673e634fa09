"""Debate: argue a claim against the retrieval-augmented bot, turn by turn.

The student's messages are labelled with argument components (colours) and
every bot reply is judged on the four Grice maxims, in background workers, so
typing is never blocked. The side panel follows the focused message: the five
pipeline steps with the strategy card and the evidence for a bot reply, the
components (each openable to its debate transcript) for a student message.

When the backend cannot start, a level-0 debate goes on without a model (the bot answers
from the argument base, nothing is judged) and any other says why it cannot, until a retry.

What the screen shows lives in `screens/debate_state.py`, how each part is drawn in
`screens/widgets/`; this module runs the work and keeps the two in step.
"""

from __future__ import annotations

import asyncio
import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Header, Input, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option

from engines.components.types import METHODS as COMPONENT_METHODS
from engines.debate.levels import LEVELS, OpponentLevel, get_level
from engines.debate.messages import count_words, split_message, trim_message
from engines.debate.pipeline import ReplyProgress, TurnCompleted
from engines.debate.records import ComponentRecord, DebateRecords, GriceRecord, MetricRecord
from engines.debate.session import DEFAULT_COMPONENT_METHOD, DEFAULT_GRICE_STRATEGY, DebateSession
from engines.debate.settings import DebateSettings
from engines.errors import ArgtuiError
from engines.grice.judge import STRATEGIES as GRICE_STRATEGIES
from screens.choice import Answer, ChoiceDialog
from screens.debate_state import NO_MODEL, DebateState, Message, turns_text
from screens.demo_notice import DemoNotice
from screens.glossary import component_method_title, grice_strategy_title
from screens.modes import Mode
from screens.services import services
from screens.widgets.chips import chip_legend, label_chip
from screens.widgets.coach import CoachPanel
from screens.widgets.evidence import evidence_view
from screens.widgets.judgment import grice_panel
from screens.widgets.strategy import steps_panel
from screens.widgets.transcript import RETRY_KEY, STEP_TITLES, TICK_S, MessageView, component_transcript
from store.debates import Debate, DebateRepository
from store.grice import GriceRepository

REPLY_REFRESH_S = 0.05  # stream the reply at about 20 updates per second
QUESTIONS_KEY = "F2"
NOTICE_KEY = "F8"
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


class DebateScreen(Screen):
    # Esc goes back one level: from the side panel to the message box; then "Stop turn" while
    # work on a turn runs (it asks first, and offers to leave), "Back" otherwise.
    BINDINGS = [
        Binding("escape", "to_message", "To message", tooltip="Back to the message box"),
        Binding("escape", "stop_turn", "Stop turn"),
        Binding("escape", "back", "Back"),
        Binding("ctrl+r", "retry", "Retry", tooltip="Run a failed or cancelled turn again, or try the backend again"),
        Binding("ctrl+t", "open_transcript", "Transcript", tooltip="Open a component's debate transcript"),
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
    ]

    def __init__(self, debate_id: int):
        super().__init__()
        self.debate_id = debate_id
        self.debate: Debate | None = None  # loaded on mount
        self.session: DebateSession | None = None
        self.open_failure: str | None = None  # why the session could not open (None: open, or opening)
        self._note: Static | None = None  # in the conversation: why the debate cannot go on, or goes on unjudged
        self.state = DebateState()
        self._streaming: MessageView | None = None
        self._pending_reply = ""
        self._queued: list[str] = []  # the parts of a split message not sent yet
        self.grice_strategy = DEFAULT_GRICE_STRATEGY
        self.component_method = DEFAULT_COMPONENT_METHOD
        self.show_questions = False  # the Grice panel shows the question behind each answer

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
                    yield VerticalScroll(Static(id="steps"))
                with TabPane(SIDE_TABS["evidence-tab"], id="evidence-tab"):
                    yield VerticalScroll(Static(id="evidence"))
                with TabPane(SIDE_TABS["grice-tab"], id="grice-tab"):
                    yield VerticalScroll(Static(id="grice"))
                with TabPane(SIDE_TABS["components-tab"], id="components-tab"):
                    yield OptionList(id="component-list")
                with TabPane(SIDE_TABS["coach-tab"], id="coach-tab"):
                    yield VerticalScroll(CoachPanel(enabled=self.settings.coach, id="coach"))
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
    def judging_off(self) -> bool:
        """The session is open without a model: the bot answers, nothing is judged."""
        return self.session is not None and self.session.judging_off is not None

    def _show_methods(self) -> None:
        self.sub_title = f"Debate · opponent {self.level.name} · {turns_text(self.state.turn_count)}"
        if self.judging_off:
            judges = Text.assemble(("Judging off", "bold yellow"), f" (Grice, parts, Coach): {NO_MODEL}",
                                   (f" · {RETRY_KEY} tries again", "dim"))
        else:
            judges = Text.assemble(
                "Grice judge: ", (grice_strategy_title(self.grice_strategy), "bold"), (" ^g · f2 why", "dim"),
                " · parts: ", (component_method_title(self.component_method), "bold"), (" ^o", "dim"),
            )
        self.query_one("#judges", Static).update(judges)

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
        self.state = DebateState.opened(DebateRecords(repository).turns(debate.id))
        self._show_methods()
        log = self.query_one("#log", VerticalScroll)
        log.mount_all([MessageView(message) for message in self.state.messages])
        log.anchor()  # the latest turn stays in view as replies grow and the terminal resizes
        self.query_one(Input).focus()
        self.set_interval(REPLY_REFRESH_S, self._flush_reply)
        self.set_interval(TICK_S, self._tick)
        self._open_session()

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
            retriever = await services(self).retriever(
                lambda p: self._say(f"building the argument index: {p.done}/{p.total}")
            )
        except ArgtuiError as exc:
            self._cannot_debate(reason_line(str(exc)), backend=False)
            return
        db = services(self).db
        self.session = DebateSession(
            DebateRepository(db), debate, client, retriever, no_model_reason=no_model,
            reason_store=GriceRepository(db), grice_strategy=self.grice_strategy,
            component_method=self.component_method,
        )
        self._show_methods()
        self._show_judging()
        retries = f"; {RETRY_KEY} retries a turn" if self.state.has_unfinished() else ""
        self._say("ready: type your argument and press Enter" + retries)
        self.refresh_bindings()
        if self.judging_off:
            return
        for view in self._views():  # resume judging what an earlier session left undone
            if view.message.role == "assistant" and view.message.state == "done" and view.message.grice is None:
                self._judge(view)

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
                        view.message.state = "cancelled"  # Retry labels it
                    self._redraw(view)
            return
        coach.show_off(NO_MODEL)
        self._show_note(Text.assemble(
            ("No model answers: ", "bold yellow"), self.session.judging_off, "\n",
            "The bot still answers from the argument base; the judging needs a model.",
        ))
        for view in self._views():  # replies an earlier session left unjudged
            if view.message.role == "assistant" and view.message.state == "done" and view.message.grice is None:
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
        if not text:
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
        user_view = MessageView(self.state.add_message(text, self.session.add_user_message(text)))
        self.query_one("#log", VerticalScroll).mount(user_view)
        self._show_methods()
        if self.judging_off:
            user_view.message.state, user_view.message.judging_off = "done", NO_MODEL
            user_view.changed()
            self._start_answer(user_view)
            return
        self._start_label(user_view)
        self._start_answer(user_view)
        self._start_coach(user_view)

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

    def _start_coach(self, view: MessageView) -> None:
        """The message's InspireScore; where labels wait for the reply, it waits for both."""
        if self.settings.coach:
            after = () if self.session.label_during_reply else (self._view_of(view.message.reply).worker, view.worker)
            self.query_one(CoachPanel).score_message(
                services(self), self.session.client, self.debate_id, view.message.turn.position, after
            )

    def _start_label(self, view: MessageView) -> None:
        # No deadline: labelling a long message with the embedded model takes minutes, and
        # each request is bounded by the profile's timeout.
        view.message.begin()
        view.message.labels_after_reply = not self.session.label_during_reply
        view.changed()
        view.worker = self._label(view)
        self.refresh_bindings()

    def _start_answer(self, message: MessageView, reply: MessageView | None = None) -> None:
        """The bot's turn answering `message`: a new one, or `reply` (failed or cancelled) again in its place."""
        if reply is None:
            reply = MessageView(self.state.add_reply(message.message))
            self.query_one("#log", VerticalScroll).mount(reply, after=message)
        reply.message.turn = self.session.start_reply(again=reply.message.turn)
        reply.message.begin(self.settings.turn_timeout_s)
        reply.changed()
        reply.worker = self._answer(reply)
        self.query_one("#log", VerticalScroll).scroll_end(animate=False)
        self._show(reply)
        self.refresh_bindings()

    @work(group="bot")
    async def _answer(self, view: MessageView) -> None:
        reply = view.message
        self._pending_reply = ""  # the last turn's text must not leak into this one
        self._streaming = view
        try:
            stored, outcome, _failure = await self.session.bot_turn(
                lambda event: self._follow(view, event), turn=reply.turn, deadline_s=self.settings.turn_timeout_s
            )
        except asyncio.CancelledError:
            reply.cancel()
            self._redraw(view)
            raise
        finally:
            self._streaming = None
            self.refresh_bindings()
        self._flush_reply()
        reply.turn, reply.state, reply.error, reply.content = stored, stored.state, stored.error, stored.content
        self._redraw(view)
        if outcome is None:
            self._say(Text(f"the bot's turn failed; {RETRY_KEY} runs it again, or send another message", style="red"))
            return
        if self.judging_off:
            reply.judging_off = NO_MODEL
            self._redraw(view)
            self._say(f"reply in {outcome.seconds:.1f} s, from the argument base; not judged: {NO_MODEL}")
            return
        self._say(f"reply in {outcome.seconds:.1f} s ({outcome.requests} requests); judging it…")
        self._judge(view)

    def _follow(self, view: MessageView, event) -> None:
        if isinstance(event, ReplyProgress):
            self._pending_reply = event.text  # flushed by the timer
        elif not isinstance(event, TurnCompleted):
            view.message.follow(event)
            self._redraw(view)

    def _flush_reply(self) -> None:
        view = self._streaming
        if view is not None and self._pending_reply and self._pending_reply != view.message.content:
            view.message.content = self._pending_reply
            view.refresh(layout=True)

    def _tick(self) -> None:
        """Running work shows its spinner and clocks move, also while a step is silent."""
        for message in self.state.working():
            view = self._view_of(message)
            if view is not None:
                view.refresh()
            if self.state.selected is message and message.role == "assistant":
                self.query_one("#steps", Static).update(steps_panel(message, self.level.steps))

    @work(group="judging")
    async def _judge(self, view: MessageView) -> None:
        partial = GriceRecord(strategy=self.session.grice_strategy)
        view.message.grice = partial

        def arrived(judgment: MetricRecord) -> None:
            partial.metrics[judgment.metric] = judgment
            self._redraw(view)

        try:
            judgment = await self.session.judge_reply(view.message.turn, arrived)
        except ArgtuiError as exc:
            self._say(Text(f"Grice judging failed: {exc}", style="red"))
            return
        view.message.grice = judgment
        self._redraw(view)
        self._say(Text(f"judged ({grice_strategy_title(judgment.strategy)}) in {judgment.seconds:.1f} s, {judgment.calls} calls"))

    @work(group="labelling")
    async def _label(self, view: MessageView) -> None:
        message = view.message
        found: list[ComponentRecord] = []

        def arrived(_index: int, component: ComponentRecord) -> None:
            found.append(component)
            message.components = sorted(found, key=lambda c: c.span.start)
            self._redraw(view)

        try:
            results = await self.session.label_message(message.turn, arrived)
        except asyncio.CancelledError:
            message.cancel()
            self._redraw(view)
            raise
        except ArgtuiError as exc:
            message.state, message.status, message.components = "failed", str(exc), None
            self._redraw(view)
            return
        finally:
            self.refresh_bindings()
        message.components, message.state = results, "done"
        self._redraw(view)

    # ------------------------------------------------------------ stopping and retrying

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "to_message":
            return self._in_side_panel()
        if action == "stop_turn":
            return bool(self.state.working())
        if action == "back":
            return not self.state.working()
        if action == "retry":  # a turn to run again, or the backend to try again
            return self.open_failure is not None or self.judging_off or (
                self.session is not None and self.state.retry_target() is not None)
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

    def _switch_tab(self, step: int) -> None:
        tabs = self.query_one("#side", TabbedContent)
        ids = list(SIDE_TABS)
        tabs.active = ids[(ids.index(tabs.active) + step) % len(ids)]

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
            doing = f"at {STEP_TITLES[step]}, " if step else ""
            question = Text(f"The bot is answering ({doing}{time.perf_counter() - bot.started:.0f} s so far). "
                            "Stop its turn? The message keeps a Retry.")
        else:
            question = Text("Your message is still being labelled. Stop the labelling? The message keeps a Retry.")
        answers = [Answer("stop", "Stop", "s"), Answer("leave", "Stop and leave", "l"),
                   Answer("wait", "Keep waiting", "w")]

        def answered(answer: str | None) -> None:
            working = [self._view_of(m) for m in self.state.working()] if answer in ("stop", "leave") else []
            for view in working:
                view.worker.cancel()  # cancels the client's requests in flight too
            if answer in ("stop", "leave"):
                self.query_one(CoachPanel).stop()
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
        if message is not None and message.unfinished and not self.judging_off:
            self._start_label(self._view_of(message))
        if reply is not None and reply.unfinished:
            if self.state.bot_working():
                self._say(f"the bot is answering another turn; {RETRY_KEY} again when it is done")
            else:
                self._say("the bot is answering…")
                self._start_answer(self._view_of(message), self._view_of(reply))

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

    def _redraw(self, view: MessageView) -> None:
        """A message changed: repaint it, and the side panel when it shows that message."""
        view.changed()
        if self.state.selected is view.message:
            self._refresh_side(view.message)

    def on_descendant_focus(self, event) -> None:
        if isinstance(event.widget, MessageView):
            self._show(event.widget)

    def _show(self, view: MessageView) -> None:
        self.state.selected = view.message
        self.refresh_bindings()
        self._refresh_side(view.message)
        tabs = self.query_one(TabbedContent)
        if view.message.role == "user":
            tabs.active = "components-tab"
        elif tabs.active == "components-tab":
            tabs.active = "steps-tab"

    def _refresh_side(self, message: Message) -> None:
        if not self.app.is_running:  # the app is closing and its widgets are going
            return
        if message.role == "assistant":
            self.query_one("#steps", Static).update(steps_panel(message, self.level.steps))
            self.query_one("#evidence", Static).update(evidence_view(message.evidence))
            self.query_one("#grice", Static).update(
                Text(f"Not judged: {message.judging_off}.", style="yellow") if message.judging_off
                else grice_panel(message.grice, message.error, self.show_questions, QUESTIONS_KEY))
            return
        options = self.query_one("#component-list", OptionList)
        options.clear_options()
        for index, component in enumerate(message.components or []):
            options.add_option(Option(Text.assemble(label_chip(component.label), " ", component.span.text),
                                      id=str(index)))
        if message.judging_off:
            options.add_option(Option(f"no labels: {message.judging_off}", disabled=True))
        elif message.components is None:
            waiting = {"running": "labelling…", "failed": "labelling failed"}.get(message.state)
            options.add_option(Option(waiting or "labelling cancelled", disabled=True))

    def action_toggle_questions(self) -> None:
        self.show_questions = not self.show_questions
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
        if message is not self.state.selected:
            self._show(self._view_of(message))
        options = self.query_one("#component-list", OptionList)
        self._open_component(options.highlighted or 0)

    def _open_component(self, index: int) -> None:
        message = self.state.selected
        if message is not None and message.components and index < len(message.components):
            self.app.push_screen(TranscriptScreen(message.components[index]))

    def action_focus_input(self) -> None:
        self.query_one(Input).focus()


def new_debate_screen() -> Screen:
    # The new-debate screen opens this module's DebateScreen: imported here, not above, so the
    # two modules do not import each other while loading.
    from screens.new_debate import NewDebateScreen

    return NewDebateScreen()


MODE = Mode(
    name="debate",
    title="Debate",
    description="Debate the retrieval-augmented bot on a claim; see its strategy, evidence and Grice "
    "judgments of every reply, and the argument components of your own messages.",
    make_screen=new_debate_screen,
    order=10,
)
