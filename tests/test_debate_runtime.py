"""The one place a debate's exchange is opened (`Runtime.debate_exchange`): `argtui debate --script`
and the Debate screen both get it from there, with the `[debate]` table's turn time limit and
Coach switch, against a fake backend whose bot reply comes after the limit."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace

import pytest

from argtui.app import ArgtuiApp
from argtui.cli import main
from argtui.config import load_config
from argtui.runtime import Runtime
from engines.debate.exchange import DebateExchange
from engines.debate.settings import DebateSettings
from engines.tasks.debate_judges import TaskJudges
from fakes import FakeServer, Reply, schema_answer
from screens.debate import DebateScreen
from store.debates import DebateRepository

CLAIM = "We should abandon the use of school uniform"  # a topic of the bundled corpus
MESSAGE = "School uniforms reduce bullying because nobody is mocked for their clothes."
REPLY = "Uniforms hide bullying rather than stop it"
TURN_LIMIT_S = 2.0
SLOW_S = 4.0  # the bot's reply comes this long after it is asked for: past the turn's limit
FELL_BACK = f"no reply within {TURN_LIMIT_S:g} s, the turn's time limit"


def slow_reply(body: dict) -> Reply:
    """Level 1's reply (the one streamed request of its turn) after SLOW_S; every judgment at once."""
    answered = schema_answer(REPLY)(body)
    return replace(answered, delay_s=SLOW_S) if body.get("stream") else answered


@pytest.fixture
def slow_backend(argtui_home):
    """The default backend answers the bot's reply after SLOW_S; `[debate]` limits a turn to TURN_LIMIT_S
    and turns the Coach off."""
    with FakeServer(slow_reply) as server:
        config = load_config()
        config.debate = DebateSettings(turn_timeout_s=TURN_LIMIT_S, coach=False)
        config.add_backend(server.profile(kind="openai", retries=0, timeout_s=30), make_default=True)
        yield server


def exchange_settings(exchange: DebateExchange) -> tuple:
    """What the config decides of an exchange: the turn's limit, the Coach, the judges and their client,
    the bot's level."""
    judges = exchange.judges
    return (exchange.turn_timeout_s, exchange.coach, type(judges), judges.client.profile.name if judges else None,
            exchange.session.debate.level, type(exchange.session.pipeline))


async def test_the_script_and_the_screen_open_the_exchange_the_config_sets(
    slow_backend, tmp_path, capsys, until, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "200")  # the CLI's lines whole, not wrapped
    script = tmp_path / "student.txt"
    script.write_text(MESSAGE + "\n", encoding="utf-8")
    argv = ["debate", "--claim", CLAIM, "--side", "con", "--level", "1", "--script", str(script),
            "--grice-strategy", "ZSL", "--component-method", "vanilla", "--timings"]
    assert await asyncio.to_thread(main, argv) == 0  # the CLI runs its own event loop

    err = capsys.readouterr().err
    # The step running at the limit (the reply, or the retrieval on a loaded machine) failed, and
    # level 0's answer came instead.
    assert re.search(rf"✗ \w+: {re.escape(FELL_BACK)}\n", err), err
    assert re.search(rf"step \w+ failed \({re.escape(FELL_BACK)}\), the best counter-argument instead", err)
    waterfall = [line.split()[0] for line in err.splitlines() if re.match(r"^\s*\w+\s+[\d.]+\s+[\d.]+\s", line)]
    assert "Grice" in waterfall and "Coach" not in waterfall  # judged, the Coach off as [debate] says

    runtime = Runtime()
    try:
        [(debate, _)] = DebateRepository(runtime.db).list()
        client = await runtime.client()
        built = await runtime.debate_exchange(debate, client)
        assert exchange_settings(built) == (TURN_LIMIT_S, False, TaskJudges, client.profile.name, 1,
                                            type(built.session.pipeline))
        [reply] = [turn for turn in built.session.records.turns(debate.id) if turn.role == "assistant"]
        assert reply.state == "done" and reply.content and reply.fallback_from.error == FELL_BACK  # level 0's answer

        app = ArgtuiApp()
        async with app.run_test(size=(100, 32)) as pilot:
            screen = DebateScreen(debate.id)
            await app.push_screen(screen)
            await until(pilot, lambda: screen.exchange is not None, 30)
            assert exchange_settings(screen.exchange) == exchange_settings(built)
    finally:
        await runtime.aclose()
