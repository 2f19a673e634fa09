"""`argtui eval components`: argument component classification (MAD-ACC) on the UKP essays."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from argtui.commands import run_with_runtime
from argtui.config import load_config
from argtui.progress import batch_progress_bar
from argtui.runtime import Runtime
from engines.components import LABELS, METHODS, ClassifierSettings
from engines.components.evaluation import (
    ComponentEvaluation,
    evaluation_items,
    evaluation_report,
    run_evaluation,
    run_name,
)
from engines.components.records import load_result
from engines.datasets.ukp_essays import DATA_ENV, SPLITS, Essay, load_ukp_essays
from engines.errors import ArgtuiError
from engines.metrics.classification import INVALID
from store.components import ComponentRepository
from store.runs import RunRepository, RunState

RUN_KIND = "eval-components"
DATASET_NAME = "ukp-essays"  # its key in the config file's [datasets] table


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "components",
        help="label argument components (MajorClaim/Claim/Premise) of the UKP essays and score them",
        description="Classify every gold argument component of the UKP Argument Annotated Essays "
        "(whole essay as context, other components masked) and report macro F1, weighted F1, "
        "per-class F1 and the confusion matrix. Resumable: rerun the same command to continue.",
    )
    parser.add_argument(
        "--data", type=Path, default=os.environ.get(DATA_ENV),
        help=f"the UKP essays release folder (or its brat-project-final folder); "
        f"default ${DATA_ENV}, else {DATASET_NAME} in the config file's [datasets]",
    )
    parser.add_argument("--split", choices=SPLITS, default="test", help="essays to use (all: every essay pair)")
    parser.add_argument("--limit", type=int, help="only the first N essays of the split")
    parser.add_argument("--judge", help="backend profile (default: the default backend)")
    parser.add_argument("--method", choices=METHODS, default="mad", help="vanilla, cot (chain of thought) or mad")
    parser.add_argument(
        "--skip-threshold", type=float, metavar="P",
        help="mad: skip the debate when the manager's top probability exceeds P",
    )
    parser.add_argument("--votes", type=int, default=1, help="mad: manager votes (1: logprob distribution)")
    parser.add_argument("--seed", type=int, default=0, help="mad: seed of the debater assignment and sampling")
    parser.add_argument(
        "--turn-tokens", type=int, default=ClassifierSettings.debater_max_tokens,
        help="mad: token limit of each debate turn and of the judge's reason",
    )
    parser.add_argument("--output", type=Path, help="also write metrics and every prediction with its transcript (JSON)")
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON")
    parser.set_defaults(handler=_eval_components)


def _eval_components(args) -> int:
    data = args.data or load_config().datasets.get(DATASET_NAME)
    if data is None:
        raise ArgtuiError(
            f"give the UKP essays folder with --data PATH (or set {DATA_ENV}, "
            f"or {DATASET_NAME} = \"PATH\" under [datasets] in the config file)"
        )
    args.data = Path(data).expanduser()
    if args.limit is not None and args.limit < 1:
        raise ArgtuiError("--limit must be at least 1")
    if args.skip_threshold is not None and not 0 <= args.skip_threshold <= 1:
        raise ArgtuiError("--skip-threshold must be a probability between 0 and 1")
    essays = load_ukp_essays(args.data, args.split, args.limit)
    settings = ClassifierSettings(
        debater_max_tokens=args.turn_tokens,
        judge_max_tokens=args.turn_tokens,
        manager_votes=args.votes,
        skip_threshold=args.skip_threshold,
    )
    summary = run_with_runtime(lambda runtime: _evaluate(runtime, args, essays, settings))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print_summary(summary)
    return 0


async def _evaluate(runtime: Runtime, args, essays: list[Essay], settings: ClassifierSettings) -> dict:
    client = await runtime.client(args.judge)
    judge, model = client.profile.name, await client.model()
    repository = ComponentRepository(runtime.db)
    run = run_name(args.method, judge, model, settings, args.seed)
    runs = RunRepository(runtime.db)
    total = sum(len(essay.components) for essay in essays)
    scope = f"{args.split}" + (f"[:{args.limit}]" if args.limit else "")
    config = {
        "data": str(args.data), "split": args.split, "limit": args.limit, "method": args.method,
        "judge": judge, "model": model, "seed": args.seed, "settings": vars(settings),
    }
    batch = runs.open(RUN_KIND, f"{run}:{scope}", config, total)
    runs.update(batch.id, state=RunState.RUNNING)
    try:
        with batch_progress_bar(f"components {args.method} {scope}") as show:

            def on_progress(progress) -> None:
                show(progress)
                runs.update(batch.id, done=progress.done, invalid=progress.invalid)

            started = time.perf_counter()
            batch_result = await run_evaluation(
                client, repository, essays, run=run, method=args.method, judge=judge,
                settings=settings, seed=args.seed, on_progress=on_progress,
            )
            wall_seconds = time.perf_counter() - started
    except BaseException as exc:
        runs.update(batch.id, state=RunState.PAUSED, error=str(exc) or type(exc).__name__)
        raise
    evaluation = evaluation_report(repository, essays, run)
    runs.update(batch.id, state=RunState.DONE, done=total, invalid=evaluation.report.invalid)
    summary = {
        "run": run, "split": args.split, "essays": len(essays), "method": args.method,
        "judge": judge, "model": model, **evaluation.as_dict(),
        "classified_now": batch_result.progress.done - batch_result.progress.skipped,
        "wall_seconds": wall_seconds,
    }
    if args.output:
        _write_output(args.output, summary, repository, essays, run)
    return summary


def _write_output(path: Path, summary: dict, repository: ComponentRepository, essays: list[Essay], run: str) -> None:
    texts = {essay.id: essay.text for essay in essays}
    wanted = {(item.document_id, item.component_id): item for item in evaluation_items(repository, essays)}
    predictions = []
    for document_id in sorted({document_id for document_id, _ in wanted}):
        for prediction in repository.predictions(run, document_id):
            item = wanted.get((document_id, prediction.component))
            if item is None:
                continue
            result = load_result(repository, prediction, texts[item.essay.id])
            predictions.append({
                "essay": item.essay.id, "component": prediction.component, "start": result.span.start,
                "end": result.span.end, "text": result.span.text, "gold": prediction.gold,
                "label": result.label, "raw": result.raw, "distribution": result.distribution,
                "proponent_label": result.proponent_label, "opponent_label": result.opponent_label,
                "judge_distribution": result.judge_distribution, "skipped": result.skipped,
                "reason": result.reason, "calls": result.calls, "seconds": result.seconds,
                "transcript": [{"role": t.role, "label": t.label, "text": t.text} for t in result.transcript],
            })
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"metrics": summary, "predictions": predictions}, indent=2), encoding="utf-8")


def _print_summary(summary: dict) -> None:
    console = Console()
    console.print(
        f"[bold]{summary['method']}[/] on {summary['essays']} essays ({summary['split']}), "
        f"{summary['components']} components; judge {summary['judge']} ({summary['model']})"
    )
    scores = Table(title="Per-class scores")
    for column in ("label", "precision", "recall", "F1", "support"):
        scores.add_column(column, justify="left" if column == "label" else "right")
    for label in LABELS:
        s = summary["per_class"][label]
        scores.add_row(label, f"{s['precision']:.3f}", f"{s['recall']:.3f}", f"{s['f1']:.3f}", str(s["support"]))
    console.print(scores)
    console.print(
        f"macro F1 [bold]{summary['macro_f1']:.3f}[/]   weighted F1 [bold]{summary['weighted_f1']:.3f}[/]   "
        f"accuracy {summary['accuracy']:.3f}   invalid {summary['invalid']} of {summary['n']}"
    )
    confusion = Table(title="Confusion matrix (rows: gold, columns: predicted)")
    confusion.add_column("gold \\ predicted")
    for label in (*LABELS, INVALID):
        confusion.add_column(label, justify="right")
    for gold in LABELS:
        row = summary["confusion"][gold]
        confusion.add_row(gold, *(str(row[label]) for label in (*LABELS, INVALID)))
    console.print(confusion)
    console.print(
        f"cost: {summary['calls_per_component']:.2f} calls and {summary['seconds_per_component']:.2f} s "
        f"per component ({summary['tokens_per_component']:.0f} tokens; {summary['cached_calls']} calls "
        f"answered by the cache; {summary['skipped']} debates skipped)"
    )
    if summary["classified_now"]:
        console.print(
            f"this invocation classified {summary['classified_now']} components in "
            f"{summary['wall_seconds']:.0f} s of wall time "
            f"({summary['wall_seconds'] / summary['classified_now']:.1f} s each, concurrent calls included)"
        )
    console.print(f"stored as run {summary['run']!r}; the Components view shows every transcript")
