"""The Debate screen's live Grice judging, maxim by maxim: each maxim reported by the exchange as the
grice task's judge finishes it, shown by the reply's line and the Grice tab before the others are in,
stored as one verdict under the judge `argtui eval grice` names; a failed judging said on the reply's
line; the side panel's tabs told what to show by their typed messages."""

from __future__ import annotations

import io
import time
from dataclasses import replace

from rich.console import Console
from textual.widgets import Input

from argtui.app import ArgtuiApp
from argtui.config import load_config
from argtui.runtime import Runtime
from engines.debate.exchange import DebateExchange, GriceStarted, GriceStored, MaximJudged
from engines.debate.records import DebateRecords
from engines.debate.session import DebateSession, JudgingChoice
from engines.grice.questions import METRICS, QUESTIONS
from engines.judging.identity import judge_id
from engines.judging.store import JudgmentStore
from engines.judging.task import default_options
from engines.llm.client import LLMClient
from engines.tasks.debate_judges import TaskJudges
from engines.tasks.grice import TASK as GRICE, metric_judgments
from fakes import chat_reply, error_reply
from screens.debate import DebateScreen, MessageView
from screens.widgets.evidence import EvidencePanel
from screens.widgets.judgment import GricePanel
from screens.widgets.parts import ComponentList
from screens.widgets.strategy import StepsPanel
from store import Database
from store.debates import DebateRepository

CLAIM = "We should abandon the use of school uniform"  # a topic of the bundled corpus
MESSAGE = "School uniforms reduce bullying because nobody is mocked for their clothes."
SLOW = "relation"  # the maxim whose answers come late
SLOW_S = 2.0


def asks(body: dict, metric: str) -> bool:
    """The request is a question of the Grice judge about `metric`."""
    return any(QUESTIONS[metric].question in str(message.get("content")) for message in body["messages"])


def slow_relation(body: dict):
    """"yes" to everything, the relation maxim's questions after `SLOW_S`."""
    return replace(chat_reply("yes"), delay_s=SLOW_S) if asks(body, SLOW) else chat_reply("yes")


def shown(renderable) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


async def test_the_exchange_reports_each_maxim_as_it_is_judged_and_stores_one_verdict(fake_server, retriever):
    fake_server.answer = slow_relation
    runtime = Runtime()
    client = LLMClient(fake_server.profile(kind="vllm", retries=0))
    repository = DebateRepository(runtime.db)
    session = DebateSession(repository, repository.create(CLAIM, "con", level=0), client, retriever,
                            choice=JudgingChoice("ZSL", "vanilla"), label_during_reply=True)
    events: list[tuple[float, object]] = []
    await DebateExchange(session, TaskJudges(runtime, client), coach=False).send(
        MESSAGE, lambda event: events.append((time.perf_counter(), event)))

    grice = [(at, event) for at, event in events if isinstance(event, (GriceStarted, MaximJudged, GriceStored))]
    assert [type(event) for _, event in grice] == [GriceStarted, *[MaximJudged] * len(METRICS), GriceStored]
    maxims = [(at, event.metric) for at, event in grice if isinstance(event, MaximJudged)]
    assert {metric.metric for _, metric in maxims} == set(METRICS)
    assert maxims[-1][1].metric == SLOW  # the others were reported while it still ran
    assert maxims[-1][0] - maxims[-2][0] > SLOW_S / 2
    stored = grice[-1][1]
    assert stored.result.metrics == {metric.metric: metric for _, metric in maxims}

    # What was reported maxim by maxim is the one verdict the judgment store holds, under the eval judge.
    judge = await judge_id(GRICE, client, "ZSL", default_options(GRICE))
    assert stored.judgment.judge == judge.name
    [verdict] = JudgmentStore(runtime.db, GRICE.name).latest(judge).values()
    judged = metric_judgments(verdict)
    assert {metric: (j.answer, j.p_yes) for metric, j in judged.items()} == {
        metric.metric: (metric.answer, metric.p_yes) for _, metric in maxims}
    [_, reply] = DebateRecords(repository).turns(session.debate.id)
    assert reply.grice == stored.result
    await client.aclose()
    await runtime.aclose()


def new_debate(argtui_home, backend: str) -> int:
    """A stored debate with no turns yet, at level 0: the bot answers from the argument base."""
    db = Database(argtui_home / "data" / "argtui.sqlite3")
    debate_id = DebateRepository(db).create(CLAIM, "pro", backend=backend, level=0).id
    db.close()
    return debate_id


def debate_app(fake_server) -> ArgtuiApp:
    """The application with the fake server as its default backend."""
    load_config().add_backend(fake_server.profile(kind="vllm", retries=0), make_default=True)
    return ArgtuiApp()


async def send(pilot, argtui_home, until) -> tuple[DebateScreen, MessageView, MessageView]:
    """The student's message sent in a new debate, once its session is open."""
    await pilot.app.push_screen(DebateScreen(new_debate(argtui_home, "fake")))
    screen = pilot.app.screen
    await until(pilot, lambda: screen.session is not None, timeout_s=300)
    screen.choice.grice_strategy = "ZSL"  # one call per maxim: the slow maxim's answer is the last
    screen.query_one("#message", Input).value = MESSAGE
    await pilot.press("enter")
    await until(pilot, lambda: len(screen.query(MessageView)) == 2)
    message, reply = screen.query(MessageView)
    return screen, message, reply


async def test_the_reply_line_and_the_grice_tab_show_each_maxim_as_it_is_judged(argtui_home, fake_server, until):
    fake_server.answer = slow_relation
    async with debate_app(fake_server).run_test(size=(120, 40)) as pilot:
        screen, message, reply = await send(pilot, argtui_home, until)
        panel = screen.query_one(GricePanel)
        others = [metric for metric in METRICS if metric != SLOW]
        await until(pilot, lambda: reply.message.grice is not None and set(reply.message.grice.metrics) == set(others),
                    timeout_s=60)
        await pilot.pause()
        line = shown(reply.render())
        assert f"Grice {len(others)} of {len(METRICS)} · " in line
        assert all(f"{QUESTIONS[metric].maxim}? yes" in line for metric in others)
        assert f"{QUESTIONS[SLOW].maxim}?" not in line
        tab = shown(panel.content)
        assert "Relation" in tab and "judging…" in tab and tab.count("  yes") == len(others)

        await until(pilot, lambda: reply.message.grice_started is None, timeout_s=60)
        await pilot.pause()
        assert all(f"{QUESTIONS[metric].maxim}? yes" in shown(reply.render()) for metric in METRICS)
        tab = shown(panel.content)
        assert "judging…" not in tab and tab.count("  yes") == len(METRICS)

        # The other tabs were told the same reply: its steps and evidence, the message's parts.
        assert screen.query_one(StepsPanel).reply is reply.message
        assert screen.query_one(EvidencePanel).rows == tuple(reply.message.evidence) != ()
        message.focus()
        await until(pilot, lambda: message.message.state != "running" and screen.state.selected is message.message)
        await pilot.pause()
        parts = screen.query_one(ComponentList)
        assert parts.components == (None if message.message.components is None
                                    else tuple(message.message.components))
        assert parts.option_count >= 1


async def test_a_failed_grice_judging_is_said_on_the_reply_line(argtui_home, fake_server, until):
    fake_server.answer = lambda body: (error_reply(500, "judge down") if any(asks(body, m) for m in METRICS)
                                       else chat_reply("yes"))
    async with debate_app(fake_server).run_test(size=(120, 40)) as pilot:
        screen, _message, reply = await send(pilot, argtui_home, until)
        await until(pilot, lambda: reply.message.grice_error != "", timeout_s=60)
        await pilot.pause()
        line = shown(reply.render())
        assert "Grice: judging failed:" in line and "500" in line and "judging…" not in line
        assert "Judging failed:" in shown(screen.query_one(GricePanel).content)
    assert any(asks(body, metric) for body in fake_server.bodies for metric in METRICS)

