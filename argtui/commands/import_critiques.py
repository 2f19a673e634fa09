"""`argtui import critiques FILE | --demo`: positions, critiques and ratings from JSONL or CSV.

The whole file is validated first (an error names file, line and field), then
checked against the stored items and published all at once: a bad file imports
nothing, and a large one holds the database's write lock only for short
moments, so raters and batch runs keep writing while it imports. Items already
stored with the same content are skipped, so importing twice is harmless.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from argtui.commands import run_with_runtime
from argtui.runtime import Runtime
from engines.critiques.demo import DEMO_PATH
from engines.critiques.files import import_critiques
from engines.errors import ArgtuiError
from engines.terminal_text import VisibleControlsConsole
from store.critiques import CritiqueRepository, ImportCounts


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "critiques",
        help="import positions, critiques and ratings (JSONL or CSV), or the demo set",
        description="Import a JSONL file (one object per critique) or a CSV file (one row per rating); "
        "see docs/critiques.md for the fields. --demo imports the demo set shipped with argtui "
        "(built from IBM-ArgQ-Rank-30kArgs; demo data, not expert ratings).",
    )
    parser.add_argument("file", nargs="?", type=Path, help="a .jsonl or .csv file (optionally .gz)")
    parser.add_argument("--demo", action="store_true", help="import the shipped demo set")
    parser.add_argument("--format", choices=("jsonl", "csv"), help="the file's format (default: from its name)")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.set_defaults(handler=_import)


async def _run(runtime: Runtime, path: Path, file_format: str | None) -> ImportCounts:
    return import_critiques(CritiqueRepository(runtime.db), path, file_format)


def _import(args) -> int:
    if bool(args.file) == bool(args.demo):
        raise ArgtuiError("give either a FILE or --demo")
    path = DEMO_PATH if args.demo else args.file
    counts = run_with_runtime(lambda runtime: _run(runtime, path, args.format))
    if args.json:
        print(json.dumps(asdict(counts)))
        return 0
    console = VisibleControlsConsole(highlight=False)
    console.print(  # the path and the raters' names come from the user and the file: never markup
        f"imported {counts.positions} positions, {counts.critiques} critiques, {counts.ratings} ratings "
        f"from {path}" + (f" ({counts.already_stored} ratings were already stored)" if counts.already_stored else ""),
        markup=False,
    )
    if counts.raters:
        console.print(f"raters in the file: {', '.join(counts.raters)}", markup=False)
    if args.demo:
        console.print(
            "This is the demo set: IBM-ArgQ arguments (CC BY-SA 3.0) with ratings derived from crowd "
            "quality scores, not expert ratings. Rate it in the app: argtui → Rating."
        )
    return 0
