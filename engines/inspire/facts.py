"""Factual truthfulness (S_FA) against the argument base the bot retrieves from.

A text's atomic factual claims are extracted (JSON); each claim's evidence is the
best arguments the active index (tantivy or Elasticsearch) returns for it; a claim
the index returns nothing for has no evidence, and one an evidence passage states
word for word (letter case, spacing and punctuation aside) is supported, both
with no model call; otherwise the model chooses supported / contradicted / no
evidence with the evidence in the prompt. S_FA is the share of claims supported (an unreadable verdict is not).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from engines.inspire import prompts
from engines.llm.budget import max_tokens_for
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.types import Usage
from engines.retrieval.types import Retriever

MAX_CLAIMS = 4  # per text: keeps extraction short and the verdict calls few
CLAIM_CHARS = 160
EVIDENCE_K = 3  # arguments retrieved per claim
VERDICTS = ("supported", "contradicted", "no evidence")
FactLabel = Literal["supported", "contradicted", "no evidence"]


class ClaimList(BaseModel):
    claims: list[Annotated[str, StringConstraints(min_length=1, max_length=CLAIM_CHARS)]] = Field(
        max_length=MAX_CLAIMS
    )


class Evidence(BaseModel):
    """One retrieved argument a verdict rests on."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    score: float


class FactVerdict(BaseModel):
    """One claim, its evidence and the verdict; `verdict` None when the answer was unreadable."""

    model_config = ConfigDict(frozen=True)

    claim: str
    verdict: FactLabel | None
    evidence: tuple[Evidence, ...] = ()
    distribution: dict[str, float] = {}
    raw: str = ""
    calls: int = 0

    @property
    def evidence_ids(self) -> tuple[str, ...]:
        return tuple(item.id for item in self.evidence)

    @property
    def valid(self) -> bool:
        return self.verdict is not None


class FactCheck(BaseModel):
    """The claims of a text and their verdicts; `error`/`raw` when the extraction was unreadable."""

    model_config = ConfigDict(frozen=True)

    verdicts: tuple[FactVerdict, ...] = ()
    error: str | None = None
    raw: str = ""

    @property
    def valid(self) -> bool:
        return self.error is None

    @property
    def score(self) -> float | None:
        """S_FA: the share of claims supported; None with no claim to check."""
        if not self.verdicts:
            return None
        return sum(v.verdict == "supported" for v in self.verdicts) / len(self.verdicts)


async def extract_claims(client: LLMClient, topic: str, text: str) -> tuple[list[str] | None, str, str | None, Usage]:
    """(claims or None, raw output, error, usage)."""
    [result] = await client.structured(
        [{"role": "user", "content": prompts.extraction_prompt(topic, text, MAX_CLAIMS)}], ClaimList,
        Sampling(temperature=0.0, max_tokens=max_tokens_for(ClaimList)),
    )
    if result.value is None:
        return None, result.raw, result.error, result.usage
    claims = list(dict.fromkeys(" ".join(claim.split()) for claim in result.value.claims))
    return [claim for claim in claims if claim], result.raw, None, result.usage


async def judge_claim(client: LLMClient, retriever: Retriever, claim: str) -> tuple[FactVerdict, Usage]:
    """The claim's evidence from the index, and the model's verdict on it."""
    hits = await retriever.search(claim, k=EVIDENCE_K)
    evidence = tuple(Evidence(id=hit.argument.id, text=hit.argument.text, score=hit.score) for hit in hits)
    if not evidence:
        return FactVerdict(claim=claim, verdict="no evidence"), Usage()
    if any(states_word_for_word(item.text, claim) for item in evidence):
        return FactVerdict(claim=claim, verdict="supported", evidence=evidence, distribution={"supported": 1.0}), Usage()
    choice = await client.choose(
        [{"role": "user", "content": prompts.verdict_prompt(claim, [(e.id, e.text) for e in evidence])}],
        VERDICTS, Sampling(temperature=0.0),
    )
    return FactVerdict(
        claim=claim, verdict=choice.label, evidence=evidence, distribution=choice.distribution, raw=choice.raw,
        calls=choice.usage.calls,
    ), choice.usage


def states_word_for_word(passage: str, claim: str) -> bool:
    """Whether the passage contains the claim's words in order, letter case, spacing and punctuation aside."""
    return _words(claim) in _words(passage)


def _words(text: str) -> str:
    # Framed by spaces, so containment is of whole words.
    return " " + " ".join("".join(ch if ch.isalnum() else " " for ch in text.lower()).split()) + " "


async def check_facts(client: LLMClient, retriever: Retriever, topic: str, text: str) -> tuple[FactCheck, Usage]:
    """Every claim of `text` judged against the argument base, the claims concurrently."""
    claims, raw, error, usage = await extract_claims(client, topic, text)
    if claims is None:
        return FactCheck(error=f"claims: {error}", raw=raw), usage
    judged = await asyncio.gather(*(judge_claim(client, retriever, claim) for claim in claims))
    return FactCheck(verdicts=tuple(v for v, _ in judged), raw=raw), usage + Usage.total(u for _, u in judged)


def evidence_text(verdicts: Sequence[FactVerdict]) -> list[str]:
    """Each verdict on one line with its evidence ids, as screens and reports show it."""
    return [
        f"{v.verdict or 'invalid'}: {v.claim} [{', '.join(v.evidence_ids) or 'no evidence retrieved'}]"
        for v in verdicts
    ]
