"""The `argtui` command: no arguments launches the app; subcommands do batch work.

Subcommands live in `argtui/commands/`, one module each, with a
`register(subparsers)` function; they are found at start-up. Only the command
being run is imported and registered: the others are listed by the name and
help their `register` declares, read from the module's source, so `argtui
--help` loads none of their dependencies.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import os
import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path

import argtui.commands
from argtui import __version__

# Subcommands that group several tasks: a module named `<group>_<task>.py` in
# argtui/commands registers `argtui <group> <task>` (e.g. eval_pairwise.py).
GROUPS = {
    "eval": "run a judge over a dataset and report agreement with the reference",
    "import": "import data into the database",
    "export": "export stored data",
    "agreement": "agreement tables between raters and judges",
}


# A command that runs another program sets this parser default to the name of the attribute that
# gets the arguments it does not know (`argtui serve` → `vllm serve`); every other command rejects them.
PASSTHROUGH_DEST = "passthrough_dest"
# The top-level --student is kept apart from a command's own (a subcommand's default would overwrite
# it), then given to the command: `argtui --student X debate …` is `argtui debate --student X …`.
TOP_STUDENT = "top_student"


@dataclass(frozen=True)
class CommandModule:
    """One module of argtui/commands: the command it adds, under its group if it has one."""

    module: str
    command: str  # what follows `argtui`: the group for a group module
    help: str | None  # what `register` passes as help=, when the source says it plainly


@functools.cache  # read once per process: the modules do not change while it runs
def command_modules() -> tuple[CommandModule, ...]:
    """Every command module, the eval group's generator first (the other groups' members join it)."""
    folder = Path(argtui.commands.__path__[0])
    found = [
        _group_member(name) or CommandModule(name, *_declared_parser(folder / f"{name}.py", name))
        for name in _module_names()
    ]
    return tuple(sorted(found, key=lambda c: c.module != "eval"))


def group_modules(group: str) -> tuple[CommandModule, ...]:
    """The modules of one group, the eval group's generator first: known by their names, no source read."""
    found = [entry for entry in map(_group_member, _module_names()) if entry and entry.command == group]
    return tuple(sorted(found, key=lambda c: c.module != "eval"))


def _module_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(argtui.commands.__path__))


def _group_member(name: str) -> CommandModule | None:
    """The entry of a module of a group (its name says which), else None."""
    group = name.split("_", 1)[0]
    if name == "eval" or (group in GROUPS and "_" in name):
        return CommandModule(name, group, GROUPS[group])
    return None


def _declared_parser(path: Path, module: str) -> tuple[str, str | None]:
    """The name and help of the first `add_parser(...)` in the module's `register`, from its source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {
        target.id: node.value.value
        for node in tree.body if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets if isinstance(target, ast.Name)
    }
    register = next(
        (node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "register"), None
    )
    for node in ast.walk(register) if register else ():
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_parser" and node.args:
            name = _literal(node.args[0], constants)
            help_text = next((_literal(k.value, constants) for k in node.keywords if k.arg == "help"), None)
            if isinstance(name, str):
                return name, help_text if isinstance(help_text, str) else None
    return module, None


def _literal(node: ast.expr, constants: dict) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def selected_command(argv: list[str]) -> str | None:
    """The command word of `argv` (after any top-level options), or None: no command, or the
    top-level help asked before it (`argtui --help eval` lists every command)."""
    tokens = iter(argv)
    for token in tokens:
        if token in ("--backend", "--student"):
            next(tokens, None)
        elif token in ("-h", "--help"):
            return None
        elif not token.startswith("-"):
            return token
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: the selected command registered in full, the others listed by name.

    A command the source does not name plainly is registered in full too, so it is never missing.
    """
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="argtui",
        description="Terminal debate trainer and judge console. Without a command, opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"argtui {__version__}")
    parser.add_argument("--backend", help="backend profile for the app (default: the configured default)")
    parser.add_argument("--student", metavar="NAME", dest=TOP_STUDENT,
                        help="the student debating in the app, `argtui debate` or `argtui drill` (added if new)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = selected_command(argv)
    group_parsers: dict = {}
    # After a group's word (`argtui eval …`) argparse needs that group alone: the other commands are
    # read from their sources (40 ms of a batch run's start) only where a listing may show them.
    for entry in group_modules(wanted) if wanted in GROUPS else command_modules():
        if entry.command != wanted and entry.help is not None:
            if entry.command not in subparsers.choices:
                subparsers.add_parser(entry.command, help=entry.help, add_help=False)
            continue
        register = importlib.import_module(f"argtui.commands.{entry.module}").register
        if entry.module == "eval":  # the eval group is generated from the task registry
            register(subparsers, argv)
            group_parsers["eval"] = _subcommands(subparsers.choices["eval"])
        elif entry.command in GROUPS:
            if entry.command not in group_parsers:
                group_parser = subparsers.add_parser(entry.command, help=GROUPS[entry.command])
                group_parsers[entry.command] = group_parser.add_subparsers(
                    dest=f"{entry.command}_task", metavar="TASK", required=True
                )
            register(group_parsers[entry.command])
        else:
            register(subparsers)
    return parser


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _innermost_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser that parsed the last command word of `args`."""
    while (action := _subcommands(parser)) is not None and getattr(args, action.dest, None) in action.choices:
        parser = action.choices[getattr(args, action.dest)]
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    passthrough = getattr(args, PASSTHROUGH_DEST, None)
    if passthrough:  # the command hands the arguments it does not know to the program it runs
        if "--" in unknown:  # the separator ends argtui's options; the program is not given it
            unknown.remove("--")
        setattr(args, passthrough, unknown)
    elif unknown:  # argparse would name the top-level usage; the command's own is the helpful one
        _innermost_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    # Imported only when a command runs: `argtui --help` and usage errors need none of it.
    from rich.text import Text

    from argtui.config import Paths
    from argtui.logs import log_to_file
    from engines.errors import ArgtuiError
    from engines.terminal_text import VisibleControlsConsole
    from store import StoreError

    err_console = VisibleControlsConsole(stderr=True)
    try:
        log_to_file(Paths.resolve().data_dir)
        student = _student(args)
        if args.command is None:
            from argtui.app import run_app

            return run_app(backend=args.backend, student=student)
        code = args.handler(args) or 0
        sys.stdout.flush()  # a reader that stopped early (`| head`) shows here, not in the flush at exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except (ArgtuiError, StoreError) as exc:
        err_console.print(Text.assemble(("error: ", "bold red"), str(exc)), soft_wrap=True)
        return 1
    except KeyboardInterrupt:
        err_console.print("interrupted; finished work is stored and a rerun resumes it")
        return 130


def _student(args: argparse.Namespace) -> str | None:
    """The student named by --student, before or after the command word, checked as every student's
    name is; the command's `student` argument gets it."""
    from engines.errors import ArgtuiError
    from engines.student.names import student_name

    top, own = getattr(args, TOP_STUDENT), getattr(args, "student", None)
    if top is not None and args.command is not None and not hasattr(args, "student"):
        raise ArgtuiError(
            f"--student goes with the app, `argtui debate` or `argtui drill`, not `argtui {args.command}`"
        )
    if top is not None and own is not None and student_name(top) != student_name(own):
        raise ArgtuiError(f"two students given: --student {top!r} and --student {own!r}")
    name = own if own is not None else top
    if name is not None:
        name = student_name(name)
    if hasattr(args, "student"):
        args.student = name
    return name


def _reader_gone() -> int:
    """The program reading the output stopped early (`argtui … | head`): stop quietly.

    Python ignores SIGPIPE, so the write raised instead of ending the process; the stream is
    pointed at /dev/null so that its flush at exit cannot raise again. The exit status is 1, as
    rich's own handler gives for its consoles: one status whichever printer met the closed pipe.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    return 1


if __name__ == "__main__":
    sys.exit(main())
