"""`argtui logic check FILE [--json]`: the logic checker of InspireScore's logical validity on a
file of derivations, one a line (``premise ; premise |- conclusion``), each with its verdict."""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("logic", help="check derivations written in InspireScore's formula syntax")
    actions = parser.add_subparsers(dest="logic_action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check", help="the verdict on each derivation of a file: premise ; premise |- conclusion, one a line",
        description="Each line `premise ; premise |- conclusion` (or ⊢) is one derivation in the formula syntax "
        "of docs/inspire.md; blank lines and # comments are skipped. Verdicts: valid, invalid (with a "
        "counter-example), inconsistent (the premises contradict each other), circular (the conclusion is a "
        "premise), unparsed (with line:column) and timeout.",
    )
    check.add_argument("file", nargs="?", metavar="FILE",
                       help='the file of derivations; "-" (or nothing after "--") reads standard input')
    check.add_argument("--json", action="store_true",
                       help="print a JSON list of {line, text, verdict, error, counter_model}")
    check.set_defaults(handler=_check)


def _check(args) -> int:
    from engines.inspire.logic import check_lines

    # Each verdict is printed as soon as it is decided: a long file shows its progress line by line.
    results = check_lines(_lines(args.file))
    if args.json:
        _print_json(results)
        return 0
    for result in results:
        detail = result.counter_model.sentence() if result.counter_model else result.error
        _print_now(f"{result.line}: {result.verdict}" + (f": {detail}" if detail else ""))
    return 0


def _print_json(results) -> None:
    """A JSON list of the results, one object printed as each is decided."""
    import textwrap

    _print_now("[", end="")
    for number, result in enumerate(results):
        row = json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False)
        _print_now(("," if number else "") + "\n" + textwrap.indent(row, "  "), end="")
    _print_now("\n]")


def _print_now(text: str, end: str = "\n") -> None:
    from engines.terminal_text import print_data

    print_data(text, end=end)
    sys.stdout.flush()


def _lines(file: str | None) -> list[str]:
    """The lines to check, all read (and decoded) before any is checked: a bad file is one error."""
    from pathlib import Path

    from engines.datasets import DataFormatError, text_lines
    from engines.errors import ArgtuiError

    if file is not None and file != "-":
        return list(text_lines(Path(file)))
    if sys.stdin.isatty() and file is None:
        raise ArgtuiError('give a FILE of derivations, or "-" to read them from standard input')
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError("standard input", line, None, f"not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
