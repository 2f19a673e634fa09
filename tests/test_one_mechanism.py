"""One mechanism per concern: `argtui index push` on the runner's run states, usage totals and meters,
re-asking after invalid output, and the one clock of a judged item."""

from __future__ import annotations

import asyncio

import pytest

import argtui.commands.index as index_command
from argtui.cli import main
from argtui.config import load_config
from engines.debate.levels import opponent
from engines.debate.opponent import DebateSetup, DialogueTurn, StepFinished, TurnCompleted
from engines.grice.reasons import STAGE1_ATTEMPTS, AnalyzerReasons
from engines.judging.runner import RunPaused, RunProgress, run_states
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.reasking import structured_until_valid
from engines.llm.types import Usage, UsageMeter
from engines.retrieval.types import RetrievalError
from engines.timing import Stopwatch, timed
from store import Database
from store.llm_cache import ResponseCache
from store.runs import RunRepository, RunState
from fakes import FakeServer, Reply, chat_reply, schema_answer


def test_a_push_to_a_failing_cluster_pauses_like_every_run(capsys):
    # An HTTP server that is no Elasticsearch: the push's first request (HEAD on the index) gets 501.
    with FakeServer() as cluster:
        url = f"http://127.0.0.1:{cluster.port}"
        code = main(["index", "push", "--es", url, "--index", "pushed"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "Pushing to" not in line]
    assert code == 1 and len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("error: paused after 0/") and f"{url} index pushed: ApiError(501" in lines[0]
    assert "run the same command again to resume" in lines[0]

    db = Database(load_config().paths.database)
    [run] = RunRepository(db).list(kind=index_command.PUSH_RUN_KIND)
    db.close()
    assert run.state == RunState.PAUSED and f"{url} index pushed" in (run.error or "")


async def test_run_states_pause_on_a_backend_error_and_fail_on_a_bug(db):
    runs = RunRepository(db)
    stored: list[tuple[RunState, str]] = []

    def progress(state: RunState) -> RunProgress:
        return RunProgress(run.id, "index-push", "somewhere", 10, 3, 0, 0, Usage(), state)

    def stop(state: RunState, cause: str) -> None:
        stored.append((state, cause))
        runs.update(run.id, state=state, done=3, error=cause)

    run = runs.open("index-push", "paused", {}, 10)
    with pytest.raises(RunPaused) as paused:
        async with run_states(runs, run, progress, stop, pausing=(RetrievalError,)):
            assert runs.get(run.id).state == RunState.RUNNING
            raise RetrievalError("Elasticsearch at http://127.0.0.1:9 is unreachable")
    assert paused.value.progress.state == RunState.PAUSED and "3/10" in str(paused.value)
    assert stored == [(RunState.PAUSED, "Elasticsearch at http://127.0.0.1:9 is unreachable")]

    run = runs.open("index-push", "failed", {}, 10)
    with pytest.raises(Exception, match="This is a bug in argtui") as failed:
        async with run_states(runs, run, progress, stop, pausing=(RetrievalError,)):
            raise KeyError("no such field")
    assert type(failed.value).__name__ == "RunFailed"
    assert runs.get(run.id).state == RunState.FAILED and "KeyError" in runs.get(run.id).error


def test_usage_totals_add_every_field_and_none_is_nothing():
    fresh = Usage(prompt_tokens=10, completion_tokens=2, reused_prompt_tokens=4, latency_s=0.5, ttft_s=0.1, calls=1)
    cached = Usage(prompt_tokens=10, completion_tokens=2, calls=1, cached_calls=1)
    assert Usage.total([]) == Usage()
    total = Usage.total(u for u in (fresh, cached, cached))
    assert (total.prompt_tokens, total.completion_tokens, total.reused_prompt_tokens) == (30, 6, 4)
    assert (total.calls, total.cached_calls, total.latency_s, total.ttft_s) == (3, 2, 0.5, 0.1)
    assert total == fresh + cached + cached


async def test_a_meter_counts_the_answers_and_requests_of_its_own_work_only():
    with FakeServer([chat_reply("OK", prompt_tokens=5, completion_tokens=1)]) as fake:
        client = LLMClient(fake.profile())
        await client.chat([{"role": "user", "content": "warm up"}])  # detection requests, outside any meter
        before = client.accounting.requests

        async def ask(text: str, meter: UsageMeter) -> None:
            with meter.counting():
                await client.chat([{"role": "user", "content": text}])
                await client.chat([{"role": "user", "content": text + " again"}])

        first, second = UsageMeter(), UsageMeter()
        await asyncio.gather(ask("one", first), ask("two", second))
        await client.aclose()
    assert first.usage.calls == second.usage.calls == 2
    assert first.requests == second.requests == 2
    assert client.accounting.requests - before == 4 and client.accounting.usage.calls == 5


def first_unreadable(body: dict) -> Reply:
    """The first answer is cut short (no valid JSON), every later one fits the schema."""
    return chat_reply('{"yes": "unfinished') if body["seed"] == 1 else schema_answer("a reason")(body)


async def test_reasking_takes_the_next_sampling_until_the_output_validates(db):
    with FakeServer(first_unreadable) as fake:
        client = LLMClient(fake.profile(), ResponseCache(db))
        samplings = [Sampling(temperature=0.0, seed=1), Sampling(temperature=0.7, seed=2), Sampling(seed=3)]
        messages = [{"role": "user", "content": "reasons?"}]
        asked = await structured_until_valid(client, messages, AnalyzerReasons, samplings)
        again = await structured_until_valid(client, messages, AnalyzerReasons, samplings)  # from the cache
        await client.aclose()
    assert asked.valid and asked.attempts == 2 and asked.result.value == AnalyzerReasons(yes="a reason", no="a reason")
    assert [body["seed"] for body in fake.bodies] == [1, 2]  # another sample, not the failed answer again
    assert asked.usage.calls == 2 and asked.usage.completion_tokens == 2
    assert again.attempts == 2 and again.valid and again.usage.cached_calls == 2 and len(fake.bodies) == 2


async def test_reasking_gives_up_after_the_last_sampling_with_the_last_answer():
    with FakeServer([chat_reply("not json")]) as fake:
        client = LLMClient(fake.profile())
        messages = [{"role": "user", "content": "reasons?"}]
        asked = await structured_until_valid(client, messages, AnalyzerReasons, STAGE1_ATTEMPTS)
        await client.aclose()
    assert not asked.valid and asked.attempts == len(STAGE1_ATTEMPTS) == len(fake.bodies)
    assert asked.result.raw == "not json" and asked.result.error
    assert [body["temperature"] for body in fake.bodies] == [s.temperature for s in STAGE1_ATTEMPTS]


async def test_an_item_is_timed_by_whoever_asks_for_it():
    async def judgment() -> str:
        await asyncio.sleep(0.05)
        return "verdict"

    stopwatch = Stopwatch()
    result, seconds = await timed(judgment())
    assert result == "verdict" and 0.05 <= seconds <= stopwatch.seconds


async def test_a_bot_turn_counts_the_requests_of_its_own_steps_not_of_other_work_on_the_client(retriever):
    history = [DialogueTurn("user", "School uniforms reduce bullying because nobody is mocked for their clothes.")]
    setup = DebateSetup("We should abandon the use of school uniform", "con")
    with FakeServer(schema_answer("Uniforms cost poor families money they would rather spend on books.")) as fake:
        client = LLMClient(fake.profile(kind="vllm", retries=0))
        bot = opponent(1, client, retriever)

        async def turn() -> list:
            return [event async for event in bot.run_turn(setup, history)]

        async def other_work() -> None:  # e.g. a judge of the last turn, on the same client meanwhile
            for text in ("one", "two", "three"):
                await client.chat([{"role": "user", "content": text}])

        events, _ = await asyncio.gather(turn(), other_work())
        await client.aclose()
    assert isinstance(events[-1], TurnCompleted)
    steps = [event for event in events if isinstance(event, StepFinished)]
    assert events[-1].turn.requests == sum(step.requests for step in steps) == len(fake.bodies) - 3 > 0
    assert client.accounting.requests == len(fake.received)
