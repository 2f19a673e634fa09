"""`argtui audit [--task T] [--judge NAME] [--json]`: every stored judge's audit (engines/judging/audit.py),
from stored verdicts only; a "–" says why and which command stores what it needs."""

from __future__ import annotations

import json

from rich import box
from rich.table import Table
from rich.text import Text

from argtui.commands import output_console, run_with_runtime
from argtui.runtime import Runtime


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit", help="every stored judge's agreement, position and length bias, consistency, label shares and cost",
    )
    parser.add_argument("--task", metavar="T", help="one task (default: every task with stored judges)")
    parser.add_argument("--judge", metavar="NAME", help="only judges whose name contains NAME")
    parser.add_argument("--json", action="store_true", help="print the audits as JSON")
    parser.set_defaults(handler=_audit)


def _audit(args) -> int:
    from engines.judging.audit import audit
    from engines.judging.task import task, tasks

    chosen = [task(args.task)] if args.task else tasks()  # an unknown task is named before anything is read

    async def audits(runtime: Runtime):
        return audit(runtime.db, chosen, args.judge)

    found = run_with_runtime(audits)
    if args.json:
        print(json.dumps([judged.as_dict() for judged in found], indent=2, ensure_ascii=False))
        return 0
    console = output_console()
    if not found:
        console.print("No stored judge yet: `argtui eval TASK` stores one (--mode swap for pairwise position "
                      "figures), as does judging in the Arena.")
        return 0
    for judged in found:
        console.print(_table(judged))
    return 0


def _table(judged) -> Table:
    costs = (judged.prompt_tokens, judged.completion_tokens, judged.seconds)
    table = Table(
        title=Text(f"{judged.task} · {judged.judge.name} · {judged.judgments} judgments, {judged.invalid} invalid"),
        box=box.SIMPLE_HEAD, show_edge=False, title_justify="left",
    )
    for column in ("figure", "value", "95% interval", "reference", "items", "why –"):
        table.add_column(column, justify="right" if column in ("value", "reference", "items") else "left")
    for figure in judged.figures():
        share = figure.name != "κ" and figure not in costs
        table.add_row(
            f"{figure.name} %" if share else figure.name, _shown(figure.value, share),
            "" if figure.low is None else f"{_shown(figure.low, share)}–{_shown(figure.high, share)}",
            _shown(figure.reference, share), str(figure.items), Text(figure.missing),
        )
    return table


def _shown(value: float | None, share: bool) -> str:
    if value is None:
        return "–"
    return f"{value * 100:.1f}" if share else f"{value:.3f}" if abs(value) <= 1 else f"{value:,.0f}"
