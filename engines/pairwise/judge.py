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
import hashlib
import json
from dataclasses import dataclass
from typing import Awaitable, Callable, Literal, Sequence

from engines.judging.verdict import JudgeVariant, Verdict
from engines.llm import adapters
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.types import LabelChoice, Usage
from engines.pairwise.prompts import LABELS, FewShotExamples, Strategy, messages

Mode = Literal["runs", "logprob", "swap"]
MODES: tuple[Mode, ...] = ("runs", "logprob", "swap")
RunRequests = Literal["one", "separate"]
DEFAULT_TEMPERATURE = {"runs": 1.0, "logprob": 0.0, "swap": 0.0}
LABEL_MAX_TOKENS = 16  # "Tie" as plain text, or {"label": "Tie"} on servers without a choice constraint
SWAP = {"A": "B", "B": "A", "Tie": "Tie"}
INVALID = "not one of A, B, Tie"  # why a pair verdict without a label is invalid


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
    mode = JudgeVariant.read(variant).qualifier.partition("@")[0]  # the qualifier's "@t1" is its temperature
    return "runs" if mode.startswith("runs") else mode


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
    """A pair label from constrained output, read as the client reads every label."""
    return adapters.parse_label(text, LABELS)


async def judge_pair(
    client: LLMClient,
    settings: JudgeSettings,
    dimension: str,
    a: str,
    b: str,
    examples: FewShotExamples | None = None,
) -> Verdict:
    """Which of a and b is stronger on the dimension, by the settings' prompt and mode.

    The verdict's `data["run_labels"]` are the individual answers: the runs (runs
    mode), the one answer (logprob), or the answers as given in the original and
    in the swapped order (swap); None marks an output that was not a label.
    """
    mode = MODE_JUDGES.get(settings.mode)
    if mode is None:
        raise ValueError(f"unknown judge mode {settings.mode!r} (expected one of {MODES})")

    def chat(first: str, second: str) -> list[dict[str, str]]:
        return messages(settings.strategy, dimension, first, second, examples)

    return await mode(client, settings, chat, a, b)


def run_labels(verdict: Verdict) -> tuple[str | None, ...]:
    """The individual answers behind a stored pair verdict (see `judge_pair`)."""
    return tuple((verdict.data or {}).get("run_labels", ()))


def _verdict(
    label: str | None, answers: Sequence[str | None], distribution: dict[str, float], raw: str, usage: Usage,
    detail: str,
) -> Verdict:
    return Verdict(
        label=label, data={"run_labels": list(answers)}, distribution=distribution, raw=raw, usage=usage,
        detail=detail, invalid_reason=None if label is not None else INVALID,
    )


async def _runs(client: LLMClient, settings: JudgeSettings, chat: list[dict[str, str]]) -> Verdict:
    constraint = client.choice_constraint(LABELS)
    sampling = Sampling(temperature=settings.effective_temperature, max_tokens=LABEL_MAX_TOKENS)
    if settings.run_requests == "one":
        completions = await client.samples(chat, settings.runs, sampling, constraint=constraint)
    else:
        batches = await asyncio.gather(*(
            client.samples(chat, 1, sampling.merged(Sampling(seed=run_seed(chat, run))), constraint=constraint)
            for run in range(settings.runs)
        ))
        completions = [batch[0] for batch in batches]
    answers = tuple(parse_label(c.text) for c in completions)
    # Vote shares of all runs: an invalid run is no vote, so the shares then sum below 1.
    valid = [label for label in answers if label is not None]
    distribution = {label: valid.count(label) / len(answers) for label in LABELS} if valid else {}
    return _verdict(
        majority_label(answers), answers, distribution, "\n".join(c.text for c in completions),
        Usage.total(c.usage for c in completions),
        f"majority of {settings.runs} runs at temperature {settings.effective_temperature:g}; "
        f"runs: {' '.join(label or 'invalid' for label in answers)}",
    )


def run_seed(chat: Sequence[dict[str, str]], run: int) -> int:
    """The sampling seed of one separate run: fixed per prompt and run, so a rerun asks the same,
    and different across prompts. The same seeds for every pair would draw every pair's run from
    the same point of its label distribution, and so skew the labels of a whole batch alike."""
    digest = hashlib.sha256(json.dumps([list(chat), run], ensure_ascii=False).encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1  # a non-negative 31-bit seed


async def _logprob_choice(client: LLMClient, settings: JudgeSettings, chat: list[dict[str, str]]) -> LabelChoice:
    return await client.choose(chat, LABELS, Sampling(temperature=settings.effective_temperature))


def _from_choice(choice: LabelChoice) -> Verdict:
    return _verdict(
        argmax_label(choice.distribution), (choice.label,), dict(choice.distribution), choice.raw, choice.usage,
        "argmax of the label logprobs",
    )


def combine_orders(original: LabelChoice, swapped: LabelChoice) -> Verdict:
    """The answers to (A, B) and to (B, A) as one verdict in the original order: the swapped
    distribution mapped back, the two averaged (an invalid side is left out), its argmax."""
    back = {SWAP[label]: p for label, p in swapped.distribution.items()}
    parts = [d for d in (original.distribution, back) if d]
    distribution = {label: sum(d.get(label, 0.0) for d in parts) / len(parts) for label in LABELS} if parts else {}
    return _verdict(
        argmax_label(distribution), (original.label, swapped.label), distribution,
        f"{original.raw}\n{swapped.raw}", original.usage + swapped.usage,
        f"both orders averaged; answered {original.label or 'invalid'} as shown, "
        f"{swapped.label or 'invalid'} swapped",
    )


Chat = Callable[[str, str], list[dict[str, str]]]  # the prompt with the two arguments in a given order


async def _runs_mode(client: LLMClient, settings: JudgeSettings, chat: Chat, a: str, b: str) -> Verdict:
    return await _runs(client, settings, chat(a, b))


async def _logprob_mode(client: LLMClient, settings: JudgeSettings, chat: Chat, a: str, b: str) -> Verdict:
    return _from_choice(await _logprob_choice(client, settings, chat(a, b)))


async def _swap_mode(client: LLMClient, settings: JudgeSettings, chat: Chat, a: str, b: str) -> Verdict:
    original, swapped = await asyncio.gather(
        _logprob_choice(client, settings, chat(a, b)), _logprob_choice(client, settings, chat(b, a))
    )
    return combine_orders(original, swapped)


MODE_JUDGES: dict[str, Callable[[LLMClient, JudgeSettings, Chat, str, str], Awaitable[Verdict]]] = {
    "runs": _runs_mode, "logprob": _logprob_mode, "swap": _swap_mode,
}
