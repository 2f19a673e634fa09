"""`argtui agreement critiques --reference RATER [--compare NAME ...] [--json]`: the seed's losses
of every rater and LLM judge against a reference rater, the random judge, and each rater against
the mean of the other raters, with 95% bootstrap intervals.

Raters are named as they rated; LLM judges by their judge name (`model@profile prompt`, as
`argtui eval critiques` prints it), their verdicts read from the judgment store."""

from __future__ import annotations

import json


from argtui.commands import output_console, run_with_runtime
from argtui.commands.eval import print_report
from argtui.runtime import Runtime
from engines.critiques.agreement import AgreementReport, report_as_dict
from engines.critiques.report import build_report, task_report


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "critiques",
        help="critique rating losses: raters and judges vs a reference rater, and vs the mean of the others",
        description="Prints the weighted pairwise ranking error (and its unweighted variant) and the custom "
        "weighted loss of seed 002 for every compared rater or judge, with 95%% bootstrap intervals, plus the "
        "random judge's expected losses.",
    )
    parser.add_argument("--reference", required=True, metavar="RATER", help="the reference rater (e.g. an expert)")
    parser.add_argument("--compare", action="append", metavar="RATER_OR_JUDGE",
                        help="compare only these (repeatable): a rater, a judge's name as `argtui eval critiques` "
                        "prints it, or 'random' for the random judge; default: all")
    parser.add_argument("--first", action="store_true",
                        help="use each rater's first ratings instead of the latest revisions")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_agreement)


async def _report(runtime: Runtime, args) -> AgreementReport:
    which = "first" if args.first else "current"
    return build_report(runtime.db, args.reference, args.compare, which, args.resamples)


def _agreement(args) -> int:
    report = run_with_runtime(lambda runtime: _report(runtime, args))
    if args.json:
        print(json.dumps(report_as_dict(report), indent=2))
    else:
        print_report(output_console(), task_report(report, "first" if args.first else "current"))
    return 0
