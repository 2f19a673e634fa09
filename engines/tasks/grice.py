"""The Grice-maxim task (Touché RAD sub-task 2): the four yes/no questions on a bot's reply.

Batch (`argtui eval grice`): an item is one user turn of a RAD debates file (a
user message and the bot's reply), judged on all four metrics at once. A run
writes the run file the official sub-task 2 evaluator reads and, with
`--labels`, scores each metric: the positive class (the official evaluator's
numbers) and the two-class macro (the paper's), beside two reference judges on
the same turns, always yes and a random judge seeded with `--seed`. The FSL
and Analyzer examples are drawn from the pool with `--seed`; turns of the
draw are not evaluated.

Arena: an item is one metric of one turn, answered yes or no with P(yes) and a
rationale. Turns come from the built-in demo examples (known answers, never in
a prompt) or, when the `touche-rad` dataset is configured and the user picks
it, from the bot turns of its submissions file (no reference: the RAD labels
are not public).
"""

from __future__ import annotations

import asyncio
import math
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Sequence

from engines.datasets.rad import TurnLabels, align_labels, read_rad_debates, read_rad_labels
from engines.errors import ArgtuiError
from engines.grice import (
    DEFAULT_STRATEGY,
    METRICS,
    QUESTIONS,
    STRATEGIES,
    ExamplePool,
    GriceContext,
    GriceJudgment,
    Method,
    MetricJudgment,
    ReasonCache,
    builtin_pool,
    check_pool,
    context_of_turn,
    judge_messages,
    judge_turn,
    methods_for,
    pool_from_rad,
    prompt_pool,
)
from engines.grice.judge import CHOICE_LABELS, YES_FORMS
from engines.grice.prompts import DEFAULT_LAYOUT, LAYOUTS
from engines.grice.types import YES_THRESHOLD
from engines.grice.evaluation import (
    GriceReport,
    always_yes_scores,
    grice_report,
    official_turn,
    random_scores,
    write_official_run,
)
from engines.judging.evaluate import TaskRun
from engines.judging.options import OptionInfo, PositiveCount, TaskOptions
from engines.judging.task import (
    PartHook,
    ReportTable,
    TaskBase,
    TaskContext,
    TaskItem,
    TaskReport,
    VariantName,
    canonical_variant,
)
from engines.judging.verdict import JudgeId, Verdict
from engines.judging.verify import StoredAnswers, Verification, close, compared, in_range
from engines.llm.client import LLMClient, read_choice
from engines.llm.types import Usage
from store.db import Database
from store.grice import GriceRepository, grice_variant

RUN_KIND = "eval-grice"
LABELS = ("yes", "no")
DATASET = "touche-rad"  # [datasets] entry: the RAD folder (or one debates file) for the Arena
RAD_TURNS_FILE = "touche25-rad-submissions-annotations.jsonl.gz"
DEMO_TURNS, RAD_TURNS = "built-in demos", "Touché RAD"
SHOWN_HISTORY = 4  # messages before the user's last one shown in an item's body
ALWAYS_YES, RANDOM = "always yes", "random"  # the reference judges of a scored report


class GriceOptions(TaskOptions):
    debates: Annotated[Path | None, OptionInfo(
        "debates (*.jsonl[.gz] with simulated_debate) or a GenIRSim run file", metavar="FILE", required=True,
    )] = None
    labels: Annotated[Path | None, OptionInfo(
        "labels in the official *-labels.jsonl shape, one line per debate", metavar="FILE")] = None
    pool_debates: Annotated[Path | None, OptionInfo(
        "labelled example pool for FSL/Analyzer: a debates file (with --pool-labels)", label="example pool debates",
        metavar="FILE", role="named")] = None
    pool_labels: Annotated[Path | None, OptionInfo(
        "labels of --pool-debates", label="example pool labels", metavar="FILE", role="named")] = None
    votes: Annotated[PositiveCount, OptionInfo(
        "sampled votes per answer (default 1: P(yes) from logprobs)", metavar="N", role="judge")] = 1
    no_rationale: Annotated[bool, OptionInfo(
        "skip the rationale call (one call per metric instead of two)", role="judge")] = False
    layout: Annotated[Literal[LAYOUTS], OptionInfo(
        "prompt order: seed (the paper's templates as printed) or shared (the same sentences "
        "after the debate block, so the four metrics share a cached prefix)", label="prompt layout", role="judge",
    )] = DEFAULT_LAYOUT


@dataclass(frozen=True)
class GriceItem:
    """What the judge needs of an item: the turn and which of its metrics to judge."""

    context: GriceContext
    metrics: tuple[str, ...]
    labels: TurnLabels  # known answers per metric: 1, 0, or None / absent when unknown
    debate_id: str = ""
    turn_index: int = 0


@dataclass(frozen=True)
class GriceTaskReport(TaskReport):
    strategy: str = ""
    official: tuple[tuple[str, tuple[dict, ...]], ...] = ()  # the run file: (debate id, its turns)


def turn_verdict(judgment: GriceJudgment) -> Verdict:
    """The verdict on the judged metrics of a turn. Every metric's judgment is in `data`;
    a single metric (the Arena's item) is also the label with P(yes) as its distribution."""
    metrics = list(judgment.metrics.values())
    invalid = [m for m in metrics if not m.valid]
    single = metrics[0] if len(metrics) == 1 else None
    if single is not None:
        detail = f"{single.method}: {single.rationale if single.valid else single.error}"
    else:
        detail = " · ".join(
            f"{m.metric} {m.answer} {m.p_yes:.2f}" if m.valid else f"{m.metric} invalid" for m in metrics
        )
    return Verdict(
        label=single.answer if single is not None else None,
        distribution={"yes": single.p_yes, "no": 1 - single.p_yes} if single is not None and single.valid else {},
        data={"strategy": judgment.strategy, "metrics": {m.metric: m.to_data() for m in metrics}},
        raw="\n".join(f"{m.metric}: {m.raw}" for m in invalid),
        invalid_reason="; ".join(f"{m.metric}: {m.error}" for m in invalid) or None,
        detail=detail,
        usage=judgment.usage,
        seconds=judgment.seconds,
    )


def metric_judgments(verdict: Verdict) -> dict[str, MetricJudgment]:
    """The per-metric judgments a verdict of this task holds."""
    return {metric: MetricJudgment.from_data(data) for metric, data in (verdict.data or {})["metrics"].items()}


def example_pool(options: GriceOptions) -> ExamplePool:
    """The FSL and Analyzer examples the options name, drawn with --seed: from the built-in pool
    unless a RAD pool is given."""
    if (options.pool_debates is None) != (options.pool_labels is None):
        raise ArgtuiError("--pool-debates and --pool-labels go together")
    if options.pool_debates is None:
        return prompt_pool(options.seed)
    return _rad_pool(
        options.pool_debates.expanduser().resolve(), options.pool_labels.expanduser().resolve(), options.seed
    )


@lru_cache(maxsize=4)
def _rad_pool(debates_path: Path, labels_path: Path, seed: int) -> ExamplePool:
    debates = read_rad_debates(debates_path)
    pool = pool_from_rad(debates_path.name, debates, align_labels(debates, read_rad_labels(labels_path), labels_path))
    return pool.drawn(seed)

# The turn a judge's identity is taken from (`TaskBase.probe_item`): every role speaks in it, and
# arguments were retrieved for it, so every part of a prompt is rendered.
PROBE_TURN = GriceContext(
    dialogue=(("user", "Cities should ban cars from their centres."),
              ("assistant", "Shops in the centre need vans to bring their stock."),
              ("user", "Vans could deliver at night, when the streets are empty.")),
    reply="Night deliveries would wake the people who live in the centre.",
    arguments=("Night deliveries disturb residents' sleep.", "Delivery bans raise shop prices."),
)


@dataclass(frozen=True)
class _Turn:
    key: str
    title: str
    context: GriceContext
    labels: dict[str, int]


@lru_cache(maxsize=1)
def _demo_turns() -> tuple[_Turn, ...]:
    return tuple(
        _Turn(f"demo-{number}", example.source.capitalize(), example.context, example.labels)
        for number, example in enumerate(builtin_pool().examples, start=1)
        if example.demo
    )


@lru_cache(maxsize=4)
def _rad_turns(path: Path) -> tuple[_Turn, ...]:
    return tuple(
        _Turn(f"{turn.debate_id}/{turn.index}", f"{turn.debate_id} · turn {turn.index + 1}", context_of_turn(turn), {})
        for debate in read_rad_debates(path)
        for turn in debate.user_turns()
    )


def _rad_file(ctx: TaskContext) -> Path | None:
    path = ctx.dataset_path(DATASET)
    if path is not None and path.is_dir():
        path = path / RAD_TURNS_FILE
    return path if path is not None and path.is_file() else None


def _turn_text(context: GriceContext) -> str:
    history = context.dialogue[-(SHOWN_HISTORY + 1):]
    omitted = len(context.dialogue) - len(history)
    lines = [f"({omitted} earlier messages)"] if omitted else []
    lines += [f"{'User' if role == 'user' else 'Bot'}: {text}" for role, text in history]
    lines += ["", f"» Bot reply under judgment: {context.reply}", "", "Retrieved arguments:"]
    lines += [f"  [{n}] {text}" for n, text in enumerate(context.arguments, start=1)] or ["  (none)"]
    return "\n".join(lines)


def _example_turns(debates: Path, limit: int | None, examples: frozenset[GriceContext]) -> int:
    """How many turns of the debates are examples of the pool (and so not evaluated)."""
    return sum(
        context_of_turn(turn) in examples for debate in read_rad_debates(debates, limit) for turn in debate.user_turns()
    )


def _score_tables(judges: dict[str, GriceReport]) -> tuple[ReportTable, ReportTable]:
    """Per metric, the judge's row and the reference rows below it; then the means over the metrics."""
    def rows(scores: str, counts: bool) -> tuple[tuple, ...]:
        found = []
        for metric in (*METRICS, "mean"):
            for name, report in judges.items():
                if metric == "mean":
                    prf = getattr(report, f"mean_{scores}")
                    extra: tuple = ("", "", "")
                else:
                    metric_scores = report.metrics[metric]
                    prf = getattr(metric_scores, scores)
                    extra = (metric_scores.labelled, metric_scores.unlabelled, metric_scores.invalid)
                found.append((metric, name, prf.precision, prf.recall, prf.f1, *(extra if counts else ())))
        return tuple(found)

    columns = ("metric", "judge", "precision", "recall", "F1")
    return (
        ReportTable(
            "Positive class (yes), as the official evaluator: threshold 0.5, null labels left out, invalid = no",
            (*columns, "labelled", "null", "invalid"), rows("positive_class", True),
        ),
        ReportTable(
            "Two-class macro (mean of yes and no), as the paper reports: same turns and threshold",
            columns, rows("two_class_macro", False),
        ),
    )


def _output_path(path: Path, strategy: str, several: bool) -> Path:
    # The official evaluator reads a directory holding exactly one run file: one per strategy.
    return path.parent / strategy / path.name if several else path


class GriceTask(TaskBase):
    name = "grice"
    title = "Grice maxims of a bot reply (Touché RAD sub-task 2)"
    description = (
        "Judge each bot reply of Touché RAD debates on the four Grice questions; writes the "
        "official sub-task 2 run file and, with --labels, scores it."
    )
    labels = LABELS
    variant_flag = "strategy"
    variant_section = "Grice strategies (judge names)"
    variant_names = {
        "ZSL": VariantName("Zero-shot", "Zero-shot", "the judge answers each maxim's question with no example"),
        "FSL1": VariantName("Few-shot (yes first)", "Few, yes 1", "one example answered yes, then one answered "
                            "no, before the question"),
        "FSL2": VariantName("Few-shot (no first)", "Few, no 1", "one example answered no, then one answered yes, "
                            "before the question"),
        "Analyzer1": VariantName("Analyzer (1 example)", "Analyzer 1", "the judge first derives reasons for yes "
                                 "and for no from 1 example of each, then answers"),
        "Analyzer3": VariantName("Analyzer (3 examples)", "Analyzer 3",
                                 "as Analyzer (1 example), from 3 examples of each answer"),
        "Analyzer5": VariantName("Analyzer (5 examples)", "Analyzer 5",
                                 "as Analyzer (1 example), from 5 examples of each answer"),
        "BEST": VariantName("Best per maxim", "Best mix", "the best method of each maxim: Zero-shot for relation, "
                            "Analyzer (5 examples) for quality, Analyzer (1 example) for manner and quantity"),
    }
    limit_help = "only the first N debates"
    output_help = "run file to write (default: in the data directory; one folder per strategy when several)"
    Options = GriceOptions

    def __init__(self) -> None:
        self._reasons: tuple[Database, ReasonCache] | None = None

    def variants(self) -> tuple[str, ...]:
        return (DEFAULT_STRATEGY, *(s for s in STRATEGIES if s != DEFAULT_STRATEGY))

    def filters(self, ctx: TaskContext) -> dict[str, tuple[str, ...]]:
        found = {"metric": METRICS}
        if _rad_file(ctx) is not None:
            found["turns"] = (DEMO_TURNS, RAD_TURNS)
        return found

    def check_options(self, options: GriceOptions) -> None:
        """Fails before any backend starts when the pool cannot serve a chosen strategy."""
        pool = example_pool(options)
        for variant in options.variant or [self.variants()[0]]:
            check_pool(canonical_variant(self, variant), pool)

    def items(self, ctx: TaskContext, options: GriceOptions) -> list[TaskItem]:
        """Every user turn of the debates but those drawn as examples."""
        debates = read_rad_debates(options.debates, options.limit)
        gold = align_labels(debates, read_rad_labels(options.labels), options.labels) if options.labels else {}
        examples = example_pool(options).contexts
        items = []
        for debate in debates:
            for turn in debate.user_turns():
                context = context_of_turn(turn)
                if context in examples:
                    continue
                items.append(TaskItem(
                    key=f"{turn.debate_id}/{turn.index}",
                    title=f"{turn.debate_id} · turn {turn.index + 1}",
                    body=_turn_text(context),
                    payload=GriceItem(context, METRICS, gold.get((turn.debate_id, turn.index), {}),
                                      turn.debate_id, turn.index),
                ))
        return items

    def draw(
        self, ctx: TaskContext, rng: random.Random, metric: str | None = None, turns: str | None = None
    ) -> TaskItem:
        if turns == RAD_TURNS:
            path = _rad_file(ctx)
            if path is None:
                raise ArgtuiError(f"no Touché RAD debates: set {DATASET} under [datasets] in the config file")
            candidates = _rad_turns(path)
        else:
            candidates = _demo_turns()
        if metric is None:
            turn = rng.choice(candidates)
            metric = rng.choice([m for m in METRICS if m in turn.labels] or list(METRICS))
        else:
            turn = rng.choice([t for t in candidates if metric in t.labels] or candidates)
        question = QUESTIONS[metric]
        known = turn.labels.get(metric)
        return TaskItem(
            key=f"{turn.key}/{metric}",
            title=f"{turn.title} · {question.dimension}",
            body=f"{question.dimension} ({question.maxim}): {question.question}\n\n{_turn_text(turn.context)}",
            reference=None if known is None else LABELS[0] if known else LABELS[1],
            payload=GriceItem(turn.context, (metric,), turn.labels),
        )

    def probe_item(self, ctx: TaskContext, options: GriceOptions) -> TaskItem:
        """PROBE_TURN on every metric: a strategy asks each maxim its own way."""
        return TaskItem("probe", "probe turn", _turn_text(PROBE_TURN), payload=GriceItem(PROBE_TURN, METRICS, {}))

    def judge_variant(self, variant: str, options: GriceOptions) -> str:
        pool = example_pool(options)
        return grice_variant(variant, pool.name, pool.digest)

    def concurrency(self, variant: str, client: LLMClient, options: GriceOptions) -> int:
        # Each turn runs its metrics at once; enough turns to fill the backend's slots.
        return max(1, math.ceil(client.profile.max_concurrency / len(METRICS)))

    def _reason_cache(self, db: Database) -> ReasonCache:
        """One cache per database, shared by concurrent judgments so each stage 1 runs once."""
        if self._reasons is None or self._reasons[0] is not db:
            self._reasons = (db, ReasonCache(GriceRepository(db)))
        return self._reasons[1]

    async def judge(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: GriceOptions,
        on_metric: Callable[[MetricJudgment], None] | None = None,
    ) -> Verdict:
        """`on_metric` is told each metric's judgment as it finishes, before the verdict on them all
        (a live debate shows the maxims one by one)."""
        grice: GriceItem = item.payload
        judgment = await judge_turn(
            client, grice.context, variant, example_pool(options), on_metric,
            reasons=self._reason_cache(ctx.db), votes=options.votes, rationale=not options.no_rationale,
            metrics=grice.metrics, layout=options.layout,
        )
        return turn_verdict(judgment)

    async def prepare(self, ctx: TaskContext, variant: str, client: LLMClient, options: GriceOptions) -> None:
        """The Analyzer's stage-1 reasons of every metric the strategy asks that way (about half of a
        first turn's prompt tokens, derived once per model and stage-1 prompt and kept), then each
        metric's prompt up to the debate computed into the server's prompt cache. A stage 1 that
        fails is left for the first turn to report."""
        pool, reasons = example_pool(options), self._reason_cache(ctx.db)
        before_the_debate = GriceContext((), "")

        async def primed(metric: str, method: Method) -> None:
            found = None
            if method.kind == "Analyzer":
                found = (await reasons.reasons(client, metric, method.k, pool)).reasons
                if found is None:
                    return
            await client.prime(judge_messages(metric, method, before_the_debate, pool, found, options.layout))

        await asyncio.gather(*(primed(metric, method) for metric, method in methods_for(variant).items()))

    async def judge_in_parts(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: GriceOptions,
        on_part: PartHook,
    ) -> Verdict:
        """Each metric's `MetricJudgment` told as it finishes."""
        return await self.judge(ctx, item, variant, client, options, on_metric=on_part)

    def verify(self, ctx: TaskContext, verdict: Verdict, answers: StoredAnswers) -> Verification:
        """Each metric's P(yes) in [0, 1], its answer the one at the official threshold, and P(yes)
        read again from the kept answer (of a greedy call: a share of votes keeps no answer apart)."""
        found = Verification()
        for name, metric in metric_judgments(verdict).items():
            if metric.p_yes is None:
                continue
            found = found + Verification((
                *in_range(f"{name}: P(yes)", metric.p_yes),
                *compared(f"{name}: the answer at P(yes) ≥ {YES_THRESHOLD:g}", metric.answer,
                          "yes" if metric.p_yes >= YES_THRESHOLD else "no"),
            ))
            if metric.source == "votes":
                found = found + Verification(not_recomputable="P(yes) is a share of sampled votes, "
                                                              "whose answers the verdict does not keep apart")
                continue
            found = found + answers.reread(
                f"{name}: P(yes) read again from its answer", metric.raw, metric.p_yes,
                lambda completion: sum(read_choice(completion, CHOICE_LABELS, greedy=True).distribution.get(form, 0.0)
                                       for form in YES_FORMS),
                close,
            )
        return found

    def report(
        self, ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict],
        options: GriceOptions, run_id: int,
    ) -> GriceTaskReport:
        pool = example_pool(options)
        turns = [(item.payload, metric_judgments(verdicts[item.key])) for item in items]
        strategy = verdicts[items[0].key].data["strategy"]
        official: dict[str, list[dict]] = {}
        for turn, metrics in turns:
            official.setdefault(turn.debate_id, []).append(official_turn(
                {m: j.p_yes for m, j in metrics.items()}, {m: j.rationale for m, j in metrics.items()},
            ))
        lines = tuple((debate_id, tuple(debate_turns)) for debate_id, debate_turns in official.items())
        output = self._run_file(ctx, run_id, strategy, lines, options)

        count = len(turns)
        excluded = _example_turns(options.debates, options.limit, pool.contexts)
        usage = Usage.total(verdicts[item.key].usage for item in items)
        per_turn = {
            "calls": usage.calls / count,
            "prompt_tokens": usage.prompt_tokens / count,
            "completion_tokens": usage.completion_tokens / count,
            "latency_seconds": sum(verdicts[item.key].seconds for item in items) / count,
        }
        invalid = {m: sum(1 for _, metrics in turns if not metrics[m].valid) for m in METRICS}
        data: dict[str, Any] = {
            "output": str(output) if output else None,
            "config": {
                "debates": str(options.debates.expanduser().resolve()), "limit": options.limit,
                "strategy": strategy,
                "methods": {metric: method.name for metric, method in methods_for(strategy).items()},
                "judge": judge.profile, "model": judge.model, "pool": pool.name, "pool_digest": pool.digest,
                "pool_seed": pool.seed,
                "votes": options.votes, "rationale": not options.no_rationale, "layout": options.layout,
            },
            "debates": len(official), "turns": count, "example_turns_left_out": excluded,
            "invalid_metrics": invalid, "per_turn": per_turn,
        }
        notes = [
            f"{count} turns of {len(official)} debates, strategy {strategy}, "
            f"examples drawn from pool {pool.name} with seed {pool.seed}"
            + (f"; {excluded} turns drawn as examples left out" if excluded else ""),
            f"per turn: {per_turn['calls']:.1f} LLM calls, {per_turn['prompt_tokens']:.0f} prompt tokens, "
            f"{per_turn['latency_seconds']:.2f} s latency",
        ]
        if any(invalid.values()):
            notes.append("invalid judgments (scored as no): " + ", ".join(f"{m} {n}" for m, n in invalid.items()))
        tables: tuple[ReportTable, ...] = ()
        if options.labels:
            gold = {m: [turn.labels[m] for turn, _ in turns] for m in METRICS}
            judges = {
                strategy: grice_report(gold, {m: [metrics[m].p_yes for _, metrics in turns] for m in METRICS}),
                ALWAYS_YES: grice_report(gold, always_yes_scores(count)),
                f"{RANDOM} (seed {options.seed})": grice_report(gold, random_scores(count, options.seed)),
            }
            data["scores"] = judges[strategy].as_dict()
            data["reference_scores"] = {
                ALWAYS_YES: judges[ALWAYS_YES].as_dict(),
                RANDOM: {"seed": options.seed, **judges[f"{RANDOM} (seed {options.seed})"].as_dict()},
            }
            tables = _score_tables(judges)
        if output:
            notes.append(f"run file (official sub-task 2 shape): {output}")
        return GriceTaskReport(
            f"Grice maxims · {strategy}", tables, tuple(notes), data, strategy=strategy, official=lines,
        )

    def _run_file(self, ctx: TaskContext, run_id: int, strategy: str, lines: tuple, options: GriceOptions) -> Path:
        """Where the run file goes: --output (written by `write_output`), else a file of the run
        in the data directory, written here."""
        if options.output is not None:
            return _output_path(options.output, strategy, len(options.variant or ()) > 1)
        path = ctx.data_dir / "runs" / f"{RUN_KIND}-{run_id}" / "run.jsonl"
        write_official_run(path, lines)
        return path

    def write_output(self, path: Path, runs: list[TaskRun]) -> None:
        for run in runs:
            report: GriceTaskReport = run.report  # type: ignore[assignment]
            write_official_run(_output_path(path, report.strategy, len(runs) > 1), report.official)


TASK = GriceTask()
