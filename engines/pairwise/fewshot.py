"""Few-shot examples per topic and dimension, by the seed's rule (§5).

Among the topic's expert comparisons for the dimension, with the published
expert scores of that dimension:

* the "A" example is the pair with the largest score(A) - score(B) > 0;
* the "B" example is the pair with the largest score(B) - score(A) > 0;
* the "Tie" example is, among the pairs the experts labelled Tie, the one with
  the smallest |score(A) - score(B)|.

The seed restricts only the Tie example to the experts' label. Read literally
(`literal`), the largest gap can fall on a pair the experts labelled the other
way (on the bundled data, 5 of the 60 topic and dimension prompts), so the
prompt would teach "A" with a pair the experts judged B. The default
(`labelled`) therefore looks for the A example among the expert-A pairs and for
the B example among the expert-B pairs, as for Tie.

Equal gaps keep the first pair in file order, so the choice is deterministic.
The examples stay the same for every comparison of that topic and dimension.
"""

from __future__ import annotations

from typing import Callable, Literal, Sequence

from engines.datasets.webis import ArgumentKey, Comparison, WebisCorpus
from engines.errors import ArgtuiError
from engines.pairwise.prompts import ExamplePair, FewShotExamples

FewShotRule = Literal["labelled", "literal"]
FEWSHOT_RULES: tuple[FewShotRule, ...] = ("labelled", "literal")


class NoFewShotExample(ArgtuiError):
    """A topic lacks a pair for one of the three example labels."""


def select_example_comparisons(
    comparisons: Sequence[Comparison], score: Callable[[ArgumentKey], float], rule: FewShotRule = "labelled"
) -> tuple[Comparison, Comparison, Comparison]:
    """(A example, B example, Tie example) among one topic's comparisons of one dimension."""
    if rule not in FEWSHOT_RULES:
        raise ValueError(f"unknown few-shot rule {rule!r} (expected one of {FEWSHOT_RULES})")
    best_a = best_b = best_tie = None
    best_a_gap = best_b_gap = 0.0
    best_tie_gap = float("inf")
    for comparison in comparisons:
        gap = score(comparison.a) - score(comparison.b)
        if gap > best_a_gap and (rule == "literal" or comparison.label == "A"):
            best_a, best_a_gap = comparison, gap
        if -gap > best_b_gap and (rule == "literal" or comparison.label == "B"):
            best_b, best_b_gap = comparison, -gap
        if comparison.label == "Tie" and abs(gap) < best_tie_gap:
            best_tie, best_tie_gap = comparison, abs(gap)
    missing = [name for name, found in (("A", best_a), ("B", best_b), ("Tie", best_tie)) if found is None]
    if missing:
        topics = sorted({c.topic_id for c in comparisons})
        raise NoFewShotExample(
            f"topic {topics}: no comparison qualifies as the few-shot example for {', '.join(missing)}"
        )
    return best_a, best_b, best_tie  # type: ignore[return-value]


def example_comparisons(
    corpus: WebisCorpus, topic_id: int, dimension: str, rule: FewShotRule = "labelled"
) -> tuple[Comparison, Comparison, Comparison]:
    """The (A, B, Tie) example comparisons of one topic and dimension."""
    comparisons = [c for c in corpus.comparisons[dimension] if c.topic_id == topic_id]

    def score(key: ArgumentKey) -> float:
        scores = corpus.argument(topic_id, key).scores
        if scores is None:
            raise NoFewShotExample(f"topic {topic_id}: argument {key} has no expert score")
        return scores[dimension]

    return select_example_comparisons(comparisons, score, rule)


def few_shot_examples(
    corpus: WebisCorpus, topic_id: int, dimension: str, rule: FewShotRule = "labelled"
) -> FewShotExamples:
    """The three examples for one topic and dimension, with the argument texts."""

    def pair(comparison: Comparison) -> ExamplePair:
        return ExamplePair(
            corpus.argument(topic_id, comparison.a).text, corpus.argument(topic_id, comparison.b).text
        )

    a_wins, b_wins, tie = example_comparisons(corpus, topic_id, dimension, rule)
    return FewShotExamples(pair(a_wins), pair(b_wins), pair(tie))
