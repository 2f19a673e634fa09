"""What the Debate screen shows, without Textual: its messages and their state, which one is
selected, what the status line says and how many turns the debate has.

A turn is a student message and the bot's reply to it; the debate ends after `[debate] max_turns`
of them (or when the student ends it). Each message has a state: a bot
reply's is its turn's (running, done, failed, cancelled), a student message's that of its
labelling. The screen renders this state and runs the work that changes it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from rich.text import Text

from engines.debate.levels import OpponentLevel
from engines.debate.opponent import FALLBACK_STEP, DraftWriting, StepFailed, StepFinished, StepStarted, TurnFailed
from engines.debate.pipeline import STEPS
from engines.debate.records import ComponentRecord, EvidenceRow, GriceRecord, StoredTurn, TurnSteps
from store.debates import TurnState

UNFINISHED = (TurnState.FAILED, TurnState.CANCELLED)  # what Retry runs again
NO_MODEL = "no model answers"  # why a message of a debate going on without a model is not judged


def turns_text(turns: int) -> str:
    """`1 turn`, `3 turns`: a turn is a student message and the bot's reply."""
    return f"{turns} turn" + ("" if turns == 1 else "s")


def level_title(level: OpponentLevel, rating: float) -> str:
    """`level 2 Full (rating 1300)`: the opponent, as the header and the New-debate dialog name it."""
    return f"level {level.number} {level.name} (rating {rating:.0f})"


def players_title(level: OpponentLevel, level_rating: float, student: str | None, student_rating: float) -> str:
    """The header's sides with their ratings: `Ana (1016) vs level 0 Retrieval (984)`; with no student
    the level alone, as `level_title` names it."""
    if student is None:
        return level_title(level, level_rating)
    return f"{student} ({student_rating:.0f}) vs level {level.number} {level.name} ({level_rating:.0f})"


def drafting_text(draft: DraftWriting) -> str:
    """A reply draft, shown as a draft until it passes its checks: how far it is."""
    return f"writing a reply… ({draft.words} words, attempt {draft.attempt})"


def shown_state(turn: StoredTurn) -> TurnState:
    """A stored message's state when the screen opens. Nothing of it runs in this process then,
    so one left running (argtui was killed) was interrupted: it shows as cancelled."""
    if turn.role == "user":  # a message's state is its labelling's
        if turn.components is not None:
            return TurnState.DONE
        return TurnState.FAILED if turn.state == TurnState.FAILED else TurnState.CANCELLED
    if turn.error is not None:
        return TurnState.FAILED
    return TurnState.CANCELLED if turn.state == TurnState.RUNNING else turn.state


@dataclass(eq=False)
class Message:
    """One message of the conversation, the student's (`user`) or the bot's (`assistant`).

    What it says and why a reply failed are read from its stored turn; the rest is what the screen
    follows while work on it runs. `reply` links a student message to the bot message answering it,
    `answers` the other way."""

    role: str
    turn: StoredTurn | None = None  # as stored
    streamed: str = ""  # a bot reply being written: its text so far
    state: TurnState = TurnState.RUNNING
    components: list[ComponentRecord] | None = None
    grice: GriceRecord | None = None  # some maxims while they are judged
    grice_error: str = ""  # why the Grice judging failed
    status: str = ""  # why the labelling failed
    steps: TurnSteps = field(default_factory=TurnSteps)
    step_state: dict[str, TurnState] = field(default_factory=dict)
    step_seconds: dict[str, float] = field(default_factory=dict)
    step_titles: Mapping[str, str] = field(default_factory=lambda: dict(STEPS))  # of the debate's level
    drafting: DraftWriting | None = None  # a draft being written: shown as one until its checks pass
    evidence: Sequence[EvidenceRow] = ()
    started: float = field(default_factory=time.perf_counter)  # when the running work began
    step_started: float = 0.0  # when the running step began
    limit_s: float | None = None  # the running work's deadline
    reply: Message | None = None
    answers: Message | None = None
    labels_after_reply: bool = False  # a student message: its labelling waits for the reply
    components_total: int = 0  # a student message being labelled: the components its labelling has
    grice_started: float | None = None  # a bot reply: when the Grice judging running now began (None: none runs)
    judging_off: str = ""  # why it is not judged (no labels, no Grice), where no model answers

    def __post_init__(self) -> None:
        self.step_started = self.step_started or self.started

    @classmethod
    def stored(cls, turn: StoredTurn, step_titles: Mapping[str, str]) -> Message:
        steps = turn.steps or TurnSteps()
        return cls(
            turn.role, turn, state=shown_state(turn), components=turn.components, grice=turn.grice,
            steps=steps, evidence=turn.evidence, step_titles=step_titles,
            step_state={step: TurnState.DONE for step, _ in STEPS if getattr(steps, step) is not None},
        )

    @property
    def content(self) -> str:
        """The reply so far while the bot writes it, else the message as stored."""
        if self.role == "assistant" and self.state == TurnState.RUNNING:
            return self.streamed
        return self.turn.content if self.turn is not None else ""

    @property
    def error(self) -> str | None:
        """Why the bot's turn failed, as stored."""
        return self.turn.error if self.turn is not None else None

    @property
    def unfinished(self) -> bool:
        return self.state in UNFINISHED

    def begin(self, limit_s: float | None = None) -> None:
        """The work on this message (re)starts: what an earlier run showed is cleared (a bot reply's
        failure goes with the stored turn it is given in place of the failed one)."""
        self.state, self.limit_s = TurnState.RUNNING, limit_s
        self.started = self.step_started = time.perf_counter()
        self.status = ""
        if self.role == "user":
            self.components = None
        else:
            self.streamed, self.steps, self.step_state, self.step_seconds = "", TurnSteps(), {}, {}
            self.drafting = None
            self.evidence, self.grice, self.grice_error = (), None, ""

    def cancel(self) -> None:
        """Its work was cancelled: as in the store, no partial labels or reply are kept; the steps
        show where it stopped."""
        self.state = TurnState.CANCELLED
        if self.role == "user":
            self.components = None
        else:
            self.streamed, self.drafting = "", None
            self.step_state = {step: TurnState.CANCELLED if state == TurnState.RUNNING else state
                               for step, state in self.step_state.items()}
            # as the session stores it
            self.turn = dataclasses.replace(self.turn, state=TurnState.CANCELLED,
                                            seconds=time.perf_counter() - self.started)

    def follow(self, event: object) -> None:
        """A step of the bot's turn started, finished or failed, or a draft grew."""
        if isinstance(event, DraftWriting):
            self.drafting = event
        elif isinstance(event, StepStarted):
            self.step_state[event.step] = TurnState.RUNNING
            self.step_started = time.perf_counter()
        elif isinstance(event, StepFinished):
            self.step_state[event.step] = TurnState.DONE
            self.steps, self.evidence = event.steps, event.evidence
            self.step_seconds[event.step] = event.seconds
        elif isinstance(event, StepFailed | TurnFailed):
            self.step_state[event.step] = TurnState.FAILED

    @property
    def running_step(self) -> str | None:
        return next((step for step, state in self.step_state.items() if state == TurnState.RUNNING), None)

    @property
    def fell_back(self) -> bool:
        """A step of the level failed and level 0's answer replies instead (running or stored)."""
        return FALLBACK_STEP[0] in self.step_state or (self.turn is not None and self.turn.fallback_from is not None)

    def doing(self) -> str:
        """What the running bot turn does: its step (as its level names it) for how long, and a
        draft not shown yet."""
        step = self.running_step
        if step is None:
            return "starting"
        doing = f"{self.step_titles.get(step, step)} {time.perf_counter() - self.step_started:.0f} s"
        return f"{doing} · {drafting_text(self.drafting)}" if self.drafting is not None else doing

    def grice_seconds(self) -> float | None:
        """How long the Grice judging running now has taken (None: none runs)."""
        return time.perf_counter() - self.grice_started if self.grice_started is not None else None

    def clock(self) -> str:
        """Seconds since the work began, over its deadline if it has one."""
        elapsed = f"{time.perf_counter() - self.started:.0f}"
        return f"{elapsed}/{self.limit_s:.0f} s" if self.limit_s else f"{elapsed} s"


@dataclass
class DebateState:
    """The conversation in order, the selected message and the status line."""

    messages: list[Message] = field(default_factory=list)
    selected: Message | None = None
    status: str | Text = ""
    step_titles: Mapping[str, str] = field(default_factory=lambda: dict(STEPS))  # of the debate's level

    @classmethod
    def opened(cls, turns: Sequence[StoredTurn], steps: Sequence[tuple[str, str]] = STEPS) -> DebateState:
        """The stored turns, each message linked to the reply that follows it; `steps`: the
        (name, title) of the steps of the debate's level."""
        titles = dict([*steps, FALLBACK_STEP])
        messages = [Message.stored(turn, titles) for turn in turns]
        if turns and turns[-1].role == "user":  # an earlier release stored a reply only once it was done
            messages.append(Message("assistant", state=TurnState.CANCELLED, step_titles=titles))
        for previous, message in zip([None, *messages], messages):
            if message.role == "assistant" and previous is not None and previous.role == "user":
                previous.reply, message.answers = message, previous
        return cls(messages, step_titles=titles)

    @property
    def turn_count(self) -> int:
        """Turns so far: each student message opens one, which its reply completes."""
        return sum(message.role == "user" for message in self.messages)

    @property
    def exchanges_done(self) -> int:
        """Turns complete: the bot's reply to the student's message is in."""
        return sum(message.role == "assistant" and message.state == TurnState.DONE for message in self.messages)

    def add_message(self, turn: StoredTurn) -> Message:
        message = Message("user", turn, components=turn.components)
        self.messages.append(message)
        return message

    def add_reply(self, message: Message) -> Message:
        """A new bot message answering `message`, placed right after it."""
        reply = Message("assistant", step_titles=self.step_titles)
        reply.answers, message.reply = message, reply
        self.messages.insert(self.messages.index(message) + 1, reply)
        return reply

    def working(self) -> list[Message]:
        """The messages being worked on: the bot answering, messages being labelled."""
        return [message for message in self.messages if message.state == TurnState.RUNNING]

    def judging(self) -> list[Message]:
        """The bot replies whose Grice maxims are being judged."""
        return [message for message in self.messages if message.grice_started is not None]

    def message_of(self, turn_id: int) -> Message | None:
        """The message of a stored turn."""
        return next((m for m in self.messages if m.turn is not None and m.turn.id == turn_id), None)

    def bot_working(self) -> Message | None:
        return next((message for message in self.working() if message.role == "assistant"), None)

    def has_unfinished(self) -> bool:
        return any(message.unfinished for message in self.messages)

    @staticmethod
    def pair(message: Message) -> tuple[Message | None, Message | None]:
        """The turn a message belongs to: (the student's message, the bot's reply)."""
        return (message, message.reply) if message.role == "user" else (message.answers, message)

    def _selected_first(self) -> list[Message]:
        return ([self.selected] if self.selected is not None else []) + self.messages[::-1]

    def retry_target(self) -> tuple[Message | None, Message | None] | None:
        """The selected message's turn when it has something to run again, else the latest such turn."""
        for candidate in self._selected_first():
            message, reply = self.pair(candidate)
            if (message is not None and message.unfinished) or (reply is not None and reply.unfinished):
                return message, reply
        return None

    def transcript_message(self) -> Message | None:
        """The message whose component the transcript opens: the selected one, else the latest labelled one."""
        return next((m for m in self._selected_first() if m.role == "user" and m.components), None)

    def parts_message(self) -> Message | None:
        """The student message the Parts tab shows: the selected one, or the one the selected reply
        answers; with none selected, the latest."""
        message = self.pair(self.selected)[0] if self.selected is not None else None
        return message or next((m for m in reversed(self.messages) if m.role == "user"), None)

    def reply_to_explain(self) -> Message | None:
        """The bot reply whose Grice answers the questions explain: the selected one, else the latest."""
        if self.selected is not None and self.selected.role == "assistant":
            return self.selected
        return next((m for m in reversed(self.messages) if m.role == "assistant"), None)
