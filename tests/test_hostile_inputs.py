"""Hostile input files: every reader names the file, line and field of the first problem
(never a traceback), an import is all or nothing, and random bytes only ever give that error."""

from __future__ import annotations

import codecs
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argtui.cli import main
from engines.critiques.files import import_critiques, read_critiques
from engines.datasets import DataFormatError, read_csv_columns, read_csv_rows
from engines.datasets.rad import read_rad_debates, read_rad_labels
from store.critiques import CritiqueRepository

GOOD = {"position_id": "p1", "position": "Cars should go.", "critique_id": "c1", "critique": "Shops need vans."}
CSV_HEADER = "position_id,position,critique_id,critique\n"


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def jsonl(*objects) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode()


CASES = {
    "utf16.jsonl": (codecs.BOM_UTF16_LE + jsonl(GOOD).decode().encode("utf-16-le"), None, "UTF-16"),
    "latin1.jsonl": (jsonl(GOOD) + b'{"critique": "caf\xe9"}\n', 2, "not UTF-8"),
    "corrupt.jsonl.gz": (gzip.compress(jsonl(GOOD, GOOD))[:30], 1, "gzip"),
    "deep.jsonl": (b"[" * 100_000 + b"]" * 100_000 + b"\n", 1, "nested too deeply"),
    "digits.jsonl": (b'{"critique_id": ' + b"9" * 5000 + b"}\n", 1, "not valid JSON"),
    "nul.jsonl": (jsonl(GOOD) + b'{"critique": "a\x00b"}\n', 2, "NUL"),
    "empty.jsonl": (b"", None, "no critique"),
    "extra.csv": ((CSV_HEADER + "p1,Cars.,c1,Vans.,surplus\n").encode(), 2, "5 cells but the header has 4"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_bad_critiques_file_is_named_with_its_line(name, tmp_path):
    data, line, problem = CASES[name]
    path = write(tmp_path / name, data)
    with pytest.raises(DataFormatError) as raised:
        read_critiques(path)
    assert problem in str(raised.value) and str(path) in str(raised.value)
    assert raised.value.line == line


def test_a_bom_and_a_field_over_128_kb_are_fine(tmp_path):
    long_critique = "word " * 40_000  # 200 KB: a long critique exported as CSV imports back
    csv_text = CSV_HEADER + f'p1,Cars.,c1,"{long_critique}"\n'
    parsed = read_critiques(write(tmp_path / "long.csv", codecs.BOM_UTF8 + csv_text.encode()))
    assert parsed.critiques[0].text == long_critique.strip() or parsed.critiques[0].text.startswith("word word")
    assert read_critiques(write(tmp_path / "bom.jsonl", codecs.BOM_UTF8 + jsonl(GOOD))).critiques[0].uid == "c1"


def test_a_bad_import_stores_nothing_and_says_where(tmp_path, capsys, db):
    repo = CritiqueRepository(db)
    import_critiques(repo, write(tmp_path / "ok.jsonl", jsonl(GOOD)))
    bad = write(tmp_path / "bad.jsonl", jsonl({**GOOD, "critique_id": "c2"}) + b'{"critique": "x\xff"}\n')
    with pytest.raises(DataFormatError, match="line 2"):
        import_critiques(repo, bad)
    assert [c.uid for p in repo.positions() for c in p.critiques] == ["c1"]  # c2 was not stored


def test_the_import_command_prints_the_problem_not_a_traceback(tmp_path, capsys):
    assert main(["import", "critiques", str(write(tmp_path / "deep.jsonl", b"[" * 100_000))]) == 1
    err = capsys.readouterr().err
    assert "deep.jsonl, line 1" in err and "Traceback" not in err


def test_rad_and_csv_readers_name_the_problem_too(tmp_path):
    with pytest.raises(DataFormatError, match="not UTF-8"):
        read_rad_debates(write(tmp_path / "d.jsonl", b'{"id": "\xff"}\n'))
    with pytest.raises(DataFormatError, match="gzip"):
        read_rad_labels(write(tmp_path / "l.jsonl.gz", b"\x1f\x8b\x08\x00garbage"))
    with pytest.raises(DataFormatError, match="line 3: 3 cells but the header has 2"):
        list(read_csv_rows(write(tmp_path / "t.csv", b"a,b\n1,2\n1,2,3\n"), ("a", "b")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".jsonl", ".csv", ".jsonl.gz"]))
def test_random_bytes_give_a_named_error_or_a_valid_file(tmp_path, data, suffix):
    path = write(tmp_path / f"fuzz{suffix}", data)
    for reader in (read_critiques, read_rad_debates):
        try:
            reader(path)
        except DataFormatError as exc:
            assert str(path) in str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
))
def test_random_json_lines_give_a_named_error_or_a_valid_file(tmp_path, value):
    path = write(tmp_path / "fuzz.jsonl", (json.dumps(value) + "\n").encode())
    for reader in (read_critiques, read_rad_debates, read_rad_labels):
        try:
            reader(path)
        except DataFormatError as exc:
            assert str(path) in str(exc)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300).map(lambda body: b"a,b,c\n" + body))
def test_the_column_reader_reads_and_refuses_what_the_row_reader_does(tmp_path, data):
    """read_csv_columns (large files, no dict per row) gives the rows, or the error, of read_csv_rows."""
    path = write(tmp_path / "t.csv", data)

    def outcome(read):
        try:
            return list(read())
        except DataFormatError as exc:
            return (exc.line, exc.field, str(exc))

    by_rows = outcome(lambda: ((line, (row["c"], row["a"])) for line, row in read_csv_rows(path, ("c", "a"))))
    assert outcome(lambda: read_csv_columns(path, ("c", "a"))) == by_rows
