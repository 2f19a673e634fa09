"""Hostile files for every dataset reader and importer: Webis-ArgQuality-20, IBM-ArgQ, the UKP
essays (brat, split and prompts files), Touché RAD debates, Grice labels, critiques CSV and
the argument index import. Each damage gives a DataFormatError naming the file and line (and
field where there is one), a file that is fine apart from a BOM or a very long field reads
the same, the commands print one line instead of a traceback and store nothing, and random
bytes, JSON and CSV only ever give that error. (Critiques JSONL has its own cases in
test_hostile_inputs.py.)"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argtui.cli import main
from argtui.config import load_config
from engines.critiques.files import read_critiques
from engines.datasets import DataFormatError
from engines.datasets.ibm import load_ibm
from engines.datasets.rad import read_rad_debates, read_rad_labels
from engines.datasets.ukp_essays import read_essay, read_prompts, read_split
from engines.datasets.webis import load_webis
from engines.retrieval.embedded import EmbeddedIndex, TantivyRetriever, run_write
from engines.retrieval.rad import RAD_SOURCE, count_rad_arguments, iter_rad_arguments

LONG_TEXT = "word " * 40_000  # 200 KB: over csv's default 128 KB field limit
DIGITS = "9" * 5000  # over Python's 4,300-digit limit for int()

# ---------------------------------------------------------------- the readers and their good files

WEBIS_HEADER = ("Topic ID,Argument ID,Discussion ID,Premise,Relevance,Is Argument?,Rhetorical Quality,"
                "Logical Quality,Dialectical Quality,Text Length,Stance,Combined Quality")


def webis_row(argument: int, premise: str = "Cars pollute the air.", topic: str = "1", relevance: str = "0.5") -> str:
    return f'{topic},{argument},10,"{premise}",{relevance},True,0.1,0.2,0.3,4,True,0.2'


def write_webis_release(root: Path) -> None:
    full, raw = root / "Webis-ArgQuality-20-Full", root / "Webis-ArgQuality-20-Raw"
    full.mkdir(parents=True, exist_ok=True)
    raw.mkdir(exist_ok=True)
    (full / "webis-argquality20-topics.csv").write_text(
        "Topic ID,Category,Long Query,Short Query\n1,Transport,Should cities ban cars?,car ban\n")
    (raw / "webis-argquality20-raw-logical.csv").write_text(
        "Discussion ID A,Argument ID A,Discussion ID B,Argument ID B,Comparison\n10,1,10,2,A\n")


def read_webis(path: Path):
    return load_webis(path.parent.parent, dimensions=("logical",))


ESSAY_TEXT = "Schools should teach cooking\n\nCooking teaches planning. It also saves money.\n"
GOOD_ANN = ["T1\tMajorClaim 0 28\tSchools should teach cooking\n",
            "T2\tPremise 30 54\tCooking teaches planning\t\n",
            "A1\tStance T2 For\n",
            "R1\tsupports Arg1:T2 Arg2:T1\t\n"]


def write_essay_text(folder: Path) -> None:
    (folder / "essay001.txt").write_text(ESSAY_TEXT, encoding="utf-8", newline="")


IBM_HEADER = "argument,topic,set,WA,MACE-P,stance_WA,stance_WA_conf"
CRITIQUES_HEADER = "position_id,position,critique_id,critique,rater,overall"


def rad_debate(debate_id: str, content: str = "Cars should go.") -> str:
    return json.dumps({"id": debate_id, "claim": "Ban cars.", "simulated_debate": [
        {"role": "user", "content": content, "arguments": None},
        {"role": "assistant", "content": "Shops need vans.", "arguments": [{"id": "1.2", "text": "Vans."}]},
    ]})


def rad_argument(argument_id: str, text: str = "Car-free streets speed up buses.") -> str:
    return json.dumps({"id": argument_id, "topic": "Cars?", "tags": ["Cities"], "attacks": "Keep cars.",
                       "supports": "Ban cars.", "text": text, "references": [], "original": "supports"})


@dataclass(frozen=True)
class Reader:
    """One reader: the file it is given (`name`, plain or `.gz` when it takes both), the lines
    of a good file, a valid line holding a 200 KB text (None: the format has no free text),
    and lines that break one field, each with the field named and the problem said."""

    name: str
    file: str
    kind: str  # "jsonl" | "csv" | "lines"
    good: list[str]
    read: Callable[[Path], Any]
    setup: Callable[[Path], None] = lambda folder: None
    long_line: str | None = None
    bad_lines: list[tuple[str, str | None, str]] = field(default_factory=list)
    gz: bool = True  # the reader takes a gzipped file too
    empty_problem: str | None = None  # None: an empty file is valid (no records)
    encoding: str = "utf-8"


READERS = [
    Reader(
        "webis", "Webis-ArgQuality-20-Full/webis-argquality20-arguments.csv", "csv",
        [WEBIS_HEADER + "\n", webis_row(1) + "\n", webis_row(2, "Vans deliver goods.") + "\n"],
        read_webis, setup=write_webis_release, gz=False,
        long_line=webis_row(3, LONG_TEXT) + "\n",
        bad_lines=[(webis_row(3, topic=DIGITS) + "\n", "Topic ID", "expected an integer"),
                   (webis_row(3, relevance="high") + "\n", "Relevance", "expected a number"),
                   (webis_row(3, relevance="1e999") + "\n", "Relevance", "expected a number"),
                   (webis_row(3, topic="7") + "\n", "Topic ID", "unknown topic 7")],
        empty_problem="missing column",
    ),
    Reader(
        "ibm", "arg_quality_rank_30k.csv", "csv",
        [IBM_HEADER + "\n", '"Marriage is outdated.",We should abandon marriage,train,0.84,0.29,1,1\n'],
        load_ibm, long_line=f'"{LONG_TEXT}",We should abandon marriage,dev,0.5,0.5,-1,1\n',
        bad_lines=[(f'"Short.",T,train,0.5,0.5,{DIGITS},1\n', "stance_WA", "expected a number"),
                   ('"Short.",T,train,nan,0.5,1,1\n', "WA", "expected a number"),
                   ('"Short.",T,train,0.5,0.5,2,1\n', "stance_WA", "expected 1, -1 or 0")],
        empty_problem="missing column",
    ),
    Reader(
        "ukp essay annotations", "essay001.ann", "lines", GOOD_ANN,
        lambda path: read_essay(path.with_suffix(".txt"), path), setup=write_essay_text, gz=False,
        bad_lines=[(f"T3\tClaim 56 {DIGITS}\tIt also saves money\n", "T3", "offsets must be integers"),
                   ("T3\tClaim 56\tIt also saves money\n", "T3", "expected 'Label start end'")],
    ),
    Reader(
        "ukp split", "train-test-split.csv", "csv", ['"ID";"SET"\r', '"essay001";"TRAIN"\r'],
        read_split, gz=False,
        bad_lines=[('"essay002";"DEV"\r', "SET", "expected TRAIN or TEST"),
                   ('"essay 3";"TEST"\r', "ID", "expected an essay id")],
        empty_problem="missing column",
    ),
    Reader(
        "ukp prompts", "prompts.csv", "csv", ["ESSAY;PROMPT\r", "essay001.txt;Should schools teach cooking?\r"],
        read_prompts, gz=False, encoding="mac_roman", long_line=f"essay002.txt;{LONG_TEXT}\r",
        empty_problem="missing column",
    ),
    Reader(
        "rad debates", "debates.jsonl", "jsonl", [rad_debate("d1") + "\n", rad_debate("d2") + "\n"],
        read_rad_debates, long_line=rad_debate("d3", LONG_TEXT) + "\n",
        bad_lines=[(json.dumps({"id": "d3", "claim": 5, "simulated_debate": []}) + "\n", "claim", "expected str"),
                   (json.dumps({"id": "d3", "claim": "C"}) + "\n", "simulated_debate", "missing")],
        empty_problem="no debates",
    ),
    Reader(
        "grice labels", "labels.jsonl", "jsonl",
        [json.dumps([{"quantity": 1, "quality": 0, "relation": None, "manner": 1}]) + "\n"],
        read_rad_labels,
        bad_lines=[(json.dumps([{"quantity": "yes"}]) + "\n", "[0].quantity", "expected 0, 1 or null"),
                   (json.dumps([{"quality": True}]) + "\n", "[0].quality", "expected 0, 1 or null"),
                   (json.dumps({"quantity": 1}) + "\n", None, "expected a list of turns")],
        empty_problem="no labelled debates",
    ),
    Reader(
        "critiques csv", "critiques.csv", "csv",
        [CRITIQUES_HEADER + "\n", "p1,Cars should go.,c1,Shops need vans.,ann,0.5\n"],
        read_critiques, long_line=f'p1,Cars should go.,c2,"{LONG_TEXT}",ann,0.5\n',
        bad_lines=[(f"p1,Cars should go.,c2,Vans.,ann,{DIGITS}\n", "overall", "outside [0, 1]"),
                   ("p1,Cars should go.,c2,Vans.,ann,lots\n", "overall", "not a number")],
        empty_problem="missing column",
    ),
    Reader(
        "index import", "arguments.jsonl", "jsonl", [rad_argument("9.1") + "\n", rad_argument("9.2") + "\n"],
        # the command's two passes: the whole-file check, then the arguments it writes
        lambda path: (count_rad_arguments(path), list(iter_rad_arguments(path))),
        long_line=rad_argument("9.3", LONG_TEXT) + "\n",
        bad_lines=[(json.dumps({"id": "9.3"}) + "\n", "text", "expected a non-empty string"),
                   (json.dumps({"id": "9.3", "text": "T", "tags": "Cities"}) + "\n", "tags", "list of strings"),
                   (json.dumps({"id": 93, "text": "T"}) + "\n", "id", "expected a non-empty string")],
        empty_problem="no arguments",
    ),
]
BY_NAME = {reader.name: reader for reader in READERS}


def place(reader: Reader, folder: Path, data: bytes, suffix: str = "") -> Path:
    """The reader's other files in `folder` and `data` as the file under test."""
    folder.mkdir(parents=True, exist_ok=True)
    reader.setup(folder)
    path = folder / (reader.file + suffix)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def encoded(reader: Reader, lines: list[str]) -> bytes:
    return "".join(lines).encode(reader.encoding)


# ---------------------------------------------------------------- damage that any text file can have

def _utf16(r: Reader) -> tuple[bytes, int | None, str]:
    return codecs.BOM_UTF16_LE + "".join(r.good).encode("utf-16-le"), None, "UTF-16"


def _invalid_utf8(r: Reader) -> tuple[bytes, int | None, str]:
    return encoded(r, r.good) + b"caf\xe9 \xff\n", len(r.good) + 1, "not UTF-8"


def _nul(r: Reader) -> tuple[bytes, int | None, str]:
    return encoded(r, r.good) + b"a\x00b\n", len(r.good) + 1, "NUL"


def _deep(r: Reader) -> tuple[bytes, int | None, str]:
    return encoded(r, r.good) + b"[" * 100_000 + b"]" * 100_000 + b"\n", len(r.good) + 1, "nested too deeply"


def _huge_integer(r: Reader) -> tuple[bytes, int | None, str]:
    return encoded(r, r.good) + b'{"id": ' + DIGITS.encode() + b"}\n", len(r.good) + 1, "not valid JSON"


def _not_json(r: Reader) -> tuple[bytes, int | None, str]:
    return encoded(r, r.good) + b'{"id": "x",\n', len(r.good) + 1, "not valid JSON"


def _cells(r: Reader, change: int) -> tuple[bytes, int | None, str]:
    delimiter = ";" if ";" in r.good[0] else ","
    row = next(csv.reader([r.good[-1].rstrip("\r\n")], delimiter=delimiter))
    row = row + ["surplus"] if change > 0 else row[:-1]
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator=r.good[-1][-1]).writerow(row)
    header = len(next(csv.reader([r.good[0].rstrip("\r\n")], delimiter=delimiter)))
    return encoded(r, [*r.good, out.getvalue()]), len(r.good) + 1, f"{len(row)} cells but the header has {header}"


DAMAGE: dict[str, tuple[tuple[str, ...], Callable[[Reader], tuple[bytes, int | None, str]]]] = {
    # damage: (the kinds of file it applies to, how to make it)
    "utf-16": (("jsonl", "csv", "lines"), _utf16),
    "invalid utf-8": (("jsonl", "csv", "lines"), _invalid_utf8),
    "nul byte": (("jsonl", "csv", "lines"), _nul),
    "json nested 100k deep": (("jsonl",), _deep),
    "json 5000-digit integer": (("jsonl",), _huge_integer),
    "json cut off": (("jsonl",), _not_json),
    "csv extra cell": (("csv",), lambda r: _cells(r, +1)),
    "csv missing cell": (("csv",), lambda r: _cells(r, -1)),
}
DAMAGE_CASES = [
    pytest.param(reader.name, damage, id=f"{reader.name}: {damage}")
    for reader in READERS for damage, (kinds, _) in DAMAGE.items()
    # Mac Roman gives every byte a character: a prompts file cannot be invalid text.
    if reader.kind in kinds and not (damage == "invalid utf-8" and reader.encoding != "utf-8")
]


@pytest.mark.parametrize("reader_name, damage", DAMAGE_CASES)
def test_damaged_file_names_file_and_line(tmp_path, reader_name, damage):
    reader = BY_NAME[reader_name]
    data, line, problem = DAMAGE[damage][1](reader)
    path = place(reader, tmp_path, data)
    with pytest.raises(DataFormatError) as raised:
        reader.read(path)
    assert raised.value.path == str(path) and raised.value.line == line
    assert problem in str(raised.value) and str(path) in str(raised.value)


BAD_FIELD_CASES = [
    pytest.param(reader.name, index, id=f"{reader.name}: {bad[1] or 'line'} {bad[2] or 'invalid'}")
    for reader in READERS for index, bad in enumerate(reader.bad_lines)
]


@pytest.mark.parametrize("reader_name, index", BAD_FIELD_CASES)
def test_missing_or_wrong_typed_field_names_file_line_and_field(tmp_path, reader_name, index):
    reader = BY_NAME[reader_name]
    bad_line, field_name, problem = reader.bad_lines[index]
    path = place(reader, tmp_path, encoded(reader, [*reader.good, bad_line]))
    with pytest.raises(DataFormatError) as raised:
        reader.read(path)
    assert (raised.value.path, raised.value.line, raised.value.field) == (str(path), len(reader.good) + 1, field_name)
    assert problem in str(raised.value)


@pytest.mark.parametrize("reader_name", [r.name for r in READERS if r.gz])
def test_a_corrupt_gzip_file_names_the_damage(tmp_path, reader_name):
    reader = BY_NAME[reader_name]
    whole = gzip.compress(encoded(reader, reader.good))
    assert reader.read(place(reader, tmp_path / "whole", whole, ".gz"))  # the intact file reads
    path = place(reader, tmp_path / "cut", whole[: len(whole) // 2], ".gz")
    with pytest.raises(DataFormatError, match="not a complete gzip file") as raised:
        reader.read(path)
    assert raised.value.path == str(path) and raised.value.line is not None


@pytest.mark.parametrize("reader_name", [r.name for r in READERS])
def test_an_empty_file_says_so_or_reads_as_no_records(tmp_path, reader_name):
    reader = BY_NAME[reader_name]
    path = place(reader, tmp_path, b"")
    if reader.empty_problem is None:  # brat: an essay may have no annotations yet
        assert reader.read(path).components == ()
        return
    with pytest.raises(DataFormatError, match=reader.empty_problem) as raised:
        reader.read(path)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize("reader_name", [r.name for r in READERS])
def test_a_utf8_bom_and_a_field_over_128_kb_read_as_without_them(tmp_path, reader_name):
    reader = BY_NAME[reader_name]
    plain = reader.read(place(reader, tmp_path, encoded(reader, reader.good)))
    if reader.encoding == "utf-8":
        assert reader.read(place(reader, tmp_path, codecs.BOM_UTF8 + encoded(reader, reader.good))) == plain
    if reader.long_line is not None:
        long = reader.read(place(reader, tmp_path, encoded(reader, [*reader.good, reader.long_line])))
        assert LONG_TEXT.strip() in repr(long) and LONG_TEXT.strip() not in repr(plain)


# ---------------------------------------------------------------- random input

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def read_error(reader: Reader, folder: Path, data: bytes) -> DataFormatError | None:
    """Why the file does not read (None: it reads); any other exception fails the test."""
    try:
        reader.read(place(reader, folder, data))
    except DataFormatError as exc:
        return exc
    return None


def names_a_file_of(error: DataFormatError | None, folder: Path) -> bool:
    """No error, or one naming the file or another file of its folder (a Webis release)."""
    return error is None or (error.path.startswith(str(folder)) and error.path in str(error))


@FUZZ
@given(data=st.binary(max_size=300), reader_name=st.sampled_from([r.name for r in READERS]))
def test_random_bytes_give_a_named_error_or_a_reading(tmp_path, data, reader_name):
    folder = tmp_path / "fuzz"
    assert names_a_file_of(read_error(BY_NAME[reader_name], folder, data), folder)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["id", "text", "tags", "original", "attacks", "quantity", "claim", "simulated_debate",
                         "role", "content", "arguments"]) | st.text(max_size=8), children, max_size=5),
    max_leaves=20,
)


@FUZZ
@given(values=st.lists(JSON_VALUES, min_size=1, max_size=3),
       reader_name=st.sampled_from([r.name for r in READERS if r.kind == "jsonl"]))
def test_random_json_lines_give_a_named_error_or_a_reading(tmp_path, values, reader_name):
    data = "".join(json.dumps(value) + "\n" for value in values).encode()
    folder = tmp_path / "fuzz"
    assert names_a_file_of(read_error(BY_NAME[reader_name], folder, data), folder)


def test_an_unpaired_surrogate_in_a_json_line_names_its_line_and_field(tmp_path):
    """JSON can spell a lone surrogate (\\ud800), which no text encoding can store: a named error, not a crash."""
    path = tmp_path / "critiques.jsonl"
    good = {"position_id": "p1", "position": "Cities need cars.", "critique_id": "c1", "critique": "It ignores buses."}
    bad = {**good, "critique_id": "c2", "critique": "bad \ud800"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"line 2: field 'critique': holds an unpaired surrogate"):
        read_critiques(path)


@FUZZ
@given(rows=st.lists(st.lists(st.text(max_size=12), min_size=1, max_size=8), max_size=4),
       keep_header=st.booleans(), reader_name=st.sampled_from([r.name for r in READERS if r.kind == "csv"]))
def test_random_csv_rows_give_a_named_error_or_a_reading(tmp_path, rows, keep_header, reader_name):
    reader = BY_NAME[reader_name]
    delimiter = ";" if ";" in reader.good[0] else ","
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter)
    if keep_header:  # a right header reaches the checks of each row's cells
        out.write(reader.good[0])
    writer.writerows(rows)
    data = out.getvalue().encode(reader.encoding, errors="replace")
    folder = tmp_path / "fuzz"
    assert names_a_file_of(read_error(reader, folder, data), folder)


# ---------------------------------------------------------------- commands: one line, nothing stored

def row_counts(database: Path) -> dict[str, int]:
    """Rows of every table of the SQLite file."""
    with sqlite3.connect(database) as connection:
        tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: connection.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0] for table in tables}


@pytest.fixture
def stored(capsys) -> Path:
    """The app's database holding the demo critiques: something a bad command must not change."""
    assert main(["import", "critiques", "--demo"]) == 0
    capsys.readouterr()
    database = load_config().paths.database
    assert row_counts(database)["critique"] > 0
    return database


def damaged(reader_name: str, folder: Path, damage: str) -> Path:
    reader = BY_NAME[reader_name]
    return place(reader, folder, DAMAGE[damage][1](reader)[0])


def assert_one_line_error(capsys, argv: list[str], path: Path) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(path) in err.replace("\n", ""), err


COMMAND_DAMAGE = ["utf-16", "invalid utf-8", "nul byte", "json nested 100k deep", "json 5000-digit integer"]


@pytest.mark.parametrize("damage", COMMAND_DAMAGE)
def test_eval_grice_on_bad_debates_or_labels_stores_nothing(tmp_path, capsys, stored, damage):
    before = row_counts(stored)
    debates = damaged("rad debates", tmp_path / "debates", damage)
    assert_one_line_error(capsys, ["eval", "grice", "--debates", str(debates)], debates)
    debates_reader = BY_NAME["rad debates"]
    good = place(debates_reader, tmp_path / "good", encoded(debates_reader, debates_reader.good))
    labels = damaged("grice labels", tmp_path / "labels", damage)
    assert_one_line_error(capsys, ["eval", "grice", "--debates", str(good), "--labels", str(labels)], labels)
    assert row_counts(stored) == before


@pytest.mark.parametrize("damage", ["utf-16", "invalid utf-8", "nul byte", "csv missing cell"])
def test_eval_pairwise_and_components_on_bad_data_store_nothing(tmp_path, capsys, stored, damage):
    before = row_counts(stored)
    webis = damaged("webis", tmp_path / "webis", damage)
    assert_one_line_error(capsys, ["eval", "pairwise", "--data", str(tmp_path / "webis"), "--limit", "1"], webis)
    if damage != "csv missing cell":
        essays = tmp_path / "ukp" / "brat-project-final"
        essays.mkdir(parents=True)
        (tmp_path / "ukp" / "train-test-split.csv").write_text('"ID";"SET"\r"essay001";"TEST"\r')
        ann = damaged("ukp essay annotations", essays, damage)
        assert_one_line_error(capsys, ["eval", "components", "--data", str(tmp_path / "ukp")], ann)
    assert row_counts(stored) == before


@pytest.mark.parametrize("damage", ["utf-16", "nul byte", "csv missing cell", "csv extra cell"])
def test_import_critiques_of_a_bad_file_changes_no_row(tmp_path, capsys, stored, damage):
    before = row_counts(stored)
    path = damaged("critiques csv", tmp_path, damage)
    assert_one_line_error(capsys, ["import", "critiques", str(path)], path)
    assert row_counts(stored) == before


@pytest.mark.parametrize("damage", COMMAND_DAMAGE + ["json cut off"])
def test_index_import_of_a_bad_file_writes_nothing(tmp_path, capsys, damage):
    path = damaged("index import", tmp_path, damage)
    assert_one_line_error(capsys, ["index", "import-rad", str(path)], path)
    assert main(["index", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"backend": "tantivy", "built": False}


async def test_an_index_import_that_fails_midway_rolls_back(tmp_path):
    reader = BY_NAME["index import"]
    index = EmbeddedIndex(tmp_path / "index")
    good = place(reader, tmp_path / "good", encoded(reader, reader.good))
    await run_write(lambda report: index.create(iter_rad_arguments(good), 2, report))
    # Written straight to the index, without the whole-file check the command makes first:
    # the second argument is added before the damaged line is read.
    bad = place(reader, tmp_path / "bad", encoded(reader, [reader.good[0], rad_argument("9.9") + "\n", "{"]))
    with pytest.raises(DataFormatError, match="line 3"):
        await run_write(lambda report: index.import_arguments(iter_rad_arguments(bad), 3, RAD_SOURCE, str(bad), report))
    retriever = TantivyRetriever(index)
    assert await retriever.count() == 2 and await retriever.get(["9.9"]) == []


def test_a_lazy_webis_corpus_reads_a_dimension_when_used_and_names_its_problems(tmp_path):
    root = tmp_path / "webis"
    write_webis_release(root)
    (root / "Webis-ArgQuality-20-Full" / "webis-argquality20-arguments.csv").write_text(
        "\n".join([WEBIS_HEADER, webis_row(1), webis_row(2, "Vans deliver goods.")]) + "\n")
    (root / "Webis-ArgQuality-20-Raw" / "webis-argquality20-raw-rhetorical.csv").write_text(
        "Discussion ID A,Argument ID A,Discussion ID B,Argument ID B,Comparison\n10,1,10,x,A\n")
    corpus = load_webis(root, lazy=True)  # the rhetorical file is damaged, the dialectical one missing
    assert list(corpus.comparisons) == ["logical", "rhetorical", "dialectical"]
    assert [(c.a, c.b, c.label) for c in corpus.comparisons["logical"]] == [((10, 1), (10, 2), "A")]
    with pytest.raises(DataFormatError) as damaged:
        corpus.comparisons["rhetorical"]
    assert (damaged.value.line, damaged.value.field) == (2, "Argument ID B")
    assert "raw-rhetorical.csv" in str(damaged.value)
    with pytest.raises(DataFormatError, match="file not found"):
        corpus.comparisons["dialectical"]
    with pytest.raises(DataFormatError, match="raw-rhetorical.csv, line 2"):
        load_webis(root)  # read at once
