"""`argtui agreement critiques --reference RATER [--compare NAME ...] [--json]`: the seed's losses
of every rater and LLM judge against a reference rater, the random judge, and each rater against
the mean of the other raters, with 95% bootstrap intervals."""

from __future__ import annotations

import json

from rich import box
from rich.console import Console
from rich.table import Table

from argtui.commands import run_with_runtime
from argtui.runtime import Runtime
from engines.critiques.agreement import (
    TABLE_COLUMNS,
    TABLE_LEGEND,
    AgreementReport,
    Comparison,
    agreement_report,
    report_as_dict,
    table_rows,
)
from engines.llm.profile import EMBEDDED_PROFILE
from store.critiques import CritiqueRepository, RatingVersion

DEMO_JUDGE_NOTE = (
    "Judges on the embedded SmolLM2-135M backend are for demonstration only: their ratings are near random."
)


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
                        help="compare only these (repeatable; 'random' for the random judge); default: all")
    parser.add_argument("--first", action="store_true",
                        help="use each rater's first ratings instead of the latest revisions")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=_agreement)


async def build_report(
    runtime: Runtime, reference: str, compared: list[str] | None, which: RatingVersion = "current", resamples: int = 1000
) -> tuple[AgreementReport, bool]:
    """The report, and whether a judge in it ran on the embedded demo model."""
    repo = CritiqueRepository(runtime.db)
    positions = repo.positions()
    position_of = {c.uid: p.uid for p in positions for c in p.critiques}
    total = sum(len(p.critiques) for p in positions)
    report = agreement_report(repo.ratings(which=which), position_of, total, reference, compared, resamples=resamples)
    shown = {row.compared for row in report.versus_reference}
    demo = any(r.name in shown and r.details.get("profile") == EMBEDDED_PROFILE for r in repo.raters())
    return report, demo


def _agreement(args) -> int:
    which = "first" if args.first else "current"
    report, demo = run_with_runtime(
        lambda runtime: build_report(runtime, args.reference, args.compare, which, args.resamples)
    )
    if args.json:
        print(json.dumps(report_as_dict(report), indent=2))
    else:
        print_report(Console(), report, which, demo)
    return 0


def comparison_table(title: str, rows: list[Comparison]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for column in TABLE_COLUMNS:
        if column == "compared":
            table.add_column(column, min_width=15)
        else:
            table.add_column(column, justify="right")
    for cells in table_rows(rows):
        table.add_row(*cells)
    return table


def print_report(console: Console, report: AgreementReport, which: RatingVersion = "current", demo: bool = False) -> None:
    version = "first ratings" if which == "first" else "latest revisions"
    console.print()
    console.print(comparison_table(f"Against {report.reference} ({version})", report.versus_reference))
    if report.versus_others:
        console.print()
        console.print(comparison_table("Each rater against the mean of the other raters", report.versus_others))
    progress = Table(title="Progress", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("rater", "kind", "rated", "of"):
        progress.add_column(column, justify="right" if column in ("rated", "of") else "left")
    for p in report.progress:
        progress.add_row(p.rater, p.kind, str(p.rated), str(p.total))
    console.print()
    console.print(progress)
    console.print(TABLE_LEGEND, style="dim")
    if demo:
        console.print(DEMO_JUDGE_NOTE, style="yellow")
