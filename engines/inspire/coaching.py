"""What the Coach says about one scored message, in words a student reads.

The Debate screen's Coach panel and the scripted debate (`argtui debate --script`) say the
same things: the student's message numbered as the student counts them, which dimensions
were measured, each derivation read in words with its verdict, what the argument base says
of each claim, how many model outputs were left out as not about the message. What a student
need not read (parser diagnostics, unreadable answers: `InspireScore.problems`) is left to the
screen's details.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from engines.inspire.explain import derivation_formula, derivation_sentence, verdict_sentence
from engines.inspire.facts import FactCheck, FactVerdict
from engines.inspire.score import DIMENSION_TITLES, LOGICAL, NOT_MEASURED, SUPPORTED, InspireScore, LogicResult
from engines.inspire.subjective import DIMENSIONS as SUBJECTIVE
from engines.judging.shown_text import NO_USABLE_ANSWER


def message_number(dialogue: Sequence[tuple[str, str]]) -> int:
    """The student's message as the student counts it: 1 + their messages before it."""
    return 1 + sum(role == "user" for role, _ in dialogue)


def dimension_title(score: InspireScore, dimension: str) -> str:
    """The dimension's title, naming the fact source the claims were checked against."""
    return score.facts.title if dimension == SUPPORTED else DIMENSION_TITLES[dimension]


def coverage_text(score: InspireScore) -> str:
    measured, every = score.coverage
    return f"{measured} of {every} dimensions measured"


def not_measured_reason(score: InspireScore, dimension: str) -> str:
    """Why a dimension has no value for this message."""
    if dimension in SUBJECTIVE:
        return "the rating could not be read"
    if dimension == LOGICAL:
        return _logic_reason(score.logic)
    return _facts_reason(score.facts)


def _logic_reason(logic: LogicResult) -> str:
    if not logic.valid:
        return "its translation into logic could not be read"
    if not logic.checks:
        return "no derivation of your message was found"
    if all(record.status == "unparsed" for record in logic.checks):
        return "the model could not formalise your reasoning"
    return "the solver could not decide in time"


def _facts_reason(facts: FactCheck) -> str:
    if not facts.valid:
        return f"{NO_USABLE_ANSWER} for its claims"
    if not facts.verdicts:
        return "no factual claim of your message was found"
    return "no claim's check could be read"


@dataclass(frozen=True)
class DerivationNote:
    """One derivation as the Coach says it: in words, the formula beside (None where it could not
    be formalised: what the model wrote is a detail), and the verdict in one sentence."""

    reading: str
    formula: str | None
    verdict: str
    status: str


def derivation_notes(logic: LogicResult) -> list[DerivationNote]:
    notes = []
    for record in logic.checks:
        formalised = record.status != "unparsed"
        quoted = f"“{record.text}”" if record.text else "One step of your argument"
        notes.append(DerivationNote(
            reading=derivation_sentence(record) if formalised else quoted,
            formula=derivation_formula(record) if formalised else None,
            verdict=verdict_sentence(record), status=record.status,
        ))
    return notes


def claim_sentence(verdict: FactVerdict, source: str) -> str:
    """What `source` says of the claim: the passages' ids where it has some; that it has nothing
    only when its search found nothing (passages found that the model judged beside the claim
    are named: the student may read them)."""
    ids = ", ".join(verdict.evidence_ids)
    if verdict.verdict == "supported":
        return f"supported by {ids}" if ids else f"supported by the {source}"
    if verdict.verdict == "contradicted":
        return f"contradicted by {ids}" if ids else f"contradicted by the {source}"
    if verdict.verdict == "no evidence":
        return f"neither supported nor contradicted by {ids}" if ids else f"the {source} has nothing on this"
    return "its check could not be read"


def left_out(score: InspireScore) -> int:
    """Model outputs not about the student's message, dropped before any verdict."""
    return score.logic.dropped + score.facts.dropped


def left_out_text(count: int) -> str:
    return f"{count} model output{'' if count == 1 else 's'} not about your message left out"


def dimension_words(score: InspireScore, dimension: str) -> str:
    value = score.dimensions[dimension]
    return f"{dimension_title(score, dimension)} {NOT_MEASURED if value is None else f'{value:.2f}'}"


def coach_lines(score: InspireScore, dialogue: Sequence[tuple[str, str]]) -> list[str]:
    """The Coach's words on one message as plain lines, for a terminal that is not the Debate screen."""
    overall = "–" if score.overall is None else f"{score.overall:.2f}"
    lines = [f"Coach on your message {message_number(dialogue)}: overall {overall} ({coverage_text(score)})",
             " · ".join(dimension_words(score, name) for name in score.dimensions)]
    lines.append(f"Weakest: {score.weakest_explanation}")
    lines += [f"{note.reading}" + (f" [{note.formula}]" if note.formula else "") + f": {note.verdict}"
              for note in derivation_notes(score.logic)]
    lines += [f"“{v.claim}”: {claim_sentence(v, score.facts.source)}" for v in score.facts.verdicts]
    if left_out(score):
        lines.append(left_out_text(left_out(score)))
    return lines
