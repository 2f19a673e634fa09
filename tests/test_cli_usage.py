"""The command line's usage errors and `argtui --help`, in fresh processes as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from argtui.cli import build_parser, command_modules

HEAVY = ("textual", "sqlmodel", "sqlalchemy", "httpx", "pydantic")


def run_argtui(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "argtui", *argv], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["debate", "--bogus-flag"], "usage: argtui debate "),
        (["doctor", "--bogus-flag"], "usage: argtui doctor "),
        (["config", "show", "--bogus-flag"], "usage: argtui config show "),
        (["index", "search", "q", "--bogus-flag"], "usage: argtui index search "),
        (["export", "critiques", "--bogus-flag"], "usage: argtui export critiques "),
        (["eval", "pairwise", "--bogus-flag"], "usage: argtui eval pairwise "),
    ],
)
def test_an_unknown_flag_shows_the_usage_of_its_subcommand(argv, usage):
    result = run_argtui(*argv)
    assert result.returncode == 2
    assert result.stderr.startswith(usage), result.stderr
    assert "error: unrecognized arguments: --bogus-flag" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_command_still_gets_the_top_level_usage():
    result = run_argtui("debat")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: argtui [-h]") and "invalid choice: 'debat'" in result.stderr


def test_help_lists_every_subcommand_with_the_help_its_module_registers():
    listed = run_argtui("--help")
    assert listed.returncode == 0, listed.stderr
    help_lines = " ".join(listed.stdout.split())
    # Registered in full, every command gives the same name and help as the listing read from its source.
    for entry in command_modules():
        full_parser = build_parser([entry.command])
        action = next(a for a in full_parser._actions if a.dest == "command")
        registered = {choice.dest: choice.help for choice in action._choices_actions}
        assert entry.command in registered, entry
        assert f" {entry.command} " in f" {help_lines} "
        assert " ".join(registered[entry.command].split()) in help_lines, entry


def test_help_imports_no_command_dependencies():
    probe = (
        "import json, sys\n"
        "from argtui.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_eval_of_one_task_imports_that_task_alone_and_the_listing_has_them_all():
    probe = (
        "import json, sys\n"
        "from argtui.cli import build_parser\n"
        "from engines.judging.task import tasks\n"
        "parser = build_parser(['eval', 'pairwise', '--limit', '1'])\n"
        "args = parser.parse_args(['eval', 'pairwise', '--limit', '1'])\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('engines.tasks.'))\n"
        "listed = build_parser(['eval', '--list'])._subparsers._group_actions[0].choices['eval']\n"
        "names = sorted(listed._subparsers._group_actions[0].choices)\n"
        "print(json.dumps([loaded, args.limit, names, sorted(t.name for t in tasks())]))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded, limit, listed, every = json.loads(result.stdout.splitlines()[-1])
    assert loaded == ["engines.tasks.pairwise"] and limit == 1
    assert listed == every and len(every) > 1
