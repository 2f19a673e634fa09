"""The response cache writes answers in batches: a process killed with kill -9 loses at most
the answers it had not yet written, and a rerun asks the server again for only those."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

from engines.llm.client import LLMClient
from fakes import FakeServer, Reply, chat_reply
from store import Database
from store.llm_cache import FLUSH_INTERVAL_S, ResponseCache

PROMPTS = 200

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from engines.llm.client import LLMClient
    from engines.llm.profile import BackendProfile
    from store import Database
    from store.llm_cache import ResponseCache

    async def main(url, path):
        cache = ResponseCache(Database(path))
        profile = BackendProfile(name="fake", kind="openai", base_urls=[url], model="m", retries=0)
        async with LLMClient(profile, cache) as client:
            for i in range({prompts}):
                await client.chat([{{"role": "user", "content": f"prompt {{i}}"}}])
                print("ANSWERED", i, cache.unflushed, flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def content(i: int) -> str:
    return f"prompt {i}"


def prompt(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": content(i)}]


def stored_prompts(fake: FakeServer, first_request: int) -> set[str]:
    """The prompts of the chat requests from the `first_request`-th on."""
    return {body["messages"][0]["content"] for body in fake.bodies[first_request:]}


async def test_a_killed_process_loses_only_unflushed_answers_and_the_rerun_asks_only_those(tmp_path):
    path = tmp_path / "cache.sqlite3"
    Database(path).close()  # the schema exists before the child writes
    with FakeServer([Reply(json=chat_reply("OK").json, delay_s=0.002)], models=("m",)) as fake:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD.format(prompts=PROMPTS), fake.url, str(path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
        )
        answered, buffered_seen = -1, 0
        try:
            while answered < PROMPTS // 2:
                line = child.stdout.readline()
                assert line.startswith("ANSWERED "), child.stderr.read() if not line else line
                _, index, unflushed = line.split()
                answered, last_unflushed = int(index), int(unflushed)
                buffered_seen = max(buffered_seen, last_unflushed)
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(timeout=30) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
        assert buffered_seen > 1, "answers were written one transaction each, not buffered"

        db = Database(path)
        try:
            stored = ResponseCache(db).count()
            # Every answer older than the unflushed ones was written; a few newer ones may be too.
            assert answered + 1 - last_unflushed <= stored <= len(fake.bodies)
            assert stored < len(fake.bodies), "the kill lost no unflushed answer: nothing was tested"

            asked_before = len(fake.bodies)
            async with LLMClient(fake.profile(kind="openai", model="m", retries=0), ResponseCache(db)) as client:
                for i in range(asked_before):
                    await client.chat(prompt(i))
            reasked = stored_prompts(fake, asked_before)
            assert len(reasked) == len(fake.bodies) - asked_before == asked_before - stored
            # Only the newest answers were still unwritten at the kill.
            oldest_unflushed = answered + 1 - last_unflushed
            assert reasked <= {content(i) for i in range(oldest_unflushed, asked_before)}
        finally:
            db.close()


async def test_buffered_answers_reach_the_database_within_the_flush_interval(tmp_path):
    path = tmp_path / "cache.sqlite3"
    writer = ResponseCache(Database(path))
    writer.put("k", "m", {"text": "a"})
    assert writer.unflushed == 1 and writer.get("k") == {"text": "a"}  # its own reads see it at once
    reader = Database(path)
    try:
        assert ResponseCache(reader).get("k") is None
        await asyncio.sleep(FLUSH_INTERVAL_S * 3)
        assert writer.unflushed == 0 and ResponseCache(reader).get("k") == {"text": "a"}
    finally:
        reader.close()


def test_a_cache_reads_what_another_process_wrote_after_its_own_lookups_from_every_thread(tmp_path):
    """Lookups read through a connection each thread keeps: it still sees every later commit."""
    path = tmp_path / "cache.sqlite3"
    reader_db, writer_db = Database(path), Database(path)
    try:
        reader = ResponseCache(reader_db)
        assert reader.get("k") is None
        ResponseCache(writer_db).put("k", "m", {"text": "a"})  # outside an event loop: written at once
        assert reader.get("k") == {"text": "a"}
        ResponseCache(writer_db).put("k", "m", {"text": "b"})
        assert reader.get("k") == {"text": "b"}
        assert asyncio.run(asyncio.to_thread(reader.get, "k")) == {"text": "b"}
    finally:
        reader_db.close()
        writer_db.close()
