"""`argtui logic check`, run as a user runs it: a mixed file gives each verdict with its
counter-example or parse position, --json the same as objects, standard input reads alike,
and a missing or non-UTF-8 file is a one-line error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MIXED = """# one derivation a line; this comment and the blank line are skipped
TaxesRise -> PricesRise ; PricesRise |- TaxesRise

forall x. Man(x) -> Mortal(x) ; Man(socrates) ⊢ Mortal(socrates)
P ; ~P |- Q
Raining |- Raining
Rich(a) ; Poor(b) & |- Rich(a)
forall x. Man(x) -> Mortal(x) ; Mortal(socrates) |- Man(socrates)
"""


def run_argtui(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "argtui", *argv], capture_output=True, input=stdin, timeout=120)
    return subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode(), result.stderr.decode())


@pytest.fixture
def mixed(tmp_path) -> Path:
    path = tmp_path / "derivations.txt"
    path.write_text(MIXED, encoding="utf-8")
    return path


def test_a_mixed_file_gets_each_verdict_with_its_counter_example_or_position(mixed):
    result = run_argtui("logic", "check", str(mixed))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "2: invalid: e.g. when PricesRise is true and TaxesRise is false",
        "4: valid",
        "5: inconsistent",
        "6: circular",
        "7: unparsed: 7:20: premise 2: the formula ends too early; expected a predicate (a capitalised name), "
        "a quantifier (forall, exists), '~', '('",
        "8: invalid: e.g. when Mortal(socrates) is true and Man(socrates) is false",
    ]


def test_json_gives_one_object_per_derivation(mixed):
    result = run_argtui("logic", "check", str(mixed), "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [(row["line"], row["verdict"]) for row in rows] == [
        (2, "invalid"), (4, "valid"), (5, "inconsistent"), (6, "circular"), (7, "unparsed"), (8, "invalid")
    ]
    assert all(set(row) == {"line", "text", "verdict", "error", "counter_model"} for row in rows)
    assert rows[1]["text"] == "forall x. Man(x) -> Mortal(x) ; Man(socrates) ⊢ Mortal(socrates)"
    assert rows[0]["counter_model"]["true"] == ["PricesRise"] and rows[0]["counter_model"]["false"] == ["TaxesRise"]
    assert rows[5]["counter_model"]["constants"] == {"socrates": "socrates"}
    assert rows[4]["error"].startswith("7:20: premise 2") and rows[4]["counter_model"] is None
    assert all(row["error"] is None for row in rows if row["verdict"] != "unparsed")


@pytest.mark.parametrize("argv", [["-"], ["--"]])
def test_standard_input_reads_like_a_file(mixed, argv):
    result = run_argtui("logic", "check", *argv, stdin=mixed.read_bytes())
    assert result.returncode == 0, result.stderr
    assert result.stdout == run_argtui("logic", "check", str(mixed)).stdout


def test_a_missing_or_non_utf8_file_is_a_one_line_error(tmp_path):
    missing = run_argtui("logic", "check", str(tmp_path / "none.txt"))
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == f"error: {tmp_path / 'none.txt'}: file not found\n"
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("P |- P\nCaf\xe9(paris) |- P\n".encode("latin-1"))
    for result, where in ((run_argtui("logic", "check", str(latin)), str(latin)),
                          (run_argtui("logic", "check", "-", stdin=latin.read_bytes()), "standard input")):
        assert (result.returncode, result.stdout) == (1, "")  # nothing checked before the file is read whole
        assert result.stderr == f"error: {where}, line 2: not UTF-8 text (byte 0xe9)\n"


def test_a_terminal_escape_in_a_line_is_unparsed_and_escaped_in_json(tmp_path):
    path = tmp_path / "escape.txt"
    path.write_text("P \x1b]0;title\x07|- P\n", encoding="utf-8")
    result = run_argtui("logic", "check", str(path), "--json")
    assert result.returncode == 0 and "\x1b" not in result.stdout
    [row] = json.loads(result.stdout)
    assert row["verdict"] == "unparsed" and row["text"] == "P \x1b]0;title\x07|- P"
    assert row["error"].startswith("1:3: premise 1: unexpected character '\\x1b'")


def test_long_lines_get_their_verdicts_and_a_line_over_the_limits_is_reported_at_its_line(tmp_path):
    from engines.inspire.logic import LINE_MAX_PREMISES, TOO_LARGE

    six = " ; ".join(f"Step{i} -> Step{i + 1}" for i in range(5)) + " ; Step0 |- Step5"
    long_formula = " & ".join(f"Fact{i}" for i in range(27)) + " |- Fact26"  # 229 characters: over the model's 160
    too_many = " ; ".join(f"P{i}" for i in range(LINE_MAX_PREMISES + 8)) + " |- Q"
    wide = "A(a) & B(a) & A(b) & ~B(b) & ~A(c) & B(c) & ~A(d) & ~B(d) ; P(" + ", ".join("abcd" * 10) + ") |- Q"
    path = tmp_path / "long.txt"
    path.write_text("\n".join([six, long_formula, too_many, wide, "P |- P"]) + "\n", encoding="utf-8")
    result = run_argtui("logic", "check", str(path))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["1: valid", "2: valid"]
    assert lines[2].startswith("3: unparsed: 3:")
    assert f"{LINE_MAX_PREMISES + 8} premises; a line may have at most {LINE_MAX_PREMISES}" in lines[2]
    assert lines[3].startswith(f"4: invalid: {TOO_LARGE}")
    assert lines[4] == "5: circular"
    rows = json.loads(run_argtui("logic", "check", str(path), "--json").stdout)
    assert [row["verdict"] for row in rows] == ["valid", "valid", "unparsed", "invalid", "circular"]


def test_each_verdict_is_printed_as_it_is_decided(tmp_path):
    # Each line after the first keeps z3 busy until its time limit: the first verdict is out long before.
    slow = ("forall x. exists y. Less(x, y) ; forall x y z. Less(x, y) & Less(y, z) -> Less(x, z) ; "
            "forall x. ~Less(x, x) |- Unrelated")
    path = tmp_path / "slow.txt"
    path.write_text("\n".join(["P |- P", *[slow] * 5]) + "\n", encoding="utf-8")
    child = subprocess.Popen([sys.executable, "-m", "argtui", "logic", "check", str(path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "1: circular\n"
        assert child.poll() is None  # still checking the slow lines
        rest, _ = child.communicate(timeout=120)
    finally:
        child.kill()
    assert [line.split(": ")[:2] for line in rest.splitlines()] == [[str(n), "timeout"] for n in range(2, 7)]
