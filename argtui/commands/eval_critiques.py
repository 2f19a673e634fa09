"""`argtui eval critiques --judge NAME [--prompt simple|rubric] [--rater NAME]`: an LLM judge rates
every critique; its ratings are stored under a rater named after the judge.

Resumable: critiques the judge has rated are skipped and the response cache
answers calls made before an interruption. With `--reference RATER` the run
ends with the loss tables against that rater.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from rich.console import Console

from argtui.commands import run_with_runtime
from argtui.commands.agreement_critiques import DEMO_JUDGE_NOTE, build_report, print_report
from argtui.progress import batch_progress_bar
from argtui.runtime import Runtime
from engines.critiques.agreement import report_as_dict
from engines.critiques.judges import PROMPTS, JudgeRunSummary, judge_rater_name, run_judge
from engines.errors import ArgtuiError
from store.critiques import CritiqueRepository


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "critiques",
        help="an LLM judge rates every critique (simple prompt: overall; rubric prompt: seven dimensions)",
        description="Rates every stored critique with an LLM judge and stores the ratings under a rater named "
        "PROFILE:PROMPT (or --rater). Interrupted runs resume. --reference prints the seed-002 losses "
        "against that rater at the end.",
    )
    parser.add_argument("--judge", metavar="NAME", help="backend profile name (default: the default profile)")
    parser.add_argument("--prompt", choices=PROMPTS, default="simple",
                        help="simple: think step by step, JSON with overall; rubric: all seven dimensions")
    parser.add_argument("--rater", metavar="NAME", help="store the ratings under this rater name")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N critiques (in import order)")
    parser.add_argument("--concurrency", type=int, help="critiques rated at once (default: the profile's)")
    parser.add_argument("--reference", metavar="RATER", help="afterwards, print the losses against this rater")
    parser.add_argument("--json", action="store_true", help="print the summary (and report) as JSON")
    parser.set_defaults(handler=_eval)


async def _run(runtime: Runtime, args):
    if not CritiqueRepository(runtime.db).positions():
        raise ArgtuiError("no critiques stored yet: run `argtui import critiques FILE` (or --demo) first")
    client = await runtime.client(args.judge)
    rater = args.rater or judge_rater_name(client.profile.name, args.prompt)
    with batch_progress_bar(f"{rater} rating critiques") as show:
        summary = await run_judge(
            runtime.db, client, args.prompt, rater=rater, limit=args.limit,
            concurrency=args.concurrency, on_progress=show,
        )
    report = await build_report(runtime, args.reference, [summary.rater, "random"]) if args.reference else None
    return summary, report[0] if report else None, client.profile.embedded


def _print_summary(console: Console, summary: JudgeRunSummary) -> None:
    console.print(
        f"{summary.rater} ({summary.model}, {summary.prompt} prompt): {summary.rated} critiques rated now, "
        f"{summary.resumed} already rated, {summary.invalid} invalid of {summary.total}; "
        f"{summary.seconds:.1f} s, {summary.prompt_tokens} prompt + {summary.completion_tokens} completion tokens, "
        f"{summary.cache_hits} cache hits"
    )


def _eval(args) -> int:
    if args.limit is not None and args.limit < 1:
        raise ArgtuiError("--limit must be at least 1")
    summary, report, embedded = run_with_runtime(lambda runtime: _run(runtime, args))
    if args.json:
        print(json.dumps({"summary": asdict(summary), "report": report_as_dict(report) if report else None}, indent=2))
        return 0
    console = Console()
    _print_summary(console, summary)
    if report:
        print_report(console, report, demo=embedded)
    else:
        if embedded:
            console.print(DEMO_JUDGE_NOTE, style="yellow")
        console.print(f"Loss tables: argtui agreement critiques --reference RATER --compare {summary.rater}")
    return 0
