"""The `argtui` command: no arguments launches the app; subcommands do batch work.

Subcommands live in `argtui/commands/`, one module each, with a
`register(subparsers)` function; they are found at start-up.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from rich.console import Console
from rich.text import Text

import argtui.commands
from argtui import __version__
from argtui.config import Paths
from argtui.logs import log_to_file
from engines.errors import ArgtuiError
from store import StoreError

err_console = Console(stderr=True)


# Subcommands that group several tasks: a module named `<group>_<task>.py` in
# argtui/commands registers `argtui <group> <task>` (e.g. eval_pairwise.py).
GROUPS = {
    "eval": "run a judge over a dataset and report agreement with the reference",
    "import": "import data into the database",
    "export": "export stored data",
    "agreement": "agreement tables between raters and judges",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="argtui",
        description="Terminal debate trainer and judge console. Without a command, opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"argtui {__version__}")
    parser.add_argument("--backend", help="backend profile for the app (default: the configured default)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = sorted(m.name for m in pkgutil.iter_modules(argtui.commands.__path__))
    group_parsers: dict = {}
    if "eval" in modules:  # the eval group is generated from the task registry
        modules.remove("eval")
        importlib.import_module("argtui.commands.eval").register(subparsers)
        group_parsers["eval"] = next(
            action for action in subparsers.choices["eval"]._actions
            if isinstance(action, argparse._SubParsersAction)
        )
    for name in modules:
        group = name.split("_", 1)[0]
        if group in GROUPS and "_" in name:
            if group not in group_parsers:
                group_parser = subparsers.add_parser(group, help=GROUPS[group])
                group_parsers[group] = group_parser.add_subparsers(
                    dest=f"{group}_task", metavar="TASK", required=True
                )
            importlib.import_module(f"argtui.commands.{name}").register(group_parsers[group])
        else:
            importlib.import_module(f"argtui.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        log_to_file(Paths.resolve().data_dir)
        if args.command is None:
            from argtui.app import run_app

            return run_app(backend=args.backend)
        return args.handler(args) or 0
    except (ArgtuiError, StoreError) as exc:
        err_console.print(Text.assemble(("error: ", "bold red"), str(exc)), soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted; finished work is stored and a rerun resumes it")
        return 130


if __name__ == "__main__":
    sys.exit(main())
