"""`argtui eval pairwise`: an LLM judge (or the experts) on Webis-ArgQuality-20 pairs.

Stores every judgment and the batch run; an interrupted run resumes where it
stopped (stored pairs are skipped, the response cache answers calls made
before the interruption). Prints the seed's Table 1 columns per prompt.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from argtui.commands import run_with_runtime
from argtui.progress import batch_progress_bar
from argtui.runtime import Runtime
from engines.batch import BatchInterrupted
from engines.datasets.webis import DIMENSIONS, load_webis
from engines.errors import ArgtuiError
from engines.pairwise.evaluation import (
    PairwiseReport,
    evaluate,
    expert_judgments,
    judged_from_record,
)
from engines.pairwise.judge import MODES, JudgeSettings, PairVerdict
from engines.pairwise.prompts import STRATEGIES
from engines.pairwise.run import DEFAULT_SAMPLE_SEED, PairItem, PairJudge, run_pairwise, select_items
from store.pairwise import PairwiseRepository
from store.runs import RunRepository, RunState

EXPERTS = "experts"
RUN_KIND = "eval-pairwise"
RUN_SAVE_INTERVAL_S = 1.0
METRIC_HEADERS = {
    "pearson": "r", "spearman": "ρ", "kendall": "τ", "mae": "MAE", "rmse": "RMSE",
    "kappa": "κ", "alpha": "α", "percent": "%",
}

err_console = Console(stderr=True)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "pairwise",
        help="pairwise argument quality (A/B/Tie) on Webis-ArgQuality-20, BT rankings vs the experts",
        description="Judge expert comparison pairs with an LLM, fit Bradley-Terry scores per topic and "
        "report agreement with the experts (the seed's Table 1). `--judge experts` fits BT on the "
        "experts' own comparisons as a sanity check.",
    )
    parser.add_argument("--judge", help=f"backend profile name (default: the default profile), or '{EXPERTS}'")
    parser.add_argument("--dimension", nargs="+", choices=DIMENSIONS, default=list(DIMENSIONS),
                        help="quality dimensions (default: all three)")
    parser.add_argument("--topics", nargs="+", type=int, metavar="ID", help="topic ids (default: all 20)")
    parser.add_argument("--limit", type=int, metavar="N",
                        help="judge a seeded random sample of N pairs per dimension")
    parser.add_argument("--seed", type=int, default=DEFAULT_SAMPLE_SEED, help="seed of the --limit sample")
    parser.add_argument("--prompt", nargs="+", choices=STRATEGIES, default=["zero"],
                        help="prompting strategies: zero-shot, few-shot, chain-of-thought (default: zero)")
    parser.add_argument("--mode", choices=MODES, default="runs",
                        help="runs: majority of --runs samples; logprob: one call, label distribution; "
                        "swap: both orders, position bias (default: runs)")
    parser.add_argument("--runs", type=int, default=3, help="samples per pair in runs mode (default: 3)")
    parser.add_argument("--run-requests", choices=("one", "separate"), default="one",
                        help="runs as one request with n (shared prefill, default) or one request each")
    parser.add_argument("--temperature", type=float,
                        help="sampling temperature (default: 1 for runs, 0 for logprob and swap)")
    parser.add_argument("--concurrency", type=int,
                        help="pairs judged at once (default: the profile's max_concurrency divided by "
                        "the sequences one pair needs: --runs in runs mode, 2 in swap mode)")
    parser.add_argument("--data", type=Path, metavar="DIR",
                        help="an original Webis-ArgQuality-20 release folder (default: the bundled copy)")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                        help="bootstrap resamples for correlation intervals (0: none; default 1000)")
    parser.add_argument("--output", type=Path, metavar="PATH",
                        help="write the result: .json (everything, with per-argument scores) or .csv (Table 1 rows)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parser.set_defaults(handler=_eval_pairwise)


@dataclass
class PromptResult:
    report: PairwiseReport
    variant: str
    accounting: dict = field(default_factory=dict)

    def as_dict(self, scores: bool) -> dict:
        return {"variant": self.variant, **self.report.as_dict(scores), "accounting": self.accounting}


def _eval_pairwise(args) -> int:
    if args.output and args.output.suffix not in (".json", ".csv"):
        raise ArgtuiError(f"--output {args.output}: the file name must end in .json or .csv")
    results = run_with_runtime(lambda runtime: _run(runtime, args))
    if args.output:
        _write_output(args.output, results)
    if args.json:
        print(json.dumps({"results": [r.as_dict(scores=False) for r in results]}, indent=2))
    else:
        _print_results(Console(), results)
    return 0


async def _run(runtime: Runtime, args) -> list[PromptResult]:
    corpus = load_webis(args.data)
    items = select_items(corpus, args.dimension, args.topics, args.limit, args.seed)
    if args.judge == EXPERTS:
        report = evaluate(corpus, EXPERTS, expert_judgments(items), resamples=args.bootstrap)
        return [PromptResult(report, "expert comparisons")]
    client = await runtime.client(args.judge)
    judge = f"{await client.model()}@{client.profile.name}"
    results = []
    for strategy in args.prompt:
        settings = JudgeSettings(strategy, args.mode, args.runs, args.temperature, args.run_requests)
        # A pair in runs mode decodes `runs` sequences: keep the server's slots, not its queue, busy.
        concurrency = args.concurrency or max(1, client.profile.max_concurrency // settings.sequences)
        before = _snapshot(client.accounting)
        run_id, judged_now, resumed = await _judge_items(
            runtime, client, corpus, items, judge, settings, concurrency, args
        )
        accounting = _accounting_delta(before, _snapshot(client.accounting), judged_now, resumed)
        stored = PairwiseRepository(runtime.db).judgments(judge, settings.variant)
        wanted = {item.key for item in items}
        judged = [judged_from_record(r) for r in stored if (r.dimension, r.a_uid, r.b_uid) in wanted]
        RunRepository(runtime.db).update(run_id, invalid=sum(1 for j in judged if j.label is None))
        report = evaluate(corpus, f"{judge} {settings.variant}", judged, mode=args.mode, resamples=args.bootstrap)
        results.append(PromptResult(report, settings.variant, accounting))
    return results


async def _judge_items(
    runtime: Runtime, client, corpus, items: list[PairItem], judge: str, settings: JudgeSettings,
    concurrency: int, args,
) -> tuple[int, int, int]:
    """Judge what is not stored yet; returns (run id, judged in this process, resumed from the store)."""
    pairs = PairwiseRepository(runtime.db)
    runs = RunRepository(runtime.db)
    selection = {
        "judge": judge, "variant": settings.variant, "run_requests": settings.run_requests,
        "dimensions": list(args.dimension), "topics": args.topics, "limit": args.limit, "seed": args.seed,
    }
    name = " ".join(f"{k}={v}" for k, v in selection.items() if v is not None and k != "run_requests")
    run = runs.open(RUN_KIND, name, selection, total=len(items))
    runs.update(run.id, state=RunState.RUNNING)
    done = pairs.done_keys(judge, settings.variant)
    judged_now = 0

    def store(item: PairItem, verdict: PairVerdict) -> None:
        nonlocal judged_now
        pairs.add(
            judge=judge, variant=settings.variant, dimension=item.dimension, topic_id=item.topic_id,
            a_uid=item.a_uid, b_uid=item.b_uid, expert=item.expert, label=verdict.label,
            run_labels=verdict.run_labels, distribution=verdict.distribution, raw=verdict.raw,
            prompt_tokens=verdict.prompt_tokens, completion_tokens=verdict.completion_tokens, run_id=run.id,
        )
        judged_now += 1

    last = {"done": 0, "saved_at": 0.0}

    try:
        with batch_progress_bar(f"{judge} {settings.variant}") as show:

            def follow(progress) -> None:
                show(progress)
                last["done"] = progress.done
                if time.monotonic() - last["saved_at"] > RUN_SAVE_INTERVAL_S:  # the Runs screen follows
                    runs.update(run.id, done=progress.done, invalid=progress.invalid)
                    last["saved_at"] = time.monotonic()

            result = await run_pairwise(
                items, PairJudge(client, settings, corpus), concurrency=concurrency,
                is_done=lambda item: item.key in done, on_result=store, on_progress=follow,
            )
    except (BatchInterrupted, asyncio.CancelledError, KeyboardInterrupt) as exc:
        reason = str(exc) if isinstance(exc, BatchInterrupted) else "interrupted"
        runs.update(run.id, state=RunState.PAUSED, done=last["done"], error=reason)
        a = client.accounting
        err_console.print(
            f"paused: {judged_now} judgments stored in this session; {a.requests} requests, "
            f"{a.cache_hits} cache hits so far. Run the same command again to resume."
        )
        raise
    runs.update(run.id, state=RunState.DONE, done=result.progress.done)
    return run.id, judged_now, result.progress.skipped


def _snapshot(accounting) -> dict:
    return {
        "requests": accounting.requests, "retries": accounting.retries, "cache_hits": accounting.cache_hits,
        "prompt_tokens": accounting.prompt_tokens, "completion_tokens": accounting.completion_tokens,
    }


def _accounting_delta(before: dict, after: dict, judged_now: int, resumed: int) -> dict:
    delta = {key: after[key] - before[key] for key in after}
    delta["judged"] = judged_now
    delta["resumed"] = resumed
    delta["requests_per_judgment"] = delta["requests"] / judged_now if judged_now else None
    delta["prompt_tokens_per_judgment"] = delta["prompt_tokens"] / judged_now if judged_now else None
    return delta


# ---------------------------------------------------------------------- output


def _fmt(value, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value * 100:.2f}" if percent else f"{value:.3f}"


def _print_results(console: Console, results: list[PromptResult]) -> None:
    for result in results:
        report = result.report
        title = (
            "experts: BT on their own comparisons vs the published scores" if report.judge == EXPERTS
            else f"{report.judge} vs experts"
        )
        table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, padding=0, caption="seed's Table 1 columns")
        for column in ("dimension", "pairs", "invalid", *METRIC_HEADERS.values()):
            table.add_column(
                column, justify="left" if column == "dimension" else "right", no_wrap=True,
                min_width={"dimension": 11, "pairs": 5, "invalid": 7, "%": 6}.get(column, 5),
            )
        for row in report.table_rows():
            table.add_row(
                row["dimension"], str(row["pairs"]), str(row["invalid"]),
                *(_fmt(row[key], percent=key == "percent") for key in METRIC_HEADERS),
            )
        console.print(table)
        for dimension in report.dimensions:
            notes = []
            if dimension.intervals:
                notes.append("95% CI " + ", ".join(
                    f"{METRIC_HEADERS[name]} [{_fmt(i.low)}, {_fmt(i.high)}]"
                    for name, i in dimension.intervals.items()
                ))
            if dimension.variability:
                v = dimension.variability
                notes.append(
                    f"runs: all equal {v.all_equal}, two equal {v.some_equal}, all different "
                    f"{v.all_different} of {v.items}; α across runs {_fmt(v.alpha)}"
                )
            if dimension.position_bias:
                p = dimension.position_bias
                notes.append(
                    f"swap: same verdict in both orders {_fmt(p.consistent, True)}%, "
                    f"first-shown argument picked {_fmt(p.first_position, True)}% of decisive answers"
                )
            if notes:
                console.print(f"[bold]{dimension.dimension}[/]: " + "; ".join(notes))
        if result.accounting:
            a = result.accounting
            per = (
                f"; per judgment {a['requests_per_judgment']:.2f} requests, "
                f"{a['prompt_tokens_per_judgment']:.0f} prompt tokens" if a["judged"] else ""
            )
            console.print(
                f"LLM calls: {a['judged']} pairs judged now, {a['resumed']} resumed from the store; "
                f"{a['requests']} requests, {a['cache_hits']} cache hits, {a['retries']} retries, "
                f"{a['prompt_tokens']} prompt + {a['completion_tokens']} completion tokens{per}"
            )


def _write_output(path: Path, results: list[PromptResult]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_text(json.dumps({"results": [r.as_dict(scores=True) for r in results]}, indent=2))
        return
    rows = [row for result in results for row in result.report.table_rows()]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["judge", "dimension", "pairs", "invalid", *METRIC_HEADERS])
        writer.writeheader()
        writer.writerows(rows)
