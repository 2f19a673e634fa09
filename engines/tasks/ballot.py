"""The ballot after a debate: who won, why, speaker points, one fix and one rewritten sentence.

An item is a stored debate (`--debate ID`; by default every ended one). The judge reads
the transcript with its student turns numbered 1..n and each bot reply marked as the
reply to its turn, beside what was measured of every turn: the Coach's InspireScore of
each student message (`stored_message_scores`) and the latest Grice judgments of each reply.
It answers in ONE call constrained to a JSON schema: the winner, a reason citing turns as
"turn N", speaker points on the school-debate scale as one choice of "W to L" pairs (the
winner's points, then the loser's, always lower: the schema offers no pair that contradicts
the winner), a fix of a few plain words, and a rewrite of one of the student's own sentences
(the schema offers only those). An answer that breaks a rule the schema cannot state (a
reason too long or citing no turn of the debate, a rewrite with the original's words) is
asked again with another sampling (`structured_until_valid`). The strongest and weakest
turns come from the stored InspireScores, never from the model.
"""

from __future__ import annotations

import random
import re
import statistics
from typing import Annotated, Callable, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from engines.debate.export import exchanges
from engines.debate.levels import tiny_model
from engines.debate.messages import count_words
from engines.debate.records import DebateRecords, StoredTurn
from engines.errors import ArgtuiError
from engines.inspire.facts import plain_words
from engines.inspire.score import DIMENSION_TITLES, DIMENSIONS, InspireScore
from engines.judging.evaluate import run_task
from engines.judging.options import OptionInfo, TaskOptions
from engines.judging.quoting import LABEL_COLON, inline
from engines.judging.runner import RunProgress
from engines.judging.shown_text import NO_USABLE_ANSWER, unmeant
from engines.judging.task import ReportTable, TaskBase, TaskContext, TaskItem, TaskReport, VariantName
from engines.judging.verdict import JudgeId, Verdict
from engines.judging.verify import Mismatch, StoredAnswers, Verification, compared
from engines.llm.budget import max_tokens_for
from engines.llm.client import LLMClient
from engines.llm.embedded import EMBEDDED_MODEL_NAME
from engines.llm.profile import Sampling
from engines.llm.reasking import attempts, structured_until_valid
from engines.sentences import sentence_spans
from engines.tasks.inspire_turns import stored_message_scores
from store.db import Database
from store.debates import DebateRepository

NAME = "ballot"
VARIANT = "adjudicator"
SPEAKER_POINTS = (25.0, 30.0)  # school-debate scale, 0.5 steps; 25 poor ... 27.5 average ... 30 outstanding
POINT_STEP = 0.5
POINT_STEPS = tuple(SPEAKER_POINTS[0] + POINT_STEP * n
                    for n in range(round((SPEAKER_POINTS[1] - SPEAKER_POINTS[0]) / POINT_STEP) + 1))
# Every pair of the scale with the winner's points first and higher: no tie, no low-point win.
POINT_PAIRS = tuple(f"{winner:g} to {loser:g}" for winner in reversed(POINT_STEPS) for loser in reversed(POINT_STEPS)
                    if loser < winner)
REASON_WORDS = 120
REASON_MIN_WORDS = 6  # "Turn 2" and a few words of why: "Turn 2" alone gives no reason
WORD_CHARS = 30  # longer than any English word a ballot needs
# A word of a reason or a fix: letters, digits and plain punctuation, bounded (see `reason_pattern`).
WORD = rf"[A-Za-z0-9,.;:!?'()%/&-]{{1,{WORD_CHARS}}}"
FIX_WORDS = (3, 40)
FIX_PATTERN = rf"^{WORD}( {WORD}){{{FIX_WORDS[0] - 1},{FIX_WORDS[1] - 1}}}$"
# A patterned string has no length bound beside its pattern, which bounds it: vLLM's grammar
# engines refuse the two together (llguidance cannot intersect them, xgrammar drops the bound).
REASON_CHARS = REASON_WORDS * (WORD_CHARS + 1)  # the unpatterned reason of the base model
REWRITE_CHARS = 400
# The first attempt greedy, each further one sampled with a seed of its own (a new cache key).
ATTEMPTS = attempts(Sampling(temperature=0.0), 3)
TURN_CITATION = re.compile(r"\bturn\s+(\d+)\b", re.IGNORECASE)
NEGATION = re.compile(r"\b(?:not|never|no)\b|n't\b", re.IGNORECASE)
# "the bot argued better", "the student's case was stronger": a side the reason says won.
BETTER_SIDE = re.compile(
    r"\b(student|bot)\)?(?:'s)?(?:\s+\w+){0,3}?\s+(?:argued|did|was|is|were|made|had)(?:\s+\w+){0,2}?\s+"
    r"(?:better|stronger|more convincing(?:ly)?)\b", re.IGNORECASE,
)
PROMPT_LABELS = ("Claim", "Coach", "Grice")
# The prompt's numbered labels ("Turn 2 (student):", "Reply to turn 2 (bot):"), which `inline` cannot name.
TURN_LABEL = re.compile(r"((?<!\w)turn\s+\d+\s*(?:\([^()]*\))?\s*):", re.IGNORECASE)

BALLOT_PROMPT = """\
You are the adjudicator of a school debate between a student and a debate bot.

Claim: {claim}
The student argues {student_side} the claim; the bot argues {bot_side} it.

The debate follows, the student's turns numbered. Under each turn is what was measured of it:
Coach is the InspireScore of a student turn, from 0 (poor) to 1 (excellent); Grice gives, for
a bot reply, whether it keeps each conversational maxim and the probability that it does.

{transcript}

Fill in the ballot:
- winner: "student" or "bot", whoever argued better.
- reason: at most {reason_words} words on why, starting with the turn that decided it: "Turn N ...".
- points: the winner's speaker points, then the loser's, as "W to L": from {low:g} (poor) through {average:g} \
(average) to {high:g} (outstanding), in steps of 0.5; the winner's are the higher.
- fix: the one thing the student should do differently next time.
- rewrite_from: the student's sentence that most needs work, copied exactly.
- rewrite_to: that sentence as the student should have said it.
"""

DEMO_DEBATE = (
    "School uniforms should be mandatory", "pro",
    (("Uniforms stop bullying. Nobody is mocked for their clothes.",
      "Bullies find other targets: shoes, phones and haircuts still show who has money."),
     ("Uniforms also save parents money.",
      "A uniform is bought on top of everyday clothes, so poorer families pay more, not less.")),
)


class BallotOptions(TaskOptions):
    debate: Annotated[int | None, OptionInfo(
        "a stored debate (argtui debate --list shows them; default: every ended debate)", metavar="ID")] = None


class TurnMark(BaseModel):
    """A student turn and what was measured of it: its InspireScore and the Grice judgments of
    the bot reply that answered it (P(yes) by maxim)."""

    model_config = ConfigDict(frozen=True)

    turn: int  # 1-based student turn number
    text: str
    inspire: float | None
    dimensions: dict[str, float | None]
    grice: dict[str, float | None]


class MeasuredTurn(BaseModel):
    """A student turn of a stored debate as the judge sees it, with the reply that answered it."""

    model_config = ConfigDict(frozen=True)

    number: int
    position: int  # in the stored debate
    text: str
    inspire: float | None = None
    dimensions: dict[str, float | None] = {}  # empty: the Coach measured nothing
    reply: str | None = None
    reply_position: int | None = None
    grice: dict[str, float | None] = {}  # P(yes) by maxim; empty: not judged
    grice_answers: dict[str, str | None] = {}  # yes / no by maxim, None where the answer was invalid

    @property
    def mark(self) -> TurnMark:
        return TurnMark(turn=self.number, text=self.text, inspire=self.inspire, dimensions=self.dimensions,
                        grice=self.grice)

    @property
    def sentences(self) -> tuple[str, ...]:
        """The student's sentences, each up to where the next starts (its closing punctuation kept)."""
        starts = [start for start, _ in sentence_spans(self.text)]
        pieces = (self.text[start:end].strip() for start, end in zip(starts, [*starts[1:], len(self.text)]))
        return tuple(piece for piece in pieces if piece)


class DebateTranscript(BaseModel):
    """What the ballot's judge is given of a debate (debate 0: the built-in demonstration)."""

    model_config = ConfigDict(frozen=True)

    debate: int
    claim: str
    user_side: Literal["pro", "con"]
    level: int
    turns: tuple[MeasuredTurn, ...]

    @property
    def bot_side(self) -> str:
        return "con" if self.user_side == "pro" else "pro"

    def sentence_turn(self, sentence: str) -> int:
        """The first student turn that has `sentence`."""
        return next(turn.number for turn in self.turns if sentence in turn.sentences)


class Ballot(BaseModel):
    """The verdict's data."""

    debate: int
    winner: Literal["student", "bot"]
    reason: str
    student_points: float
    bot_points: float
    strongest: TurnMark | None  # computed from stored scores, not by the model; None: nothing measured
    weakest: TurnMark | None
    fix: str
    rewrite_turn: int
    rewrite_from: str  # one of the student's own sentences
    rewrite_to: str
    demonstration: bool  # made by the embedded model: shown as a demonstration


class BallotAnswer(BaseModel):
    """What the judge answers; `answer_model` narrows `rewrite_from` to the debate's sentences."""

    winner: Literal["student", "bot"]
    reason: str = Field(min_length=1, max_length=REASON_CHARS)
    points: Literal[POINT_PAIRS]  # type: ignore[valid-type]
    fix: str = Field(pattern=FIX_PATTERN)
    rewrite_from: str
    rewrite_to: str = Field(min_length=1, max_length=REWRITE_CHARS)

    @field_validator("reason")
    @classmethod
    def _short(cls, reason: str) -> str:
        words = count_words(reason)
        if words > REASON_WORDS:
            raise ValueError(f"{words} words; at most {REASON_WORDS}")
        return reason

    @field_validator("reason", "fix", "rewrite_to")
    @classmethod
    def _meant(cls, text: str) -> str:
        problem = unmeant(text, BALLOT_PROMPT)
        if problem:
            raise ValueError(f"not a meant answer: {problem}")
        return text

    @model_validator(mode="after")
    def _rewritten(self) -> BallotAnswer:
        if plain_words(self.rewrite_to) == plain_words(self.rewrite_from):
            raise ValueError("rewrite_to repeats the words of rewrite_from")
        return self

    @model_validator(mode="after")
    def _reason_backs_the_winner(self) -> BallotAnswer:
        said = reason_winner(self.reason)
        if said is not None and said != self.winner:
            raise ValueError(f"the reason says the {said} argued better; the winner is the {self.winner}")
        return self

    def side_points(self) -> tuple[float, float]:
        """The student's and the bot's speaker points."""
        winner, loser = (float(points) for points in self.points.split(" to "))
        return (winner, loser) if self.winner == "student" else (loser, winner)


def reason_winner(reason: str) -> str | None:
    """The side a reason says argued better ("the bot argued better", "the student's case was
    stronger"), or None where it says so of neither or of both."""
    sides = {match.group(1).lower() for match in BETTER_SIDE.finditer(reason) if not NEGATION.search(match.group())}
    return sides.pop() if len(sides) == 1 else None


def answer_model(transcript: DebateTranscript) -> type[BallotAnswer]:
    """The answer's model for this debate: `rewrite_from` one of the student's sentences, the
    reason starting with one of its turns (`reason_pattern`), and neither the reason nor the
    fix citing a turn it does not have."""
    sentences = tuple(dict.fromkeys(s for turn in transcript.turns for s in turn.sentences))
    numbers = {turn.number for turn in transcript.turns}

    def cites_turns(cls, text: str) -> str:
        cited = {int(number) for number in TURN_CITATION.findall(text)}
        if cited - numbers:
            raise ValueError(f"cites turn {min(cited - numbers)}; the debate has turns 1 to {max(numbers)}")
        return text

    return create_model(
        "BallotAnswer", __base__=BallotAnswer,
        __validators__={"cites_turns": field_validator("reason", "fix")(cites_turns)},
        reason=(str, Field(pattern=reason_pattern(sorted(numbers)))),
        rewrite_from=(Literal[sentences], ...),  # type: ignore[valid-type]
    )


def reason_pattern(numbers: Sequence[int]) -> str:
    """A reason that starts with the turn that decided it ("Turn 2: …") and has REASON_MIN_WORDS
    to REASON_WORDS words of at most WORD_CHARS characters: what a constraining backend can
    write at all (a word without a bound let a small model write one for thousands of tokens).
    Its words are letters, digits and plain punctuation: no quote, backslash or control
    character, which a grammar made from a pattern would write into the JSON unescaped."""
    turns = "|".join(str(number) for number in numbers)
    return rf"^Turn ({turns})[,.:;]?( {WORD}){{{REASON_MIN_WORDS - 2},{REASON_WORDS - 2}}}$"


def _marks(transcript: DebateTranscript) -> tuple[TurnMark | None, TurnMark | None]:
    """The student turns of the highest and of the lowest InspireScore, compared as every two
    texts are (`compare_dimensions`): on the dimensions all the measured turns have, so a turn
    is not weakest for a dimension the others lack (the first of equals; the same turn when one
    alone was measured). None when the Coach measured none, or the turns share no dimension."""
    measured = [turn for turn in transcript.turns if turn.inspire is not None]
    shared = [name for name in DIMENSIONS if all(turn.dimensions.get(name) is not None for turn in measured)]
    if not measured or not shared:
        return None, None

    def on_shared(turn: MeasuredTurn) -> float:
        return statistics.fmean(turn.dimensions[name] for name in shared)  # type: ignore[misc]

    return max(measured, key=on_shared).mark, min(measured, key=on_shared).mark


# ---------------------------------------------------------------- reading a stored debate


def _measured(number: int, user: StoredTurn, reply: StoredTurn | None, score: InspireScore | None) -> MeasuredTurn:
    grice = reply.grice if reply is not None else None
    return MeasuredTurn(
        number=number, position=user.position, text=user.content,
        inspire=score.overall if score is not None else None,
        dimensions=score.dimensions if score is not None else {},
        reply=reply.content if reply is not None else None,
        reply_position=reply.position if reply is not None else None,
        grice={name: metric.p_yes for name, metric in grice.metrics.items()} if grice else {},
        grice_answers={name: metric.answer for name, metric in grice.metrics.items()} if grice else {},
    )


def debate_transcript(db: Database, debate_id: int) -> DebateTranscript:
    """A stored debate's student turns, numbered, each with the reply that answered it and the
    stored numbers of both."""
    repository = DebateRepository(db)
    debate = repository.get(debate_id)
    if debate is None:
        raise ArgtuiError(f"no debate with id {debate_id} (argtui debate --list shows them)")
    turns = [turn for turn in DebateRecords(repository).turns(debate_id) if turn.in_dialogue]
    replies = {user.position: bot for user, bot in exchanges(turns)}
    students = [turn for turn in turns if turn.role == "user"]
    scores = {position: score for (_, position), score in stored_message_scores(db, {debate_id: turns}).items()}
    return DebateTranscript(
        debate=debate_id, claim=debate.claim, user_side=debate.user_side, level=debate.level,  # type: ignore[arg-type]
        turns=tuple(_measured(number, user, replies.get(user.position), scores.get(user.position))
                    for number, user in enumerate(students, 1)),
    )


def _demo_transcript() -> DebateTranscript:
    claim, side, pairs = DEMO_DEBATE
    return DebateTranscript(debate=0, claim=claim, user_side=side, level=0, turns=tuple(  # type: ignore[arg-type]
        MeasuredTurn(number=number, position=2 * (number - 1), text=message, reply=reply,
                     reply_position=2 * number - 1)
        for number, (message, reply) in enumerate(pairs, 1)
    ))


# ---------------------------------------------------------------- the prompt


def _numbers(values: dict[str, float | None], answers: dict[str, str | None] | None = None) -> str:
    parts = []
    for name, value in values.items():
        title = DIMENSION_TITLES.get(name, name)
        answer = (answers or {}).get(name)
        if value is None:
            parts.append(f"{title} not measured")
        else:
            parts.append(f"{title} {answer + ' ' if answer else ''}{value:.2f}")
    return ", ".join(parts)


def _quoted(text: str) -> str:
    """Data on one line that cannot pose as the prompt's labels, numbered ones included."""
    return TURN_LABEL.sub(lambda match: match.group(1) + LABEL_COLON, inline(text, labels=PROMPT_LABELS))


def transcript_text(transcript: DebateTranscript) -> str:
    """The debate as the judge reads it (and the Arena shows it): data on one line each."""
    lines = []
    for turn in transcript.turns:
        lines.append(f"Turn {turn.number} (student): {_quoted(turn.text)}")
        coach = f"overall {turn.inspire:.2f}; {_numbers(turn.dimensions)}" if turn.inspire is not None else None
        lines.append(f"  Coach: {coach or 'not measured'}")
        if turn.reply is None:
            lines.append(f"Reply to turn {turn.number} (bot): none")
            continue
        lines.append(f"Reply to turn {turn.number} (bot): {_quoted(turn.reply)}")
        lines.append(f"  Grice: {_numbers(turn.grice, turn.grice_answers) or 'not judged'}")
    return "\n".join(lines)


def ballot_prompt(transcript: DebateTranscript) -> str:
    low, high = SPEAKER_POINTS
    return BALLOT_PROMPT.format(
        claim=_quoted(transcript.claim), student_side="for" if transcript.user_side == "pro"
        else "against", bot_side="for" if transcript.bot_side == "pro" else "against",
        transcript=transcript_text(transcript), reason_words=REASON_WORDS, low=low, average=(low + high) / 2, high=high,
    )


# ---------------------------------------------------------------- the task


def ballot_of(verdict: Verdict) -> Ballot:
    """The ballot a verdict of this task holds; an ArgtuiError for an invalid verdict."""
    if not verdict.valid or verdict.data is None:
        raise ArgtuiError(f"no ballot: {verdict.invalid_reason or 'the verdict holds none'}")
    return Ballot.model_validate(verdict.data)


async def _embedded(client: LLMClient) -> bool:
    """The tiny model judged: as its profile says, or as the server names the model it serves."""
    return tiny_model(client.profile) or await client.model() == EMBEDDED_MODEL_NAME


def _item(transcript: DebateTranscript) -> TaskItem:
    title = "demonstration debate" if transcript.debate == 0 else f"debate {transcript.debate}"
    return TaskItem(
        key=f"debate:{transcript.debate}", title=f"{title} · {transcript.claim}",
        body=f"Claim: {transcript.claim}\nStudent: {transcript.user_side}, bot: {transcript.bot_side}\n\n"
             + transcript_text(transcript),
        payload=transcript,
    )


def _ended(db: Database) -> list[int]:
    """The ended debates with a student turn, oldest first."""
    return sorted(debate.id for debate, turns in DebateRepository(db).list() if debate.ended_at is not None and turns)


class BallotTask(TaskBase):
    name = NAME
    title = "Ballot of a debate: winner, reason, speaker points, one fix"
    description = (
        "Adjudicates stored debates (--debate ID, default every ended debate) from the transcript and what was "
        "measured of each turn (the Coach's InspireScore, the Grice judgments): who won and why, speaker points "
        f"{SPEAKER_POINTS[0]:g}-{SPEAKER_POINTS[1]:g}, one fix and one of the student's sentences rewritten."
    )
    labels = ("student", "bot")
    variant_section = "Ballot (judge names)"
    variant_names = {
        VARIANT: VariantName("Adjudicator", "Adjudicate", "one schema-constrained answer from the transcript and "
                             "the measured numbers of each turn"),
    }
    Options = BallotOptions

    def variants(self) -> tuple[str, ...]:
        return (VARIANT,)

    def items(self, ctx: TaskContext, options: BallotOptions) -> list[TaskItem]:
        if options.debate is not None:
            transcript = debate_transcript(ctx.db, options.debate)
            if not transcript.turns:
                raise ArgtuiError(f"debate {options.debate} has no student turn to judge")
            return [_item(transcript)]
        return [_item(debate_transcript(ctx.db, debate_id)) for debate_id in _ended(ctx.db)][: options.limit]

    def draw(self, ctx: TaskContext, rng: random.Random, **filters: str) -> TaskItem:
        """An ended debate, or the built-in demonstration when none has ended."""
        ended = _ended(ctx.db)
        return _item(debate_transcript(ctx.db, rng.choice(ended)) if ended else _demo_transcript())

    async def judge(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: BallotOptions
    ) -> Verdict:
        transcript: DebateTranscript = item.payload
        model = answer_model(transcript)
        samplings = [sampling.model_copy(update={"max_tokens": max_tokens_for(model)}) for sampling in ATTEMPTS]
        asked = await structured_until_valid(
            client, [{"role": "user", "content": ballot_prompt(transcript)}], model, samplings
        )
        if not asked.valid:
            return Verdict.invalid(f"{NO_USABLE_ANSWER} after {asked.attempts} attempts: {asked.result.error}",
                                   asked.result.raw, asked.usage)
        answer = asked.result.value
        strongest, weakest = _marks(transcript)
        student_points, bot_points = answer.side_points()
        ballot = Ballot(
            debate=transcript.debate, winner=answer.winner, reason=answer.reason,
            student_points=student_points, bot_points=bot_points, strongest=strongest, weakest=weakest,
            fix=answer.fix, rewrite_turn=transcript.sentence_turn(answer.rewrite_from),
            rewrite_from=answer.rewrite_from, rewrite_to=answer.rewrite_to, demonstration=await _embedded(client),
        )
        return Verdict(
            label=ballot.winner, distribution={ballot.winner: 1.0}, data=ballot.model_dump(mode="json"),
            detail=f"{ballot.winner} wins, {ballot.student_points:g} to {ballot.bot_points:g}: {ballot.reason}",
            raw=asked.result.raw, usage=asked.usage,
        )

    def verify(self, ctx: TaskContext, verdict: Verdict, answers: StoredAnswers) -> Verification:
        """The stored answer passes today's checks for its debate and says what the ballot shows;
        every turn the ballot names is one of the debate's."""
        if not verdict.valid:
            return Verification(not_recomputable="an invalid ballot shows no answer")
        ballot = ballot_of(verdict)
        try:
            transcript = debate_transcript(ctx.db, ballot.debate)
        except ArgtuiError as error:
            return Verification(not_recomputable=str(error))
        numbers = {turn.number for turn in transcript.turns}
        named = [("rewrite", ballot.rewrite_turn), *((f"{mark} turn", getattr(ballot, mark).turn)
                                                      for mark in ("strongest", "weakest") if getattr(ballot, mark))]
        cited = tuple(Mismatch(f"the {what} is a turn of the debate", str(turn), f"one of 1 to {max(numbers)}")
                      for what, turn in named if turn not in numbers)
        try:
            answer = answer_model(transcript).model_validate_json(verdict.raw)
        except ValueError as error:
            first = str(error).splitlines()[1:2] or [str(error)]
            return Verification(cited + (Mismatch("today's checks of the answer", first[0].strip(), "passed"),),
                                recomputed=True)
        shown_values = (ballot.winner, ballot.reason, ballot.fix, ballot.rewrite_from, ballot.rewrite_to,
                        (ballot.student_points, ballot.bot_points))
        read = (answer.winner, answer.reason, answer.fix, answer.rewrite_from, answer.rewrite_to, answer.side_points())
        return Verification(cited + tuple(compared("the ballot as its answer says", shown_values, read)), recomputed=True)

    def report(
        self, ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict],
        options: BallotOptions, run_id: int,
    ) -> TaskReport:
        rows, ballots = [], []
        for item in items:
            verdict = verdicts[item.key]
            transcript: DebateTranscript = item.payload
            if not verdict.valid:
                rows.append((transcript.debate, transcript.claim, "invalid", None, None, None, None))
                continue
            ballot = ballot_of(verdict)
            ballots.append(ballot)
            rows.append((
                ballot.debate, transcript.claim, ballot.winner, f"{ballot.student_points:g}", f"{ballot.bot_points:g}",
                ballot.strongest.turn if ballot.strongest else None, ballot.weakest.turn if ballot.weakest else None,
            ))
        notes = [f"{len(ballots)} ballots of {len(items)} debates; "
                 f"the student won {sum(b.winner == 'student' for b in ballots)}"]
        if any(ballot.demonstration for ballot in ballots):
            notes.append("made by the embedded model: a demonstration, not a judgment to rely on")
        return TaskReport(
            f"Ballots · {judge.name}",
            (ReportTable("Per debate (strongest and weakest turn by the Coach's InspireScore)",
                         ("debate", "claim", "winner", "student points", "bot points", "strongest", "weakest"),
                         tuple(rows)),),
            tuple(notes),
            {"ballots": [ballot.model_dump(mode="json") for ballot in ballots],
             "invalid": [row[0] for row in rows if row[2] == "invalid"]},
        )


TASK = BallotTask()


async def make_ballot(
    ctx: TaskContext, client: LLMClient, debate_id: int, on_progress: Callable[[RunProgress], None] | None = None,
) -> Ballot:
    """The debate's ballot, judged through the judging core as `argtui eval ballot --debate ID` judges
    it (the same judge and item): stored, so a second call returns it without a model call; a
    stored invalid one is judged again."""
    options = BallotOptions(debate=debate_id)
    items = TASK.items(ctx, options)
    run = await run_task(
        ctx, TASK, client, VARIANT, options, items, selection={"debate": debate_id},
        on_progress=on_progress or (lambda progress: None), retry_invalid=True,
    )
    return ballot_of(run.outcome.verdicts[items[0].key])
