"""`argtui eval grice`: Grice-maxim judges over Touché RAD debates (Sub-Task 2).

Judges every user turn's bot reply on quantity, quality, relation and manner,
stores each judgment as the turn finishes (a rerun resumes), writes the run
file the official Sub-Task 2 evaluator reads, and with `--labels` prints
precision, recall and F1 of the positive class per metric plus macro averages.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from dataclasses import fields
from pathlib import Path

from rich.console import Console
from rich.table import Table

from argtui.commands import run_with_runtime
from argtui.progress import batch_progress_bar
from argtui.runtime import Runtime
from engines.batch import BatchInterrupted, BatchProgress, run_batch
from engines.datasets.rad import RadDebate, RadUserTurn, TurnLabels, align_labels, read_rad_debates, read_rad_labels
from engines.errors import ArgtuiError
from engines.grice import (
    DEFAULT_STRATEGY,
    METRICS,
    STRATEGIES,
    ExamplePool,
    GriceJudgment,
    ReasonCache,
    builtin_pool,
    check_pool,
    context_of_turn,
    judge_turn,
    methods_for,
    pool_from_rad,
)
from engines.grice.evaluation import grice_report, official_turn, write_official_run
from store.grice import GriceJudgmentRow, GriceRepository, MetricValues
from store.runs import RunRepository, RunState

RUN_KIND = "eval-grice"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "grice",
        help="Grice-maxim judges on debate replies (Touché RAD sub-task 2)",
        description="Judge each bot reply of Touché RAD debates on the four Grice questions; "
        "writes the official sub-task 2 run file and, with --labels, scores it.",
    )
    parser.add_argument("--debates", type=Path, required=True,
                        help="debates (*.jsonl[.gz] with simulated_debate) or a GenIRSim run file")
    parser.add_argument("--labels", type=Path, help="labels in the official *-labels.jsonl shape, one line per debate")
    parser.add_argument("--judge", help="backend profile of the judge (default: the default profile)")
    parser.add_argument("--strategy", default=DEFAULT_STRATEGY, choices=STRATEGIES,
                        help=f"prompting strategy (default {DEFAULT_STRATEGY})")
    parser.add_argument("--limit", type=_positive_int, help="only the first N debates")
    parser.add_argument("--output", type=Path, help="run file to write (default: in the data directory)")
    parser.add_argument("--pool-debates", type=Path,
                        help="labelled example pool for FSL/Analyzer: a debates file (with --pool-labels)")
    parser.add_argument("--pool-labels", type=Path, help="labels of --pool-debates")
    parser.add_argument("--votes", type=_positive_int, default=1,
                        help="sampled votes per answer (default 1: P(yes) from logprobs)")
    parser.add_argument("--no-rationale", action="store_true",
                        help="skip the rationale call (one call per metric instead of two)")
    parser.add_argument("--json", action="store_true", help="print only the summary as JSON")
    parser.set_defaults(handler=_eval_grice)


def _load_pool(args) -> ExamplePool:
    if (args.pool_debates is None) != (args.pool_labels is None):
        raise ArgtuiError("--pool-debates and --pool-labels go together")
    if args.pool_debates is None:
        return builtin_pool()
    debates = read_rad_debates(args.pool_debates)
    labels = align_labels(debates, read_rad_labels(args.pool_labels), args.pool_labels)
    return pool_from_rad(args.pool_debates.name, debates, labels)


def _eval_grice(args) -> int:
    # Inputs are read and checked before a backend is started.
    debates = read_rad_debates(args.debates, args.limit)
    gold = align_labels(debates, read_rad_labels(args.labels), args.labels) if args.labels else None
    pool = _load_pool(args)
    check_pool(args.strategy, pool)
    summary = run_with_runtime(lambda runtime: _evaluate(runtime, args, debates, gold, pool))
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print_summary(summary)
    return 0


def _metric_values(judgment: GriceJudgment) -> list[MetricValues]:
    names = [f.name for f in fields(MetricValues)]
    return [MetricValues(**{name: getattr(m, name) for name in names}) for m in judgment.metrics.values()]


async def _evaluate(
    runtime: Runtime, args, debates: list[RadDebate], gold: dict[tuple[str, int], TurnLabels] | None,
    pool: ExamplePool,
) -> dict:
    err = Console(stderr=True)
    client = await runtime.client(args.judge)
    model = await client.model()
    rationale = not args.no_rationale
    config = {
        "debates": str(args.debates.resolve()), "limit": args.limit, "strategy": args.strategy,
        "methods": {metric: method.name for metric, method in methods_for(args.strategy).items()},
        "judge": client.profile.name, "model": model, "pool": pool.name, "pool_digest": pool.digest,
        "votes": args.votes, "rationale": rationale,
    }
    name = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
    turns: list[RadUserTurn] = [turn for debate in debates for turn in debate.user_turns()]
    runs, repo = RunRepository(runtime.db), GriceRepository(runtime.db)
    run = runs.open(RUN_KIND, name, config, total=len(turns))
    scope = f"run:{run.id}"
    stored = repo.stored_turns(scope)
    reasons = ReasonCache(repo)
    err.print(f"judge {client.profile.name} ({model}), strategy {args.strategy}, pool {pool.name}; "
              f"{len(debates)} debates, {len(turns)} turns, run {run.id}")

    async def judge(turn: RadUserTurn) -> GriceJudgment:
        return await judge_turn(
            client, context_of_turn(turn), args.strategy, pool,
            reasons=reasons, votes=args.votes, rationale=rationale,
        )

    def save(turn: RadUserTurn, judgment: GriceJudgment) -> None:
        repo.save_turn(scope, turn.debate_id, turn.index, _metric_values(judgment))

    runs.update(run.id, state=RunState.RUNNING)
    started = time.perf_counter()
    with batch_progress_bar(f"grice {args.strategy}", err) as show:

        def on_progress(progress: BatchProgress) -> None:
            show(progress)
            runs.update(run.id, done=progress.done, invalid=progress.invalid)

        try:
            result = await run_batch(
                turns, judge,
                # Each turn runs its four metrics at once; enough turns to fill the backend's slots.
                concurrency=max(1, math.ceil(client.profile.max_concurrency / len(METRICS))),
                is_done=lambda turn: (turn.debate_id, turn.index) in stored,
                on_result=save,
                is_invalid=lambda judgment: not judgment.valid,
                on_progress=on_progress,
            )
        except BatchInterrupted as exc:
            runs.update(run.id, state=RunState.PAUSED, done=exc.progress.done, error=str(exc))
            raise
    wall_s = time.perf_counter() - started
    rows = repo.judgments(scope)
    runs.update(run.id, state=RunState.DONE, done=len(turns),
                invalid=sum(1 for row in rows if not row.valid))
    output = args.output or runtime.config.paths.data_dir / "runs" / f"{RUN_KIND}-{run.id}" / "run.jsonl"
    by_turn = _rows_by_turn(rows)
    write_official_run(output, (
        (debate.id, [
            official_turn(
                {m: row.p_yes for m, row in by_turn[(debate.id, turn.index)].items()},
                {m: row.rationale for m, row in by_turn[(debate.id, turn.index)].items()},
            )
            for turn in debate.user_turns()
        ])
        for debate in debates
    ))
    fresh = result.progress.done - result.progress.skipped
    summary = {
        "run_id": run.id, "output": str(output), "config": config,
        "debates": len(debates), "turns": len(turns), "judged_now": fresh, "resumed": result.progress.skipped,
        "invalid": {m: sum(1 for row in rows if row.metric == m and not row.valid) for m in METRICS},
        "per_turn": _per_turn_costs(by_turn),
        "this_invocation": {
            "wall_seconds": wall_s,
            "seconds_per_judged_turn": wall_s / fresh if fresh else None,
            "requests": client.accounting.requests,
            "cache_hits": client.accounting.cache_hits,
            "analyzer_stage1_calls": reasons.stage1_calls,
        },
    }
    if gold is not None:
        summary["scores"] = _scores(turns, by_turn, gold).as_dict()
    return summary


def _rows_by_turn(rows: list[GriceJudgmentRow]) -> dict[tuple[str, int], dict[str, GriceJudgmentRow]]:
    by_turn: dict[tuple[str, int], dict[str, GriceJudgmentRow]] = {}
    for row in rows:
        by_turn.setdefault((row.debate_id, row.turn_index), {})[row.metric] = row
    return by_turn


def _per_turn_costs(by_turn: dict[tuple[str, int], dict[str, GriceJudgmentRow]]) -> dict:
    """Means over the stored turns: LLM calls, tokens, and latency (the slowest metric of a turn)."""
    count = max(1, len(by_turn))
    turns = list(by_turn.values())
    return {
        "calls": sum(row.calls for turn in turns for row in turn.values()) / count,
        "prompt_tokens": sum(row.prompt_tokens for turn in turns for row in turn.values()) / count,
        "completion_tokens": sum(row.completion_tokens for turn in turns for row in turn.values()) / count,
        "latency_seconds": sum(max(row.seconds for row in turn.values()) for turn in turns) / count,
    }


def _scores(turns: list[RadUserTurn], by_turn, gold: dict[tuple[str, int], TurnLabels]):
    keys = [(turn.debate_id, turn.index) for turn in turns]
    return grice_report(
        {m: [gold[key][m] for key in keys] for m in METRICS},
        {m: [by_turn[key][m].p_yes if by_turn[key][m].valid else None for key in keys] for m in METRICS},
    )


def _print_summary(summary: dict) -> None:
    console = Console()
    costs, now = summary["per_turn"], summary["this_invocation"]
    console.print(
        f"run {summary['run_id']}: {summary['turns']} turns of {summary['debates']} debates "
        f"({summary['judged_now']} judged now, {summary['resumed']} resumed), "
        f"strategy {summary['config']['strategy']}, model {summary['config']['model']}"
    )
    console.print(
        f"per turn: {costs['calls']:.1f} LLM calls, {costs['prompt_tokens']:.0f} prompt tokens, "
        f"{costs['latency_seconds']:.2f} s latency"
        + (f"; this run {now['seconds_per_judged_turn']:.2f} s per judged turn" if now["seconds_per_judged_turn"] else "")
    )
    invalid = summary["invalid"]
    if any(invalid.values()):
        console.print("invalid judgments (scored as no): " + ", ".join(f"{m} {n}" for m, n in invalid.items()))
    if "scores" in summary:
        scores = summary["scores"]
        table = Table(title="Positive class (yes), threshold 0.5; null labels left out")
        for column in ("metric", "precision", "recall", "F1", "labelled", "null", "invalid"):
            table.add_column(column, justify="left" if column == "metric" else "right")
        for metric, s in scores["metrics"].items():
            table.add_row(metric, f"{s['precision']:.3f}", f"{s['recall']:.3f}", f"{s['f1']:.3f}",
                          str(s["labelled"]), str(s["unlabelled"]), str(s["invalid"]))
        macro = scores["macro"]
        table.add_row("macro", f"{macro['precision']:.3f}", f"{macro['recall']:.3f}", f"{macro['f1']:.3f}", "", "", "",
                      style="bold")
        console.print(table)
    console.print(f"run file (official sub-task 2 shape): {summary['output']}")
