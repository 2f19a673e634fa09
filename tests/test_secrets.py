"""No secret in what argtui stores, logs or shows: a key echoed by a server's error, credentials
in a URL; and answers cached per serving endpoint, so another server's answers are never reused."""

from __future__ import annotations


import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.llm.client import LLMClient
from engines.llm.types import BackendError
from engines.secrets import redact
from store import Database
from store.llm_cache import ResponseCache
from store.runs import RunRepository
from fakes import FakeServer, Reply, chat_reply

KEY = "sk-live-5ecret-0f-the-user"


def test_redact_masks_keys_url_credentials_and_bearer_tokens():
    text = f"401: bad header Authorization: Bearer {KEY} for http://ann:pa55word@gpu-1:8000/v1"
    clean = redact(text, [KEY])
    assert KEY not in clean and "pa55word" not in clean and "ann" not in clean
    assert "http://***@gpu-1:8000/v1" in clean and "Bearer ***" in clean
    assert redact("no secret here", [None, "", "ab"]) == "no secret here"  # empty or tiny keys mask nothing


def echoing_401(body: dict) -> Reply:
    return Reply(status=401, json={"error": {"message": f"invalid key: Authorization: Bearer {KEY}"}})


def test_a_key_echoed_in_a_401_reaches_no_run_terminal_or_doctor(argtui_home, monkeypatch, capsys):
    monkeypatch.setenv("JUDGE_KEY", KEY)
    with FakeServer(echoing_401) as fake:
        load_config().add_backend(fake.profile(kind="openai", api_key_env="JUDGE_KEY", retries=0), make_default=True)
        assert main(["eval", "pairwise", "--limit", "1", "--dimension", "logical", "--mode", "logprob"]) == 1
        assert main(["doctor", "--json"]) in (0, 1)
    out, err = capsys.readouterr()
    assert "HTTP 401" in err and KEY not in err and KEY not in out
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    try:
        [run] = RunRepository(db).list()
        assert "401" in run.error and KEY not in run.error
    finally:
        db.close()
    assert KEY not in (argtui_home / "data" / "logs" / "argtui.log").read_text()


def test_credentials_in_a_url_are_never_printed(argtui_home, capsys):
    with FakeServer([Reply(status=500, json={"error": {"message": "down"}})]) as fake:
        url = fake.url.replace("http://", "http://ann:pa55word@")
        profile = fake.profile(kind="openai", base_urls=[url], retries=0)
        load_config().add_backend(profile, make_default=True)
        main(["config", "show", "--json"])
        main(["doctor", "--json"])
        main(["eval", "pairwise", "--limit", "1", "--dimension", "logical", "--mode", "logprob"])
    out, err = capsys.readouterr()
    assert "pa55word" not in out + err and "***@127.0.0.1" in out


async def test_answers_cached_from_one_server_are_not_answers_of_another(db):
    cache = ResponseCache(db)
    messages = [{"role": "user", "content": "Say OK."}]
    with FakeServer([chat_reply("OK")]) as good:
        async with LLMClient(good.profile(kind="openai"), cache) as client:
            assert (await client.chat(messages)).text == "OK"
            assert (await client.chat(messages)).usage.cached  # the same server: a cache hit
    with FakeServer([Reply(status=401, json={"error": {"message": "no"}})]) as refusing:
        async with LLMClient(refusing.profile(kind="openai", retries=0), cache) as client:
            with pytest.raises(BackendError, match="401"):
                await client.chat(messages)
            assert len(refusing.bodies) == 1  # asked, not answered from the other server's cache
