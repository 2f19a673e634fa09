"""The InspireScore prompts. Shared instructions come first and the text under judgment
last, so a backend's prefix cache serves every text of a debate; data goes in through
`quoted` (`engines.judging.quoting.inline`), one line each, the templates' labels in it defused."""

from __future__ import annotations

from typing import Sequence

from engines.judging.quoting import inline

CONTEXT_MESSAGES = 4  # messages before the judged text shown as context
# What the templates below mark their parts with.
TEMPLATE_LABELS = ("Debate topic", "Earlier in the debate", "Message to rate", "Message", "Student", "Bot",
                   "Evidence", "Claim", "Answer")

SUBJECTIVE = """You rate one message of a debate on four dimensions, each from 1 (poor) to 5 (excellent):
- emotional_appeal: does it make the listener feel agreement or empathy?
- clarity: is it expressed clearly and concisely?
- arrangement: are its points in a sensible order, each building on the last?
- relevance: does it stay on the debate topic?
For each dimension give the score and one short sentence saying why.

Debate topic: {topic}
{context}
Message to rate: {text}"""

FACT_EXTRACTION = """List the factual claims in the message below: each one short, self-contained statement about the world that could be checked (numbers, events, effects, what studies found). Leave out opinions, values, proposals and questions. List at most {limit}; an empty list when there are none.

Debate topic: {topic}
Message: {text}"""

FACT_VERDICT = """Decide whether the evidence supports the claim.
Answer "supported" if an evidence passage states or clearly implies the claim, "contradicted" if one states the opposite, and "no evidence" if none of them is about the claim.

Evidence:
{evidence}
Claim: {claim}
Answer:"""


def quoted(text: str) -> str:
    """A text as the templates take it: on one line, their labels in it defused."""
    return inline(text, labels=TEMPLATE_LABELS)


def context_lines(dialogue: Sequence[tuple[str, str]]) -> str:
    """The last messages before the judged one, one line each ("" when there are none)."""
    shown = dialogue[-CONTEXT_MESSAGES:]
    return "\n".join(f"{'Student' if role == 'user' else 'Bot'}: {quoted(text)}" for role, text in shown)


def subjective_prompt(topic: str, text: str, dialogue: Sequence[tuple[str, str]]) -> str:
    context = context_lines(dialogue)
    return SUBJECTIVE.format(
        topic=quoted(topic), context=f"Earlier in the debate:\n{context}\n" if context else "", text=quoted(text)
    )


def extraction_prompt(topic: str, text: str, limit: int) -> str:
    return FACT_EXTRACTION.format(topic=quoted(topic), text=quoted(text), limit=limit)


def verdict_prompt(claim: str, evidence: Sequence[tuple[str, str]]) -> str:
    """`evidence` as (argument id, text), each on its own numbered line."""
    lines = "\n".join(f"[{number}] {quoted(text)}" for number, (_, text) in enumerate(evidence, start=1))
    return FACT_VERDICT.format(evidence=lines, claim=quoted(claim))
