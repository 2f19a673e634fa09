"""The seven dimensions and the reading rules, as the seed defines them (one text for screen and prompt)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dimension:
    key: str
    label: str
    definition: str
    binary: bool = False  # rated 0 or 1 only


RUBRIC = (
    Dimension(
        "centrality", "Centrality",
        "How central the claim the critique attacks is to the position. 1: the critique attacks "
        "the main claim or something the position cannot do without; 0: something incidental.",
    ),
    Dimension(
        "strength", "Strength",
        "How far the critique refutes the part of the position it attacks (whether or not that "
        "part is central). 1: a decisive refutation; 0: no force at all.",
    ),
    Dimension(
        "correctness", "Correctness",
        "The share of the critique's content that is correct, each part weighted by how much it "
        "matters to the critique itself.",
    ),
    Dimension(
        "clarity", "Clarity",
        "Whether, read carefully, the critique's meaning can be determined. Not whether it reads "
        "well. 1: its meaning is clear; 0: one cannot tell what it claims.",
    ),
    Dimension(
        "dead_weight", "Dead weight",
        "How much of the critique does not try to advance it (padding, digressions). A failed "
        "argument is not dead weight. 0: none; 1: all of it.",
    ),
    Dimension(
        "single_issue", "Single issue",
        "Whether the critique raises only one issue (1) or several (0). Recorded on its own; it "
        "is not part of the quality scores above.",
        binary=True,
    ),
    Dimension(
        "overall", "Overall",
        "The critique's overall quality: anchor on strength × centrality, then adjust for "
        "insight, clarity, errors and irrelevant content.",
    ),
)

READING_RULES = (
    "Read the position and the critique as literally as possible; infer little.",
    "If the position is ambiguous, take the interpretation that still makes sense and is least "
    "favourable to the critique.",
    "A critique that only restates what the position's author clearly already knows gets a low strength.",
    "Do not lower a score because you had already thought of the critique yourself.",
    "Appeals to authority add no strength.",
    "A critique that only expresses disagreement without giving specific information gets low scores.",
)



def rubric_text() -> str:
    """The whole rubric as plain text: the seven definitions, then the reading rules."""
    lines = [f"- {d.key} ({d.label}): {d.definition}" for d in RUBRIC]
    lines.append("")
    lines.append("Reading rules:")
    lines.extend(f"- {rule}" for rule in READING_RULES)
    return "\n".join(lines)
