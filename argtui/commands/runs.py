"""`argtui runs [--json]`: batch runs with task, judge, state, progress and cause (as the Runs screen)."""

from __future__ import annotations

import json

from rich import box
from rich.table import Table
from rich.text import Text

from argtui.commands import output_console, run_with_runtime
from argtui.runtime import Runtime
from store.runs import BatchRun, RunRepository


def register(subparsers) -> None:
    parser = subparsers.add_parser("runs", help="batch runs with their task, judge, state, progress and cause")
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    parser.set_defaults(handler=_runs)


async def _stored_runs(runtime: Runtime) -> list[BatchRun]:
    return RunRepository(runtime.db).list()


def _runs(args) -> int:
    runs = run_with_runtime(_stored_runs)
    if args.json:
        print(json.dumps([
            {"id": r.id, "task": r.task, "judge": r.judge, "kind": r.kind, "name": r.name,
             "state": r.shown_state.value, "done": r.done, "total": r.total, "invalid": r.invalid, "cause": r.cause,
             "updated_at": r.updated_at.isoformat(),
             "heartbeat_at": r.heartbeat_at.isoformat() if r.heartbeat_at else None}
            for r in runs
        ], indent=2))
        return 0
    console = output_console()
    if not runs:
        console.print("No batch runs yet: `argtui eval TASK` records its runs here.")
        return 0
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for column in ("id", "task", "judge", "state", "progress", "invalid", "updated", "cause"):
        table.add_column(column, justify="right" if column in ("id", "invalid") else "left")
    for r in runs:
        share = f"{r.done}/{r.total}" + (f" ({r.done / r.total:.0%})" if r.total else "")
        table.add_row(
            str(r.id), Text(r.task or r.kind), Text(r.judge), r.shown_state.value, share, str(r.invalid),
            r.updated_at.strftime("%Y-%m-%d %H:%M"), Text(r.cause or ""),
        )
    console.print(table)
    return 0
