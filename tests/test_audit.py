"""The judge audit over stored verdicts with known biases, built in a real SQLite store with the
store's own API: a judge that always names the argument shown first (asked in both orders), one that
always picks the longer argument (three runs alike), one that gives the experts' label (with recorded
usage). Their audit numbers follow from how they were built; then `argtui audit` prints them."""

from __future__ import annotations

import json

import pytest

from argtui.cli import main
from argtui.config import Paths
from engines.datasets.webis import load_webis
from engines.errors import ArgtuiError
from engines.judging import task as registry
from engines.judging.audit import MIN_ITEMS, audit, audit_task
from engines.judging.store import JudgmentStore, arena_key
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.types import Usage
from engines.pairwise.run import select_items
from store.db import Database

FIRST = JudgeId.of("gpu", "first-picker", "zero/swap@t0")
LONGER = JudgeId.of("gpu", "length-lover", "zero/runs3@t1")
EXPERT = JudgeId.of("gpu", "expert-copy", "zero/logprob@t0")
PAIRS = 40
USAGE = Usage(calls=1, prompt_tokens=200, completion_tokens=1)


def words(text: str) -> int:
    return len(text.split())


def lengths(corpus, item) -> tuple[int, int]:
    return words(corpus.argument(item.topic_id, item.a).text), words(corpus.argument(item.topic_id, item.b).text)


def stored(item) -> TaskItem:
    return TaskItem(item.key, item.key, "", reference=item.expert)


def insert_biased_judges(db: Database) -> list:
    corpus = load_webis()
    items = select_items(corpus, ["logical"], [20], limit=PAIRS)
    store = JudgmentStore(db, "pairwise")
    # Names A in both orders: as shown A, and A again once the texts are swapped (B as shown).
    store.save(FIRST, [(stored(item), Verdict(label="A", data={"run_labels": ["A", "A"]})) for item in items])
    longer = []
    for item in items:
        a, b = lengths(corpus, item)
        label = "Tie" if a == b else "A" if a > b else "B"
        longer.append((stored(item), Verdict(label=label, data={"run_labels": [label] * 3})))
    store.save(LONGER, longer)
    # The experts' label; the last answer came from the response cache (no server time).
    store.save(EXPERT, [
        (stored(item), Verdict(label=item.expert, data={"run_labels": [item.expert]},
                               usage=USAGE if n < PAIRS - 1 else Usage(calls=1, cached_calls=1), seconds=0.25))
        for n, item in enumerate(items)
    ])
    return items


def by_judge(db) -> dict:
    return {found.judge: found for found in audit_task(db, registry.task("pairwise"))}


def test_the_first_position_judge_is_never_consistent_and_always_names_the_first(db):
    items = insert_biased_judges(db)
    first = by_judge(db)[FIRST]
    assert first.judgments == PAIRS and first.invalid == 0
    assert (first.consistency.value, first.consistency.low, first.consistency.high) == (0.0, 0.0, 0.0)
    assert (first.first_position.value, first.first_position.low, first.first_position.high) == (1.0, 1.0, 1.0)
    assert first.consistency.items == first.first_position.items == PAIRS
    expert_a = sum(item.expert == "A" for item in items) / PAIRS
    assert 0 < expert_a < 1  # else κ below is undefined, not 0
    assert first.accuracy.value == pytest.approx(expert_a)
    assert first.kappa.value == 0.0  # a constant judge agrees no better than chance
    says = {figure.name: figure for figure in first.label_shares}
    assert says["says A"].value == 1.0 and says["says A"].reference == pytest.approx(expert_a)
    assert says["says B"].value == says["says Tie"].value == 0.0
    assert not first.runs_agree.value and "--mode runs" in first.runs_agree.missing


def test_the_length_judge_always_prefers_the_longer_text_and_the_experts_less_often(db):
    items = insert_biased_judges(db)
    corpus = load_webis()
    longer = by_judge(db)[LONGER]
    unequal = [item for item in items if lengths(corpus, item)[0] != lengths(corpus, item)[1]]
    decisive_experts = [item for item in unequal if item.expert in ("A", "B")]
    experts_longer = sum((item.expert == "A") == (lengths(corpus, item)[0] > lengths(corpus, item)[1])
                         for item in decisive_experts) / len(decisive_experts)
    assert longer.longer.value == 1.0 and longer.longer.items == len(unequal)
    assert longer.longer.reference == pytest.approx(experts_longer) and experts_longer < 1.0
    assert (longer.runs_agree.value, longer.runs_agree.items) == (1.0, PAIRS)
    assert longer.consistency.value is None and longer.first_position.value is None
    assert "argtui eval pairwise --mode swap" in longer.consistency.missing
    assert "0 stored" in longer.consistency.missing


def test_the_expert_judge_agrees_fully_and_costs_what_its_usage_recorded(db):
    insert_biased_judges(db)
    expert = by_judge(db)[EXPERT]
    assert (expert.accuracy.value, expert.accuracy.low, expert.accuracy.high) == (1.0, 1.0, 1.0)
    assert (expert.kappa.value, expert.kappa.low, expert.kappa.high) == (1.0, 1.0, 1.0)
    for figure, per_judgment in ((expert.prompt_tokens, 200), (expert.completion_tokens, 1), (expert.seconds, 0.25)):
        assert figure.items == PAIRS - 1  # the cached answer took no server time
        assert (figure.value, figure.low, figure.high) == pytest.approx((per_judgment * 1000,) * 3)
    says = {figure.name: figure for figure in expert.label_shares}
    assert all(figure.value == pytest.approx(figure.reference) for figure in says.values())


def test_a_figure_on_too_few_items_is_no_value_but_the_reason(db):
    [item] = select_items(load_webis(), ["logical"], [20], limit=1)
    JudgmentStore(db, "pairwise").save(FIRST, [
        (TaskItem(arena_key(item.key), "", "", reference=item.expert),
         Verdict(label="A", data={"run_labels": ["A", "A"]}, usage=USAGE, seconds=1.0)),
    ])
    [one] = audit_task(db, registry.task("pairwise"))
    assert one.judgments == 1
    for figure in one.figures():
        assert figure.value is None and figure.low is None and figure.high is None, figure.name
        assert f"needs at least {MIN_ITEMS}" in figure.missing, figure.name


def test_a_judge_filter_that_matches_nothing_names_the_tasks(db):
    insert_biased_judges(db)
    assert [found.judge for found in audit(db, [registry.task("pairwise")], "length")] == [LONGER]
    with pytest.raises(ArgtuiError, match="no stored judge of pairwise has 'nobody'"):
        audit(db, [registry.task("pairwise")], "nobody")


def test_argtui_audit_prints_every_number_with_its_items(argtui_home, capsys):
    paths = Paths.resolve()
    paths.data_dir.mkdir(parents=True, exist_ok=True)
    database = Database(paths.database)
    try:
        insert_biased_judges(database)
    finally:
        database.close()
    assert main(["audit", "--task", "pairwise", "--judge", "first-picker", "--json"]) == 0
    [printed] = json.loads(capsys.readouterr().out)
    assert printed["judge"] == FIRST.name and printed["judgments"] == PAIRS
    figures = {figure["name"]: figure for figure in printed["figures"]}
    assert figures["position consistency"]["value"] == 0.0 and figures["first position"]["value"] == 1.0
    assert figures["first position"]["items"] == PAIRS
    assert figures["seconds per 1k"]["value"] is None and "usage" in figures["seconds per 1k"]["missing"]

    assert main(["audit", "--task", "pairwise"]) == 0
    shown = capsys.readouterr().out
    assert all(judge.name in shown for judge in (FIRST, LONGER, EXPERT))
    assert "first position %" in shown and "argtui eval pairwise --mode swap" in shown
