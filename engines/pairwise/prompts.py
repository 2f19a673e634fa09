"""The zero-shot, few-shot and chain-of-thought prompts, verbatim from the seed's appendix.

Each prompt is a system message (instruction, examples, criteria: the same for
every pair of a topic and dimension) followed by a user message with the pair,
so a server's prefix cache reuses the system part across pairs. The templates
mark each argument by the line it starts ("Argument B: ..."), so every argument
goes in on one line (`quoted`): no text can start a line of its own, nor pose as one of
the templates' labels within its line.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from engines.judging.quoting import inline

LABELS = ("A", "B", "Tie")
Strategy = Literal["zero", "few", "cot"]
STRATEGIES: tuple[Strategy, ...] = ("zero", "few", "cot")
STRATEGY_TITLES = {"zero": "zero-shot", "few": "few-shot", "cot": "chain-of-thought"}

DIM_ADVERB = {"logical": "logically", "rhetorical": "rhetorically", "dialectical": "dialectically"}

ZERO_SHOT_SYSTEM = (
    "You are given two arguments: Argument A and Argument B. Decide which one is {dim_adverb} "
    "stronger: Reply with only one of the following options: A, B, or Tie."
)

FEW_SHOT_SYSTEM = (
    ZERO_SHOT_SYSTEM
    + "\n\nExamples:\n"
    "Argument A: {ex_A_argA}\n"
    "Argument B: {ex_A_argB}\n"
    "A\n"
    "\n"
    "Argument A: {ex_B_argA}\n"
    "Argument B: {ex_B_argB}\n"
    "B\n"
    "\n"
    "Argument A: {ex_tie_argA}\n"
    "Argument B: {ex_tie_argB}\n"
    "tie"
)

CHAIN_OF_THOUGHT_SYSTEM = (
    "You are given two arguments: Argument A and Argument B.\n"
    "Decide which one is {dim_adverb} stronger considering these criteria:\n"
    "{dim_criterias}\n"
    "Let\u2019s think step by step and reply with only one of the following options: A, B, or Tie."
)

USER = "Argument A: {a}\nArgument B: {b}"
TEMPLATE_LABELS = ("Argument A", "Argument B", "Examples")  # what the templates mark their parts with

DIM_CRITERIAS = {
    "logical": (
        "- which is more acceptable? A premise of an argument is acceptable if it is rationally "
        "worthy of being believed to be true.\n"
        "- which is more relevant to a conclusion? A premise of an argument is relevant if it "
        "contributes to the acceptance or rejection of the argument\u2019s conclusion.\n"
        "- which is more sufficient to justify a conclusion? An argument\u2019s premises are "
        "sufficient if, together, they give enough support to make it rational to draw its conclusion."
    ),
    "dialectical": (
        "- which would be acceptable to the audience? Argumentation is acceptable if the target "
        "audience accepts both the consideration of the stated arguments for the issue and the way "
        "they are stated.\n"
        "- which contributes more to constructive dialogue? Argumentation is relevant if it "
        "contributes to the issue\u2019s resolution, i.e., if it states arguments or other "
        "information that help to arrive at an ultimate conclusion.\n"
        "- which better anticipates or refutes counterarguments? Argumentation is sufficient if it "
        "adequately rebuts those counterarguments to it that can be anticipated."
    ),
    "rhetorical": (
        "- which appears more authorative/trust worthy? Argumentation creates credibility if it "
        "conveys arguments and similar in a way that makes the author worthy of credence.\n"
        "- which makes a stronger emotional appeal? Argumentation makes a successful emotional "
        "appeal if it creates emotions in a way that makes the target audience more open to the "
        "author\u2019s arguments.\n"
        "- which has a clearer style? Argumentation has a clear style if it uses correct and widely "
        "unambiguous language as well as if it avoids unnecessary complexity and deviation from the "
        "issue.\n"
        "- which has a more appropiate style? Argumentation has an appropriate style if the used "
        "language supports the creation of credibility and emotions as well as if it is "
        "proportional to the issue.\n"
        "- Which is better arranged? Argumentation is arranged properly if it presents the issue, "
        "the arguments, and its conclusion in the right order."
    ),
}


@dataclass(frozen=True)
class ExamplePair:
    a: str
    b: str


@dataclass(frozen=True)
class FewShotExamples:
    """One clear-cut example per label for a topic and dimension (see fewshot.py)."""

    a_wins: ExamplePair
    b_wins: ExamplePair
    tie: ExamplePair


@lru_cache(maxsize=4096)  # an argument is in many pairs: a batch run quoted each one dozens of times
def quoted(text: str) -> str:
    """An argument as the templates take it: on one line, their labels in it defused."""
    return inline(text, labels=TEMPLATE_LABELS)


def system_prompt(strategy: Strategy, dimension: str, examples: FewShotExamples | None = None) -> str:
    adverb = DIM_ADVERB[dimension]
    if strategy == "zero":
        return ZERO_SHOT_SYSTEM.format(dim_adverb=adverb)
    if strategy == "cot":
        return CHAIN_OF_THOUGHT_SYSTEM.format(dim_adverb=adverb, dim_criterias=DIM_CRITERIAS[dimension])
    if strategy == "few":
        if examples is None:
            raise ValueError("the few-shot prompt needs examples for the topic and dimension")
        return FEW_SHOT_SYSTEM.format(
            dim_adverb=adverb,
            ex_A_argA=quoted(examples.a_wins.a), ex_A_argB=quoted(examples.a_wins.b),
            ex_B_argA=quoted(examples.b_wins.a), ex_B_argB=quoted(examples.b_wins.b),
            ex_tie_argA=quoted(examples.tie.a), ex_tie_argB=quoted(examples.tie.b),
        )
    raise ValueError(f"unknown prompting strategy {strategy!r} (expected one of {STRATEGIES})")


def messages(
    strategy: Strategy, dimension: str, a: str, b: str, examples: FewShotExamples | None = None
) -> list[dict[str, str]]:
    """The chat messages asking which of arguments a and b is stronger on the dimension."""
    return [
        {"role": "system", "content": system_prompt(strategy, dimension, examples)},
        {"role": "user", "content": USER.format(a=quoted(a), b=quoted(b))},
    ]
