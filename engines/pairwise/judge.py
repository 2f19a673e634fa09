"""Judging one argument pair: A, B or Tie, constrained to those labels.

Modes:

* ``runs`` — ``runs`` samples (default 3) at temperature 1, combined by the
  seed's majority rule. By default the samples go as one request with ``n``
  (the prompt is prefilled once); ``run_requests="separate"`` sends one request
  per run instead, each with its own seed so each is its own cache entry.
* ``logprob`` — one call; the label distribution comes from the logprobs of the
  label token and the label is its argmax.
* ``swap`` — one logprob call per order (A, B) and (B, A); the swapped answer
  is mapped back and the two distributions are averaged. The answers as given
  in each order are kept for position-bias statistics.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field, replace
from typing import Literal, Sequence

from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.types import Completion, LabelChoice
from engines.pairwise.prompts import LABELS, FewShotExamples, Strategy, messages

Mode = Literal["runs", "logprob", "swap"]
MODES: tuple[Mode, ...] = ("runs", "logprob", "swap")
RunRequests = Literal["one", "separate"]
DEFAULT_TEMPERATURE = {"runs": 1.0, "logprob": 0.0, "swap": 0.0}
LABEL_MAX_TOKENS = 16  # "Tie" as plain text, or {"label": "Tie"} on servers without a choice constraint
SWAP = {"A": "B", "B": "A", "Tie": "Tie"}


@dataclass(frozen=True)
class JudgeSettings:
    strategy: Strategy = "zero"
    mode: Mode = "runs"
    runs: int = 3
    temperature: float | None = None  # None: 1 for runs, 0 for logprob and swap
    run_requests: RunRequests = "one"

    def __post_init__(self) -> None:
        if self.runs < 1:
            raise ValueError("runs must be at least 1")

    @property
    def effective_temperature(self) -> float:
        return DEFAULT_TEMPERATURE[self.mode] if self.temperature is None else self.temperature

    @property
    def sequences(self) -> int:
        """Sequences the server decodes at once for one pair (what a slot-limited server must fit)."""
        return {"runs": self.runs, "logprob": 1, "swap": 2}[self.mode]

    @property
    def variant(self) -> str:
        """Prompt and mode, e.g. "few/runs3@t1": what makes two judgments of one model comparable."""
        mode = f"runs{self.runs}" if self.mode == "runs" else self.mode
        return f"{self.strategy}/{mode}@t{self.effective_temperature:g}"


def mode_of_variant(variant: str) -> str:
    """The judge mode of a stored variant name ("few/runs3@t1" → "runs")."""
    mode = variant.split("/", 1)[-1].split("@", 1)[0]
    return "runs" if mode.startswith("runs") else mode


@dataclass(frozen=True)
class PairVerdict:
    """A judge's answer on one pair, in the pair's original order.

    `run_labels` are the individual answers: the runs (runs mode), the one
    answer (logprob), or the answers as given in the original and in the
    swapped order (swap). None marks an invalid output, kept in `raw`.
    """

    label: str | None
    run_labels: tuple[str | None, ...]
    distribution: dict[str, float] = field(default_factory=dict)
    raw: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    seconds: float = 0.0

    @property
    def valid(self) -> bool:
        return self.label is not None


def majority_label(run_labels: Sequence[str | None]) -> str | None:
    """The seed's rule: A or B when it has a majority of the runs; otherwise (three-way
    split, or a split involving an explicit Tie) Tie. None when every run was invalid."""
    if all(label is None for label in run_labels):
        return None
    for side in ("A", "B"):
        if 2 * sum(1 for label in run_labels if label == side) > len(run_labels):
            return side
    return "Tie"


def argmax_label(distribution: dict[str, float]) -> str | None:
    """The most probable label; on equal mass the earlier of A, B, Tie."""
    if not distribution:
        return None
    return max(LABELS, key=lambda label: (distribution.get(label, 0.0), -LABELS.index(label)))


def parse_label(text: str) -> str | None:
    """A label from constrained output: the bare label, or {"label": ...} (JSON-schema servers)."""
    candidate = text.strip()
    if candidate.startswith("{"):
        try:
            candidate = str(json.loads(candidate).get("label", ""))
        except (json.JSONDecodeError, AttributeError):
            return None
    return candidate if candidate in LABELS else None


async def judge_pair(
    client: LLMClient,
    settings: JudgeSettings,
    dimension: str,
    a: str,
    b: str,
    examples: FewShotExamples | None = None,
) -> PairVerdict:
    """Which of a and b is stronger on the dimension, by the settings' prompt and mode."""
    started = time.perf_counter()
    chat = messages(settings.strategy, dimension, a, b, examples)
    if settings.mode == "runs":
        verdict = await _runs(client, settings, chat)
    elif settings.mode == "logprob":
        verdict = _from_choice(await _logprob_choice(client, settings, chat))
    elif settings.mode == "swap":
        original, swapped = await asyncio.gather(
            _logprob_choice(client, settings, chat),
            _logprob_choice(client, settings, messages(settings.strategy, dimension, b, a, examples)),
        )
        verdict = combine_orders(original, swapped)
    else:
        raise ValueError(f"unknown judge mode {settings.mode!r} (expected one of {MODES})")
    return replace(verdict, seconds=time.perf_counter() - started)


async def _runs(client: LLMClient, settings: JudgeSettings, chat: list[dict[str, str]]) -> PairVerdict:
    constraint = client.choice_constraint(LABELS)
    sampling = Sampling(temperature=settings.effective_temperature, max_tokens=LABEL_MAX_TOKENS)
    if settings.run_requests == "one":
        completions = await client.samples(chat, settings.runs, sampling, constraint=constraint)
    else:
        batches = await asyncio.gather(*(
            client.samples(chat, 1, sampling.merged(Sampling(seed=run)), constraint=constraint)
            for run in range(settings.runs)
        ))
        completions = [batch[0] for batch in batches]
    run_labels = tuple(parse_label(c.text) for c in completions)
    # Vote shares of all runs: an invalid run is no vote, so the shares then sum below 1.
    valid = [label for label in run_labels if label is not None]
    distribution = {label: valid.count(label) / len(run_labels) for label in LABELS} if valid else {}
    return PairVerdict(
        label=majority_label(run_labels),
        run_labels=run_labels,
        distribution=distribution,
        raw="\n".join(c.text for c in completions),
        **_usage(completions),
    )


async def _logprob_choice(client: LLMClient, settings: JudgeSettings, chat: list[dict[str, str]]) -> LabelChoice:
    return await client.choose(chat, LABELS, Sampling(temperature=settings.effective_temperature))


def _from_choice(choice: LabelChoice) -> PairVerdict:
    return PairVerdict(
        label=argmax_label(choice.distribution),
        run_labels=(choice.label,),
        distribution=dict(choice.distribution),
        raw=choice.raw,
        prompt_tokens=choice.usage.prompt_tokens,
        completion_tokens=choice.usage.completion_tokens,
        cached=choice.usage.cached,
    )


def combine_orders(original: LabelChoice, swapped: LabelChoice) -> PairVerdict:
    """The answers to (A, B) and to (B, A) as one verdict in the original order: the swapped
    distribution mapped back, the two averaged (an invalid side is left out), its argmax."""
    back = {SWAP[label]: p for label, p in swapped.distribution.items()}
    parts = [d for d in (original.distribution, back) if d]
    distribution = {label: sum(d.get(label, 0.0) for d in parts) / len(parts) for label in LABELS} if parts else {}
    return PairVerdict(
        label=argmax_label(distribution),
        run_labels=(original.label, swapped.label),
        distribution=distribution,
        raw=f"{original.raw}\n{swapped.raw}",
        prompt_tokens=original.usage.prompt_tokens + swapped.usage.prompt_tokens,
        completion_tokens=original.usage.completion_tokens + swapped.usage.completion_tokens,
        cached=original.usage.cached and swapped.usage.cached,
    )


def _usage(completions: Sequence[Completion]) -> dict:
    return {
        "prompt_tokens": sum(c.usage.prompt_tokens for c in completions),
        "completion_tokens": sum(c.usage.completion_tokens for c in completions),
        "cached": all(c.usage.cached for c in completions),
    }

