"""Identity from content: a stored verdict is found again only for the same judge on the same
content. An item whose text changed under the same key, a changed prompt template and a changed
profile sampling each give new verdicts (requests counted at the fake server); the old verdicts
stay stored and listed."""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import replace
from datetime import datetime
from types import SimpleNamespace

from sqlalchemy import JSON, Boolean, Column, DateTime, Integer, MetaData, String, Table, UniqueConstraint, text

from argtui.cli import main
from argtui.runtime import Runtime
from engines.datasets.ukp_essays import Essay, EssayComponent
from engines.judging import identity
from engines.judging.evaluate import run_task
from engines.judging.identity import judge_id
from engines.judging.runner import RunSpec, run_tracked
from engines.judging.store import JudgmentStore
from engines.judging.options import TaskOptions
from engines.judging.task import ItemSide, TaskBase, TaskItem, default_options
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.pairwise.run import load_corpus
from engines.tasks.components import TASK as COMPONENTS
from engines.tasks.pairwise import TASK as PAIRWISE
from fakes import FakeServer, chat_reply
from store import Database
from store.migrations import SCHEMA_VERSION, write_schema_version
from conftest import write_rad_debates
from test_components import ESSAY, ScriptedServer, write_brat


def fake_backend(monkeypatch, fake: FakeServer) -> None:
    monkeypatch.setenv("ARGTUI_BASE_URL", fake.url)
    monkeypatch.setenv("ARGTUI_BACKEND_KIND", "llamacpp")
    monkeypatch.setenv("ARGTUI_MODEL", "m")


def reworded(essay: Essay) -> Essay:
    """The same essay id and component ids over another text (every component's words changed)."""
    def other(words: str) -> str:
        return words.replace("librar", "museum").replace("reading", "painting").replace("laptops", "tablets")

    text = other(essay.text)
    components = []
    for component in essay.components:
        surface = other(component.text)
        start = text.index(surface)
        components.append(EssayComponent(component.id, component.label, start, start + len(surface), surface))
    assert [c.id for c in components] == [c.id for c in essay.components] and text != essay.text
    return replace(essay, text=text, components=tuple(components))


def test_components_with_the_same_essay_ids_and_other_text_are_judged_again(monkeypatch, tmp_path, capsys):
    server = ScriptedServer({})  # every component: Premise
    first, other = write_brat(tmp_path / "ok", ESSAY), write_brat(tmp_path / "other", reworded(ESSAY))
    argv = ["eval", "components", "--split", "all", "--method", "vanilla"]
    with FakeServer(server) as fake:
        fake_backend(monkeypatch, fake)
        assert main([*argv, "--data", str(first)]) == 0
        assert len(fake.bodies) == 5
        assert main([*argv, "--data", str(first)]) == 0  # the same content: resumed
        assert len(fake.bodies) == 5
        assert main([*argv, "--data", str(other)]) == 0
        assert len(fake.bodies) == 10  # other text under the same keys: asked again
    out = capsys.readouterr().out
    assert re.findall(r"(\d+) judged now, (\d+) resumed", out) == [("5", "0"), ("0", "5"), ("5", "0")]
    runtime = Runtime()
    try:
        store = JudgmentStore(runtime.db, "components")
        (stored,) = store.judges()
        assert stored.judgments == 10  # both texts' verdicts are kept and counted
        assert len(store.judged(stored.judge)) == 5
        # Scored against the references, an item counts once: its latest verdict.
        labelled = store.labelled(stored.judge)
        assert len(labelled) == 5 and {item for item, _, _ in labelled} == store.judged(stored.judge)
    finally:
        runtime.db.close()


def test_grice_with_another_debate_under_the_same_id_is_judged_again(monkeypatch, tmp_path):
    first = write_rad_debates(tmp_path / "first.jsonl", debates=1)
    other = tmp_path / "other.jsonl"
    other.write_text(first.read_text(encoding="utf-8").replace("cars should go", "bikes should stay"),
                     encoding="utf-8")
    argv = ["eval", "grice", "--strategy", "zsl", "--no-rationale"]
    with FakeServer([chat_reply("Yes")]) as fake:
        fake_backend(monkeypatch, fake)
        assert main([*argv, "--debates", str(first)]) == 0
        asked = len(fake.bodies)
        assert asked > 0
        assert main([*argv, "--debates", str(first)]) == 0
        assert len(fake.bodies) == asked  # resumed
        assert main([*argv, "--debates", str(other)]) == 0  # "deb-0" again, with other messages
        assert len(fake.bodies) == 2 * asked
    runtime = Runtime()
    try:
        store = JudgmentStore(runtime.db, "grice")
        (stored,) = store.judges()
        assert stored.judgments == 2 * len(store.judged(stored.judge))  # both debates' verdicts are kept
    finally:
        runtime.db.close()


def test_a_pair_with_the_same_ids_and_other_texts_has_another_digest(db, tmp_path):
    """The pairwise payload names the arguments by id; the texts the judge reads are in the item's
    sides, and so in its digest."""
    ctx = SimpleNamespace(db=db, data_dir=tmp_path, dataset_path=lambda name: None)
    item = PAIRWISE.items(ctx, default_options(PAIRWISE, dimension=["logical"], topics=[20], limit=1))[0]
    corpus, pair = load_corpus(), item.payload
    assert [side.text for side in item.sides] == [
        corpus.argument(pair.topic_id, pair.a).text, corpus.argument(pair.topic_id, pair.b).text]
    a, b = item.sides
    reworded_b = replace(item, sides=(a, ItemSide(b.heading, b.text + " Besides, it is cheaper.")))
    assert replace(item).digest == item.digest and reworded_b.digest != item.digest


async def test_a_changed_default_of_a_judge_setting_is_a_new_judge(monkeypatch):
    """A token limit left at its default is in the identity at its value: a new default is a new judge."""
    options = default_options(COMPONENTS)
    with FakeServer([chat_reply("Premise")]) as fake:
        async with LLMClient(fake.profile()) as client:
            before = await judge_id(COMPONENTS, client, "mad", options)
            monkeypatch.setattr("engines.tasks.components.DEFAULT_TURN_TOKENS", 1024)
            after = await judge_id(COMPONENTS, client, "mad", options)
    assert before.options != after.options and before.name != after.name
    assert before.variant == after.variant


PROMPT_MODULE = "argtui_toy_prompts"


class ToyTask(TaskBase):
    """A task whose one prompt template lives in a module of the test's own."""

    name = "toy-prompted"
    title = "Toy: asks its prompt"
    labels = ("yes", "no")

    def variants(self) -> tuple[str, ...]:
        return ("plain",)

    def draw(self, ctx, rng, **filters: str) -> TaskItem:
        return TaskItem("n3", "number 3", "3")

    async def judge(self, ctx, item: TaskItem, variant: str, client: LLMClient, options) -> Verdict:
        prompt = importlib.import_module(PROMPT_MODULE).QUESTION.format(body=item.body)
        answer = await client.chat([{"role": "user", "content": prompt}])
        return Verdict(label=answer.text.strip().lower())


async def test_a_changed_prompt_template_is_a_new_judge_and_the_old_verdicts_stay(db, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / f"{PROMPT_MODULE}.py"
    module.write_text('QUESTION = "Is {body} odd? Answer yes or no."\n', encoding="utf-8")
    sys.modules.pop(PROMPT_MODULE, None)
    task, items = ToyTask(), [TaskItem(f"n{n}", f"number {n}", str(n)) for n in range(3)]
    with FakeServer([chat_reply("yes")]) as fake:
        async with LLMClient(fake.profile()) as client:
            async def judge(item: TaskItem) -> Verdict:
                return await task.judge(None, item, "plain", client, None)

            before = await judge_id(task, client, "plain", TaskOptions())
            await run_tracked(db, RunSpec(task.name, before, {}), items, judge)
            assert len(fake.bodies) == 3 and "odd?" in fake.bodies[0]["messages"][0]["content"]

            module.write_text('QUESTION = "Is {body} an odd number? Say yes or no."\n', encoding="utf-8")
            importlib.reload(importlib.import_module(PROMPT_MODULE))
            monkeypatch.setattr(identity, "_known", {})  # identities are kept per process: as a new one
            after = await judge_id(task, client, "plain", TaskOptions())
            assert after.prompts != before.prompts and after.name != before.name
            assert (after.profile, after.model, after.variant, after.options) == (
                before.profile, before.model, before.variant, before.options)
            outcome = await run_tracked(db, RunSpec(task.name, after, {}), items, judge)
            assert outcome.judged_now == 3 and len(fake.bodies) == 6  # nothing resumed of the old template's
            assert "odd number?" in fake.bodies[-1]["messages"][0]["content"]
    sys.modules.pop(PROMPT_MODULE, None)
    store = JudgmentStore(db, task.name)
    assert {stored.judge for stored in store.judges()} == {before, after}
    assert all(stored.judgments == 3 for stored in store.judges())
    old = store.load(before, items)
    assert set(old) == {"n0", "n1", "n2"}  # the old judge's verdicts are still found
    assert all(verdict.seconds > 0 for verdict in old.values())  # timed by the runner: the judge sets none


async def test_a_changed_profile_sampling_is_a_new_judge_and_the_old_verdicts_stay(tmp_path):
    runtime = Runtime()
    server = ScriptedServer({})
    try:
        options = default_options(COMPONENTS, data=write_brat(tmp_path, ESSAY), split="all")
        items = COMPONENTS.items(runtime, options)
        with FakeServer(server) as fake:
            plain = fake.profile(name="scripted", kind="llamacpp", retries=0)
            nucleus = plain.model_copy(update={"sampling": Sampling(top_p=0.9)})
            async with LLMClient(plain) as client:
                first = await run_task(runtime, COMPONENTS, client, "vanilla", options, items)
            async with LLMClient(nucleus) as client:
                second = await run_task(runtime, COMPONENTS, client, "vanilla", options, items)
            assert first.judge.sampling == "" and second.judge.sampling != ""
            # The sampling goes in every request: the requests' digest changes with it.
            assert first.judge.name != second.judge.name and first.judge.prompts != second.judge.prompts
            assert second.outcome.judged_now == 5 and len(server.bodies) == 10  # asked anew, not resumed
            assert all(body.get("top_p") == 0.9 for body in server.bodies[5:])  # what the digest stands for
        store = JudgmentStore(runtime.db, "components")
        assert {stored.judge for stored in store.judges()} == {first.judge, second.judge}
        assert len(store.load(first.judge, items)) == 5
    finally:
        runtime.db.close()


# The judgment table as schema 5 had it: one row per (task, judge, item), the judge's options only in its name.
SCHEMA_5_JUDGMENT = Table(
    "judgment", MetaData(),
    Column("id", Integer, primary_key=True),
    *(Column(name, String, nullable=False) for name in ("task", "judge", "profile", "model", "variant", "item")),
    Column("reference", String), Column("valid", Boolean, nullable=False), Column("verdict", JSON, nullable=False),
    Column("run_id", Integer), Column("created_at", DateTime, nullable=False),
    UniqueConstraint("task", "judge", "item"),
)


def test_a_schema_5_database_keeps_its_judges_and_stores_new_content_beside_the_old(db_url):
    plain = JudgeId.of("gpu", "m", "mad")
    optioned = JudgeId(profile="gpu", model="m", variant="mad", options="0badcafe")
    db = Database(db_url)
    with db.connection() as conn:
        conn.execute(text("DROP TABLE judgment"))
        SCHEMA_5_JUDGMENT.create(conn)
        conn.execute(SCHEMA_5_JUDGMENT.insert(), [
            {"task": "components", "judge": judge.name, "profile": "gpu", "model": "m", "variant": "mad",
             "item": "essay1/T1", "reference": "Claim", "valid": True, "verdict": {"label": label},
             "run_id": None, "created_at": datetime(2026, 1, 1)}
            for judge, label in ((plain, "Claim"), (optioned, "Premise"))
        ])
        write_schema_version(conn, 5)
    db.close()
    db = Database(db_url)
    try:
        assert db.schema_version == SCHEMA_VERSION == 8
        store = JudgmentStore(db, "components")
        assert {stored.judge for stored in store.judges()} == {plain, optioned}  # from columns, names unchanged
        assert store.latest(optioned) == {"essay1/T1": Verdict(label="Premise")}
        item = TaskItem("essay1/T1", "T1", "a text judged now", reference="Claim")
        assert store.load(plain, [item]) == {}  # stored before contents were digested: not this content
        store.save(plain, [(item, Verdict(label="Premise"))])
        assert store.load(plain, [item]) == {"essay1/T1": Verdict(label="Premise")}
        assert store.latest(plain) == {"essay1/T1": Verdict(label="Premise")}
        counts = {stored.judge: stored.judgments for stored in store.judges()}
        assert counts == {plain: 2, optioned: 1}  # the old verdict stays beside the new one
    finally:
        db.close()
