"""Checks a bot reply must pass before it is shown: it fits the word limit, does not repeat
the instructions it was written from, and does not argue the student's side.

The text checks are pure functions; the stance check is one constrained yes/no of the
same backend. A rejected draft is retried with the reason added to its prompt
(`with_reason`).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Iterable, Literal

from engines.debate import prompts
from engines.debate.messages import count_words
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling

WORD_LIMIT = 60
ECHO_WORDS = 6  # this many words in a row from the instructions make an echo
RejectionKind = Literal["invalid", "empty", "length", "echo", "stance"]

_WORD = re.compile(r"[a-z0-9_']+")


@dataclass(frozen=True)
class Rejection:
    kind: RejectionKind
    reason: str  # completes "the answer was rejected because …"


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def _literal_parts(template: str) -> Iterable[str]:
    """The template's own text: what fills its placeholders (the dialogue, the arguments) may be reused."""
    return (literal for literal, _, _, _ in string.Formatter().parse(template) if literal)


def echoed_fragment(text: str, templates: Iterable[str], run: int = ECHO_WORDS) -> str | None:
    """A field name (snake_case) of the templates that `text` uses, else its first `run` words
    in a row that the templates' own text has too; None when it repeats none of them."""
    words = _words(text)
    grams: set[tuple[str, ...]] = set()
    fields: set[str] = set()
    for template in templates:
        for literal in _literal_parts(template):
            literal_words = _words(literal)
            fields.update(word for word in literal_words if "_" in word.strip("_"))
            grams.update(tuple(literal_words[i : i + run]) for i in range(len(literal_words) - run + 1))
    for word in words:
        if word in fields:
            return word
    for i in range(len(words) - run + 1):
        if tuple(words[i : i + run]) in grams:
            return " ".join(words[i : i + run])
    return None


def check_text(
    text: str, templates: Iterable[str], limit: int = WORD_LIMIT, *, complete: bool = True
) -> Rejection | None:
    """Why the draft cannot be shown as it is (pure), or None. An incomplete draft (the
    model was still writing at its token limit) is too long whatever its length so far."""
    words = count_words(text)
    if words == 0:
        return Rejection("empty", "it was empty")
    if words > limit or not complete:
        return Rejection("length", f"it {'has' if complete else 'went on past'} {words} words and the limit is {limit}")
    fragment = echoed_fragment(text, templates)
    if fragment is not None:
        return Rejection("echo", f'it repeats the instructions ("{fragment}") instead of answering')
    return None


def stance_words(side: str) -> str:
    return "in favour of" if side == "pro" else "against"


async def check_stance(client: LLMClient, claim: str, user_side: str, text: str) -> Rejection | None:
    """A rejection when the backend says the reply argues the student's side of the claim.

    The question names the student's side, so a model that cannot tell stances (it answers
    "no" to nearly everything) lets replies through rather than rejecting all of them; an
    answer that is not a label lets the reply through too.
    """
    prompt = prompts.STANCE_CHECK.format(
        claim=prompts.quoted(claim), reply=prompts.quoted(text), stance=stance_words(user_side)
    )
    choice = await client.choose([{"role": "user", "content": prompt}], ("yes", "no"), Sampling(temperature=0.0))
    if choice.label == "yes":
        return Rejection("stance", f"it argues {stance_words(user_side)} the topic, which is your opponent's side")
    return None


def with_reason(prompt: str, rejection: Rejection | None) -> str:
    """The prompt of a retry: the original one and why the previous answer was rejected."""
    if rejection is None:
        return prompt
    return f"{prompt}\n{prompts.RETRY_NOTE.format(reason=prompts.quoted(rejection.reason))}"
