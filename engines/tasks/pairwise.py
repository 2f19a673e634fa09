"""Pairwise argument quality (seed 000): which of two arguments of a Webis-ArgQuality-20
topic is stronger on one dimension, A / B / Tie, against the expert comparisons.

The variants are the seed's prompts (zero-shot, few-shot, chain-of-thought);
--mode, --runs, --temperature and --run-requests say how a pair is asked (see
engines/pairwise/judge.py) and are named by the judge's variant
("few/runs3@t1"). The report is the seed's Table 1 per dimension: BT scores
per topic against the published expert scores, labels against the expert
labels, then the run-to-run variability (Table 4) in runs mode; `--versus`
adds Table 3, the best stored judge against every other one on the same pairs.
`--judge experts` fits BT on the experts' own comparisons instead, with no
backend and nothing stored.
"""

from __future__ import annotations

import io
import json
import dataclasses
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Sequence

from engines.datasets.webis import DIMENSIONS
from engines.errors import ArgtuiError
from engines.judging.evaluate import TaskRun
from engines.judging.store import ARENA_PREFIX, JudgmentStore
from engines.judging.options import OptionInfo, PositiveCount, TaskOptions
from engines.judging.task import (
    AuditedItem,
    ItemSide,
    ReportTable,
    TaskBase,
    TaskContext,
    TaskItem,
    StoredJudgment,
    TaskReport,
    VariantName,
    canonical_variant,
)
from engines.judging.verdict import JudgeId, Verdict
from engines.metrics.agreement import finite_or_none
from engines.llm.client import LLMClient
from engines.llm.types import Usage
from engines.output import write_csv, write_text_file
from engines.pairwise.evaluation import (
    PairwiseReport,
    VersusRow,
    evaluate,
    expert_judgments,
    judged_pair,
    mean_correlation,
    versus,
)
from engines.pairwise.fewshot import FEWSHOT_RULES
from engines.pairwise.judge import MODES, JudgeSettings, majority_label, mode_of_variant, run_labels
from engines.pairwise.prompts import DIM_ADVERB, LABELS, STRATEGIES
from engines.pairwise.run import TASK_NAME, PairItem, judge_item, load_corpus, select_items

NAME = TASK_NAME
EXPERTS = "experts"
METRIC_HEADERS = {
    "pearson": "r", "spearman": "ρ", "kendall": "τ", "mae": "MAE", "rmse": "RMSE",
    "kappa": "κ", "alpha": "α", "percent": "%",
}
VARIABILITY_HEADERS = {"all_equal": "all equal %", "two_equal": "2 equal %", "all_unequal": "all unequal %"}
OUTPUT_SUFFIXES = (".json", ".csv")


@dataclass(frozen=True)
class PairwiseTaskReport(TaskReport):
    """A task report with the evaluation behind it (`--output` adds its per-argument scores)."""

    variant: str = ""
    evaluation: PairwiseReport | None = None  # always given; a default only because the base class has them
    versus: tuple[VersusRow, ...] = ()  # Table 3 (`--versus`): the best judge against each other judge

    def as_dict(self, scores: bool) -> dict:
        data = {"variant": self.variant, **self.evaluation.as_dict(scores)}
        if self.versus:
            data["versus"] = self.data["versus"]
        return data


def _fmt(value: float | None, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value * 100:.2f}" if percent else f"{value:.3f}"


def _metric_cells(row: dict) -> tuple[str, ...]:
    return tuple(_fmt(row[key], percent=key == "percent") for key in METRIC_HEADERS)


def pairwise_report(
    title: str, variant: str, evaluation: PairwiseReport, notes: Sequence[str] = ()
) -> PairwiseTaskReport:
    """The seed's Table 1 (one row per dimension, then their mean), its Table 4 (run-to-run
    variability) where there were runs, and per dimension the bootstrap intervals and the
    position bias where measured."""
    rows = tuple((row["dimension"], row["pairs"], row["invalid"], *_metric_cells(row)) for row in evaluation.table_rows())
    tables = [ReportTable("", ("dimension", "pairs", "invalid", *METRIC_HEADERS.values()), rows,
                          caption="the seed's Table 1 columns; % is percent agreement")]
    if variability := evaluation.variability_rows():
        tables.append(ReportTable(
            "Run-to-run variability (the seed's Table 4)",
            ("dimension", "pairs", *VARIABILITY_HEADERS.values(), "α"),
            tuple(
                (row["dimension"], row["pairs"], *(_fmt(row[key], True) for key in VARIABILITY_HEADERS),
                 _fmt(row["alpha"]))
                for row in variability
            ),
            caption=f"{variability[0]['runs']} runs per pair; α: Krippendorff's α with the runs as raters",
        ))
    dimension_notes = []
    for dimension in evaluation.dimensions:
        parts = []
        if dimension.intervals:
            parts.append("95% CI " + ", ".join(
                f"{METRIC_HEADERS[name]} [{_fmt(i.low)}, {_fmt(i.high)}]" for name, i in dimension.intervals.items()
            ))
        if dimension.position_bias:
            p = dimension.position_bias
            parts.append(
                f"swap: same verdict in both orders {_fmt(p.consistent, True)}%, "
                f"first-shown argument picked {_fmt(p.first_position, True)}% of decisive answers"
            )
        if parts:
            dimension_notes.append(f"{dimension.dimension}: " + "; ".join(parts))
    return PairwiseTaskReport(
        title, tuple(tables), (*dimension_notes, *notes), {"variant": variant, **evaluation.as_dict(scores=False)},
        variant, evaluation,
    )


def with_versus(report: PairwiseTaskReport, best: str, best_score: float, rows: Sequence[VersusRow]) -> PairwiseTaskReport:
    """The report with the seed's Table 3 after its own tables: `best` against each judge of `rows`."""
    table = ReportTable(
        f"{best} against the other judges (the seed's Table 3)",
        ("judge", "pairs", *METRIC_HEADERS.values()),
        tuple((row.judge, row.pairs, *_metric_cells(row.mean)) for row in rows),
        caption="mean over the dimensions; BT per topic fitted on the pairs both judged",
    )
    note = (f"Table 3's reference is the stored judge with the highest mean of r, ρ and τ against the "
            f"experts on these pairs ({_fmt(best_score)})")
    return dataclasses.replace(
        report, tables=(*report.tables, table), notes=(*report.notes, note),
        data={**report.data, "versus": {"best": best, "best_mean_correlation": finite_or_none(best_score),
                                        "rows": [row.as_dict() for row in rows]}},
        versus=tuple(rows),
    )


def _cost_note(verdicts: Sequence[Verdict]) -> str:
    usage = Usage.total(verdict.usage for verdict in verdicts)
    n = len(verdicts)
    return (
        f"LLM cost per judgment over the {n} stored verdicts: {usage.calls / n:.2f} answers, "
        f"{usage.prompt_tokens / n:.1f} prompt + {usage.completion_tokens / n:.1f} completion tokens"
    )


def write_reports(path: Path, results: Sequence[tuple[PairwiseTaskReport, dict[str, Any]]]) -> None:
    """.json: every report with its per-argument scores (and the run's counts beside it);
    .csv: the Table 1 rows of every report."""
    if path.suffix == ".json":
        payload = {"task": NAME, "results": [{**run, **report.as_dict(scores=True)} for report, run in results]}
        write_text_file(path, json.dumps(payload, indent=2), make_parents=True)
        return
    rows = io.StringIO()
    write_csv(rows, ["judge", "dimension", "pairs", "invalid", *METRIC_HEADERS],
              (row for report, _ in results for row in report.evaluation.table_rows()))
    write_text_file(path, rows.getvalue(), make_parents=True)


# mode, runs, temperature and run requests are named by the variant ("few/runs3@t1"), as
# judges were named before tasks existed; as judge options they would add a digest.
class PairwiseOptions(TaskOptions):
    dimension: Annotated[list[Literal[DIMENSIONS]], OptionInfo("quality dimensions (default: all three)")] = list(
        DIMENSIONS
    )
    topics: Annotated[list[int] | None, OptionInfo("topic ids (default: all 20)", metavar="ID")] = None
    mode: Annotated[Literal[MODES], OptionInfo(
        "runs: majority of --runs samples; logprob: one call, label distribution; "
        "swap: both orders, position bias (default: runs)", role="named")] = "runs"
    runs: Annotated[PositiveCount, OptionInfo("samples per pair in runs mode (default: 3)", role="named")] = 3
    temperature: Annotated[float | None, OptionInfo(
        "sampling temperature (default: 1 for runs, 0 for logprob and swap)", role="named")] = None
    run_requests: Annotated[Literal["one", "separate"], OptionInfo(
        "runs as one request with n (shared prefill, default) or one request each", label="run requests",
        role="named")] = "one"
    data: Annotated[Path | None, OptionInfo(
        "an original Webis-ArgQuality-20 release folder (default: the bundled copy)", metavar="DIR")] = None
    fewshot_rule: Annotated[Literal[FEWSHOT_RULES], OptionInfo(
        "few-shot examples: labelled (default: the A example among the expert-A pairs, "
        "the B example among the expert-B pairs) or literal (largest score gap over all pairs)",
        label="few-shot rule", role="judge")] = "labelled"
    bootstrap: Annotated[int, OptionInfo(
        "bootstrap resamples for correlation intervals (0: none; default 1000)", metavar="N", role="report")] = 1000
    versus: Annotated[bool, OptionInfo(
        "after the last prompt, the seed's Table 3: the best stored judge (highest mean r, ρ, τ "
        "against the experts) against every other stored judge on these pairs", role="report")] = False


class PairwiseTask(TaskBase):
    name = NAME
    title = "Pairwise argument quality (Webis-ArgQuality-20)"
    description = (
        "Judge expert comparison pairs with an LLM, fit Bradley-Terry scores per topic and report agreement "
        "with the experts (the seed's Table 1). `--judge experts` fits BT on the experts' own comparisons "
        "as a sanity check."
    )
    labels = LABELS
    variant_flag = "prompt"
    variant_section = "Pairwise prompts (judge names)"
    variant_names = {
        "zero": VariantName("Zero-shot", "Zero-shot", "the judge compares the two arguments with no example"),
        "few": VariantName("Few-shot", "Few-shot", "judged example pairs come before the pair"),
        "cot": VariantName("Chain of thought", "Reasoning", "the judge reasons step by step, then picks A, B or Tie"),
    }
    limit_help = "judge a seeded random sample of N pairs per dimension"
    output_help = "write the result: .json (everything, with per-argument scores) or .csv (Table 1 rows)"
    Options = PairwiseOptions
    audit_fills = {"orders": {"mode": "swap"}, "runs": {"mode": "runs", "runs": 3}}

    def variants(self) -> tuple[str, ...]:
        return STRATEGIES

    def audited_items(self, judge: JudgeId, stored: Sequence[StoredJudgment]) -> list[AuditedItem]:
        """A judge's answers in both orders (swap mode) or of its runs, and the pair's texts' lengths."""
        corpus = load_corpus()
        mode = mode_of_variant(judge.variant)
        items = []
        for key, reference, verdict in stored:
            pair = PairItem.from_key(key.removeprefix(ARENA_PREFIX), reference or "")
            texts = [corpus.argument(pair.topic_id, side).text for side in (pair.a, pair.b)]
            answers = run_labels(verdict)
            items.append(AuditedItem(
                key, reference, verdict,
                orders=(answers[0], answers[1]) if mode == "swap" and len(answers) == 2 else None,
                runs=answers if mode == "runs" else (),
                lengths=(len(texts[0].split()), len(texts[1].split())),
            ))
        return items

    def filters(self, ctx: TaskContext) -> dict[str, tuple[str, ...]]:
        return {"dimension": DIMENSIONS}

    def check_options(self, options: PairwiseOptions) -> None:
        if options.output and options.output.suffix not in OUTPUT_SUFFIXES:
            raise ArgtuiError(f"--output {options.output}: the file name must end in .json or .csv")

    def items(self, ctx: TaskContext, options: PairwiseOptions) -> list[TaskItem]:
        corpus = load_corpus(options.data)
        pairs = select_items(corpus, options.dimension, options.topics, options.limit, options.seed)
        return [
            TaskItem(
                pair.key,
                f"Topic {pair.topic_id} · {pair.dimension} · {pair.a_uid} vs {pair.b_uid}",
                f"Which argument is {DIM_ADVERB[pair.dimension]} stronger: A {pair.a_uid} or B {pair.b_uid}?",
                reference=pair.expert,
                payload=pair,
                # The texts the judge reads, in the item's digest: other texts under the same ids are judged anew.
                sides=(ItemSide(f"Argument A ({pair.a_uid})", corpus.argument(pair.topic_id, pair.a).text),
                       ItemSide(f"Argument B ({pair.b_uid})", corpus.argument(pair.topic_id, pair.b).text)),
            )
            for pair in pairs
        ]

    def draw(self, ctx: TaskContext, rng: random.Random, dimension: str | None = None) -> TaskItem:
        """A random expert comparison with both texts; the reference adds the published scores."""
        corpus = load_corpus()
        dimension = dimension or rng.choice(DIMENSIONS)
        comparisons = corpus.comparisons[dimension]
        index = rng.randrange(len(comparisons))
        comparison = comparisons[index]
        pair = PairItem(dimension, comparison.topic_id, comparison.a, comparison.b, comparison.label)
        a, b = corpus.argument(pair.topic_id, pair.a), corpus.argument(pair.topic_id, pair.b)
        topic = corpus.topics[pair.topic_id]
        return TaskItem(
            pair.key,
            f"Topic {pair.topic_id} · {dimension} · pair {index + 1} of {len(comparisons)}",
            f"Topic {topic.id}: {topic.long_query}\nWhich argument is {DIM_ADVERB[dimension]} stronger?",
            reference=pair.expert,
            payload=pair,
            sides=(ItemSide(f"Argument A ({a.uid})", a.text), ItemSide(f"Argument B ({b.uid})", b.text)),
            reference_note=f"published {dimension} scores: A {a.scores[dimension]:+.2f}, B {b.scores[dimension]:+.2f}",
        )

    def settings(self, variant: str, options: PairwiseOptions) -> JudgeSettings:
        return JudgeSettings(variant, options.mode, options.runs, options.temperature, options.run_requests)

    def judge_settings(self, variant: str, options: PairwiseOptions) -> JudgeSettings:
        return self.settings(variant, options)

    def judge_variant(self, variant: str, options: PairwiseOptions) -> str:
        return self.settings(variant, options).variant

    def concurrency(self, variant: str, client: LLMClient, options: PairwiseOptions) -> int:
        # A pair in runs mode decodes `runs` sequences: keep the server's slots, not its queue, busy.
        return max(1, client.profile.max_concurrency // self.settings(variant, options).sequences)

    async def judge(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: PairwiseOptions
    ) -> Verdict:
        return await judge_item(client, self.settings(variant, options), item.payload, options.data, options.fewshot_rule)

    def panel_data(self, verdicts: Sequence[Verdict]) -> dict[str, Any]:
        """A panel's answers in each order (swap) or of each run: each the seed's majority of its
        members' (a split is a Tie), so the panel's position figures and run variability are read as
        a judge's; none where the members gave unlike numbers of answers."""
        answers = [run_labels(verdict) for verdict in verdicts]
        if len({len(given) for given in answers}) != 1:
            return {}
        return {"run_labels": [majority_label(given) for given in zip(*answers)]}

    def report(
        self, ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict],
        options: PairwiseOptions, run_id: int,
    ) -> PairwiseTaskReport:
        judged = [item for item in items if item.key in verdicts]
        evaluation = evaluate(
            load_corpus(options.data), judge.name,
            [judged_pair(item.payload, verdicts[item.key]) for item in judged],
            mode=options.mode, resamples=options.bootstrap,
        )
        notes = (_cost_note([verdicts[item.key] for item in judged]),) if judged else ()
        report = pairwise_report(f"{judge.name} vs experts", judge.variant, evaluation, notes)
        if options.versus and self._last_of_command(judge, options):
            report = self.versus_report(ctx, items, options, report)
        return report

    def _last_of_command(self, judge: JudgeId, options: PairwiseOptions) -> bool:
        """Whether `judge` ran the command's last prompt: Table 3 waits until every prompt is stored."""
        given = options.variant or [self.variants()[0]]
        return judge.variant == self.judge_variant(canonical_variant(self, given[-1]), options)

    def versus_report(
        self, ctx: TaskContext, items: Sequence[TaskItem], options: PairwiseOptions, report: PairwiseTaskReport
    ) -> PairwiseTaskReport:
        """`report` with Table 3 over the stored judges' verdicts on `items`."""
        corpus = load_corpus(options.data)
        by_key = {item.key: item.payload for item in items}
        store = JudgmentStore(ctx.db, NAME)
        judged = {}
        for stored in store.judges():
            verdicts = store.load(stored.judge, items)
            if verdicts:
                judged[stored.name] = [judged_pair(by_key[key], verdict) for key, verdict in verdicts.items()]
        if len(judged) < 2:
            return dataclasses.replace(report, notes=(
                *report.notes, f"Table 3 needs two stored judges of these pairs; {len(judged)} found",
            ))
        quality = {name: mean_correlation(evaluate(corpus, name, pairs)) for name, pairs in judged.items()}
        best = max(sorted(quality), key=quality.__getitem__)
        rows = [versus(judged[best], judged[name], name) for name in sorted(judged) if name != best]
        return with_versus(report, best, quality[best], rows)

    def run_offline(self, options: PairwiseOptions) -> PairwiseTaskReport | None:
        """`--judge experts`: BT on the experts' own comparisons against the published scores, with
        no backend and nothing stored (--output is written here); None for any other judge."""
        if options.judge != EXPERTS:
            return None
        corpus = load_corpus(options.data)
        pairs = select_items(corpus, options.dimension, options.topics, options.limit, options.seed)
        evaluation = evaluate(corpus, EXPERTS, expert_judgments(pairs), resamples=options.bootstrap)
        report = pairwise_report(
            "experts: BT on their own comparisons vs the published scores", "expert comparisons", evaluation
        )
        if options.output:
            write_reports(options.output, [(report, {})])
        return report

    def write_output(self, path: Path, runs: Sequence[TaskRun]) -> None:
        write_reports(path, [
            (run.report, {
                "run_id": run.outcome.run.id, "judged_now": run.outcome.judged_now, "resumed": run.outcome.resumed,
                "usage": run.outcome.progress.usage.as_dict(),
            })
            for run in runs
        ])


TASK = PairwiseTask()
