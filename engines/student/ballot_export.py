"""A debate and its ballot as Markdown, for a teacher: the claim and sides, the transcript with
turn numbers, what was judged of each turn, then the ballot.

Text from the debate, the argument base or a model goes in as it is, escaped where Markdown
would read it as structure (a heading, a list, a table's column, a link, emphasis), so the
document keeps its shape whatever the data says. A Grice rationale the model did not mean (a
chatbot's disclaimer; `engines.judging.shown_text`) reads "no usable answer from this model",
judged before that check or after.
"""

from __future__ import annotations

import re

from engines.debate.levels import get_level
from engines.debate.records import DebateRecords, StoredTurn
from engines.grice.prompts import RATIONALE_REQUEST
from engines.inspire.score import DIMENSION_TITLES
from engines.judging.shown_text import shown
from engines.tasks.ballot import Ballot, TurnMark, debate_transcript
from store.db import Database
from store.debates import DebateRepository
from store.students import StudentRepository

DEMONSTRATION_NOTE = (
    "Demonstration: this ballot was made by the embedded model, whose judgments are for demonstration only."
)
NOTHING_MEASURED = "The Coach measured none of the student's turns: there is no strongest or weakest turn."

# What Markdown reads as structure anywhere in a line (with GitHub's tables, strikethrough and $math$).
_STRUCTURE = re.compile(r"([\\`*_{}\[\]<>#|~$])")
_LINE_START = re.compile(r"^([-+=]|\d+(?=[.)]))")  # a list item, a setext underline, a numbered item
_ENTITY = re.compile(r"&(?=#?\w+;)")


def escaped(text: str) -> str:
    """Data as inline Markdown that shows it as written: its line breaks collapsed into spaces
    (after one, the data would start a list item, a heading or a paragraph of its own), every
    character Markdown reads as structure escaped, and its surrounding blanks dropped (leading
    ones would start a code block)."""
    text = " ".join(text.splitlines())
    text = _ENTITY.sub(r"\\&", _STRUCTURE.sub(r"\\\1", text))
    text = _LINE_START.sub(lambda m: m.group() + "\\" if m.group()[0].isdigit() else "\\" + m.group(), text.strip())
    return text


def quoted_block(text: str) -> str:
    """Data of several lines as a block quote, each line escaped."""
    return "\n".join(f"> {escaped(line)}".rstrip() for line in text.splitlines() or [""])


def cell(text: str) -> str:
    """Data as a table cell: escaped, its line breaks as <br>."""
    return "<br>".join(escaped(line) for line in text.splitlines()) or " "


def _score(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.2f}"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows), "",
    ]


def _student_turn(number: int, turn: StoredTurn, dimensions: dict[str, float | None], overall: float | None
                  ) -> list[str]:
    lines = [f"### Turn {number}: student", "", quoted_block(turn.content), ""]
    components = turn.components
    if components:
        lines += ["Argument components:", ""]
        lines += _table(("component", "text"), [
            (cell(component.label or "no label (unreadable answer)"), cell(component.span.text))
            for component in components
        ])
    else:
        lines += ["Argument components: not labelled.", ""]
    if overall is None:
        lines += ["Coach (InspireScore): not measured.", ""]
    else:
        lines += [f"Coach (InspireScore): overall {overall:.2f}.", ""]
        lines += _table(("dimension", "score"), [
            (DIMENSION_TITLES.get(name, name), _score(value)) for name, value in dimensions.items()
        ])
    return lines


def _reply(number: int, turn: StoredTurn | None) -> list[str]:
    if turn is None:
        return [f"### Reply to turn {number}: bot", "", "No reply.", ""]
    lines = [f"### Reply to turn {number}: bot", "", quoted_block(turn.content), ""]
    grice = turn.grice
    if grice is not None and grice.metrics:
        lines += [f"Grice maxims ({escaped(grice.strategy)}):", ""]
        lines += _table(("maxim", "answer", "P(yes)", "rationale"), [
            (metric.metric, metric.answer or "invalid", _score(metric.p_yes),
             cell(shown(metric.rationale, RATIONALE_REQUEST) if metric.answer else metric.error or ""))
            for metric in grice.metrics.values()
        ])
    else:
        lines += ["Grice maxims: not judged.", ""]
    used = [row.id for row in turn.used_arguments]
    lines += [f"Evidence (argument ids): {', '.join(escaped(argument) for argument in used) or 'none'}.", ""]
    return lines


def _mark(title: str, mark: TurnMark) -> str:
    return f"- {title}: turn {mark.turn} (InspireScore {_score(mark.inspire)}): {escaped(mark.text)}"


def ballot_section(ballot: Ballot) -> str:
    """The ballot alone, as Markdown (what `argtui debate --ballot` prints)."""
    lines = ["## Ballot", ""]
    if ballot.demonstration:
        lines += [f"> {DEMONSTRATION_NOTE}", ""]
    lines += [
        f"- Winner: {ballot.winner}",
        f"- Speaker points: student {ballot.student_points:g}, bot {ballot.bot_points:g}",
        f"- Reason: {escaped(ballot.reason)}",
    ]
    if ballot.strongest is None or ballot.weakest is None:
        lines.append(f"- {NOTHING_MEASURED}")
    else:
        lines += [_mark("Strongest turn", ballot.strongest), _mark("Weakest turn", ballot.weakest)]
    lines += [
        f"- Fix: {escaped(ballot.fix)}",
        f"- Rewrite of turn {ballot.rewrite_turn}:",
        f"  - from: {escaped(ballot.rewrite_from)}",
        f"  - to: {escaped(ballot.rewrite_to)}",
    ]
    return "\n".join(lines) + "\n"


def ballot_markdown(db: Database, debate_id: int, ballot: Ballot) -> str:
    """The debate with everything judged of it, then its ballot."""
    transcript = debate_transcript(db, debate_id)  # an ArgtuiError for a debate that is not stored
    repository = DebateRepository(db)
    debate = repository.get(debate_id)
    assert debate is not None  # read just now
    student = StudentRepository(db).by_id(debate.student_id) if debate.student_id is not None else None
    level = get_level(debate.level)
    stored = {turn.position: turn for turn in DebateRecords(repository).turns(debate_id)}
    lines = [
        f"# Debate {debate_id}: ballot", "",
        f"- Claim: {escaped(debate.claim)}",
        f"- Student: {escaped(student.name) if student else 'not named'}, arguing {debate.user_side}",
        f"- Bot: arguing {transcript.bot_side}, level {level.number} ({level.name})", "",
        "## Transcript", "",
    ]
    for turn in transcript.turns:
        lines += _student_turn(turn.number, stored[turn.position], turn.dimensions, turn.inspire)
        lines += _reply(turn.number, stored.get(turn.reply_position) if turn.reply_position is not None else None)
    return "\n".join(lines) + "\n" + ballot_section(ballot)
