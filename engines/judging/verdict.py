"""One verdict type for every judgment, and one identity for every judge."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engines.llm.types import Usage
from store.identity import identity_digest, judge_name, options_digest

# What a verdict keeps of what was said. Every call is capped at a few thousand tokens, so a
# verdict's answers (several for runs or both orders, joined) are far below this; only a server
# that ignores the cap sends more (10 MB of digits), and the response cache holds each answer
# whole already: a verdict joining three such answers kept a 30 MB copy beside them.
RAW_MAX_CHARS = 100_000


class Verdict(BaseModel):
    """A judge's answer on one item.

    A judgment is a `label` (A/B/Tie, yes/no, a component type), a `value`
    (a score), a structured `data` object (e.g. seven rating dimensions, a
    transcript), or several of these. Output that could not be read is a
    verdict too: `invalid_reason` says why and `raw` keeps what was said, so
    every metric can count it. `raw` keeps at most its first RAW_MAX_CHARS characters,
    then says how many were left out.
    """

    model_config = ConfigDict(frozen=True)

    label: str | None = None
    value: float | None = None
    data: dict[str, Any] | None = None
    distribution: dict[str, float] = Field(default_factory=dict)
    raw: str = ""
    invalid_reason: str | None = None
    detail: str = ""  # one line for people: a rationale, how the label was reached
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0

    @field_validator("raw")
    @classmethod
    def _bounded(cls, raw: str) -> str:
        if len(raw) <= RAW_MAX_CHARS:
            return raw
        # The note counts in the bound, so a bounded text read back from the store stays as it is.
        note = f"\n… {len(raw):,} characters in all, the rest not kept here (the response cache keeps each answer)"
        return raw[: RAW_MAX_CHARS - len(note)] + note

    @property
    def valid(self) -> bool:
        return self.invalid_reason is None

    @classmethod
    def invalid(cls, reason: str, raw: str = "", usage: Usage | None = None, **values: Any) -> "Verdict":
        return cls(invalid_reason=reason, raw=raw, usage=usage or Usage(), **values)


class JudgeId(BaseModel):
    """Who judged: backend profile, model, the task's variant (prompting strategy, method, mode)
    and the digests of what else changes its answers: the options, the prompt templates and the
    sampling its profile adds to every call ("" for none).

    `name` is the one short form every table, report, screen and export uses; the store keeps
    the fields in columns of their own, so a name is never read back into its parts.
    """

    model_config = ConfigDict(frozen=True)

    profile: str
    model: str
    variant: str
    options: str = ""  # options_digest(...)
    prompts: str = ""  # engines.judging.digest.prompts_digest(...)
    sampling: str = ""  # engines.judging.digest.sampling_digest(...)

    @property
    def digest(self) -> str:
        """What the name carries after "#" ("" for a judge with nothing digested)."""
        return identity_digest(self.options, self.prompts, self.sampling)

    @property
    def name(self) -> str:
        return judge_name(self.profile, self.model, self.variant, self.options, self.prompts, self.sampling)

    @classmethod
    def of(
        cls, profile: str, model: str, variant: str, options: dict[str, Any] | None = None, *,
        prompts: str = "", sampling: str = "",
    ) -> "JudgeId":
        return cls(profile=profile, model=model, variant=variant, options=options_digest(options or {}),
                   prompts=prompts, sampling=sampling)
