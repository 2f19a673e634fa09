"""The one exchange orchestrator of a debate turn: its events in order, a stop that cancels what
runs, and live judgments stored in the judgment store under the judge a batch run would be,
with `argtui debate --script` (the real llama-server) printing the Coach too."""

from __future__ import annotations

import asyncio
import io
from contextlib import aclosing
from dataclasses import replace
from os.path import commonprefix

import pytest

from rich.console import Console

from argtui.cli import main
from argtui.commands.debate import TURN_TOTAL, exchange_titles, waterfall
from argtui.config import load_config
from argtui.runtime import Runtime
from engines.components.prompts import classify_messages
from engines.debate.exchange import (
    BotProgress,
    CoachFailed,
    CoachScored,
    CoachStarted,
    DebateExchange,
    ExchangeDone,
    GriceStarted,
    GriceStored,
    LabellingStarted,
    LabelsStored,
    MessageStored,
    ReplyStored,
    reply_context,
)
from engines.debate.levels import get_level
from engines.debate.opponent import FALLBACK_STEP, StepStarted
from engines.debate.records import DebateRecords, GriceRecord
from engines.debate.session import DebateSession, JudgingChoice
from engines.grice import METRICS, QUESTIONS
from engines.inspire.logic_prompts import logic_messages
from engines.inspire.score import shared_prompts
from engines.judging.identity import judge_id
from engines.judging.store import JudgmentStore
from engines.judging.task import default_options
from engines.llm.client import LLMClient
from engines.llm.embedded import EMBEDDED_MODEL_NAME
from engines.tasks.debate_judges import TaskJudges, grice_item
from engines.tasks.grice import TASK as GRICE
from fakes import Gate, SlowSearch, chat_reply, schema_answer, stream_reply
from store import Database
from store.debates import DebateRepository, TurnState
from store.llm_cache import ResponseCache

CLAIM = "We should abandon the use of school uniform"  # a topic of the bundled corpus
MESSAGES = (
    "School uniforms reduce bullying because nobody is mocked for their clothes.",
    "Uniforms also save parents money over a school year.",
)


def kinds(events) -> list[str]:
    return [type(event).__name__ for event in events]


@pytest.fixture
def runtime(fake_server) -> Runtime:
    """The application's runtime (its database in the test's home; each test closes it on its own
    loop) and a backend that answers "yes" to everything."""
    fake_server.answer = lambda body: chat_reply("yes")
    return Runtime()


def new_exchange(runtime: Runtime, client: LLMClient, retriever, *, during: bool, level: int = 0) -> DebateExchange:
    """Level 0 answers from the argument base, without a model call."""
    repository = DebateRepository(runtime.db)
    session = DebateSession(repository, repository.create(CLAIM, "con", level=level), client, retriever,
                            choice=JudgingChoice("ZSL", "vanilla"), label_during_reply=during)
    return DebateExchange(session, TaskJudges(runtime, client))


def stage_1_requests(bodies: list[dict]) -> list[dict]:
    return [body for body in bodies
            if ((body.get("response_format") or {}).get("json_schema") or {}).get("name") == "AnalyzerReasons"]


async def test_preparing_derives_the_analyzer_reasons_so_the_first_reply_waits_for_none(runtime, fake_server, retriever):
    fake_server.answer = schema_answer("yes")
    client = LLMClient(fake_server.profile(kind="vllm", retries=0))
    repository = DebateRepository(runtime.db)
    session = DebateSession(repository, repository.create(CLAIM, "con", level=0), client, retriever,
                            choice=JudgingChoice("BEST", "vanilla"))
    exchange = DebateExchange(session, TaskJudges(runtime, client), coach=False)
    await exchange.prepare()
    # BEST asks quality, manner and quantity the Analyzer's way (relation zero-shot): one stage 1 each.
    assert len(stage_1_requests(fake_server.bodies)) == 3
    asked_before = len(fake_server.bodies)
    result = await exchange.send(MESSAGES[0])
    try:
        assert result.bot is not None and result.judgment is not None  # the reply judged on every maxim
        assert set(result.judgment.metrics) == {"quantity", "quality", "relation", "manner"}
        assert len(fake_server.bodies) > asked_before and len(stage_1_requests(fake_server.bodies)) == 3
    finally:
        await client.aclose()


def before_the_debate(content: str) -> int:
    """How much of a prompt primed before the debate precedes what the debate fills in: the Grice
    conversation, the labelled document, the translated argument's topic."""
    return min(content.index(marker) + len(marker)
               for marker in ("<conversation>\n", "Document:\n", "Debate topic: ") if marker in content)


async def test_preparing_has_the_server_compute_what_every_judges_prompts_share(runtime, fake_server, retriever):
    """Each judge's prompt up to the first message's text, sent with one token to answer before the
    student writes, so the first message's judges compute only what follows it."""
    fake_server.answer = schema_answer("yes")
    client = LLMClient(fake_server.profile(kind="vllm", retries=0), ResponseCache(runtime.db))
    repository = DebateRepository(runtime.db)
    session = DebateSession(repository, repository.create(CLAIM, "con", level=0), client, retriever,
                            choice=JudgingChoice("BEST", "vanilla"))
    exchange = DebateExchange(session, TaskJudges(runtime, client))
    try:
        for _ in range(2):  # a second debate on the server primes it again: never a cached answer
            fake_server.bodies.clear()
            await exchange.prepare()
            primed = [body["messages"] for body in fake_server.bodies if body.get("max_tokens") == 1]
            assert len(primed) == 8, fake_server.bodies
            labels, *coach = primed[:4]
            grice = primed[4:]
            assert labels == classify_messages("", "")
            # the Coach's three calls, sent together
            assert sorted(coach, key=str) == sorted(shared_prompts(), key=str)
            assert logic_messages("", "") in coach
            # every maxim's own prompt, the three Analyzer ones after their stage-1 reasons
            assert sum(QUESTIONS[metric].question in messages[-1]["content"] for messages in grice
                       for metric in METRICS) == 4
        # the first message's labels, the Coach's calls and the maxims begin as the primed prompts do
        await exchange.send(MESSAGES[0])
        sent = [body["messages"][0] for body in fake_server.bodies if body.get("max_tokens") != 1]
        for primed_messages in (labels, *coach, *grice):
            primed = primed_messages[0]
            shared = max(len(commonprefix([primed["content"], first["content"]]))
                         for first in sent if first["role"] == primed["role"])
            assert shared >= before_the_debate(primed["content"]), primed
    finally:
        await client.aclose()


@pytest.mark.parametrize("during", [False, True])
async def test_the_exchange_reports_each_step_in_order(runtime, fake_server, retriever, during):
    client = LLMClient(fake_server.profile(kind="vllm", retries=0))
    exchange = new_exchange(runtime, client, retriever, during=during)
    events = []
    result = await exchange.send(MESSAGES[0], events.append)
    names = kinds(events)
    assert names[:2] == ["MessageStored", "ReplyStarted"] and names[-1] == "ExchangeDone"
    assert events[-1].result is result and isinstance(events[0], MessageStored)
    replied = names.index("ReplyStored")
    bot = [i for i, event in enumerate(events) if isinstance(event, BotProgress)]
    assert bot and all(names.index("ReplyStarted") < i < replied for i in bot)
    assert isinstance(events[bot[0]].event, StepStarted)
    assert replied < names.index("GriceStarted") < names.index("GriceStored")  # the reply is judged once stored
    labelled = names.index("LabelsStored")
    [started] = [event for event in events if isinstance(event, LabellingStarted)]
    assert started.after_reply is not during
    coached = next(i for i, name in enumerate(names) if name in ("CoachScored", "CoachFailed"))
    assert names.index("CoachStarted") < coached
    if not during:  # the small backend: the labels and the Coach after the reply
        assert replied < labelled and replied < coached
    # What the events said is what was stored, and the judgments are in the judgment store.
    [grice] = [event for event in events if isinstance(event, GriceStored)]
    [labels] = [event for event in events if isinstance(event, LabelsStored)]
    user, reply = DebateRecords(exchange.session.repository).turns(exchange.session.debate.id)
    assert user.state == TurnState.DONE and user.components == list(labels.components) == result.components
    assert reply.grice == grice.result == result.judgment
    assert [(a.kind, a.judge) for a in reply.analyses] == [("grice", grice.judgment.judge)]
    assert [(a.kind, a.judge) for a in user.analyses] == [("components", labels.judgment.judge)]
    judge = await judge_id(GRICE, client, "ZSL", default_options(GRICE))
    assert grice.judgment.judge == judge.name
    item = grice_item(exchange.session.debate.id, reply, reply_context([user, reply], reply))
    assert set(JudgmentStore(runtime.db, "grice").load(judge, [item])) == {item.key}
    await client.aclose()
    await runtime.aclose()


async def test_on_a_small_backend_the_coach_starts_with_the_labels_once_the_reply_is_in(runtime, fake_server, retriever):
    """The Coach needs no labels: waiting for them would leave the server's slots half used."""
    labeller = classify_messages("", "")[0]["content"]  # the labeller's system message, the document left out
    gate = Gate(schema_answer("yes"), lambda body: body["messages"][0]["content"].startswith(labeller), timeout_s=30)
    fake_server.answer = gate
    client = LLMClient(fake_server.profile(kind="vllm", retries=0))
    exchange = new_exchange(runtime, client, retriever, during=False)
    events = []

    def follow(event) -> None:
        events.append(event)
        if isinstance(event, (CoachScored, CoachFailed)):
            gate.open()

    await exchange.send(MESSAGES[0], follow)
    names = kinds(events)
    coached = next(i for i, name in enumerate(names) if name in ("CoachScored", "CoachFailed"))
    assert gate.held and names.index("ReplyStored") < coached < names.index("LabelsStored")
    await client.aclose()
    await runtime.aclose()


async def test_beside_a_bot_that_needs_no_model_the_embedded_model_labels_at_once(runtime, fake_server, retriever):
    """Level 0 answers from the argument base and leaves the embedded model idle meanwhile: the
    labels (and the Coach) are asked while the reply is being found, not after it."""
    labeller = classify_messages("", "")[0]["content"]  # the labeller's system message, the document left out
    gate = Gate(schema_answer("yes"), lambda body: body["messages"][0]["content"].startswith(labeller), timeout_s=30)
    fake_server.answer = gate
    client = LLMClient(fake_server.profile(kind="llamacpp", model=EMBEDDED_MODEL_NAME, retries=0))
    repository = DebateRepository(runtime.db)
    session = DebateSession(repository, repository.create(CLAIM, "con", level=0), client,
                            SlowSearch(retriever, delay_s=1.0), choice=JudgingChoice("ZSL", "vanilla"))
    held_when_replied = []

    def follow(event) -> None:
        if isinstance(event, ReplyStored):
            held_when_replied.append(gate.held)
            gate.open()

    await DebateExchange(session, TaskJudges(runtime, client)).send(MESSAGES[0], follow)
    assert session.label_during_reply and held_when_replied[0] >= 1, held_when_replied
    await client.aclose()
    await runtime.aclose()


async def test_closing_the_events_early_cancels_the_turn_as_stored(runtime, fake_server, retriever):
    fake_server.answer = lambda body: replace(stream_reply("Bullies find other targets."), delay_s=30)
    client = LLMClient(fake_server.profile(kind="vllm", retries=0))
    exchange = new_exchange(runtime, client, retriever, during=False, level=1)  # its reply streams from the model
    seen = []
    async with aclosing(exchange.events(lambda emit: exchange.send(MESSAGES[0], emit))) as events:
        async for event in events:
            seen.append(event)
            step = event.event if isinstance(event, BotProgress) else None
            if isinstance(step, StepStarted) and step.step == "reply":
                break  # while the reply is being written
    assert kinds(seen)[:2] == ["MessageStored", "ReplyStarted"]
    user, reply = DebateRecords(exchange.session.repository).turns(exchange.session.debate.id)
    assert (user.state, reply.state) == (TurnState.CANCELLED, TurnState.CANCELLED)
    assert user.analyses == () and reply.analyses == ()
    await client.aclose()
    await runtime.aclose()


async def test_without_judges_the_exchange_is_the_reply_alone(runtime, fake_server, retriever):
    repository = DebateRepository(runtime.db)
    session = DebateSession(repository, repository.create(CLAIM, "con", level=0), None, retriever,
                            no_model_reason="the backend did not start")
    events = []
    result = await DebateExchange(session, None).send(MESSAGES[0], events.append)
    assert result.bot is not None and result.judgment is None and result.components == []
    assert not any(isinstance(e, (GriceStarted, LabellingStarted, CoachStarted)) for e in events)
    assert isinstance(events[-1], ExchangeDone) and isinstance(events[-2], ReplyStored)
    assert fake_server.bodies == []
    await runtime.aclose()


def waterfall_rows(timings, level: int) -> dict[str, str]:
    """The waterfall `argtui debate --timings` prints, as text, by step title."""
    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(waterfall(timings, exchange_titles(get_level(level))))
    rows = console.export_text().splitlines()[1:]  # after the title
    return {row.split("  ")[0].strip(): " ".join(row.split()) for row in rows if row.strip()}


async def test_the_timings_mark_answers_from_the_response_cache_and_say_why_a_step_failed(
    runtime, fake_server, retriever
):
    reply = "Bullies find other targets, so uniforms change little."

    def answer(body: dict):  # level 1: the streamed draft, then its stance check ("no": the bot's side)
        return stream_reply(reply, prompt_tokens=300) if body.get("stream") else chat_reply("no", prompt_tokens=40)

    fake_server.answer = answer
    client = LLMClient(fake_server.profile(kind="vllm", retries=0), ResponseCache(runtime.db))
    fresh, cached = [await new_exchange(runtime, client, retriever, during=False, level=1).send(MESSAGES[0])
                     for _ in range(2)]  # the same message in two debates: the second is answered from the cache
    [asked] = [t for t in fresh.timings if t.name == "reply"]
    [replayed] = [t for t in cached.timings if t.name == "reply"]
    assert (asked.usage.computed_prompt_tokens, asked.usage.cached_calls) == (340, 0)
    assert replayed.usage.cached and replayed.usage.computed_prompt_tokens == 0
    rows = waterfall_rows(fresh.timings, 1)
    assert rows["Reply"].split()[3:5] == ["340", "0"]  # computed, reused
    # The turn's row sums every step's tokens and ends when the last step did.
    fields = {title: row[len(title):].split() for title, row in rows.items()}  # start, end, tokens, …
    titles = exchange_titles(get_level(1))
    steps = [fields[titles.get(timing.name, timing.name)] for timing in fresh.timings]
    counts = [[int(step[column]) for step in steps] for column in (2, 3, 4)]
    total = fields[TURN_TOTAL]
    assert len(steps) > 2 and [int(n) for n in total[2:5]] == [sum(c) for c in counts]
    assert float(total[1]) == max(float(step[1]) for step in steps) and sum(counts[0]) > 340  # the judges too
    row = waterfall_rows(cached.timings, 1)["Reply"]
    assert row.split()[3] == "0" and row.endswith("cached")

    def late_draft(body: dict):  # the reply is not written in time; the judges are answered
        return replace(stream_reply(reply), delay_s=30) if body.get("stream") else chat_reply("no")

    fake_server.answer = late_draft
    exchange = new_exchange(runtime, client, retriever, during=False, level=1)
    exchange.turn_timeout_s = 1.0
    late = await exchange.send(MESSAGES[1])
    assert late.bot is not None and late.bot.fallback_from.step == "reply"
    failed = next(t for t in late.timings if t.name == "reply")
    assert failed.failure == "no reply within 1 s, the turn's time limit" and failed.end_s >= 1.0
    rows = waterfall_rows(late.timings, 1)
    assert rows["Reply"].endswith("failed: no reply within 1 s, the turn's time limit")
    assert rows["Reply"].split()[3:6] == ["–", "–", "–"]  # what the cut-off step cost is not known
    failed_end = float(rows["Reply"].split()[2])
    assert float(rows[FALLBACK_STEP[1]].split()[len(FALLBACK_STEP[1].split())]) >= failed_end  # then level 0's
    await client.aclose()
    await runtime.aclose()


@pytest.mark.llm
def test_a_scripted_debate_stores_its_grice_verdicts_under_the_eval_grice_judge_and_prints_the_coach(
    argtui_home, llama_profile, tmp_path, capsys
):
    profile = llama_profile.model_copy(update={"timeout_s": 600})
    load_config().add_backend(profile, make_default=True)
    script = tmp_path / "student.txt"
    script.write_text("\n".join(MESSAGES) + "\n", encoding="utf-8")
    assert main(["debate", "--claim", CLAIM, "--side", "con", "--level", "0", "--script", str(script),
                 "--grice-strategy", "zsl", "--component-method", "vanilla"]) == 0
    err = capsys.readouterr().err
    for number in range(1, len(MESSAGES) + 1):  # the student's messages as the student counts them
        assert err.count(f"  Coach on your message {number}: overall ") == 1, err
    assert err.count("  Weakest: ") == len(MESSAGES) and "Coach failed" not in err
    assert ", column " not in err  # the parser's diagnostics are the screen's details, not the student's words
    assert err.count("  Grice (ZSL): ") == len(MESSAGES) and err.count("  components: ") == len(MESSAGES)

    db = Database(argtui_home / "data" / "argtui.sqlite3")
    [(debate, _)] = DebateRepository(db).list()
    turns = DebateRecords(DebateRepository(db)).turns(debate.id)
    replies = [turn for turn in turns if turn.role == "assistant"]

    async def eval_grice_judge():
        async with LLMClient(profile) as client:  # the identity `argtui eval grice --strategy zsl` computes
            return await judge_id(GRICE, client, "ZSL", default_options(GRICE))

    judge = asyncio.run(eval_grice_judge())
    items = [grice_item(debate.id, reply, reply_context(turns, reply)) for reply in replies]
    verdicts = JudgmentStore(db, GRICE.name).load(judge, items)
    assert set(verdicts) == {item.key for item in items} and len(verdicts) == len(MESSAGES)
    for reply, item in zip(replies, items):
        [analysis] = reply.analyses
        assert analysis.judge == judge.name and analysis.link.items == [item.key]
        assert set(reply.grice.metrics) == {"quantity", "quality", "relation", "manner"}
        assert reply.grice == GriceRecord.of_verdict(verdicts[item.key]) and reply.grice.strategy == "ZSL"
    assert [stored.judge.name for stored in JudgmentStore(db, GRICE.name).judges()] == [judge.name]
    db.close()
