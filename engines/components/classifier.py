"""Argument component classification: vanilla, chain of thought, smart reasoning, and the MAD-ACC debate.

MAD-ACC (seed 004): the Manager gives a distribution over the labels (from
logprobs, or from sampled votes where the backend sends none); its two
most probable labels go at random (seeded per component) to the Proponent
and the Opponent, who debate for a number of rounds (2 rounds = 4 turns) at
temperature 0.7; the Judge explains its verdict against the label
definitions and then picks the label with a constrained choice. A confident
Manager (top probability above `skip_threshold`) may skip the debate. Each
role may run on its own backend (`manager` and `debaters` clients; the
judge's client is the one every single-agent method uses). Smart reasoning
is the Judge's prompt without a debate.

An answer cut at its token limit (finish reason "length") is named in the
result's `truncated`, which makes the result invalid.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from engines.components import prompts
from engines.components.formatting import check_spans, mark_document
from engines.components.segmentation import segment
from engines.components.types import LABELS, METHODS, ComponentResult, Span, Turn
from engines.llm.client import LLMClient, Message
from engines.llm.profile import Sampling
from engines.llm.types import Completion, LabelChoice, UsageMeter
from engines.timing import Stopwatch

# Ties in the Manager's distribution (the embedded model often puts all mass on
# one label) are broken towards the more frequent component type.
TIE_ORDER = ("Premise", "Claim", "MajorClaim")
DETERMINISTIC = 0.0
VOTE_TEMPERATURE = 1.0
# Without logprobs one answer is a point mass: the second label would always come from TIE_ORDER,
# so the Manager samples this many votes instead.
FALLBACK_VOTES = 5
CUT = "length"  # the finish reason of an answer stopped by its token limit


@dataclass(frozen=True)
class ClassifierSettings:
    """How one component is classified. The token limits leave room for a reasoning model's thinking."""

    rounds: int = 2
    debater_temperature: float = 0.7
    debater_max_tokens: int = 2048
    judge_max_tokens: int = 4096  # the Judge's reason (mad) and smart reasoning's
    reasoning_max_tokens: int = 2048  # chain of thought
    manager_votes: int = 1  # 1: distribution from logprobs (else `fallback_votes`); more: share of sampled votes
    fallback_votes: int = FALLBACK_VOTES  # sampled votes when manager_votes is 1 and no logprobs came
    skip_threshold: float | None = None  # skip the debate when the Manager's top probability exceeds it


# What free text is labelled with unless settings are given (the Debate screen): short answers,
# so a message's components are labelled while the conversation goes on.
LIVE_SETTINGS = ClassifierSettings(debater_max_tokens=96, judge_max_tokens=96, reasoning_max_tokens=128)


@dataclass(frozen=True)
class Clients:
    """The backend of each role; the judge's also serves vanilla, cot and smart."""

    judge: LLMClient
    manager: LLMClient
    debaters: LLMClient


class _Agents:
    """The clients seen by one component's classification: every answer cut at its token limit is named."""

    def __init__(self, clients: Clients):
        self.clients = clients
        self.truncated: list[str] = []

    async def say(self, client: LLMClient, who: str, messages: Sequence[Message], sampling: Sampling) -> Completion:
        completion = await client.chat(messages, sampling)
        if completion.finish_reason == CUT:
            self.truncated.append(who)
        return completion

    async def choose(self, client: LLMClient, messages: Sequence[Message], votes: int = 1) -> LabelChoice:
        temperature = DETERMINISTIC if votes == 1 else VOTE_TEMPERATURE
        return await client.choose(messages, LABELS, Sampling(temperature=temperature), votes=votes)


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
    manager: LLMClient | None = None,
    debaters: LLMClient | None = None,
) -> ComponentResult:
    """The label of spans[target] in `text`, the other spans masked as <ARG>.

    `client` is the judge's; `manager` and `debaters` run those MAD-ACC roles
    (default: the judge's client). `key` names the component for its random
    generator (default: its offsets).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    document = mark_document(text, spans, target)
    span = spans[target]
    stopwatch = Stopwatch()
    agents = _Agents(Clients(client, manager or client, debaters or client))
    rng = component_rng(seed, key or f"{span.start}-{span.end}")
    with UsageMeter().counting() as meter:  # every answer of the component's agents
        result = await METHOD_CLASSIFIERS[method](agents, document, span, settings, rng)
    return replace(result, usage=meter.usage, truncated=tuple(agents.truncated), seconds=stopwatch.seconds)


async def _vanilla(
    agents: _Agents, document: str, span: Span, settings: ClassifierSettings, rng: random.Random
) -> ComponentResult:
    choice = await agents.choose(agents.clients.judge, prompts.classify_messages(document, span.text))
    return ComponentResult(span, "vanilla", choice.label, choice.distribution, choice.source, raw=choice.raw)


async def _chain_of_thought(
    agents: _Agents, document: str, span: Span, settings: ClassifierSettings, rng: random.Random
) -> ComponentResult:
    client = agents.clients.judge
    messages = prompts.chain_of_thought_messages(document, span.text, settings.reasoning_max_tokens)
    sampling = Sampling(temperature=DETERMINISTIC, max_tokens=settings.reasoning_max_tokens)
    reasoning = await agents.say(client, "reasoning", messages, sampling)
    answer = prompts.answer_after(messages, reasoning.text, prompts.CHAIN_OF_THOUGHT_ANSWER)
    choice = await agents.choose(client, answer)
    return ComponentResult(
        span, "cot", choice.label, choice.distribution, choice.source,
        transcript=(Turn("reasoning", reasoning.text),), reason=reasoning.text, raw=choice.raw,
    )


async def _smart_reasoning(
    agents: _Agents, document: str, span: Span, settings: ClassifierSettings, rng: random.Random
) -> ComponentResult:
    client = agents.clients.judge
    messages = prompts.smart_messages(document, span.text, settings.judge_max_tokens)
    sampling = Sampling(temperature=DETERMINISTIC, max_tokens=settings.judge_max_tokens)
    reason = (await agents.say(client, "judge", messages, sampling)).text.strip()
    choice = await agents.choose(client, prompts.answer_after(messages, reason, prompts.JUDGE_VERDICT))
    return ComponentResult(
        span, "smart", choice.label, choice.distribution, choice.source,
        transcript=(Turn("judge", reason),), reason=reason, raw=choice.raw,
    )


async def _manager_choice(agents: _Agents, messages: Sequence[Message], settings: ClassifierSettings) -> LabelChoice:
    """The Manager's distribution: from logprobs, or the share of sampled votes when a label came without
    them (that label alone would leave the second one to the tie order). An invalid answer stays as it is."""
    choice = await agents.choose(agents.clients.manager, messages, votes=settings.manager_votes)
    if not choice.valid or choice.source != "text" or settings.fallback_votes <= 1:
        return choice
    return await agents.choose(agents.clients.manager, messages, votes=settings.fallback_votes)


async def _debate(
    agents: _Agents, document: str, span: Span, settings: ClassifierSettings, rng: random.Random
) -> ComponentResult:
    clients = agents.clients
    manager = await _manager_choice(agents, prompts.classify_messages(document, span.text), settings)
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
        said = await agents.say(clients.debaters, f"{role} turn {turn // 2 + 1}", messages, sampling)
        transcript.append(Turn(role, said.text.strip(), labels[role]))
    messages = prompts.judge_messages(
        document, span.text, proponent_label, opponent_label, transcript, settings.judge_max_tokens
    )
    sampling = Sampling(temperature=DETERMINISTIC, max_tokens=settings.judge_max_tokens)
    reason = await agents.say(clients.judge, "judge", messages, sampling)
    verdict = await agents.choose(clients.judge, prompts.answer_after(messages, reason.text, prompts.JUDGE_VERDICT))
    transcript.append(Turn("judge", reason.text.strip()))
    return ComponentResult(
        span, "mad", verdict.label, manager.distribution, manager.source,
        transcript=tuple(transcript), reason=reason.text.strip(), raw=verdict.raw,
        proponent_label=proponent_label, opponent_label=opponent_label,
        judge_distribution=verdict.distribution,
    )


# Each method: (the agents, marked document, target span, settings, the component's generator) -> result.
METHOD_CLASSIFIERS = {"vanilla": _vanilla, "cot": _chain_of_thought, "smart": _smart_reasoning, "mad": _debate}


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
    manager: LLMClient | None = None,
    debaters: LLMClient | None = None,
) -> list[ComponentResult]:
    """Label every component of free text: `segment(text)` unless spans are given.

    Components run concurrently (each client bounds how many calls are in
    flight); `on_component(index, result)` is called as each one finishes.
    Results come back in span order. Without `settings`, answers are kept
    short (`LIVE_SETTINGS`); `manager` and `debaters` as in `classify_component`.
    """
    spans = list(segment(text) if spans is None else spans)
    check_spans(text, spans)
    settings = settings or LIVE_SETTINGS
    if skip_threshold is not None:
        settings = replace(settings, skip_threshold=skip_threshold)

    async def one(index: int) -> ComponentResult:
        result = await classify_component(
            client, text, spans, index, method, settings=settings, seed=seed, manager=manager, debaters=debaters
        )
        if on_component is not None:
            on_component(index, result)
        return result

    return list(await asyncio.gather(*(one(index) for index in range(len(spans)))))
