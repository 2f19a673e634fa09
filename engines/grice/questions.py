"""The four Grice-maxim questions of Touché RAD Sub-Task 2.

The question texts are those of the organizers' annotation guideline
(`annotation-dimensions.json`, dimensions Quantity, Quality, Relation and
Manner). That file carries no license, so only the four questions are kept
here, as product constants; its examples are not copied (the built-in example
pool in `data/builtin_pool.json` is written for this product).
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.datasets.rad import GRICE_METRICS

METRICS = GRICE_METRICS  # quantity, quality, relation, manner: the order of the official run file


@dataclass(frozen=True)
class GriceQuestion:
    metric: str  # lower case key, as in the official labels file
    dimension: str  # the dimension name, as in the official run file and the guideline
    maxim: str  # what the maxim asks of a reply, for people reading results
    question: str


QUESTIONS: dict[str, GriceQuestion] = {
    q.metric: q
    for q in (
        GriceQuestion(
            "quantity", "Quantity", "informative",
            "Does the marked response contain at least one (attack or defense) argument, "
            "and at most one of each type of defense and attack?",
        ),
        GriceQuestion(
            "quality", "Quality", "truthful",
            "Can the marked response be deduced from the retrieved arguments?",
        ),
        GriceQuestion(
            "relation", "Relation", "relevant",
            "Is the marked response coherent with the conversation and does it express "
            "a contrary stance to the user?",
        ),
        GriceQuestion(
            "manner", "Manner", "clear",
            "Is the marked response clear and precise?",
        ),
    )
}
