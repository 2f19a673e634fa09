"""What a debate stores, as typed records: a bot turn's step outputs and evidence, the
Grice judgment of a reply, the argument components of a student message.

The store keeps them as JSON text (it knows no engine type); `DebateRecords`
writes and reads them, so the screen and the exports only see records. Rows
written by earlier releases were dumps of the engine's dataclasses and step
models: the records keep their field names and ignore the fields they dropped.

A judgment of a turn (its Grice verdict, its components) lives in the judgment store like
any batch judgment; the turn's analysis row only links to it (`JudgmentLink`: the judge's
name and the item keys). Rows of earlier releases hold a copy of the result instead, and
read as before.

This module knows no bot: what it writes of a bot's turn arrives through the `FinishedReply`
and `FailedStep` shapes, so the bot's modules import the records and never the other way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal, Protocol, Sequence

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from engines.components.records import result_of
from engines.components.types import ComponentResult
from engines.debate.schemas import FinalSelection, QuerySelection, Reply, SearchPlan, StrategyAnalysis
from engines.grice.types import GriceJudgment, MetricJudgment
from engines.judging.verdict import Verdict
from engines.retrieval.strategies import ArgumentGraph
from engines.retrieval.types import Argument
from store.debates import DebateRepository, DebateTurn, TurnAnalysis, TurnState
from store.judgments import JudgmentRepository


class Record(BaseModel):
    # Old rows carry fields (token counts, debaters' labels…) that no record keeps.
    model_config = ConfigDict(extra="ignore")


# ---------------------------------------------------------------- retrieval and evidence


class ArgumentRecord(Record):
    """A retrieved argument, flat as the argument base gives it."""

    id: str
    text: str
    topic: str = ""
    tags: list[str] = []
    attacks: str | None = None
    supports: str | None = None
    source: str = ""
    relation: str | None = None  # the relation to its parent that the source records

    @staticmethod
    def fields_of(argument: Argument) -> dict:
        return {
            "id": argument.id, "text": argument.text, "topic": argument.topic, "tags": list(argument.tags),
            "attacks": argument.attacks, "supports": argument.supports, "source": argument.source,
            "relation": argument.relation,
        }


class GraphNodeRecord(ArgumentRecord):
    strategy: str  # text | attack | support | chain
    score: float = 0.0
    context: bool = False  # a hit a chain starts from, not offered to step 3 (rows before the flag: False)


class GraphEdgeRecord(Record):
    source: str
    target: str  # an argument id, or "idea" for the query idea
    relation: str


class GraphRecord(Record):
    """The argument graph retrieved for one query."""

    idea: str
    goal: str
    nodes: list[GraphNodeRecord] = []
    edges: list[GraphEdgeRecord] = []

    @classmethod
    def of(cls, graph: ArgumentGraph) -> GraphRecord:
        return cls(
            idea=graph.idea,
            goal=graph.goal,
            nodes=[GraphNodeRecord(**ArgumentRecord.fields_of(node.argument), strategy=node.strategy,
                                   score=node.score, context=node.context) for node in graph.nodes],
            edges=[GraphEdgeRecord(source=edge.source, target=edge.target, relation=edge.relation)
                   for edge in graph.edges],
        )


class EvidenceRow(ArgumentRecord):
    """A retrieved argument, what it was found for and how far the turn used it."""

    strategy: str = ""  # text | attack | support | chain
    query: int = 0  # 1-based query number
    relation_found: str | None = None  # how it relates to what it was retrieved for
    score: float = 0.0  # the retriever's score
    selected: bool = False  # step 3
    final: bool = False  # step 4
    used: bool = False  # step 5
    context: bool = False  # a hit a chain starts from, shown but not offered to step 3 (rows before the flag: False)


EVIDENCE = TypeAdapter(list[EvidenceRow])


# ---------------------------------------------------------------- steps


class RetrievalStep(Record):
    graphs: list[GraphRecord]
    # Numbers of the queries whose own words found nothing and were searched with the student's message.
    message_queries: list[int] = []


class FallbackRecord(Record):
    """A level's step failed, so the reply is level 0's: the best counter-argument as written."""

    step: str  # the step that failed
    error: str
    raw: str = ""  # what the step's model wrote, when it wrote something unusable


class RejectedDraft(Record):
    """A reply draft that was not shown, and why."""

    kind: str  # invalid | empty | length | unmeant (before: echo) | stance
    reason: str
    text: str


class ReplyStep(Reply):
    length_action: str | None = None  # None, "regenerated" or "trimmed"
    rejected: list[RejectedDraft] = []
    fallback: bool = False  # every draft was rejected: the reply is the best selected argument's text

    @property
    def drafts(self) -> int:
        """How many drafts the model wrote for this reply."""
        return len(self.rejected) + (not self.fallback)


class TurnSteps(Record):
    """Each finished step's output; the fields are named after the pipeline's steps.
    A failed turn keeps only the step that failed and its raw output."""

    strategy: StrategyAnalysis | None = None
    queries: SearchPlan | None = None
    retrieval: RetrievalStep | None = None
    selection: dict[str, QuerySelection] | None = None  # by query name, SEARCH_1…
    final: FinalSelection | None = None
    reply: ReplyStep | None = None
    level: int | None = None  # the opponent level that ran (None: stored before levels, the five steps)
    fallback_from: FallbackRecord | None = None  # the level's steps failed: level 0 answered
    failed_step: str | None = None
    raw: str | None = None


# ---------------------------------------------------------------- judgments


class MetricRecord(Record):
    """The judgment of one Grice maxim; `answer` and `p_yes` are None when the output was invalid."""

    metric: str
    method: str
    answer: Literal["yes", "no"] | None = None
    p_yes: float | None = None
    rationale: str = ""
    error: str | None = None
    raw: str = ""
    source: str = ""
    calls: int = 0
    seconds: float = 0.0

    @classmethod
    def of(cls, judgment: MetricJudgment) -> MetricRecord:
        return cls(
            metric=judgment.metric, method=judgment.method, answer=judgment.answer, p_yes=judgment.p_yes,
            rationale=judgment.rationale, error=judgment.error, raw=judgment.raw, source=judgment.source,
            calls=judgment.calls, seconds=judgment.seconds,
        )


class GriceRecord(Record):
    """The Grice judgment of a bot reply: one record per maxim, by maxim."""

    strategy: str
    metrics: dict[str, MetricRecord] = {}
    seconds: float = 0.0

    @property
    def calls(self) -> int:
        return sum(metric.calls for metric in self.metrics.values())

    @classmethod
    def of(cls, judgment: GriceJudgment) -> GriceRecord:
        return cls(
            strategy=judgment.strategy,
            metrics={name: MetricRecord.of(metric) for name, metric in judgment.metrics.items()},
            seconds=judgment.seconds,
        )

    @classmethod
    def of_verdict(cls, verdict: Verdict) -> GriceRecord:
        """A verdict of the grice task (its `data` holds the strategy and every metric's judgment)."""
        data = verdict.data or {}
        return cls(
            strategy=data.get("strategy", ""),
            metrics={name: MetricRecord.of(MetricJudgment.from_data(metric))
                     for name, metric in data.get("metrics", {}).items()},
            seconds=verdict.seconds,
        )


class SpanRecord(Record):
    start: int
    end: int
    text: str


class TranscriptTurn(Record):
    role: str  # proponent | opponent | judge | reasoning
    text: str
    label: str | None = None  # the label a debater defends


class ComponentRecord(Record):
    """One argument component of a student message and how it got its label."""

    span: SpanRecord
    method: str
    label: str | None = None  # None when the deciding output was not a label (`raw` keeps it)
    distribution: dict[str, float] = {}
    transcript: list[TranscriptTurn] = []
    reason: str = ""
    raw: str = ""
    skipped: bool = False
    calls: int = 0
    seconds: float = 0.0

    @classmethod
    def of(cls, result: ComponentResult) -> ComponentRecord:
        return cls(
            span=SpanRecord(start=result.span.start, end=result.span.end, text=result.span.text),
            method=result.method,
            label=result.label,
            distribution=dict(result.distribution),
            transcript=[TranscriptTurn(role=t.role, text=t.text, label=t.label) for t in result.transcript],
            reason=result.reason,
            raw=result.raw,
            skipped=result.skipped,
            calls=result.usage.calls,
            seconds=result.seconds,
        )


class MessageComponents(Record):
    """What a components analysis stores."""

    components: list[ComponentRecord]


AnalysisResult = GriceRecord | MessageComponents
RESULT_MODELS: dict[str, type[AnalysisResult]] = {"grice": GriceRecord, "components": MessageComponents}


class JudgmentLink(Record):
    """Where the judgment store keeps a turn's judgment: the task and the item keys (the judge
    is the analysis row's `judge`)."""

    task: str
    items: list[str]


def linked_result(kind: str, method: str, verdicts: Sequence[Verdict]) -> AnalysisResult:
    """The record of a linked judgment, from its stored verdicts (a message's components in text order)."""
    if kind == "grice":
        [verdict] = verdicts
        return GriceRecord.of_verdict(verdict)
    components = [ComponentRecord.of(result_of(verdict, method)) for verdict in verdicts]
    return MessageComponents(components=sorted(components, key=lambda component: component.span.start))


# ---------------------------------------------------------------- stored turns


@dataclass(frozen=True)
class StoredAnalysis:
    kind: str  # grice | components
    method: str
    judge: str  # the judge's name in the judgment store (rows of earlier releases: its backend profile)
    result: AnalysisResult
    link: JudgmentLink | None = None  # None: a row of an earlier release, which holds a copy of the result


@dataclass(frozen=True)
class StoredTurn:
    """A turn as stored: the message, and for a bot reply its steps and evidence, with the analyses of it."""

    id: int
    position: int
    role: str  # user | assistant
    content: str
    error: str | None = None  # assistant: why the turn failed, with the step
    length_action: str | None = None
    seconds: float | None = None
    steps: TurnSteps | None = None
    evidence: tuple[EvidenceRow, ...] = ()
    analyses: tuple[StoredAnalysis, ...] = ()  # oldest first
    state: TurnState = TurnState.DONE  # of a student message, its labelling's

    @classmethod
    def of(cls, row: DebateTurn, analyses: Iterable[StoredAnalysis] = ()) -> StoredTurn:
        return cls(
            id=row.id, position=row.position, role=row.role, content=row.content, error=row.error,
            length_action=row.length_action, seconds=row.seconds,
            steps=TurnSteps.model_validate_json(row.steps_json) if row.steps_json else None,
            evidence=tuple(EVIDENCE.validate_json(row.evidence_json)) if row.evidence_json else (),
            analyses=tuple(analyses), state=TurnState(row.state),
        )

    @property
    def in_dialogue(self) -> bool:
        """Every student message, and of the bot's turns the finished replies."""
        return self.role == "user" or (self.state == TurnState.DONE and self.error is None)

    def _latest(self, model: type[AnalysisResult]) -> AnalysisResult | None:
        # A turn analysed again shows its latest analysis.
        return next((a.result for a in reversed(self.analyses) if isinstance(a.result, model)), None)

    @property
    def grice(self) -> GriceRecord | None:
        return self._latest(GriceRecord)

    @property
    def components(self) -> list[ComponentRecord] | None:
        """None while the message is not labelled."""
        labelled = self._latest(MessageComponents)
        return labelled.components if labelled else None

    @property
    def used_arguments(self) -> list[EvidenceRow]:
        return [row for row in self.evidence if row.used]

    @property
    def level(self) -> int | None:
        """The opponent level of a bot reply (None for a student message, or a turn that did not finish)."""
        if self.role != "assistant" or not self.in_dialogue:
            return None
        return self.steps.level if self.steps and self.steps.level is not None else 2

    @property
    def fallback(self) -> bool:
        """The reply is the best selected argument's text because every draft was rejected."""
        return bool(self.steps and self.steps.reply and self.steps.reply.fallback)

    @property
    def fallback_from(self) -> FallbackRecord | None:
        """The level's step that failed when the reply is level 0's answer instead."""
        return self.steps.fallback_from if self.steps else None


class FinishedReply(Protocol):
    """What is stored of a bot's finished turn."""

    reply: str
    steps: TurnSteps
    length_action: str | None
    seconds: float

    def evidence_rows(self) -> list[EvidenceRow]: ...


class FailedStep(Protocol):
    """What is stored of a bot's turn that failed: the step, why, and its raw output."""

    step: str
    error: str
    raw: str


class DebateRecords:
    """A debate's turns and their analyses as records, over the store's JSON columns."""

    def __init__(self, repository: DebateRepository):
        self.repository = repository

    def turns(self, debate_id: int) -> list[StoredTurn]:
        rows = self.repository.turns(debate_id)
        analyses = self._analyses(self.repository.analyses([row.id for row in rows]))
        return [StoredTurn.of(row, [a for turn_id, a in analyses if turn_id == row.id]) for row in rows]

    def _analyses(self, rows: list[TurnAnalysis]) -> list[tuple[int, StoredAnalysis]]:
        """(turn id, analysis) of every row; a linked judgment is read from the judgment store, one
        query per judge, and left out when the store no longer has it."""
        links = {row.id: link for row in rows if (link := _link_of(row)) is not None}
        wanted: dict[tuple[str, str], set[str]] = {}
        for row in rows:
            if row.id in links:
                wanted.setdefault((links[row.id].task, row.judge), set()).update(links[row.id].items)
        judgments = JudgmentRepository(self.repository.db)
        found = {
            (task, judge): judgments.verdicts(task, judge, items) for (task, judge), items in wanted.items()
        }
        analyses = []
        for row in rows:
            link = links.get(row.id)
            if link is None:
                result = RESULT_MODELS[row.kind].model_validate_json(row.result_json)
            else:
                stored = found[(link.task, row.judge)]
                if not all(item in stored for item in link.items):
                    continue
                result = linked_result(row.kind, row.method, [Verdict.model_validate(stored[i]) for i in link.items])
            analyses.append((row.turn_id, StoredAnalysis(row.kind, row.method, row.judge, result, link)))
        return analyses

    def add_message(self, debate_id: int, text: str) -> StoredTurn:
        return StoredTurn.of(self.repository.add_turn(debate_id, "user", text))

    def start_reply(self, debate_id: int) -> StoredTurn:
        """A bot turn that is running: it holds the next position, and its outcome is written into it."""
        return StoredTurn.of(self.repository.add_turn(debate_id, "assistant", "", state=TurnState.RUNNING))

    def restart(self, turn_id: int) -> StoredTurn:
        """A failed or cancelled bot turn running again in its place, its old outcome cleared."""
        return self._outcome(turn_id, TurnState.RUNNING)

    def add_reply(self, debate_id: int, turn: FinishedReply) -> StoredTurn:
        """A finished reply in one go."""
        return self.finish_reply(self.start_reply(debate_id).id, turn)

    def finish_reply(self, turn_id: int, turn: FinishedReply) -> StoredTurn:
        return self._outcome(
            turn_id, TurnState.DONE, content=turn.reply,
            steps_json=turn.steps.model_dump_json(exclude_none=True),
            evidence_json=EVIDENCE.dump_json(turn.evidence_rows()).decode(),
            length_action=turn.length_action, seconds=turn.seconds,
        )

    def finish_failure(self, turn_id: int, failure: FailedStep, seconds: float) -> StoredTurn:
        return self._outcome(
            turn_id, TurnState.FAILED, error=f"step {failure.step}: {failure.error}",
            steps_json=TurnSteps(failed_step=failure.step, raw=failure.raw).model_dump_json(exclude_none=True),
            seconds=seconds,
        )

    def cancel_reply(self, turn_id: int, seconds: float) -> StoredTurn:
        return self._outcome(turn_id, TurnState.CANCELLED, seconds=seconds)

    def _outcome(self, turn_id: int, state: TurnState, **values) -> StoredTurn:
        """Every outcome column written, those not given cleared, so no earlier run shows through."""
        cleared = dict(content="", steps_json=None, evidence_json=None, length_action=None, error=None, seconds=None)
        return StoredTurn.of(self.repository.update_turn(turn_id, **{**cleared, **values}, state=state))

    def set_labelling(self, turn_id: int, state: TurnState) -> None:
        """A student message's state is its labelling's: running, done, failed or cancelled."""
        self.repository.update_turn(turn_id, state=state)

    def link_judgment(self, turn_id: int, kind: str, method: str, judge: str, task: str, items: Sequence[str]) -> None:
        """The turn's judgment (`kind` grice or components) is the judge's verdicts on `items` in the
        judgment store."""
        link = JudgmentLink(task=task, items=list(items))
        self.repository.add_analysis(turn_id, kind, method, link.model_dump_json(), judge=judge)


def _link_of(row: TurnAnalysis) -> JudgmentLink | None:
    """The row's link, or None for a row of an earlier release (a copy of the result has neither field)."""
    try:
        return JudgmentLink.model_validate_json(row.result_json)
    except ValidationError:
        return None
