"""Argument component classification: vanilla, chain of thought, and the MAD-ACC debate.

MAD-ACC (seed 004): the Manager gives a distribution over the labels; its two
most probable labels go at random (seeded per component) to the Proponent
and the Opponent, who debate for a number of rounds (2 rounds = 4 turns) at
temperature 0.7; the Judge explains its verdict against the label
definitions and then picks the label with a constrained choice. A confident
Manager (top probability above `skip_threshold`) may skip the debate.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from engines.components import prompts
from engines.components.formatting import check_spans, mark_document
from engines.components.segmentation import segment
from engines.components.types import LABELS, METHODS, ComponentResult, Span, Turn
from engines.llm.client import LLMClient, Message
from engines.llm.profile import Sampling
from engines.llm.types import Completion, LabelChoice, Usage

# Ties in the Manager's distribution (the embedded model often puts all mass on
# one label) are broken towards the more frequent component type.
TIE_ORDER = ("Premise", "Claim", "MajorClaim")
DETERMINISTIC = 0.0
VOTE_TEMPERATURE = 1.0


@dataclass(frozen=True)
class ClassifierSettings:
    rounds: int = 2
    debater_temperature: float = 0.7
    debater_max_tokens: int = 96
    judge_max_tokens: int = 96
    reasoning_max_tokens: int = 128  # chain of thought
    manager_votes: int = 1  # 1: distribution from logprobs; more: share of sampled votes
    skip_threshold: float | None = None  # skip the debate when the Manager's top probability exceeds it


class _Agent:
    """The client seen by one component's classification: the usage of every answer adds up."""

    def __init__(self, client: LLMClient):
        self.client = client
        self.usage = Usage()

    async def say(self, messages: Sequence[Message], sampling: Sampling) -> Completion:
        completion = await self.client.chat(messages, sampling)
        self.usage = self.usage + completion.usage
        return completion

    async def choose(self, messages: Sequence[Message], votes: int = 1) -> LabelChoice:
        temperature = DETERMINISTIC if votes == 1 else VOTE_TEMPERATURE
        choice = await self.client.choose(messages, LABELS, Sampling(temperature=temperature), votes=votes)
        self.usage = self.usage + choice.usage
        return choice


def top_two(distribution: dict[str, float]) -> tuple[str, str]:
    """The two most probable labels (ties towards the more frequent component type)."""
    ranked = sorted(TIE_ORDER, key=lambda label: (-distribution.get(label, 0.0), TIE_ORDER.index(label)))
    return ranked[0], ranked[1]


def assign_debaters(distribution: dict[str, float], rng: random.Random) -> tuple[str, str]:
    """(Proponent's label, Opponent's label): the top two labels in random order."""
    pair = list(top_two(distribution))
    rng.shuffle(pair)
    return pair[0], pair[1]


def component_rng(seed: int, key: str) -> random.Random:
    """A generator per component, so results do not depend on the order components run in."""
    return random.Random(f"{seed}:{key}")


async def classify_component(
    client: LLMClient,
    text: str,
    spans: Sequence[Span],
    target: int,
    method: str = "mad",
    *,
    settings: ClassifierSettings = ClassifierSettings(),
    seed: int = 0,
    key: str | None = None,
) -> ComponentResult:
    """The label of spans[target] in `text`, the other spans masked as <ARG>.

    `key` names the component for its random generator (default: its offsets).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    document = mark_document(text, spans, target)
    span = spans[target]
    started = time.perf_counter()
    agent = _Agent(client)
    rng = component_rng(seed, key or f"{span.start}-{span.end}")
    result = await METHOD_CLASSIFIERS[method](agent, document, span, settings, rng)
    return replace(result, usage=agent.usage, seconds=time.perf_counter() - started)


async def _vanilla(
    agent: _Agent, document: str, span: Span, settings: ClassifierSettings, rng: random.Random
) -> ComponentResult:
    choice = await agent.choose(prompts.classify_messages(document, span.text))
    return ComponentResult(span, "vanilla", choice.label, choice.distribution, choice.source, raw=choice.raw)


async def _chain_of_thought(
    agent: _Agent, document: str, span: Span, settings: ClassifierSettings, rng: random.Random
) -> ComponentResult:
    messages = prompts.chain_of_thought_messages(document, span.text, settings.reasoning_max_tokens)
    reasoning = await agent.say(messages, Sampling(temperature=DETERMINISTIC, max_tokens=settings.reasoning_max_tokens))
    choice = await agent.choose(prompts.answer_after(messages, reasoning.text, prompts.CHAIN_OF_THOUGHT_ANSWER))
    return ComponentResult(
        span, "cot", choice.label, choice.distribution, choice.source,
        transcript=(Turn("reasoning", reasoning.text),), reason=reasoning.text, raw=choice.raw,
    )


async def _debate(
    agent: _Agent, document: str, span: Span, settings: ClassifierSettings, rng: random.Random
) -> ComponentResult:
    manager = await agent.choose(prompts.classify_messages(document, span.text), votes=settings.manager_votes)
    top = max(manager.distribution.values(), default=0.0)
    if manager.valid and settings.skip_threshold is not None and top > settings.skip_threshold:
        return ComponentResult(
            span, "mad", manager.label, manager.distribution, manager.source,
            reason=f"Debate skipped: the Manager's top probability {top:.2f} exceeds {settings.skip_threshold:.2f}.",
            raw=manager.raw, skipped=True,
        )
    proponent_label, opponent_label = assign_debaters(manager.distribution, rng)
    labels = {"proponent": proponent_label, "opponent": opponent_label}
    transcript: list[Turn] = []
    for turn in range(2 * settings.rounds):
        role = "proponent" if turn % 2 == 0 else "opponent"
        rival = "opponent" if role == "proponent" else "proponent"
        messages = prompts.debater_messages(
            document, span.text, role, labels[role], labels[rival], transcript, settings.debater_max_tokens
        )
        sampling = Sampling(
            temperature=settings.debater_temperature,
            max_tokens=settings.debater_max_tokens,
            seed=rng.randrange(2**31),
        )
        transcript.append(Turn(role, (await agent.say(messages, sampling)).text.strip(), labels[role]))
    messages = prompts.judge_messages(
        document, span.text, proponent_label, opponent_label, transcript, settings.judge_max_tokens
    )
    reason = await agent.say(messages, Sampling(temperature=DETERMINISTIC, max_tokens=settings.judge_max_tokens))
    verdict = await agent.choose(prompts.answer_after(messages, reason.text, prompts.JUDGE_VERDICT))
    transcript.append(Turn("judge", reason.text.strip()))
    return ComponentResult(
        span, "mad", verdict.label, manager.distribution, manager.source,
        transcript=tuple(transcript), reason=reason.text.strip(), raw=verdict.raw,
        proponent_label=proponent_label, opponent_label=opponent_label,
        judge_distribution=verdict.distribution,
    )


# Each method: (agent, marked document, target span, settings, the component's generator) -> result.
METHOD_CLASSIFIERS = {"vanilla": _vanilla, "cot": _chain_of_thought, "mad": _debate}


async def label_components(
    client: LLMClient,
    text: str,
    spans: Sequence[Span] | None = None,
    method: str = "mad",
    skip_threshold: float | None = None,
    seed: int = 0,
    on_component: Callable[[int, ComponentResult], None] | None = None,
    *,
    settings: ClassifierSettings | None = None,
) -> list[ComponentResult]:
    """Label every component of free text: `segment(text)` unless spans are given.

    Components run concurrently (the client bounds how many calls are in
    flight); `on_component(index, result)` is called as each one finishes.
    Results come back in span order.
    """
    spans = list(segment(text) if spans is None else spans)
    check_spans(text, spans)
    settings = settings or ClassifierSettings()
    if skip_threshold is not None:
        settings = replace(settings, skip_threshold=skip_threshold)

    async def one(index: int) -> ComponentResult:
        result = await classify_component(client, text, spans, index, method, settings=settings, seed=seed)
        if on_component is not None:
            on_component(index, result)
        return result

    return list(await asyncio.gather(*(one(index) for index in range(len(spans)))))
