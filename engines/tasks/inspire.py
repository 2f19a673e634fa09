"""InspireScore (seed 003) of every turn of debates, the bot's and the student's.

Items are turns: of a debates file (`--debates`: the Touché RAD debates shape, a
GenIRSim run, or argtui's own `argtui export debate ID --format jsonl` record) or
of a stored debate (`--debate ID`). Each turn gets its six dimensions (see
`engines.inspire.score`), stored through the judgment store with the overall
score as the verdict's value. With `--candidates K`, each bot turn whose step
outputs are known also gets K alternative replies from step 5 of the five-step
pipeline (one request with n = K), each scored the same way: what
`argtui export preferences` turns into DPO pairs.
"""

from __future__ import annotations

import asyncio
import math
import random
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from engines.datasets import DataFormatError, json_lines
from engines.datasets.rad import read_rad_debates
from engines.debate.opponent import DebateSetup, DialogueTurn
from engines.debate.pipeline import DebatePipeline
from engines.debate.records import DebateRecords, StoredTurn, TurnSteps
from engines.errors import ArgtuiError
from engines.inspire.fact_sources import source_identity
from engines.inspire.score import (
    DIMENSION_TITLES,
    DIMENSIONS,
    TASK_NAME,
    InspireScore,
    ScoreProgress,
    debate_score,
    score_text,
    shared_prompts,
    stored_turn_key,
)
from engines.inspire.subjective import TEMPERATURE, DimensionScore, expected_score, level_score, read_answer
from engines.judging.evaluate import TaskRun
from engines.judging.judge_one import judge_one
from engines.judging.store import JudgmentStore
from engines.judging.task import PartHook, ReportTable, TaskBase, TaskContext, TaskItem, TaskReport, VariantName
from engines.judging.verdict import JudgeId, Verdict
from engines.judging.verify import (
    Mismatch,
    StoredAnswers,
    Verification,
    argmax_holds,
    close,
    compared,
    distribution_holds,
    in_range,
    same_distribution,
)
from engines.llm.client import LLMClient
from engines.llm.types import Usage
from engines.metrics.bootstrap import bootstrap_ci
from engines.retrieval.types import FactSource
from engines.tasks import inspire_against
from engines.tasks.inspire_turns import (
    Candidate,
    InspireItem,
    InspireOptions,
    Role,
    TurnJudgment,
    per_turn_cost,
    turn_judgment,
)
from store.debates import DebateRepository

VARIANT = "inspire"


def verify_score(where: str, score: InspireScore, answers: StoredAnswers) -> Verification:
    """One text's scores: each subjective dimension's level, distribution and score as today's reader
    reads them from the kept answer, and in range; logic and facts in range."""
    problems = [*in_range(f"{where}logical validity", score.logic.score),
                *in_range(f"{where}supported", score.facts.score)]
    for name, dimension in score.subjective.dimensions.items():
        problems += level_holds(f"{where}{name}", dimension)
    found = Verification(tuple(problems))
    if not score.subjective.valid:
        return found + Verification(not_recomputable="its subjective answer could not be read when judged")
    return found + answers.reread(
        f"{where}the subjective dimensions read again from their answer", score.subjective.raw,
        _levels(score.subjective.dimensions), lambda completion: _levels(read_answer(completion).dimensions),
        lambda stored, read: stored.keys() == read.keys() and all(
            stored[name][0] == read[name][0] and close(stored[name][1], read[name][1])
            and same_distribution(stored[name][2], read[name][2]) for name in stored),
    )


def _levels(dimensions: dict[str, DimensionScore]) -> dict[str, tuple[int, float, dict[str, float]]]:
    return {name: (d.level, d.score, d.distribution) for name, d in dimensions.items()}


def level_holds(where: str, dimension: DimensionScore) -> list[Mismatch]:
    """A level of a greedy answer is the most probable of its distribution, its score the
    probability-weighted level (or the level's own where no distribution was read), in [0, 1]."""
    distribution = dimension.distribution
    if not distribution:
        return in_range(where, dimension.score) + compared(f"{where}: the emitted level's score", dimension.score,
                                                           level_score(dimension.level))
    return [
        *distribution_holds(where, distribution),
        *(argmax_holds(where, distribution, str(dimension.level)) if TEMPERATURE == 0 else []),
        *compared(f"{where}: the probability-weighted level", dimension.score, expected_score(distribution)),
        *compared(f"{where}: P(the emitted level)", dimension.probability, distribution.get(str(dimension.level))),
        *in_range(where, dimension.score),
    ]
DEMO_TURNS = (
    ("School uniforms should be mandatory",
     "Uniforms cost families money every year, and studies found no drop in bullying where schools adopted them."),
    ("Ban cars from city centres",
     "Shops need deliveries, so a total ban would hurt them; vans bring stock to shops every morning."),
)


class InspireJudgeSettings(BaseModel):
    """What a judge's InspireScores rest on beyond its options: the fact source (a statements file
    by its content) and how subjective levels become scores."""

    model_config = ConfigDict(frozen=True)

    facts: str
    subjective_levels: Literal["probability-weighted"] = "probability-weighted"


# ---------------------------------------------------------------- reading debates


Turn = tuple[Role, str, TurnSteps | None, tuple[str, ...]]  # role, text, step outputs, evidence ids


def turn_evidence(steps: TurnSteps | None, ids: Iterable[str] = ()) -> tuple[str, ...]:
    """The ids of the arguments a turn retrieved (its retrieval step's graphs) or quoted (`ids`: its
    evidence rows, a RAD message's arguments), each once."""
    graphs = steps.retrieval.graphs if steps and steps.retrieval else []
    return tuple(dict.fromkeys([*(node.id for graph in graphs for node in graph.nodes), *ids]))


def _items_of(debate: str, topic: str, turns: Sequence[Turn],
              user_side: Literal["pro", "con"] | None) -> list[InspireItem]:
    items, dialogue = [], []
    for position, (role, text, steps, evidence) in enumerate(turns):
        items.append(InspireItem(debate, position, role, topic, text, tuple(dialogue), user_side, steps, evidence))
        dialogue.append((role, text))
    return items


def _record_items(path: Path, number: int, record: dict) -> list[InspireItem]:
    """An `argtui export debate ID --format jsonl` record: its turns in the dialogue."""
    def field(name: str, kind: type) -> Any:
        value = record.get(name)
        if not isinstance(value, kind):
            raise DataFormatError(path, number, name, f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    claim, side = field("claim", str), field("user_side", str)
    if side not in ("pro", "con"):
        raise DataFormatError(path, number, "user_side", f"expected pro or con, got {side!r}")
    turns: list[Turn] = []
    for index, turn in enumerate(field("turns", list)):
        at = f"turns[{index}]"
        if not isinstance(turn, dict) or turn.get("role") not in ("user", "assistant") or not isinstance(
            turn.get("content"), str
        ):
            raise DataFormatError(path, number, at, "expected an object with role user|assistant and content")
        if turn.get("role") == "assistant" and (turn.get("error") or turn.get("state", "done") != "done"):
            continue  # a failed or cancelled bot turn is not part of the dialogue
        steps = TurnSteps.model_validate(turn["steps"]) if turn.get("steps") else None
        rows = turn.get("evidence") or []
        if not isinstance(rows, list):
            raise DataFormatError(path, number, f"{at}.evidence", f"expected a list, got {type(rows).__name__}")
        for row_index, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise DataFormatError(path, number, f"{at}.evidence[{row_index}].id", "expected a string")
        turns.append((turn["role"], turn["content"], steps, turn_evidence(steps, (row["id"] for row in rows))))
    return _items_of(str(record.get("id", number)), claim, turns, side)  # type: ignore[arg-type]


def file_items(path: Path, limit: int | None = None) -> list[InspireItem]:
    """The turns of a debates file, in file order; `limit` debates at most."""
    first = next(json_lines(path), None)
    if first is not None and isinstance(first[1], dict) and "turns" in first[1] and "claim" in first[1]:
        items = []
        for count, (number, record) in enumerate(json_lines(path)):
            if limit is not None and count >= limit:
                break
            if not isinstance(record, dict):
                raise DataFormatError(path, number, None, "expected a debate record object")
            items += _record_items(path, number, record)
        return items
    return [
        item
        for debate in read_rad_debates(path, limit)
        for item in _items_of(debate.id, debate.claim, [
            (m.role, m.content, None, tuple(a.id for a in m.arguments)) for m in debate.messages
        ], None)
    ]


def _stored(ctx: TaskContext, debate_id: int) -> list[tuple[StoredTurn, InspireItem]]:
    """The turns of a stored debate's dialogue, each with its item."""
    repository = DebateRepository(ctx.db)
    debate = repository.get(debate_id)
    if debate is None:
        raise ArgtuiError(f"no debate with id {debate_id} (argtui debate --list shows them)")
    stored = [t for t in DebateRecords(repository).turns(debate_id) if t.in_dialogue]
    turns = [(t.role, t.content, t.steps, turn_evidence(t.steps, (row.id for row in t.evidence))) for t in stored]
    items = _items_of(f"debate:{debate_id}", debate.claim, turns, debate.user_side)  # type: ignore[arg-type]
    return list(zip(stored, items))


def stored_items(ctx: TaskContext, debate_id: int) -> list[InspireItem]:
    return [item for _, item in _stored(ctx, debate_id)]


def _key(item: InspireItem) -> str:
    if item.debate.startswith("debate:"):
        return stored_turn_key(int(item.debate.removeprefix("debate:")), item.position)
    return f"{item.debate}/{item.position}"


def _task_item(item: InspireItem) -> TaskItem:
    speaker = "student" if item.role == "user" else "bot"
    context = [f"{'Student' if r == 'user' else 'Bot'}: {t}" for r, t in item.dialogue[-4:]]
    return TaskItem(
        key=_key(item), title=f"{item.debate} · turn {item.position + 1} ({speaker})",
        body="\n".join([f"Topic: {item.topic}", *context, "", f"» {speaker.capitalize()}: {item.text}"]),
        payload=item,
    )


# ---------------------------------------------------------------- the report


def _interval(values: list[float], seed: int) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    data = np.asarray(values)
    interval = bootstrap_ci(lambda idx: float(data[idx].mean()), len(values), seed=seed)
    return interval.estimate, interval.low, interval.high


def dimension_rows(judgments: Sequence[TurnJudgment], seed: int = 0, label: str = "") -> list[tuple]:
    """Per dimension and overall: mean, 95% bootstrap interval over the turns, turns scored."""
    rows = []
    for name in (*DIMENSIONS, "overall"):
        values = [
            value for j in judgments
            if (value := (j.score.overall if name == "overall" else j.score.dimensions[name])) is not None
        ]
        mean, low, high = _interval(values, seed)
        title = "overall" if name == "overall" else DIMENSION_TITLES[name]
        rows.append(((label, title) if label else (title,)) + (mean, low, high, len(values)))
    return rows


def problem_counts(judgments: Sequence[TurnJudgment]) -> dict[str, int]:
    """What could not be read or did not hold, over the turns."""
    scores = [j.score for j in judgments]
    return {
        "subjective unreadable": sum(not s.subjective.valid for s in scores),
        "translations": len(scores),
        "translations unparsed": sum(not s.logic.valid for s in scores),
        "derivations": sum(len(s.logic.checks) for s in scores),
        "derivations invalid": sum(s.logic.count("invalid") for s in scores),
        "derivations inconsistent": sum(s.logic.count("inconsistent") for s in scores),
        "derivations circular": sum(s.logic.count("circular") for s in scores),
        "derivations left out (not about the text)": sum(s.logic.dropped for s in scores),
        "derivations unparsed": sum(s.logic.count("unparsed") for s in scores),
        "derivations timed out": sum(s.logic.count("timeout") for s in scores),
        "claim lists unreadable": sum(not s.facts.valid for s in scores),
        "claims": sum(len(s.facts.verdicts) for s in scores),
        "claims dropped (not in the text)": sum(s.facts.dropped for s in scores),
        "fact verdicts unreadable": sum(not v.valid for s in scores for v in s.facts.verdicts),
    }


class InspireTask(TaskBase):
    name = TASK_NAME
    title = "InspireScore of debate turns: four subjective dimensions, logical validity, facts (seed 003)"
    description = (
        "Scores every turn of debates (a RAD debates file, a GenIRSim run, argtui's own debate export, or a "
        "stored debate) on emotional appeal, clarity, arrangement, topic relevance, logical validity (a solver "
        "checks the model's translation) and support by the argument base (claims checked against it, or against "
        "--facts SOURCE, the turn's own arguments excluded); "
        "--candidates K also scores K alternative bot replies per bot turn for `argtui export preferences`."
    )
    variant_section = "InspireScore (judge names)"
    variant_names = {
        "inspire": VariantName("InspireScore", "Inspire", "six dimensions of a debate turn, logic and facts checked"),
    }
    limit_help = "only the first N debates of --debates; with --against, a seeded sample of N arguments (default 50)"
    Options = InspireOptions

    def variants(self) -> tuple[str, ...]:
        return (VARIANT,)

    def check_options(self, options: InspireOptions) -> None:
        if sum(given is not None for given in (options.debates, options.debate, options.against)) != 1:
            raise ArgtuiError("give exactly one of --debates FILE, --debate ID and --against DATASET")
        if options.against is not None:
            inspire_against.check_options(options)
        elif options.data is not None:
            raise ArgtuiError("--data is the data of --against DATASET; give --debates FILE for debates")

    def items(self, ctx: TaskContext, options: InspireOptions) -> list[TaskItem]:
        self.check_options(options)
        if options.against is not None:
            return inspire_against.items(ctx, options)
        found = (
            file_items(options.debates.expanduser(), options.limit) if options.debates is not None
            else stored_items(ctx, options.debate)
        )
        return [_task_item(item) for item in found]

    def draw(self, ctx: TaskContext, rng: random.Random, **filters: str) -> TaskItem:
        topic, text = rng.choice(DEMO_TURNS)
        return _task_item(InspireItem("demo", 0, "user", topic, text, ()))

    async def settled_options(self, ctx: TaskContext, options: InspireOptions) -> InspireOptions:
        """The fact source the config chooses when --facts does not."""
        return options.model_copy(update={"facts": ctx.chosen_fact_source(options.facts)})

    def judge_settings(self, variant: str, options: InspireOptions) -> InspireJudgeSettings:
        return InspireJudgeSettings(facts=source_identity(options.facts))

    def concurrency(self, variant: str, client: LLMClient, options: InspireOptions) -> int:
        # A turn runs three calls at once, then one per claim.
        return max(1, math.ceil(client.profile.max_concurrency / 3))

    async def prepare(self, ctx: TaskContext, variant: str, client: LLMClient, options: InspireOptions) -> None:
        """What every turn's calls begin with (about 750 tokens, most of a first turn's: the logic
        translation's instruction and worked examples, the other two calls' instructions), computed
        into the server's prompt cache."""
        await asyncio.gather(*(client.prime(messages) for messages in shared_prompts()))

    async def judge(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: InspireOptions,
        on_part: Callable[[ScoreProgress], None] | None = None,
    ) -> Verdict:
        turn: InspireItem = item.payload
        facts = await ctx.fact_source(options.facts)
        score = await score_text(client, facts.retriever, turn.topic, turn.text, turn.dialogue, turn.evidence,
                                 facts.name, on_part)
        candidates = await self._candidates(ctx, client, facts, turn, options.candidates, options.seed)
        judgment = TurnJudgment(
            debate=turn.debate, position=turn.position, role=turn.role, topic=turn.topic, user_side=turn.user_side,
            dialogue=list(turn.dialogue), text=turn.text, score=score, candidates=candidates,
        )
        usage = score.usage + Usage.total(c.score.usage for c in candidates if c.score is not None)
        problems = score.problems
        return Verdict(
            value=score.overall, data=judgment.model_dump(mode="json"), detail=score.summary(),
            invalid_reason="; ".join(problems) if score.overall is None else None,
            raw="\n".join(filter(None, (score.subjective.raw, score.logic.raw, score.facts.raw))),
            usage=usage, seconds=score.seconds,
        )

    async def judge_in_parts(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: InspireOptions,
        on_part: PartHook,
    ) -> Verdict:
        """Each part of the turn's score (`ScoreProgress`) told as it finishes."""
        return await self.judge(ctx, item, variant, client, options, on_part)

    async def score_stored_turn(self, ctx: TaskContext, client: LLMClient, debate_id: int, position: int,
                                on_part: Callable[[ScoreProgress], None] | None = None) -> TurnJudgment:
        """Score the turn at stored `position` of a debate and store it as `argtui eval inspire --debate ID`
        does: the same judge, item key and verdict, so that command judges it no more. `on_part` is told
        each part of the score as it finishes."""
        found = next((item for turn, item in _stored(ctx, debate_id) if turn.position == position), None)
        if found is None:
            raise ArgtuiError(f"debate {debate_id} has no turn {position} in its dialogue to score")
        # The command's defaults, settled as it settles them.
        judged = await judge_one(ctx, self, client, VARIANT, InspireOptions(), _task_item(found), on_part=on_part)
        return turn_judgment(judged.verdict)

    async def _candidates(self, ctx: TaskContext, client: LLMClient, facts: FactSource, turn: InspireItem,
                          k: int | None, seed: int) -> list[Candidate]:
        steps = turn.steps
        if not k or turn.role != "assistant" or steps is None or steps.strategy is None or steps.final is None:
            return []
        side = turn.user_side or "pro"
        pipeline = DebatePipeline(client, await ctx.retriever(), seed=seed)
        history = [DialogueTurn(role, text) for role, text in turn.dialogue]
        replies = await pipeline.reply_candidates(DebateSetup(turn.topic, side), history, steps.strategy, steps.final, k)
        scores = await asyncio.gather(*(
            # the candidates answer from the turn's own arguments: those are no evidence of theirs either
            score_text(client, facts.retriever, turn.topic, reply.value.response, turn.dialogue, turn.evidence,
                       facts.name)
            for reply in replies if reply.value is not None
        ))
        valid = iter(scores)
        return [
            Candidate(text=reply.value.response, score=next(valid)) if reply.value is not None
            else Candidate(text=reply.raw, error=reply.error)
            for reply in replies
        ]

    def verify(self, ctx: TaskContext, verdict: Verdict, answers: StoredAnswers) -> Verification:
        """Every scored text of the turn (the reply and its candidates) read again from its subjective
        answer, its levels' invariants, and the overall score the mean of the dimensions that have one."""
        if verdict.data is None:
            return Verification(not_recomputable="an invalid verdict keeps no scores")
        judgment = turn_judgment(verdict)
        found = Verification(tuple(compared("overall: the mean of the dimensions that have a score",
                                            verdict.value, judgment.score.overall)))
        texts = [("", judgment.score)] + [(f"candidate {n}: ", c.score) for n, c in enumerate(judgment.candidates, 1)
                                          if c.score is not None]
        for where, score in texts:
            found = found + verify_score(where, score, answers)
        return found

    def report(
        self, ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict],
        options: InspireOptions, run_id: int,
    ) -> TaskReport:
        if options.against is not None:
            return inspire_against.report(ctx, judge, items, verdicts, options)
        judgments = [turn_judgment(verdicts[item.key]) for item in items]
        return inspire_report(judgments, options.seed, f"InspireScore · {judge.name}")

    def summary(self, runs: list[TaskRun]) -> TaskReport:
        """Per judge of the command: mean and 95% interval per dimension, and what did not parse
        (with --against: the overall score against the experts)."""
        if runs and all(isinstance(run.report, inspire_against.AgainstReport) for run in runs):
            return inspire_against.summary(runs)
        rows, counts = [], []
        for run in runs:
            judgments = [turn_judgment(v) for v in run.outcome.verdicts.values()]
            rows += dimension_rows(judgments, label=run.judge.name)
            problems = problem_counts(judgments)
            counts.append((run.judge.name, problems["subjective unreadable"], problems["translations unparsed"],
                           problems["derivations invalid"], problems["derivations unparsed"],
                           problems["fact verdicts unreadable"]))
        return TaskReport(
            "InspireScore summary",
            (
                ReportTable("Mean and 95% bootstrap interval per dimension, over the turns scored on it",
                            ("judge", "dimension", "mean", "low", "high", "turns"), tuple(rows)),
                ReportTable("Unparsed and invalid", ("judge", "subjective", "translations", "derivations invalid",
                                                     "derivations unparsed", "fact verdicts"), tuple(counts)),
            ),
            data={"dimensions": [dict(zip(("judge", "dimension", "mean", "low", "high", "turns"), r)) for r in rows]},
        )


def inspire_report(judgments: Sequence[TurnJudgment], seed: int, title: str) -> TaskReport:
    debates: dict[str, list[TurnJudgment]] = {}
    for judgment in judgments:
        debates.setdefault(judgment.debate, []).append(judgment)
    per_debate = {name: debate_score([(j.role, j.score) for j in turns]) for name, turns in debates.items()}
    problems = problem_counts(judgments)
    cost = per_turn_cost(judgments)
    parsed = problems["translations"] - problems["translations unparsed"]
    candidates = [c for j in judgments for c in j.candidates]
    notes = [
        f"{len(judgments)} turns of {len(debates)} debates; overall = mean of the dimensions scored",
        f"per turn: {cost['calls']:.1f} LLM calls, {cost['prompt_tokens']:.0f} prompt tokens, "
        f"{cost['seconds']:.2f} s",
        f"translations parsed: {parsed} of {problems['translations']}",
    ]
    if candidates:
        notes.append(f"candidates: {sum(c.score is not None for c in candidates)} scored, "
                     f"{sum(c.score is None for c in candidates)} did not parse")
    rows = dimension_rows(judgments, seed)
    return TaskReport(
        title,
        (
            ReportTable("Mean and 95% bootstrap interval per dimension, over the turns scored on it",
                        ("dimension", "mean", "low", "high", "turns"), tuple(rows)),
            ReportTable("Per debate (student and bot over the dimensions both sides have)",
                        ("debate", "turns", "overall", "student", "bot", "shared dimensions"), tuple(
                (name, score.turns, score.overall, score.student, score.bot, len(score.shared))
                for name, score in per_debate.items()
            )),
            ReportTable("Unparsed and invalid", ("what", "count"), tuple(problems.items())),
        ),
        tuple(notes),
        {
            "turns": len(judgments), "debates": {name: score.model_dump() for name, score in per_debate.items()},
            "dimensions": [dict(zip(("dimension", "mean", "low", "high", "turns"), row)) for row in rows],
            "problems": problems, "per_turn": cost,
            "translations_parsed_share": parsed / problems["translations"] if problems["translations"] else None,
            "levels": [turn_levels(j) for j in judgments],
        },
    )


def turn_levels(judgment: TurnJudgment) -> dict[str, Any]:
    """A turn's subjective dimensions as scored: the emitted level, the distribution it was scored
    from (empty, with why, where none was read), the rule and the score."""
    return {
        "debate": judgment.debate, "position": judgment.position, "role": judgment.role,
        "dimensions": {
            name: {"level": d.level, "distribution": d.distribution, "unread": d.unread, "rule": d.rule, "score": d.score}
            for name, d in judgment.score.subjective.dimensions.items()
        },
    }


TASK = InspireTask()


# ---------------------------------------------------------------- preference pairs


class PreferencePair(BaseModel):
    """One DPO example in TRL's standard preference shape (`prompt`, `chosen`, `rejected`), with
    both replies' InspireScores over the dimensions both have (`dimensions`), and how many of
    all dimensions each reply was scored on (`coverage_*`: scored, all)."""

    prompt: str
    chosen: str
    rejected: str
    score_chosen: float
    score_rejected: float
    dimensions: tuple[str, ...]
    coverage_chosen: tuple[int, int]
    coverage_rejected: tuple[int, int]
    debate: str
    position: int
    judge: str


def preference_pairs(ctx: TaskContext, judge: str | None = None) -> list[PreferencePair]:
    """Per scored bot turn with candidates: the two replies furthest apart on the dimensions both
    have (`TurnJudgment.preferred_pair`; skipped when no reply beats another). `judge` keeps one
    judge's verdicts (JudgeId name)."""
    from engines.debate.opponent import render_dialogue

    store = JudgmentStore(ctx.db, TASK_NAME)
    pairs = []
    for stored in store.judges():
        if judge is not None and stored.name != judge:
            continue
        for verdict in store.latest(stored.judge).values():
            turn = turn_judgment(verdict)
            preferred = turn.preferred_pair() if turn.role == "assistant" else None
            if preferred is None:
                continue
            (chosen, chosen_score), (rejected, rejected_score), comparison = preferred
            setup = DebateSetup(turn.topic, turn.user_side or "pro")
            prompt = render_dialogue(setup, [DialogueTurn(role, text) for role, text in turn.dialogue])
            pairs.append(PreferencePair(
                prompt=prompt, chosen=chosen, rejected=rejected, score_chosen=comparison.a,
                score_rejected=comparison.b, dimensions=comparison.dimensions, coverage_chosen=chosen_score.coverage,
                coverage_rejected=rejected_score.coverage, debate=turn.debate, position=turn.position,
                judge=stored.name,
            ))
    return pairs
