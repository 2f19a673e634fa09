"""Checks a bot reply must pass before it is shown: it fits the word limit, does not repeat
the instructions it was written from nor loop, and does not argue the student's side.

The text checks are pure functions; the stance check is one constrained yes/no of the
same backend. A rejected draft is retried with the reason added to its prompt
(`with_reason`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal

from engines.debate import prompts
from engines.debate.messages import count_words
from engines.judging.shown_text import unmeant, without_labels
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling

WORD_LIMIT = 60
RejectionKind = Literal["invalid", "empty", "length", "unmeant", "stance"]


@dataclass(frozen=True)
class Rejection:
    kind: RejectionKind
    reason: str  # completes "the answer was rejected because …"


def check_text(
    text: str, templates: Iterable[str], limit: int = WORD_LIMIT, *, complete: bool = True
) -> Rejection | None:
    """Why the draft cannot be shown as it is (pure), or None. An incomplete draft (the
    model was still writing at its token limit) is too long whatever its length so far; text the
    model did not mean (its instructions read back, a loop, a placeholder) is found by the one
    check of shown text, its `templates` being the prompt."""
    words = count_words(text)
    if words == 0:
        return Rejection("empty", "it was empty")
    if words > limit or not complete:
        return Rejection("length", f"it {'has' if complete else 'went on past'} {words} words and the limit is {limit}")
    why = unmeant(text, "\n".join(templates))
    if why is not None:
        return Rejection("unmeant", why)
    return None


def unlabelled(text: str, templates: Iterable[str]) -> str:
    """A reply without the label a model may write before it: one of its prompt's (`templates`)
    or of a reply's own ("My response:")."""
    return without_labels(text, "\n".join(templates), prompts.REPLY_LABELS)


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
