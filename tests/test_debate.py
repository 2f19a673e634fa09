"""The debate trainer: pipeline against the real llama-server and tantivy index, failures,
storage, the RAD export shape."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest

from engines.debate.export import exchanges, rad_run
from engines.debate.pipeline import (
    STEPS,
    WORD_LIMIT,
    DebatePipeline,
    DebateSetup,
    DialogueTurn,
    StepStarted,
    TurnCompleted,
    TurnFailed,
    partial_reply,
    trim_words,
)
from engines.debate.session import DebateSession
from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from engines.retrieval import RetrievalSettings, open_retriever
from store.debates import DebateRepository
from store.grice import GriceRepository

CLAIM = "School uniforms should be mandatory"


@pytest.fixture(scope="module")
async def retriever(tmp_path_factory):
    retriever = await open_retriever(RetrievalSettings(), tmp_path_factory.mktemp("debate-index"))
    yield retriever
    await retriever.aclose()


def test_partial_reply_follows_a_streaming_json_object():
    assert partial_reply('{"response": "Uniforms cost') == "Uniforms cost"
    assert partial_reply('{"response": "a \\"quoted\\" wo') == 'a "quoted" wo'
    assert partial_reply('{"response": "ends with escape \\') == "ends with escape "
    assert partial_reply('{"justification": "x"') == ""


def test_trim_words_keeps_the_limit():
    text = " ".join(f"w{i}" for i in range(80))
    assert len(trim_words(text).split()) == WORD_LIMIT


def test_exchanges_pair_messages_with_the_reply_that_answered_them(db):
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "pro")
    repository.add_turn(debate.id, "user", "first")
    repository.add_turn(debate.id, "assistant", "", error="step strategy: invalid")
    repository.add_turn(debate.id, "user", "second")
    repository.add_turn(debate.id, "assistant", "reply")
    pairs = exchanges(repository.turns(debate.id))
    assert [(u.content, b.content) for u, b in pairs] == [("second", "reply")]


def garbage_backend() -> LLMClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={
            "choices": [{"index": 0, "message": {"content": '{"tone": "Loud"'}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        })

    profile = BackendProfile(name="garbage", kind="vllm", base_urls=["http://fake.test/v1"], model="m")
    return LLMClient(profile, transport=httpx.MockTransport(handler))


async def test_invalid_step_output_ends_the_turn_with_an_error_that_is_stored(db, retriever):
    client = garbage_backend()
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "pro")
    session = DebateSession(repository, debate, client, retriever)
    session.add_user_message("Uniforms stop bullying.")
    events = []
    stored, outcome, failure = await session.bot_turn(events.append)
    assert outcome is None and isinstance(failure, TurnFailed)
    assert failure.step == "strategy" and '{"tone": "Loud"' in failure.raw
    assert client.accounting.requests == 2  # retried once with a new seed, then given up
    assert stored.error.startswith("step strategy") and stored.content == ""
    assert [t.role for t in session.history()] == ["user"]  # a failed turn is not dialogue
    await client.aclose()


@pytest.mark.llm
async def test_two_turn_scripted_debate_against_the_real_model(db, llama_profile, retriever):
    client = LLMClient(llama_profile)
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "pro", backend=llama_profile.name)
    session = DebateSession(
        repository, debate, client, retriever,
        grice_repository=GriceRepository(db), grice_strategy="ZSL", component_method="vanilla",
    )
    messages = [
        "School uniforms reduce bullying because nobody is mocked for their clothes.",
        "Uniforms also save parents money over a school year.",
    ]
    for message in messages:
        events = []
        result = await session.exchange(message, events.append)
        assert isinstance(events[0], StepStarted) and events[0].step == "strategy"
        assert result.failure is None, result.failure
        turn = result.bot
        started = [e.step for e in events if isinstance(e, StepStarted)]
        assert started == [step for step, _ in STEPS]
        assert 1 <= turn.words <= WORD_LIMIT
        assert 1 <= len(turn.queries) <= 3
        used = turn.used_arguments
        assert used, "the reply names the arguments it used"
        found = await retriever.get([a.id for a in used])
        assert [a.id for a in found] == [a.id for a in used]
        assert isinstance(events[-1], TurnCompleted)
        assert result.judgment is not None and set(result.judgment.metrics) == {
            "quantity", "quality", "relation", "manner"
        }
        assert result.components and all(c.span.text for c in result.components)
    turns = repository.turns(debate.id)
    assert [t.role for t in turns] == ["user", "assistant"] * 2
    kinds = sorted(a.kind for a in repository.analyses([t.id for t in turns]))
    assert kinds == ["components", "components", "grice", "grice"]
    run = rad_run(debate, turns)
    assert [u["utterance"] for u in run["simulation"]["userTurns"]] == messages
    await client.aclose()


def key_shape(value):
    """Keys and nesting of a JSON value, with list items merged."""
    if isinstance(value, dict):
        return {key: key_shape(item) for key, item in value.items()}
    if isinstance(value, list):
        shapes = [key_shape(item) for item in value]
        merged = {}
        for shape in shapes:
            if isinstance(shape, dict):
                merged.update(shape)
        return [merged] if merged else []
    return None


@pytest.mark.shared_data
def test_rad_export_has_the_nesting_of_the_official_run_shape(db, shared_data):
    with gzip.open(shared_data / "touche25-rad" / "toy-simulation.genirsim.jsonl.gz", "rt") as handle:
        toy = json.loads(handle.readline())
    repository = DebateRepository(db)
    debate = repository.create(CLAIM, "con")
    repository.add_turn(debate.id, "user", "Uniforms limit self-expression.")
    repository.add_turn(
        debate.id, "assistant", "They also cut costs.", seconds=1.5,
        evidence=[{"id": "ibm-1", "text": "Uniforms are cheap.", "topic": "t", "tags": [], "attacks": None,
                   "supports": "Uniforms", "relation": "supports", "score": 3.2, "used": True},
                  {"id": "ibm-2", "text": "unused", "used": False}],
    )
    run = rad_run(debate, repository.turns(debate.id))
    ours, theirs = key_shape(run), key_shape(toy)
    turn, toy_turn = ours["simulation"]["userTurns"][0], theirs["simulation"]["userTurns"][0]
    assert set(ours["simulation"]) == set(theirs["simulation"])
    assert set(ours["simulation"]["configuration"]) == set(theirs["simulation"]["configuration"])
    assert set(turn) == set(toy_turn)
    assert set(turn["systemResponse"]) == set(toy_turn["systemResponse"])
    assert set(turn["systemResponse"]["response"]) == set(toy_turn["systemResponse"]["response"])
    argument_keys = set(turn["systemResponse"]["response"]["arguments"][0])
    toy_argument_keys = set(toy_turn["systemResponse"]["response"]["arguments"][0])
    assert argument_keys == toy_argument_keys - {"key"}  # RAD's "key" is the simulator's own field
    assert [a["id"] for a in run["simulation"]["userTurns"][0]["systemResponse"]["response"]["arguments"]] == ["ibm-1"]
