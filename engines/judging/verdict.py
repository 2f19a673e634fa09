"""One verdict type for every judgment, and one identity for every judge."""

from __future__ import annotations

from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engines.llm.types import Usage
from store.identity import identity_digest, judge_name, options_digest

PANEL = "panel"

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


class JudgeVariant(BaseModel):
    """A judge's variant in its parts, as `JudgeId.variant`'s text spells them: the task's variant
    `code` ("few", "ZSL", "mad", "panel(few+zero)"), its `qualifier` (the mode or seed that makes
    judgments of one code comparable: "runs3@t1", "seed2"; "" for none) and named `params` (a Grice
    judge's example pool: {"pool": "builtin:8dc96eaf"}): "few/runs3@t1", "BEST pool=builtin:8dc96eaf"."""

    model_config = ConfigDict(frozen=True)

    code: str
    qualifier: str = ""
    params: dict[str, str] = Field(default_factory=dict)

    @property
    def qualified(self) -> str:
        """The code with its qualifier: "few/runs3@t1"."""
        return f"{self.code}/{self.qualifier}" if self.qualifier else self.code

    @property
    def named(self) -> str:
        """The named params: "pool=builtin:8dc96eaf" ("" for none)."""
        return " ".join(f"{name}={value}" for name, value in self.params.items())

    @property
    def text(self) -> str:
        return " ".join(part for part in (self.qualified, self.named) if part)

    @classmethod
    def read(cls, text: str) -> "JudgeVariant":
        """The parts of a variant's text, the one reader of it: a stored judge keeps the text alone.
        A panel's code keeps its members' qualifiers within its parentheses."""
        depth, end = 0, len(text)
        for index, char in enumerate(text):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and char in "/ ":
                end = index
                break
        code, rest = text[:end], text[end:]
        qualified, *named = rest.removeprefix("/").split(" ") if rest.startswith("/") else ["", *rest.split()]
        params = dict(part.partition("=")[::2] for part in named if part)
        return cls(code=code, qualifier=qualified, params=params)


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
    def variant_parts(self) -> JudgeVariant:
        """The variant's code, qualifier and named params, for a screen that shows them apart."""
        return JudgeVariant.read(self.variant)

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
        variants = [member.variant_parts for member in ordered]
        alike = len({(variant.qualifier, tuple(variant.params.items())) for variant in variants}) == 1
        parts = [variant.code for variant in variants] if alike else [member.variant for member in ordered]
        if len(profiles) > 1:
            parts = [f"{member.profile}:{part}" for member, part in zip(ordered, parts)]
        code = f"{PANEL}({'+'.join(parts)})"
        panel = variants[0].model_copy(update={"code": code}) if alike else JudgeVariant(code=code)
        return cls(
            profile="+".join(profiles), model="+".join(dict.fromkeys(member.model for member in ordered)),
            variant=panel.text,
            options=options_digest({PANEL: [member.model_dump() for member in ordered]}),
        )
