"""The MAD-ACC Manager's distribution: logprobs where the backend sends them, sampled votes where it
does not, so the second label (the Opponent's or the Proponent's) comes from the model, not from the
tie order (Premise, Claim, MajorClaim).

Scripted OpenAI-compatible servers (tests/fakes.py) stand in for the model.
"""

from __future__ import annotations

import itertools
import threading

import pytest

from engines.components import ClassifierSettings, classify_component
from engines.components.classifier import FALLBACK_VOTES, VOTE_TEMPERATURE
from fakes import Reply, chat_reply
from test_components import ESSAY, ScriptedServer, scripted_client, spans_of

TARGET = 1  # "Libraries are more than shelves of books"


class NoLogprobServer:
    """A backend that never sends logprobs: its deterministic choice is always Claim; its sampled
    choices alternate Claim, MajorClaim (across requests, however the votes are split into them)."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self._sampled = itertools.cycle(("Claim", "MajorClaim"))
        self._lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        with self._lock:
            self.bodies.append(body)
            if "grammar" not in body:
                return chat_reply("I defend my label.")
            if body["temperature"] == 0.0:
                return chat_reply("Claim")
            return chat_reply(*(next(self._sampled) for _ in range(body.get("n", 1))))

    def constrained(self) -> list[dict]:
        return [body for body in self.bodies if "grammar" in body]


async def test_without_logprobs_the_manager_samples_votes():
    server = NoLogprobServer()
    async with scripted_client(server) as client:
        result = await classify_component(client, ESSAY.text, spans_of(ESSAY), TARGET, "mad")
    # One deterministic answer came without logprobs, then the votes were sampled.
    manager = [body for body in server.constrained() if "You are the Judge" not in str(body["messages"])]
    assert manager[0]["temperature"] == 0.0 and manager[0]["logprobs"]
    votes = manager[1:]
    assert all(body["temperature"] == VOTE_TEMPERATURE and not body.get("logprobs") for body in votes)
    assert sum(body.get("n", 1) for body in votes) == FALLBACK_VOTES == 5
    assert result.distribution_source == "votes"
    assert result.distribution == {"MajorClaim": 0.4, "Claim": 0.6, "Premise": 0.0}
    # The debaters defend the two labels the votes rank first: the tie order would have given Premise.
    assert {result.proponent_label, result.opponent_label} == {"Claim", "MajorClaim"}
    assert result.usage.calls == 1 + FALLBACK_VOTES + 4 + 2  # the votes are counted as answers


async def test_with_logprobs_the_manager_keeps_them():
    server = ScriptedServer({ESSAY.components[TARGET].text: "Claim"})
    async with scripted_client(server) as client:
        result = await classify_component(client, ESSAY.text, spans_of(ESSAY), TARGET, "mad")
    [manager, _verdict] = [body for body in server.bodies if "grammar" in body]
    assert manager["temperature"] == 0.0 and manager["logprobs"] and manager.get("n", 1) == 1
    assert result.distribution_source == "logprobs"
    assert result.distribution == pytest.approx({"MajorClaim": 0.3, "Claim": 0.6, "Premise": 0.1})
    assert {result.proponent_label, result.opponent_label} == {"Claim", "MajorClaim"}
    assert result.usage.calls == 7


async def test_votes_asked_for_are_sampled_at_once():
    server = NoLogprobServer()
    settings = ClassifierSettings(manager_votes=3)
    async with scripted_client(server) as client:
        result = await classify_component(client, ESSAY.text, spans_of(ESSAY), TARGET, "mad", settings=settings)
    manager = server.constrained()[0]  # no deterministic answer first
    assert manager["temperature"] == VOTE_TEMPERATURE and manager["n"] == 3 and not manager.get("logprobs")
    assert result.distribution_source == "votes"
    assert result.distribution == pytest.approx({"MajorClaim": 1 / 3, "Claim": 2 / 3, "Premise": 0.0})


async def test_no_fallback_votes_keeps_the_point_mass():
    server = NoLogprobServer()
    settings = ClassifierSettings(fallback_votes=1)
    async with scripted_client(server) as client:
        result = await classify_component(client, ESSAY.text, spans_of(ESSAY), TARGET, "mad", settings=settings)
    assert result.distribution_source == "text" and result.distribution == {"MajorClaim": 0.0, "Claim": 1.0, "Premise": 0.0}
    assert {result.proponent_label, result.opponent_label} == {"Claim", "Premise"}  # the tie order
