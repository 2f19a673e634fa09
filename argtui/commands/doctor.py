"""`argtui doctor [--json]`: is every backend reachable, which models, how fast; the database."""

from __future__ import annotations

import json

import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from argtui.commands import run_with_runtime
from argtui.runtime import Runtime


PIPED_WIDTH = 250


def register(subparsers) -> None:
    parser = subparsers.add_parser("doctor", help="check backends and the database")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--backend", action="append", help="only this profile (repeatable)")
    parser.set_defaults(handler=_doctor)


async def _report(runtime: Runtime, names: list[str] | None) -> dict:
    config = runtime.config
    names = names or config.profile_names()
    statuses = [(await runtime.status(name)).as_dict() for name in names]
    return {
        "default_backend": config.profile().name,
        "backends": statuses,
        "database": {"path": runtime.db.location, "schema_version": runtime.db.schema_version},
        "config_file": str(config.paths.config_file),
    }


def _doctor(args) -> int:
    report = run_with_runtime(lambda runtime: _report(runtime, args.backend))
    ok = all(b["reachable"] for b in report["backends"])
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if ok else 1
    # Piped output has no width to fit: rows stay whole instead of being cut at 80 columns.
    console = Console() if sys.stdout.isatty() else Console(width=PIPED_WIDTH)
    table = Table(title="Backends")
    for column in ("profile", "kind", "reachable", "model", "latency", "start", "detail"):
        table.add_column(column, overflow="fold")
    for b in report["backends"]:
        table.add_row(  # names, models and errors come from the config and servers: never markup
            Text(b["name"] + (" (default)" if b["name"] == report["default_backend"] else "")),
            Text(b["kind"] or "-"),
            Text("yes", style="green") if b["reachable"] else Text("no", style="red"),
            Text(b["model"] or "-"),
            f"{b['latency_s'] * 1000:.0f} ms" if b["latency_s"] is not None else "-",
            f"{b['start_s']:.2f} s" if b["start_s"] is not None else "-",
            Text(b["error"] or ", ".join(b["urls"])),
        )
    console.print(table)
    db = report["database"]
    console.print(f"database: {db['path']} (schema version {db['schema_version']})", markup=False, highlight=False)
    console.print(f"config:   {report['config_file']}", markup=False, highlight=False)
    return 0 if ok else 1
