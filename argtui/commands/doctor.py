"""`argtui doctor [--json]`: is every backend reachable, which models, how fast; the database."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict

from rich.table import Table
from rich.text import Text

from argtui.commands import output_console, run_with_runtime
from argtui.config import Config
from argtui.runtime import Runtime
from engines.llm import local_servers


def register(subparsers) -> None:
    parser = subparsers.add_parser("doctor", help="check backends and the database")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--backend", action="append", help="only this profile (repeatable)")
    parser.set_defaults(handler=_doctor)


async def _report(runtime: Runtime, names: list[str] | None) -> dict:
    config = runtime.config
    # Where no backend was chosen yet, a server already running here may be the one to use.
    probing = None if names or _configured(config) else asyncio.create_task(
        local_servers.find_local_servers(local_servers.LOCAL_PORTS)
    )
    names = names or config.profile_names()
    statuses = [(await runtime.status(name)).as_dict() for name in names]
    found = None if probing is None else await probing
    return {
        "default_backend": config.profile().name,
        "backends": statuses,
        "local_servers": None if found is None else [
            {**asdict(server), "use": f"argtui config use {server.url}"} for server in found
        ],
        "database": {"path": runtime.db.location, "schema_version": runtime.db.schema_version},
        "config_file": str(config.paths.config_file),
    }


def _configured(config: Config) -> bool:
    """A config file or the environment chooses the backend."""
    return config.paths.config_file.exists() or any(
        os.environ.get(variable) for variable in ("ARGTUI_BASE_URL", "ARGTUI_BACKEND")
    )


def _doctor(args) -> int:
    report = run_with_runtime(lambda runtime: _report(runtime, args.backend))
    ok = all(b["reachable"] for b in report["backends"])
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if ok else 1
    console = output_console()
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
    for line in _notes(report):
        console.print(Text(line), highlight=False)
    db = report["database"]
    console.print(f"database: {db['path']} (schema version {db['schema_version']})", markup=False, highlight=False)
    console.print(f"config:   {report['config_file']}", markup=False, highlight=False)
    return 0 if ok else 1


def _notes(report: dict) -> list[str]:
    """What the table cannot say: a vLLM server that hides its cache hits, and the servers found here."""
    notes = [
        f"note: {b['name']}: this vLLM server does not report the prompt tokens it took from its cache "
        "(usage.prompt_tokens_details), so --timings shows reused 0; start it with --enable-prompt-tokens-details "
        "(its prefix cache is on by default on vLLM's V1 engine; older versions need --enable-prefix-caching "
        "too; argtui serve --model adds both)"
        for b in report["backends"] if b["kind"] == "vllm" and b["reports_cached_tokens"] is False
    ]
    found = report["local_servers"]
    if found == []:
        usual = ", ".join(f"{port} {name}" for port, name in local_servers.LOCAL_PORTS.items())
        notes.append(f"no server is running on the usual local ports ({usual})")
    for server in found or ():
        models = ", ".join(server["models"]) or "no model"
        notes.append(f"found {server['kind']} at {server['url']} serving {models}; "
                     f"to make it the default backend: {server['use']}")
    return notes
