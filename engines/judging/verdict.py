"""One verdict type for every judgment, and one identity for every judge."""

from __future__ import annotations

import re
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engines.llm.types import Usage
from store.identity import identity_digest, judge_name, options_digest

PANEL = "panel"
_CODE = re.compile(r"[^/ ]*")  # a variant's code: what comes before its qualifier ("few" of "few/swap@t0")

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
    and the digests of what else changes its answers: the options, the requests it sends and the
    sampling its profile adds to every call ("" for none).

    `name` is the one short form every table, report, screen and export uses; the store keeps
    the fields in columns of their own, so a name is never read back into its parts.
    """

    model_config = ConfigDict(frozen=True)

    profile: str
    model: str
    variant: str
    options: str = ""  # options_digest(...)
    prompts: str = ""  # engines.judging.identity.requests_digest(...): the requests the judge sends
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

    @property
    def is_panel(self) -> bool:
        """Made by `of_panel`: a judge that asks nothing itself."""
        return self.variant.startswith(f"{PANEL}(")

    @classmethod
    def of_panel(cls, members: Sequence["JudgeId"]) -> "JudgeId":
        """The judge made of `members` (engines/judging/panel.py), in any order: their profiles and
        models, their variants' codes under one qualifier ("panel(few+zero)/swap@t0"; each code with
        its profile where the profiles differ), and a digest of every member's whole identity, so a
        change of any member is another panel. A panel's name is read back into no members: the
        panel's verdicts name them."""
        ordered = sorted(members, key=lambda member: member.name)
        if len(ordered) < 2 or len({member.name for member in ordered}) < len(ordered):
            raise ValueError(f"a panel needs two or more different judges, not {[m.name for m in members]}")
        profiles = list(dict.fromkeys(member.profile for member in ordered))
        codes = [_CODE.match(member.variant).group() for member in ordered]
        qualifiers = {member.variant[len(code):] for member, code in zip(ordered, codes)}
        parts = codes if len(qualifiers) == 1 else [member.variant for member in ordered]
        if len(profiles) > 1:
            parts = [f"{member.profile}:{part}" for member, part in zip(ordered, parts)]
        qualifier = qualifiers.pop() if len(qualifiers) == 1 else ""
        return cls(
            profile="+".join(profiles), model="+".join(dict.fromkeys(member.model for member in ordered)),
            variant=f"{PANEL}({'+'.join(parts)}){qualifier}",
            options=options_digest({PANEL: [member.model_dump() for member in ordered]}),
        )
