"""The prompt that has a model translate an argument into derivations in the formula syntax of
`engines.inspire.logic`. The instruction comes first and the argument last (prefix caching);
the argument goes in through `quoted` (`engines.judging.quoting.inline`), on one line, the
prompt's labels in it defused. The prompt's worked examples are data (`EXAMPLES`), rendered into
its text, so that an answer echoing an example can be recognised (`engines.inspire.logic.is_prompt_example`)."""

from __future__ import annotations

import json
from typing import NamedTuple

from engines.inspire.logic_schema import Derivation, LogicTranslation
from engines.judging.quoting import inline


class LogicExample(NamedTuple):
    argument: str
    derivation: Derivation


EXAMPLES = (
    LogicExample(
        "Every city that bans cars has cleaner air. Paris bans cars, so Paris will have cleaner air.",
        Derivation(
            text="Every city that bans cars has cleaner air. Paris bans cars, so Paris will have cleaner air.",
            premises=["forall x. City(x) & BansCars(x) -> CleanerAir(x)", "City(paris)", "BansCars(paris)"],
            conclusion="CleanerAir(paris)",
        ),
    ),
    LogicExample(
        "If taxes rise, prices rise. Prices have risen, so taxes must have risen.",
        Derivation(
            text="If taxes rise, prices rise. Prices have risen, so taxes must have risen.",
            premises=["TaxesRise -> PricesRise", "PricesRise"],
            conclusion="TaxesRise",
        ),
    ),
)


def _example(number: int, example: LogicExample) -> str:
    answer = json.dumps(LogicTranslation(derivations=[example.derivation]).model_dump(), ensure_ascii=False)
    return f"Example {number}. Argument: \"{example.argument}\"\n{answer}"


INSTRUCTION = """Translate the reasoning of the argument below into first-order logic. Write one derivation for each step of the argument: the sentence(s) of the step ("text"), the premises it states or relies on, and the conclusion it draws. Translate what the argument says, even when its reasoning is flawed: do not add premises it does not state, and do not repair its conclusion.

Formula syntax:
- A predicate is a capitalised name with its arguments: Mortal(socrates), Loves(anna, bob). A predicate without arguments is a statement: Raining.
- Constants are lower-case names: socrates, paris. Variables are lower-case names bound by a quantifier: forall x. Human(x) -> Mortal(x), exists y. Ban(y).
- Connectives, from tightest to loosest: ~ (not), & (and), | (or), -> (implies), <-> (if and only if). Use parentheses when in doubt.
- A quantifier reaches as far right as possible: forall x. A(x) -> B(x) means forall x. (A(x) -> B(x)).
- Use each predicate with the same number of arguments everywhere in a derivation."""

LOGIC_PROMPT = INSTRUCTION + "\n\n" + "\n\n".join(_example(n, e) for n, e in enumerate(EXAMPLES, start=1))

ARGUMENT_TEMPLATE = "\n\nDebate topic: {topic}\nArgument: {argument}"
TEMPLATE_LABELS = ("Debate topic", "Argument", "Formula syntax")  # what the prompt marks its parts with


def quoted(text: str) -> str:
    """A text as the prompt takes it: on one line, its labels in it defused."""
    return inline(text, labels=TEMPLATE_LABELS)


def logic_prompt(topic: str, argument: str) -> str:
    return LOGIC_PROMPT + ARGUMENT_TEMPLATE.format(topic=quoted(topic), argument=quoted(argument))


def logic_messages(topic: str, argument: str) -> list[dict[str, str]]:
    """The translation request's messages: every argument's share the instruction and examples."""
    return [{"role": "user", "content": logic_prompt(topic, argument)}]
