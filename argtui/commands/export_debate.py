"""`argtui export debate ID --format rad|jsonl`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from argtui.commands import run_with_runtime
from argtui.runtime import Runtime
from engines.debate.export import full_record, rad_run
from engines.debate.records import DebateRecords
from engines.errors import ArgtuiError
from engines.output import write_text_file
from engines.terminal_text import print_data
from store.debates import Debate, DebateRepository


def register(subparsers) -> None:
    parser = subparsers.add_parser("debate", help="a stored debate as a Touché RAD run or as everything stored")
    parser.add_argument("id", type=int, help="debate id (argtui debate --list shows them)")
    parser.add_argument("--format", choices=("rad", "jsonl"), default="rad",
                        help="rad: the GenIRSim run shape the official evaluators read; jsonl: everything stored")
    parser.add_argument("--output", type=Path, help="file to write (default: stdout)")
    parser.set_defaults(handler=lambda args: run_with_runtime(lambda runtime: _export(runtime, args)))


async def _export(runtime: Runtime, args) -> int:
    repository = DebateRepository(runtime.db)
    debate = repository.get(args.id)
    if debate is None:
        raise ArgtuiError(f"no debate with id {args.id} (argtui debate --list shows them)")
    if args.format == "rad":
        record = rad_run(debate, DebateRecords(repository).turns(debate.id), model=await _model(runtime, debate))
    else:
        record = full_record(repository, debate)
    text = json.dumps(record, ensure_ascii=False)
    if args.output:
        write_text_file(args.output, text + "\n")
    else:
        print_data(text)
    return 0


async def _model(runtime: Runtime, debate: Debate) -> str:
    """The debate's model as `argtui debate` names it in its run: its profile's, else the one the
    profile's server serves; empty, with a warning, when neither can be found any more."""
    if not debate.backend:
        return _unknown_model(f"debate {debate.id} does not name its backend profile")
    try:
        profile = runtime.profile(debate.backend)
        return profile.model or await (await runtime.client(profile.name)).model()
    except ArgtuiError as exc:
        return _unknown_model(str(exc))


def _unknown_model(reason: str) -> str:
    print(f"warning: the run's model is left empty: {reason}", file=sys.stderr)
    return ""
