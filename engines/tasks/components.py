"""The `components` task: argument component classification (MAD-ACC) on the UKP essays.

An item is one gold component (key "<essay id>/<component id>", the gold
label its reference), classified with the whole essay as context and every
other gold component masked as <ARG>. The variants are the methods: mad
(the debate), vanilla and cot. The Arena draws components of the UKP test
essays when the config names the release folder, otherwise components of
built-in example paragraphs, without a reference. `label_text` labels a
free text and stores it under the same judge names.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

from engines.components import (
    LABELS,
    ClassifierSettings,
    ComponentResult,
    Span,
    classify_component,
    label_components,
    segment,
)
from engines.components.evaluation import ComponentItem, essay_items, evaluate, prediction_rows
from engines.components.formatting import excerpt
from engines.components.records import (
    document_part,
    judge_variant,
    method_of,
    result_of,
    save_labelled_text,
    store_essays,
    verdict_of,
)
from engines.datasets.ukp_essays import DATA_ENV, SPLITS, Essay, load_ukp_essays
from engines.errors import ArgtuiError
from engines.judging.evaluate import TaskRun, judge_id
from engines.judging.task import Option, ReportTable, TaskContext, TaskItem, TaskReport
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.metrics.classification import INVALID
from engines.output import write_text_file
from store.components import JUDGMENT_TASK
from store.db import Database

DATASET = "ukp-essays"  # its key in the config file's [datasets] table
DEFAULT_VOTES = ClassifierSettings.manager_votes
DEFAULT_TURN_TOKENS = ClassifierSettings.debater_max_tokens

EXAMPLE_TEXTS = (
    "Cities should ban private cars from their centres. Traffic in the centre is slow and dangerous, "
    "because narrow streets were never built for cars. For example, buses in old town centres often "
    "move slower than pedestrians. A car-free centre would also make the air cleaner.",
    "Homework does more harm than good in primary school. Children need time to play, since play "
    "builds social skills that lessons cannot teach. Moreover, long evenings of homework leave "
    "families with little time together. Some teachers argue that practice at home is essential, "
    "but short exercises in class achieve the same effect.",
    "Public libraries remain essential in the digital age. Not everyone can afford a computer or an "
    "internet connection at home. Libraries give these people free access to information. In "
    "addition, librarians help readers to judge which sources can be trusted.",
)


def settings_of(options: Any) -> ClassifierSettings:
    """The classifier's settings from the task's options (None: the default)."""
    turn_tokens = options.turn_tokens or DEFAULT_TURN_TOKENS
    return ClassifierSettings(
        debater_max_tokens=turn_tokens,
        judge_max_tokens=turn_tokens,
        manager_votes=options.votes or DEFAULT_VOTES,
        skip_threshold=options.skip_threshold,
    )


def data_path(ctx: TaskContext, given: Path | None) -> Path:
    """The UKP essays release folder: --data, else the config's [datasets] (or $ARGTUI_UKP_ESSAYS)."""
    path = given or ctx.dataset_path(DATASET)
    if not path:
        raise ArgtuiError(
            f"give the UKP essays folder with --data PATH (or set {DATA_ENV}, "
            f"or {DATASET} = \"PATH\" under [datasets] in the config file)"
        )
    return Path(path).expanduser()


@lru_cache(maxsize=2)
def _test_essays(path: Path) -> tuple[Essay, ...]:
    return tuple(load_ukp_essays(path, "test"))


@dataclass(frozen=True)
class ComponentReport(TaskReport):
    """The report, with every prediction and its transcript for `--output`."""

    predictions: tuple[dict, ...] = ()


class ComponentsTask:
    name = JUDGMENT_TASK
    title = "Argument components (MajorClaim / Claim / Premise)"
    description = (
        "Classify every gold argument component of the UKP Argument Annotated Essays "
        "(whole essay as context, other components masked) and report macro F1, weighted F1, "
        "per-class F1 and the confusion matrix. Resumable: rerun the same command to continue."
    )
    limit_help = "only the first N essays of the split"
    output_help = "also write metrics and every prediction with its transcript (JSON)"
    labels: tuple[str, ...] = LABELS
    variant_flag = "method"
    options = (
        Option(
            "data", f"the UKP essays release folder (or its brat-project-final folder); "
            f"default ${DATA_ENV}, else {DATASET} in the config file's [datasets]", type=Path, metavar="PATH",
        ),
        Option("split", "essays to use (all: every essay pair)", choices=SPLITS, default="test"),
        Option(
            "skip_threshold", "mad: skip the debate when the manager's top probability exceeds P",
            type=float, metavar="P", judge_option=True,
        ),
        Option(
            "votes", f"mad: manager votes (1: logprob distribution; default {DEFAULT_VOTES})",
            type=int, metavar="N", judge_option=True,
        ),
        Option(
            "turn_tokens",
            f"mad: token limit of each debate turn and of the judge's reason (default {DEFAULT_TURN_TOKENS})",
            type=int, metavar="N", judge_option=True,
        ),
    )

    def variants(self) -> tuple[str, ...]:
        return ("mad", "vanilla", "cot")

    def filters(self, ctx: TaskContext) -> dict[str, tuple[str, ...]]:
        return {}

    def check_options(self, options: Any) -> None:
        """Checks the settings, and drops those equal to the default so that they name the same judge."""
        if options.skip_threshold is not None and not 0 <= options.skip_threshold <= 1:
            raise ArgtuiError("--skip-threshold must be a probability between 0 and 1")
        for name, default in (("votes", DEFAULT_VOTES), ("turn_tokens", DEFAULT_TURN_TOKENS)):
            value = getattr(options, name)
            if value is not None and value < 1:
                raise ArgtuiError(f"--{name.replace('_', '-')} must be at least 1")
            if value == default:
                setattr(options, name, None)

    def items(self, ctx: TaskContext, options: Any) -> list[TaskItem]:
        essays = load_ukp_essays(data_path(ctx, options.data), options.split, options.limit)
        store_essays(ctx.db, essays)
        return essay_items(essays)

    def draw(self, ctx: TaskContext, rng: random.Random, **filters: str) -> TaskItem:
        path = ctx.dataset_path(DATASET)
        essays = _test_essays(path) if path is not None and path.is_dir() else ()
        if essays:
            return rng.choice(essay_items([rng.choice(essays)]))
        number = rng.randrange(len(EXAMPLE_TEXTS))
        text = EXAMPLE_TEXTS[number]
        spans = tuple(segment(text))
        target = rng.randrange(len(spans))
        return TaskItem(
            key=f"example{number + 1}/S{target + 1}",
            title=f"example {number + 1} · component {target + 1} of {len(spans)} (no gold label)",
            body=excerpt(text, spans[target]),
            payload=ComponentItem(text, spans, target),
        )

    def judge_variant(self, variant: str, options: Any) -> str:
        return judge_variant(variant, options.seed)

    def concurrency(self, variant: str, client: LLMClient, options: Any) -> int:
        return client.profile.max_concurrency

    async def judge(self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: Any) -> Verdict:
        payload: ComponentItem = item.payload
        result = await classify_component(
            client, payload.text, payload.spans, payload.target, variant,
            settings=settings_of(options), seed=options.seed, key=item.key,
        )
        return verdict_of(result)

    def report(
        self, ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict], options: Any,
        run_id: int,
    ) -> ComponentReport:
        method = method_of(judge.variant)
        results = {item.key: result_of(verdicts[item.key], method) for item in items if item.key in verdicts}
        evaluation = evaluate(items, results)
        report = evaluation.report
        essays = len({document_part(item.key) for item in items})
        per_class = ReportTable(
            "Per-class scores", ("label", "precision", "recall", "F1", "support"),
            tuple((label, s.precision, s.recall, s.f1, s.support) for label, s in report.per_class.items()),
            caption=f"macro F1 {report.macro_f1:.3f}   weighted F1 {report.weighted_f1:.3f}   "
            f"accuracy {report.accuracy:.3f}   invalid {report.invalid} of {report.n}",
        )
        confusion = ReportTable(
            "Confusion matrix (rows: gold, columns: predicted)", ("gold \\ predicted", *LABELS, INVALID),
            tuple((gold, *(report.confusion[gold][label] for label in (*LABELS, INVALID))) for gold in LABELS),
        )
        return ComponentReport(
            title=f"{judge.variant} on {essays} essays ({options.split}), {len(items)} components; judge {judge.name}",
            tables=(per_class, confusion),
            notes=(
                f"cost: {evaluation.calls_per_component:.2f} calls and {evaluation.seconds_per_component:.2f} s "
                f"per component ({evaluation.tokens_per_component:.0f} tokens; {evaluation.cached_calls} calls "
                f"answered by the cache; {evaluation.skipped} debates skipped)",
                "the Components view shows every transcript",
            ),
            data={"split": options.split, "essays": essays, "method": method, **evaluation.as_dict()},
            predictions=tuple(prediction_rows(items, results)),
        )

    def write_output(self, path: Path, runs: Sequence[TaskRun]) -> None:
        """The metrics and every prediction with its transcript: one object, or a list of them for several methods."""
        written = [
            {
                "metrics": {"judge": run.judge.name, "run_id": run.outcome.run.id, **run.report.data},
                "predictions": list(run.report.predictions),  # type: ignore[attr-defined]
            }
            for run in runs
        ]
        write_text_file(path, json.dumps(written[0] if len(written) == 1 else written, indent=2), make_parents=True)


TASK = ComponentsTask()


async def label_text(
    db: Database,
    client: LLMClient,
    text: str,
    method: str,
    options: Any,
    spans: Sequence[Span] | None = None,
    on_component: Callable[[int, ComponentResult], None] | None = None,
) -> tuple[JudgeId, list[ComponentResult]]:
    """Label every component of a free text (`segment(text)` unless spans are given) and store them
    under the judge a batch run with the same options would be (`options`: see `default_options`)."""
    TASK.check_options(options)
    judge = await judge_id(TASK, client, method, options)
    results = await label_components(
        client, text, spans, method, seed=options.seed, on_component=on_component, settings=settings_of(options)
    )
    save_labelled_text(db, text, results, judge)
    return judge, results
