"""The `components` task: argument component classification (MAD-ACC) on the UKP essays.

An item is one gold component (key "<essay id>/<component id>", the gold
label its reference), classified with the whole essay as context and every
other gold component masked as <ARG>. The variants are the methods: mad
(the debate), vanilla, cot and smart (smart reasoning: the Judge's rules
without a debate). The judge profile (`--judge`) runs the Judge and every
single-agent method; `--manager` and `--debaters` give those MAD-ACC roles
profiles of their own. Each run reports per-class scores and the confusion
matrix; `summary` puts the runs of one command into the seed's Table 1. The Arena draws components of the UKP test
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
from typing import Annotated, Callable, Literal, Sequence

from pydantic import AfterValidator, model_validator

from engines.components import (
    LABELS,
    METHODS,
    ClassifierSettings,
    ComponentResult,
    Span,
    classify_component,
    label_components,
    segment,
)
from engines.components.classifier import FALLBACK_VOTES
from engines.components.evaluation import ComponentItem, essay_items, evaluate, prediction_rows
from engines.components.formatting import excerpt
from engines.components.prompts import classify_messages
from engines.components.records import (
    document_part,
    judge_variant,
    result_of,
    save_labelled_text,
    store_essays,
    verdict_of,
)
from engines.datasets.ukp_essays import DATA_ENV, SPLITS, Essay, load_ukp_essays
from engines.errors import ArgtuiError
from engines.judging.evaluate import TaskRun
from engines.judging.judge_one import settle
from engines.judging.options import OptionInfo, PositiveCount, TaskOptions
from engines.judging.task import ReportTable, TaskBase, TaskContext, TaskItem, TaskReport, VariantName
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.metrics.classification import INVALID, ClassificationReport
from engines.output import write_text_file
from store.components import JUDGMENT_TASK

DATASET = "ukp-essays"  # its key in the config file's [datasets] table
DEFAULT_VOTES = ClassifierSettings.manager_votes
DEFAULT_TURN_TOKENS = ClassifierSettings.debater_max_tokens
DEFAULT_JUDGE_TOKENS = ClassifierSettings.judge_max_tokens
DEFAULT_REASONING_TOKENS = ClassifierSettings.reasoning_max_tokens
# The counts a judge's name leaves out at their default (the options model drops them).
COUNT_DEFAULTS = {
    "votes": DEFAULT_VOTES, "turn_tokens": DEFAULT_TURN_TOKENS, "judge_tokens": DEFAULT_JUDGE_TOKENS,
    "reasoning_tokens": DEFAULT_REASONING_TOKENS,
}
ROLE_OPTIONS = ("manager", "debaters")  # MAD-ACC roles that may run on a profile of their own
# The seed's Table 1: its rows in its order, and its columns.
TABLE_ROWS = {"vanilla": "Vanilla", "cot": "Chain-of-Thought", "smart": "Smart Reasoning", "mad": "MAD-ACC"}
TABLE_COLUMNS = ("method", "Macro F1", "W-F1", "MC", "Claim", "Premise")
# The seed's supervised reference row: printed as the paper reports it (macro F1 only), never run here.
REFERENCE_ROW = {"name": "Cabessa et al. (2025)", "macro_f1": 89.5}

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


def _probability(value: float | None) -> float | None:
    if value is not None and not 0 <= value <= 1:
        raise ValueError("must be a probability between 0 and 1")
    return value


class ComponentOptions(TaskOptions):
    data: Annotated[Path | None, OptionInfo(
        f"the UKP essays release folder (or its brat-project-final folder); "
        f"default ${DATA_ENV}, else {DATASET} in the config file's [datasets]", metavar="PATH")] = None
    split: Annotated[Literal[SPLITS], OptionInfo("essays to use (all: every essay pair)")] = "test"
    skip_threshold: Annotated[float | None, AfterValidator(_probability), OptionInfo(
        "mad: skip the debate when the manager's top probability exceeds P", label="skip above P", metavar="P",
        role="judge")] = None
    votes: Annotated[PositiveCount | None, OptionInfo(
        f"mad: manager votes (1: logprob distribution, or {FALLBACK_VOTES} sampled votes where the backend "
        f"sends no logprobs; default {DEFAULT_VOTES})", label="manager votes",
        metavar="N", role="judge")] = None
    manager: Annotated[str | None, OptionInfo(
        "mad: backend profile of the Manager (default: the --judge profile)", label="manager profile",
        metavar="PROFILE", role="judge")] = None
    debaters: Annotated[str | None, OptionInfo(
        "mad: backend profile of the Proponent and the Opponent (default: the --judge profile)",
        label="debaters profile", metavar="PROFILE", role="judge")] = None
    turn_tokens: Annotated[PositiveCount | None, OptionInfo(
        f"mad: token limit of each debater's turn (default {DEFAULT_TURN_TOKENS})", label="turn tokens",
        metavar="N", role="judge")] = None
    judge_tokens: Annotated[PositiveCount | None, OptionInfo(
        f"mad and smart: token limit of the Judge's reason (default {DEFAULT_JUDGE_TOKENS})",
        label="judge tokens", metavar="N", role="judge")] = None
    reasoning_tokens: Annotated[PositiveCount | None, OptionInfo(
        f"cot: token limit of the chain of thought (default {DEFAULT_REASONING_TOKENS})",
        label="reasoning tokens", metavar="N", role="judge")] = None

    @model_validator(mode="after")
    def _defaults_unset(self) -> ComponentOptions:
        """A setting equal to its default is unset, so that it names the same judge as leaving it out."""
        for name, default in COUNT_DEFAULTS.items():
            if getattr(self, name) == default:
                setattr(self, name, None)
        for role in ROLE_OPTIONS:
            if getattr(self, role) == self.judge:  # the judge's own profile: the default
                setattr(self, role, None)
        return self


def settings_of(options: ComponentOptions) -> ClassifierSettings:
    """The classifier's settings from the task's options (None: the default)."""
    return ClassifierSettings(
        debater_max_tokens=options.turn_tokens or DEFAULT_TURN_TOKENS,
        judge_max_tokens=options.judge_tokens or DEFAULT_JUDGE_TOKENS,
        reasoning_max_tokens=options.reasoning_tokens or DEFAULT_REASONING_TOKENS,
        manager_votes=options.votes or DEFAULT_VOTES,
        skip_threshold=options.skip_threshold,
    )


def request_answer_tokens(method: str, settings: ClassifierSettings) -> int:
    """The most answer tokens one request of `method` can hold: the answers it reads (mad's Judge reads
    every debate turn) and its own. Its prompt, the marked document, comes on top; a label is a token or two."""
    if method == "mad":
        return 2 * settings.rounds * settings.debater_max_tokens + settings.judge_max_tokens
    return {"cot": settings.reasoning_max_tokens, "smart": settings.judge_max_tokens}.get(method, 0)


def check_fits_context(method: str, options: ComponentOptions, context: int | None) -> None:
    """Refuses, before any request, a method whose answers alone may overflow a request of `context`
    tokens (None: not known, nothing refused): its calls would be cut or refused after minutes of work."""
    needed = request_answer_tokens(method, settings_of(options))
    if context is not None and needed >= context:
        raise ArgtuiError(
            f"--method {method} does not fit this model: one of its requests holds up to {needed:,} tokens of "
            f"answers before its prompt (the token budget of --turn-tokens, --judge-tokens, --reasoning-tokens), "
            f"and the model's context is {context:,} tokens. Use --method vanilla, or lower those limits."
        )


async def role_clients(ctx: TaskContext, options: ComponentOptions) -> dict[str, LLMClient | None]:
    """The clients of the roles given a profile of their own (None: the judge's)."""
    return {role: await ctx.client(name) if (name := getattr(options, role)) else None for role in ROLE_OPTIONS}


def percent(value: float) -> float:
    return round(100 * value, 1)


def table_row(method: str, scores: ClassificationReport) -> tuple:
    """One row of the seed's Table 1, in percent."""
    return (
        TABLE_ROWS[method], percent(scores.macro_f1), percent(scores.weighted_f1),
        *(percent(scores.per_class[label].f1) for label in LABELS),
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
    method: str = ""
    scores: ClassificationReport | None = None


class ComponentsTask(TaskBase):
    name = JUDGMENT_TASK
    title = "Argument components (MajorClaim / Claim / Premise)"
    description = (
        "Classify every gold argument component of the UKP Argument Annotated Essays "
        "(whole essay as context, other components masked) and report macro F1, weighted F1, "
        "per-class F1 and the confusion matrix, then the methods side by side as the MAD-ACC paper's "
        "Table 1. --judge runs the Judge and the single-agent methods; --manager and --debaters give "
        "those roles of mad their own backend. Resumable: rerun the same command to continue."
    )
    limit_help = "only the first N essays of the split"
    output_help = "also write metrics and every prediction with its transcript (JSON)"
    labels: tuple[str, ...] = LABELS
    variant_flag = "method"
    variant_section = "Component methods"
    variant_names = {
        "vanilla": VariantName("Direct", "Direct", "one constrained call picks the label"),
        "cot": VariantName("Chain of thought", "Reasoning", "the model reasons step by step, then picks the label"),
        "smart": VariantName("Judge's rules", "Rules", "the judge's definitions and criterion without a debate"),
        "mad": VariantName("Multi-agent debate", "Debate", "a manager proposes two labels, a proponent and an "
                           "opponent debate them for two rounds, a judge decides (MAD-ACC)"),
    }
    Options = ComponentOptions

    def variants(self) -> tuple[str, ...]:
        return ("mad", *(method for method in METHODS if method != "mad"))

    def check_options(self, options: ComponentOptions) -> None:
        """A role's profile with no mad among the methods run is a mistake, not a no-op."""
        methods = options.variant  # `argtui eval`: the methods to run
        roles = [role for role in ROLE_OPTIONS if getattr(options, role)]
        if roles and methods and "mad" not in {method.lower() for method in methods}:
            raise ArgtuiError(
                f"--{' and --'.join(roles)} set{'s' if len(roles) == 1 else ''} a role of mad: "
                "add --method mad, or leave it out"
            )

    def items(self, ctx: TaskContext, options: ComponentOptions) -> list[TaskItem]:
        for role in ROLE_OPTIONS:  # an unknown profile is named before a backend starts
            if getattr(options, role):
                ctx.profile(getattr(options, role))
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
        body, highlight = excerpt(text, spans[target])
        return TaskItem(
            key=f"example{number + 1}/S{target + 1}",
            title=f"example {number + 1} · component {target + 1} of {len(spans)} (no gold label)",
            body=body,
            highlight=highlight,
            payload=ComponentItem(text, spans, target),
        )

    def judge_settings(self, variant: str, options: ComponentOptions) -> ClassifierSettings:
        return settings_of(options)

    async def prepare(self, ctx: TaskContext, variant: str, client: LLMClient, options: ComponentOptions) -> None:
        """The system message every method's prompts open with (the task and the label definitions, before
        the document) computed into the server's prompt cache."""
        await client.prime(classify_messages("", ""))

    def judge_variant(self, variant: str, options: ComponentOptions) -> str:
        return judge_variant(variant, options.seed)

    async def judge(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: ComponentOptions
    ) -> Verdict:
        payload: ComponentItem = item.payload
        result = await classify_component(
            client, payload.text, payload.spans, payload.target, variant,
            settings=settings_of(options), seed=options.seed, key=item.key, **await role_clients(ctx, options),
        )
        return verdict_of(result)

    def report(
        self, ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict],
        options: ComponentOptions, run_id: int,
    ) -> ComponentReport:
        method = judge.variant_parts.code
        results = {item.key: result_of(verdicts[item.key], method) for item in items if item.key in verdicts}
        evaluation = evaluate(items, results)
        report = evaluation.report
        essays = len({document_part(item.key) for item in items})
        per_class = ReportTable(
            "Per-class scores", ("label", "precision", "recall", "F1", "support"),
            tuple((label, s.precision, s.recall, s.f1, s.support) for label, s in report.per_class.items()),
            caption=f"macro F1 {report.macro_f1:.3f}   weighted F1 {report.weighted_f1:.3f}   "
            f"accuracy {report.accuracy:.3f}   invalid {report.invalid} of {report.n} "
            f"({evaluation.truncated} cut at the token limit)",
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
            method=method,
            scores=report,
        )

    def summary(self, runs: Sequence[TaskRun]) -> TaskReport:
        """The seed's Table 1 over the runs of one command: a row per method run, in the seed's order, in percent."""
        reports: list[ComponentReport] = [run.report for run in runs]  # type: ignore[misc]
        ranked = sorted(
            ((run, report) for run, report in zip(runs, reports) if report.scores is not None),
            key=lambda pair: list(TABLE_ROWS).index(pair[1].method),
        )
        rows = tuple(table_row(report.method, report.scores) for _, report in ranked)
        invalid = "; ".join(f"{TABLE_ROWS[report.method]} {report.scores.invalid}" for _, report in ranked)
        reference = (f"{REFERENCE_ROW['name']} *", f"{REFERENCE_ROW['macro_f1']:.1f}", *("–",) * 4)
        table = ReportTable(
            "Table 1: classification performance (%)", TABLE_COLUMNS,
            (*((name, *(f"{value:.1f}" for value in values)) for name, *values in rows), reference),
            caption="overall: Macro F1, W-F1 (weighted F1); class-wise F1: MC (MajorClaim), Claim, Premise; "
            "* supervised reference (fine-tuned), as the paper reports it, not run",
        )
        judges = "; ".join(f"{TABLE_ROWS[report.method]} {run.judge.name}" for run, report in ranked)
        return TaskReport(
            title="Methods side by side (Table 1 of the MAD-ACC paper)",
            tables=(table,),
            notes=(f"invalid answers (counted wrong): {invalid}", f"judges: {judges}"),
            data={"reference": REFERENCE_ROW, "rows": [
                {
                    "method": report.method, "name": name, "judge": run.judge.name, "macro_f1": macro,
                    "weighted_f1": weighted, "f1": dict(zip(LABELS, per_class)), "invalid": report.scores.invalid,
                }
                for (run, report), (name, macro, weighted, *per_class) in zip(ranked, rows)
            ]},
        )

    def write_output(self, path: Path, runs: Sequence[TaskRun]) -> None:
        """The seed's table, then per method the metrics and every prediction with its transcript."""
        written = {
            "table": self.summary(runs).data,
            "runs": [
                {
                    "metrics": {"judge": run.judge.name, "run_id": run.outcome.run.id, **run.report.data},
                    "predictions": list(run.report.predictions),  # type: ignore[attr-defined]
                }
                for run in runs
            ],
        }
        write_text_file(path, json.dumps(written, indent=2), make_parents=True)


TASK = ComponentsTask()


async def label_text(
    ctx: TaskContext,
    client: LLMClient,
    text: str,
    method: str,
    options: ComponentOptions,
    spans: Sequence[Span] | None = None,
    on_component: Callable[[int, ComponentResult], None] | None = None,
    *,
    manager: LLMClient | None = None,
    debaters: LLMClient | None = None,
) -> tuple[JudgeId, list[ComponentResult]]:
    """Label every component of a free text (`segment(text)` unless spans are given) and store them
    under the judge a batch run with the same options would be (`options`: see `default_options`;
    its `manager` and `debaters` name the profiles of the clients given for those roles). Settled
    and stored as `judge_one` judges an item; a free text is labelled by `label_components`, each
    component timed as it is classified, and stored with the text."""
    TASK.check_options(options)
    judge = await settle(ctx, TASK, client, method, options)
    results = await label_components(
        client, text, spans, method, seed=judge.options.seed, on_component=on_component,
        settings=settings_of(judge.options), manager=manager, debaters=debaters,
    )
    await judge.store(ctx.db, lambda db, found, labelled: save_labelled_text(db, text, labelled, found), results)
    return judge.judge, results
