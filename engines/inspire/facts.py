"""Support by a reference base (S_FA in the seed's terms): the text's factual claims
checked against the argument base the bot retrieves from, or a fact source apart from it
(`engines.inspire.fact_sources`).

A text's atomic factual claims are extracted (JSON; `ExtractedClaims` takes off numbering and prompt
labels, keeps the same claim once, and refuses a claim the model did not mean, which is asked
again); a claim not grounded in the text (an echo of the prompt or of the topic), or negated
where the text is not or the other way round, is dropped before any verdict. Each claim's evidence is
the best passages the source returns for it, leaving out the arguments the judged turn
retrieved or quoted (`exclude`) and every passage the text itself quotes: a bot reply that
repeats an argument cannot be its own evidence. A claim with no evidence left has none; a
claim that a whole sentence of a passage states word for word (letter case, spacing and
punctuation aside, so "There is no evidence that X" never states "X") is supported, both
with no model call; otherwise the model chooses supported / contradicted / no evidence with
the evidence in the prompt. S_FA is the share of claims supported (an unreadable verdict is not).
"""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Collection, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from engines.sentences import sentence_count, sentence_spans
from engines.inspire import prompts
from engines.inspire.grounding import content_stems, grounded
from engines.judging.shown_text import NO_USABLE_ANSWER, unmeant, without_labels
from engines.llm.budget import max_tokens_for, with_at_most
from engines.llm.client import LLMClient, Message
from engines.llm.profile import Sampling
from engines.llm.reasking import attempts, structured_until_valid
from engines.llm.types import Usage
from engines.retrieval.types import Retriever

MAX_CLAIMS = 4  # per text: keeps extraction short and the verdict calls few
CLAIM_CHARS = 160
EVIDENCE_K = 3  # arguments retrieved per claim
# A passage the text repeats a sentence of (this many words or more) is quoted, not evidence;
# shorter sentences ("Yes.", "That is wrong.") are repeated by chance.
QUOTE_MIN_WORDS = 6
QUOTE_MARGIN = 3  # passages retrieved beyond k, so that dropping quoted ones still leaves k
ARGUMENT_BASE = "argument base"  # `FactCheck.source` of checks against the debate's argument base
VERDICTS = ("supported", "contradicted", "no evidence")
FactLabel = Literal["supported", "contradicted", "no evidence"]
EXTRACTION_ATTEMPTS = 2  # an extraction with a claim the model did not mean is asked once more, sampled
# A negation, in a claim or in the part of the text it was taken from; an answer's "No," is none.
NEGATION = re.compile(
    r"\b(?:not|never|none|nobody|nothing|neither|nor|cannot)\b|\bno\b(?!\s*[,.!;:])|n[’']t\b", re.IGNORECASE
)
_CLAUSE_BREAK = re.compile(r"[,;:]|\b(?:but|while|whereas|although|though|yet)\b", re.IGNORECASE)


class ClaimList(BaseModel):
    claims: list[Annotated[str, StringConstraints(min_length=1, max_length=CLAIM_CHARS)]] = Field(
        max_length=MAX_CLAIMS
    )


# The claims of a `ClaimList` answer as the Coach takes them: each without what the model put
# before it (a list's numbering, a label of the prompt: "1.1.1.1:", "Debate topic:"), the same
# claim (letter case and punctuation aside) once; a claim the model did not mean (`unmeant`: a
# placeholder, a disclaimer, the prompt's words) makes the answer invalid. (A comment, not a
# docstring: a docstring would be sent as the schema's description.)
class ExtractedClaims(ClaimList):
    @field_validator("claims")
    @classmethod
    def _meant(cls, claims: list[str]) -> list[str]:
        kept: dict[str, str] = {}
        for claim in claims:
            text = " ".join(without_labels(claim, prompts.FACT_EXTRACTION, prompts.TEMPLATE_LABELS).split())
            problem = unmeant(text, prompts.FACT_EXTRACTION)
            if problem:
                raise ValueError(f"the claim {claim!r} is not a meant answer: {problem}")
            kept.setdefault(plain_words(text), text)
        return list(kept.values())


def claims_schema(text: str) -> type[ExtractedClaims]:
    """The answer schema for the claims of `text`: one per sentence, up to `MAX_CLAIMS`. A small
    model fills what a schema allows: the embedded one listed four claims for a one-sentence
    message (the same one again, or digits), and was asked again."""
    return with_at_most(ExtractedClaims, "claims", claim_limit(text))


def claim_limit(text: str) -> int:
    return min(MAX_CLAIMS, sentence_count(text))


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
    """The claims of a text and their verdicts; `error`/`raw` when the extraction was unreadable.
    Checks stored before `source` and `dropped` were kept read as against the argument base, none dropped."""

    model_config = ConfigDict(frozen=True)

    verdicts: tuple[FactVerdict, ...] = ()
    error: str | None = None
    raw: str = ""
    source: str = ARGUMENT_BASE  # what the claims were checked against
    dropped: int = 0  # extracted claims not grounded in the text, dropped before any verdict

    @property
    def valid(self) -> bool:
        return self.error is None

    @property
    def title(self) -> str:
        """The dimension as it measures: "supported by the argument base" or "… by the fact source …"."""
        return f"supported by the {self.source}"

    @property
    def score(self) -> float | None:
        """S_FA: the share of claims supported; None with no claim to check."""
        if not self.verdicts:
            return None
        return sum(v.verdict == "supported" for v in self.verdicts) / len(self.verdicts)


def extraction_messages(topic: str, text: str, limit: int) -> list[Message]:
    return [{"role": "user", "content": prompts.extraction_prompt(topic, text, limit)}]


async def extract_claims(client: LLMClient, topic: str, text: str) -> tuple[list[str] | None, str, str | None, Usage]:
    """(claims or None, raw output, error, usage); an answer `ExtractedClaims` refuses is asked again,
    and when it stays so the error says `NO_USABLE_ANSWER`."""
    schema = claims_schema(text)
    asked = await structured_until_valid(
        client, extraction_messages(topic, text, claim_limit(text)), schema,
        attempts(Sampling(temperature=0.0, max_tokens=max_tokens_for(schema)), EXTRACTION_ATTEMPTS),
    )
    result = asked.result
    if result.value is None:
        return None, result.raw, f"{NO_USABLE_ANSWER} after {asked.attempts} attempts: {result.error}", asked.usage
    return result.value.claims, result.raw, None, asked.usage


async def judge_claim(
    client: LLMClient, retriever: Retriever, claim: str, exclude: Collection[str] = (), quoted_by: str = ""
) -> tuple[FactVerdict, Usage]:
    """The claim's evidence from the source, and the model's verdict on it. Arguments with ids in
    `exclude` and passages `quoted_by` (the judged text) quotes are never its evidence."""
    hits = await retriever.search(claim, k=EVIDENCE_K + (QUOTE_MARGIN if quoted_by else 0), exclude=exclude)
    evidence = tuple(
        Evidence(id=hit.argument.id, text=hit.argument.text, score=hit.score)
        for hit in hits if not (quoted_by and quotes(quoted_by, hit.argument.text))
    )[:EVIDENCE_K]
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


def sentences(passage: str) -> list[str]:
    """The passage's sentences (`engines.sentences`, as the component segmentation splits them)."""
    return [passage[start:end] for start, end in sentence_spans(passage)]


def states_word_for_word(passage: str, claim: str) -> bool:
    """Whether a whole sentence of the passage is the claim, letter case, spacing and punctuation
    aside: words inside a longer sentence may be negated or qualified by the rest of it."""
    words = plain_words(claim)
    return words.strip() != "" and any(plain_words(sentence) == words for sentence in sentences(passage))


def quotes(text: str, passage: str) -> bool:
    """Whether `text` repeats a sentence of the passage of `QUOTE_MIN_WORDS` words or more."""
    said = plain_words(text)
    return any(
        len(words.split()) >= QUOTE_MIN_WORDS and words in said
        for words in map(plain_words, sentences(passage))
    )


def negated(text: str) -> bool:
    return NEGATION.search(text) is not None


def said_as_in(claim: str, text: str) -> bool:
    """Whether `text` says the claim, not its opposite: the claim is negated as the clause of the
    text that shares the most content words with it is (of equally close clauses, any one).
    Content words leave "not" aside (`grounded`), so without this "Uniforms are not a solution"
    would be credited to a text that says they are one."""
    stems = content_stems(claim)
    clauses = [clause for sentence in sentences(text) for clause in _CLAUSE_BREAK.split(sentence)] or [text]
    shared = [len(stems & content_stems(clause)) for clause in clauses]
    closest = [clause for clause, count in zip(clauses, shared) if count == max(shared)]
    return any(negated(clause) == negated(claim) for clause in closest)


def plain_words(text: str) -> str:
    """The text's words, lower case, punctuation dropped: two texts with the same words compare
    equal. Framed by spaces, so containment is of whole words."""
    return " " + " ".join("".join(ch if ch.isalnum() else " " for ch in text.lower()).split()) + " "


async def check_facts(
    client: LLMClient, retriever: Retriever, topic: str, text: str, exclude: Collection[str] = (),
    source: str = ARGUMENT_BASE,
) -> tuple[FactCheck, Usage]:
    """Every claim of `text` grounded in it, judged against `retriever` (named `source`), the
    claims concurrently; the arguments in `exclude` and the passages the text quotes are no evidence."""
    claims, raw, error, usage = await extract_claims(client, topic, text)
    if claims is None:
        return FactCheck(error=f"claims: {error}", raw=raw, source=source), usage
    kept = [claim for claim in claims if grounded(claim, text) and said_as_in(claim, text)]
    judged = await asyncio.gather(*(judge_claim(client, retriever, claim, exclude, text) for claim in kept))
    check = FactCheck(verdicts=tuple(v for v, _ in judged), raw=raw, source=source, dropped=len(claims) - len(kept))
    return check, usage + Usage.total(u for _, u in judged)


def evidence_text(verdicts: Sequence[FactVerdict]) -> list[str]:
    """Each verdict on one line with its evidence ids, as screens and reports show it."""
    return [
        f"{v.verdict or 'invalid'}: {v.claim} [{', '.join(v.evidence_ids) or 'no evidence retrieved'}]"
        for v in verdicts
    ]
