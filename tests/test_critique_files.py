"""Critique import/export: round trips, revisions in the export, bad files that import nothing, the demo set."""

from __future__ import annotations

import csv
import gzip
import io
import json

import pytest

from argtui.cli import main
from engines.critiques.demo import DEMO_PATH, demo_bytes
from engines.critiques.files import export_records, import_critiques, render
from engines.datasets import DataFormatError
from store import Database
from store.critiques import CritiqueRepository


def rating(rater: str, overall: float, **extra) -> dict:
    values = dict(centrality=0.8, strength=0.6, correctness=0.9, clarity=0.7, dead_weight=0.1, single_issue=1.0)
    return {"rater": rater, **values, "overall": overall, **extra}


def critique_line(position_id: str, critique_id: str, ratings: list[dict], **extra) -> dict:
    return {
        "position_id": position_id, "position": f"Position {position_id}: free will is an illusion.",
        "critique_id": critique_id, "critique": f"Critique {critique_id}: the argument equivocates.",
        "ratings": ratings, **extra,
    }


def write_jsonl(path, lines: list[dict]):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


GOOD = [
    critique_line("p1", "c1", [rating("ann", 0.6), rating("bob", 0.3)], source="GPT-4", topic="free will"),
    critique_line("p1", "c2", [
        rating("ann", 0.2, id="r1"),
        rating("ann", 0.4, id="r2", revises="r1", reason="missed the second reading"),
    ]),
    critique_line("p2", "c3", []),
]


def counts(db: Database) -> tuple[int, int, int]:
    repo = CritiqueRepository(db)
    positions = repo.positions()
    return len(positions), sum(len(p.critiques) for p in positions), len(repo.ratings(which="all"))


def test_jsonl_import_keeps_revisions_and_the_export_holds_both(tmp_path, db):
    repo = CritiqueRepository(db)
    result = import_critiques(repo, write_jsonl(tmp_path / "in.jsonl", GOOD))
    assert (result.positions, result.critiques, result.ratings) == (2, 3, 4)
    assert [r.values["overall"] for r in repo.ratings("ann")] == [0.6, 0.4]  # latest of each chain
    records = {r["critique_id"]: r for r in export_records(repo)}
    chain = records["c2"]["ratings"]
    assert [(r["id"], r["overall"], r.get("revises"), r.get("reason")) for r in chain] == [
        ("r1", 0.2, None, None), ("r2", 0.4, "r1", "missed the second reading"),
    ]
    assert records["c1"]["source"] == "GPT-4" and records["c3"]["ratings"] == []
    again = import_critiques(repo, write_jsonl(tmp_path / "in.jsonl", GOOD))
    assert (again.ratings, again.already_stored) == (0, 4)


@pytest.mark.parametrize("file_format", ["jsonl", "csv"])
def test_export_imports_back_unchanged(tmp_path, db, file_format):
    repo = CritiqueRepository(db)
    import_critiques(repo, write_jsonl(tmp_path / "in.jsonl", GOOD))
    exported = tmp_path / f"out.{file_format}"
    exported.write_text(render(export_records(repo), file_format), encoding="utf-8")
    fresh = Database(tmp_path / "fresh.sqlite3")
    try:
        import_critiques(CritiqueRepository(fresh), exported)
        assert export_records(CritiqueRepository(fresh)) == export_records(repo)
    finally:
        fresh.close()


def test_csv_has_one_row_per_rating_and_one_for_an_unrated_critique(db, tmp_path):
    repo = CritiqueRepository(db)
    import_critiques(repo, write_jsonl(tmp_path / "in.jsonl", GOOD))
    rows = list(csv.DictReader(io.StringIO(render(export_records(repo), "csv"))))
    assert len(rows) == 5
    assert [row["rating_id"] for row in rows if row["critique_id"] == "c2"] == ["r1", "r2"]
    assert [row["rater"] for row in rows if row["critique_id"] == "c3"] == [""]


@pytest.mark.parametrize(
    ("bad_line", "field", "problem"),
    [
        (critique_line("p3", "c9", [rating("ann", 1.3)]), "ratings[0].overall", "outside [0, 1]"),
        (critique_line("p3", "c9", [{**rating("ann", 0.5), "clarity": -0.1}]), "ratings[0].clarity", "outside"),
        ({**critique_line("p3", "c9", []), "position_id": None}, "position_id", "needs its position"),
        ({k: v for k, v in critique_line("p3", "c9", []).items() if k != "position"}, "position", "missing"),
        (critique_line("p3", "c9", [rating("ann", 0.5), rating("ann", 0.6)]), "ratings[1].revises", "already rated"),
        (critique_line("p3", "c9", [rating("ann", 0.5, id="q"), rating("ann", 0.6, revises="q")]),
         "ratings[1].reason", "needs a reason"),
        (critique_line("p3", "c9", [{**rating("ann", 0.5), "dead weight": 0.2}]), "ratings[0].dead weight", "unknown"),
        (critique_line("p1", "c1", []), "critique_id", "already on line 1"),
    ],
)
def test_a_bad_line_names_file_line_and_field_and_imports_nothing(tmp_path, db, bad_line, field, problem):
    path = write_jsonl(tmp_path / "bad.jsonl", [*GOOD, bad_line])
    with pytest.raises(DataFormatError) as caught:
        import_critiques(CritiqueRepository(db), path)
    error = caught.value
    assert (error.path, error.line, error.field) == (str(path), 4, field)
    assert problem in str(error)
    assert counts(db) == (0, 0, 0)


def test_a_conflict_with_stored_data_fails_without_touching_the_database(tmp_path, db):
    repo = CritiqueRepository(db)
    import_critiques(repo, write_jsonl(tmp_path / "first.jsonl", GOOD))
    before = export_records(repo)
    changed = [GOOD[1], critique_line("p3", "c4", [rating("cyd", 0.5)]), {**GOOD[0], "critique": "Another text."}]
    path = write_jsonl(tmp_path / "second.jsonl", changed)
    with pytest.raises(DataFormatError) as caught:
        import_critiques(repo, path)
    assert (caught.value.line, caught.value.field) == (3, "critique")
    assert str(caught.value) == f"{path}, line 3: field 'critique': critique 'c1': differs from the stored critique"
    assert export_records(repo) == before  # not even the new, valid p3/c4 line was stored


def test_bad_csv_value_names_its_line_and_column(tmp_path, db):
    path = tmp_path / "bad.csv"
    path.write_text(
        "position_id,position,critique_id,critique,rater,overall\n"
        "p1,A position,c1,A critique,ann,0.5\n"
        "p1,A position,c2,Another critique,ann,lots\n",
        encoding="utf-8",
    )
    with pytest.raises(DataFormatError) as caught:
        import_critiques(CritiqueRepository(db), path)
    assert (caught.value.line, caught.value.field) == (3, "overall")
    assert counts(db) == (0, 0, 0)


def test_cli_reports_a_bad_file_with_line_and_field(tmp_path, capsys):
    path = write_jsonl(tmp_path / "bad.jsonl", [critique_line("p1", "c1", [rating("ann", 7)])])
    assert main(["import", "critiques", str(path)]) == 1
    expected = f"{path}, line 1: field 'ratings[0].overall': 7 is outside [0, 1]"
    assert "".join(expected.split()) in "".join(capsys.readouterr().err.split())  # wrapped at any space
    assert main(["export", "critiques"]) == 0
    assert capsys.readouterr().out == ""  # nothing was imported


def test_the_shipped_demo_set_rebuilds_byte_for_byte_and_says_it_is_a_demo():
    assert demo_bytes() == DEMO_PATH.read_bytes()
    records = [json.loads(line) for line in gzip.decompress(DEMO_PATH.read_bytes()).decode().splitlines()]
    assert len(records) == 51 and len({r["position_id"] for r in records}) == 11
    assert all(r["position_id"].startswith("demo-") and "demo set" in r["source"] for r in records)
    assert all("not an expert rating" in rating["note"] for r in records for rating in r["ratings"])


def test_cli_imports_the_demo_set_once(capsys):
    assert main(["import", "critiques", "--demo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["critiques"] == 51
    assert main(["import", "critiques", "--demo", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "positions": 0, "critiques": 0, "ratings": 0, "already_stored": 102,
        "raters": ["demo-crowd-mace", "demo-crowd-wa"],
    }
