"""Faults a user meets on a real backend: the real llama-server killed in the middle of a
batch run (the run pauses with its cause; the rerun asks the restarted server only what was
not answered, counted in the server's own log), and a debate turn whose backend fails
mid-turn (a dropped stream, one too slow for the step's limit, a 401): the error is on that turn and the next
message is answered."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argtui.config import load_config
from argtui.runtime import Runtime
from engines.debate.exchange import DebateExchange
from engines.debate.levels import get_level
from engines.debate.session import DebateSession, JudgingChoice
from engines.llm.client import LLMClient
from engines.llm.embedded import EMBEDDED_MODEL_NAME, embedded_server
from engines.llm.profile import BackendProfile
from engines.llm.servers import ManagedServer, free_loopback_port
from engines.tasks.debate_judges import TaskJudges
from conftest import TEST_KEY_ENV, with_test_key
from fakes import FakeServer, Reply, chat_reply, error_reply, stream_reply
from store import Database
from store.debates import DebateRepository
from store.runs import RunRepository, RunState

ITEMS = 10  # pairwise, zero-shot logprob mode: one call per item
CLAIM = "We should abandon the use of school uniform"  # a topic of the bundled corpus


def started_requests(log: Path) -> int:
    """Requests the llama-server began to work on, as its log records them."""
    return sum("launch_slot_" in line and "is_child = 0" in line for line in log.read_text(errors="replace").splitlines())


def serve(log: Path, port: int) -> ManagedServer:
    server = with_test_key(embedded_server(log, port=port))
    server.start()
    asyncio.run(server.wait_ready(timeout_s=120))
    return server


def pairwise_run(home: Path) -> subprocess.Popen:
    command = ["eval", "pairwise", "--prompt", "zero", "--mode", "logprob", "--dimension", "logical",
               "--limit", str(ITEMS), "--judge", "local", "--concurrency", "1"]
    return subprocess.Popen([sys.executable, "-m", "argtui", *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def the_run(home: Path):
    db = Database(home / "data" / "argtui.sqlite3")
    try:
        [run] = RunRepository(db).list()
        return run
    finally:
        db.close()


@pytest.mark.llm
def test_the_real_server_killed_mid_batch_pauses_the_run_and_the_rerun_asks_only_the_rest(tmp_path, argtui_home):
    port = free_loopback_port()  # the restarted server keeps the address, so the judge keeps its name
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    server = serve(first_log, port)
    load_config().add_backend(BackendProfile(
        name="local", kind="llamacpp", base_urls=[server.url], model=EMBEDDED_MODEL_NAME, retries=0, timeout_s=60,
        api_key_env=TEST_KEY_ENV,
    ))
    try:
        process = pairwise_run(argtui_home)
        deadline = time.monotonic() + 120
        while started_requests(first_log) < 4:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
        server.process.kill()  # SIGKILL: no goodbye to the client
        _, err = process.communicate(timeout=60)
    finally:
        server.stop()
    assert process.returncode == 1 and "Traceback" not in err and "paused after" in err, err
    run = the_run(argtui_home)
    assert run.state == RunState.PAUSED and "local" in run.error and 0 < run.done < ITEMS, (run.state, run.error)
    answered = run.done

    server = serve(second_log, port)
    try:
        process = pairwise_run(argtui_home)
        _, err = process.communicate(timeout=600)
    finally:
        server.stop()
    assert process.returncode == 0, err
    run = the_run(argtui_home)
    assert run.state == RunState.DONE and run.done == run.total == ITEMS and run.error is None
    # The call in flight when the server died may be asked again; no answered one is.
    assert ITEMS - answered <= started_requests(second_log) <= ITEMS - answered + 1
    assert started_requests(first_log) + started_requests(second_log) <= ITEMS + 1


# ---------------------------------------------------------------- a debate turn on a failing backend

MESSAGE = "School uniforms reduce bullying because nobody is mocked for their clothes."
ANSWER = "Bullies find other targets than clothes, so uniforms change little about bullying."



def good_reply(body: dict) -> Reply:
    if body.get("stream"):
        return stream_reply(*(ANSWER[i:i + 12] for i in range(0, len(ANSWER), 12)))
    return chat_reply("no")  # the stance check: it does not argue the student's side


FAULTS = {
    "stream dropped mid-reply": (Reply(events=stream_reply("Bullies find", " other", " targets").events,
                                       drop_after=2), "the stream broke"),
    "stream too slow for the step's limit": (Reply(events=stream_reply(*ANSWER.split(" ")).events, delay_s=5),
                                             "timed out after 1 s"),
    "401": (error_reply(401, "invalid key"), "401"),
}


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_backend_fault_gives_its_turn_level_0_s_answer_and_the_debate_goes_on(retriever, fault):
    broken, error = FAULTS[fault]
    faulty = True

    def answer(body: dict) -> Reply:
        return broken if faulty and body.get("stream") else good_reply(body)

    with FakeServer(answer) as fake:
        client = LLMClient(fake.profile(kind="vllm", retries=0))
        runtime = Runtime()
        repository = DebateRepository(runtime.db)
        session = DebateSession(repository, repository.create(CLAIM, "con", level=1), client, retriever,
                                choice=JudgingChoice("ZSL", "vanilla"))
        session.pipeline = get_level(1).bot(client, retriever, step_timeouts={"reply": 1.0})
        exchange = DebateExchange(session, TaskJudges(runtime, client), coach=False)
        result = await exchange.send(MESSAGE)
        fell_back = result.bot.fallback_from
        assert result.failure is None and fell_back.step == "reply" and error in fell_back.error
        [used] = result.bot.used_arguments
        assert result.bot.reply == used.text.strip() and result.bot_turn.fallback_from == fell_back
        faulty = False
        result = await exchange.send("Uniforms also save parents money over a school year.")
        assert result.failure is None and result.bot.reply == ANSWER and result.bot.fallback_from is None
        turns = session.records.turns(session.debate.id)
        assert [(t.role, t.state) for t in turns] == [("user", "done"), ("assistant", "done")] * 2
        await client.aclose()
        await runtime.aclose()
