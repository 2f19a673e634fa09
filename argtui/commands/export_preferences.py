"""`argtui export preferences [--judge NAME] [--output PATH]`: DPO preference pairs from the
InspireScores of `argtui eval inspire … --candidates K`, one JSON object per line in TRL's
standard preference shape (`prompt`, `chosen`, `rejected`) with both replies' scores."""

from __future__ import annotations

import sys
from pathlib import Path

from argtui.commands import run_with_runtime
from argtui.runtime import Runtime
from engines.errors import ArgtuiError
from engines.output import write_text_file
from engines.tasks.inspire import PreferencePair, preference_pairs
from engines.terminal_text import print_data


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "preferences",
        help="DPO preference pairs (prompt, chosen, rejected) from scored reply candidates, as JSONL",
        description="Per bot turn scored with `argtui eval inspire --candidates K`: the two replies furthest apart "
        "on the InspireScore dimensions both have, with both replies' means over those (score_chosen, "
        "score_rejected), the shared dimensions and how many dimensions each reply was scored on.",
    )
    parser.add_argument("--judge", metavar="NAME", help="only this judge's scores (the name `argtui eval` prints)")
    parser.add_argument("--output", type=Path, metavar="PATH", help="write here instead of stdout")
    parser.set_defaults(handler=_export)


async def _pairs(runtime: Runtime, judge: str | None) -> list[PreferencePair]:
    return preference_pairs(runtime, judge)


def _export(args) -> int:
    pairs = run_with_runtime(lambda runtime: _pairs(runtime, args.judge))
    if not pairs:
        raise ArgtuiError("no preference pairs: run `argtui eval inspire … --candidates K` first")
    text = "".join(pair.model_dump_json() + "\n" for pair in pairs)
    if args.output is None:
        print_data(text, end="")
        return 0
    write_text_file(args.output, text, make_parents=True)
    print(f"wrote {len(pairs)} pairs to {args.output}", file=sys.stderr)
    return 0
