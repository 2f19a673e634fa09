"""`argtui export debate ID --format rad|jsonl`."""

from __future__ import annotations

import json
from pathlib import Path

from argtui.commands import run_with_runtime
from argtui.runtime import Runtime
from engines.debate.export import full_record, rad_run
from engines.debate.records import DebateRecords
from engines.errors import ArgtuiError
from engines.output import write_text_file
from store.debates import DebateRepository


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
        record = rad_run(debate, DebateRecords(repository).turns(debate.id), model="")
    else:
        record = full_record(repository, debate)
    text = json.dumps(record, ensure_ascii=False)
    if args.output:
        write_text_file(args.output, text + "\n")
    else:
        print(text)
    return 0
