"""`argtui export critiques [--format jsonl|csv] [--output PATH]`: every critique with all its
ratings, revisions included (each names the rating it revises and the reason)."""

from __future__ import annotations

import sys
from pathlib import Path

from argtui.commands import run_with_runtime
from argtui.runtime import Runtime
from engines.critiques.files import export_records, render
from engines.output import write_text_file
from engines.terminal_text import print_data
from store.critiques import CritiqueRepository


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "critiques",
        help="export positions, critiques and every rating (JSONL or CSV)",
        description="JSONL: one object per critique with its ratings; CSV: one row per rating. "
        "Revisions are kept next to the ratings they revise. The output imports back unchanged.",
    )
    parser.add_argument("--format", choices=("jsonl", "csv"), help="default: from --output's name, else jsonl")
    parser.add_argument("--output", type=Path, metavar="PATH", help="write here instead of stdout")
    parser.set_defaults(handler=_export)


async def _records(runtime: Runtime) -> list[dict]:
    return export_records(CritiqueRepository(runtime.db))


def _export(args) -> int:
    file_format = args.format or ("csv" if args.output and args.output.suffix == ".csv" else "jsonl")
    text = render(run_with_runtime(_records), file_format)
    if args.output is None:
        print_data(text, end="")
        return 0
    write_text_file(args.output, text)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
