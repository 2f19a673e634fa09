"""The pairwise protocol as the seed runs it: the few-shot example rule (label-consistent by
default, the literal reading on request), Table 3 (the best stored judge against the others)
and the run variability as Table 4's percentages."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.datasets.webis import load_webis
from engines.judging.store import JudgmentStore
from engines.judging.task import default_options
from engines.judging.verdict import JudgeId, Verdict
from engines.pairwise.fewshot import example_comparisons
from engines.pairwise.judge import SWAP
from engines.tasks.pairwise import TASK


@pytest.fixture(scope="module")
def corpus():
    return load_webis()


def prompts(corpus):
    return [(d, t) for d in corpus.comparisons for t in sorted(corpus.topics)]


def gap(corpus, topic, dimension, comparison):
    score = lambda key: corpus.argument(topic, key).scores[dimension]  # noqa: E731
    return score(comparison.a) - score(comparison.b)


def contradictions(corpus, rule):
    """(dimension, topic, example) of every example the experts labelled the other way."""
    found = []
    for dimension, topic in prompts(corpus):
        a, b, _ = example_comparisons(corpus, topic, dimension, rule)
        found += [(dimension, topic, "A")] * (a.label != "A") + [(dimension, topic, "B")] * (b.label != "B")
    return found


def test_the_default_rule_picks_the_largest_gap_among_the_experts_own_label(corpus):
    assert len(prompts(corpus)) == 60
    assert contradictions(corpus, "labelled") == []
    for dimension, topic in prompts(corpus):
        pool = [c for c in corpus.comparisons[dimension] if c.topic_id == topic]
        a, b, _ = example_comparisons(corpus, topic, dimension)
        best_a = max((c for c in pool if c.label == "A"), key=lambda c: gap(corpus, topic, dimension, c))
        best_b = max((c for c in pool if c.label == "B"), key=lambda c: -gap(corpus, topic, dimension, c))
        assert (a, b) == (best_a, best_b)
        assert gap(corpus, topic, dimension, a) > 0 > gap(corpus, topic, dimension, b)


def test_the_literal_rule_takes_the_largest_gap_over_all_pairs(corpus):
    for dimension, topic in prompts(corpus):
        pool = [c for c in corpus.comparisons[dimension] if c.topic_id == topic]
        a, b, tie = example_comparisons(corpus, topic, dimension, "literal")
        assert a == max(pool, key=lambda c: gap(corpus, topic, dimension, c))
        assert b == max(pool, key=lambda c: -gap(corpus, topic, dimension, c))
        assert tie == example_comparisons(corpus, topic, dimension)[2]  # both rules: the same Tie example
    assert sorted(contradictions(corpus, "literal")) == [
        ("dialectical", 4, "B"), ("dialectical", 11, "A"), ("dialectical", 16, "A"),
        ("logical", 1, "A"), ("rhetorical", 4, "A"),
    ]


@pytest.mark.llm
def test_the_literal_rule_is_its_own_judge_and_reaches_the_prompt(llama_profile, capsys):
    config = load_config()
    config.add_backend(llama_profile.model_copy(update={"timeout_s": 300}), make_default=True)
    # topic 1, logical: the literal A example is a pair the experts labelled B, so the prompts differ
    base = ["eval", "pairwise", "--prompt", "few", "--dimension", "logical", "--topics", "1", "--limit", "1",
            "--runs", "1", "--bootstrap", "0", "--json"]
    results = []
    for extra in ([], ["--fewshot-rule", "literal"]):
        assert main([*base, *extra]) == 0
        [result] = json.loads(capsys.readouterr().out)["results"]
        results.append(result)
    default, literal = results
    # Both names end in the digest of what else makes the judge (prompts, options); the rule changes it.
    digest = re.compile(r" #[0-9a-f]{8}$")
    assert digest.sub("", default["judge"]).endswith("few/runs1@t1") and literal["judge"] != default["judge"]
    assert digest.sub("", literal["judge"]) == digest.sub("", default["judge"])
    assert literal["usage"]["cached_calls"] == 0 and literal["usage"]["calls"] == 1  # another prompt


# ---------------------------------------------------------------------- Table 3 and Table 4


def ctx(db, tmp_path):
    return SimpleNamespace(db=db, data_dir=tmp_path, dataset_path=lambda name: None)


def options(**values):
    return default_options(TASK, **{"dimension": ["logical", "rhetorical"], "topics": [20], "bootstrap": 0,
                                    "limit": 40, **values})


def store_judge(db, items, name: str, label_of) -> JudgeId:
    judge = JudgeId.of("gpu", name, "zero/runs3@t1")
    JudgmentStore(db, "pairwise").save(judge, [
        (item, Verdict(label=label_of(item), data={"run_labels": [label_of(item)] * 3})) for item in items
    ])
    return judge


def test_versus_is_table_3_the_best_judge_against_each_other_on_the_same_pairs(db, tmp_path):
    context = ctx(db, tmp_path)
    items = TASK.items(context, options())
    expert = store_judge(db, items, "expert-like", lambda item: item.reference)
    twin = store_judge(db, items, "twin", lambda item: item.reference)
    swapped = store_judge(db, items, "swapped", lambda item: SWAP[item.reference])
    # judged only half the pairs: Table 3 compares on the pairs both judged
    half = store_judge(db, items[::2], "half", lambda item: item.reference)
    verdicts = JudgmentStore(db, "pairwise").latest(swapped)

    report = TASK.report(context, swapped, items, verdicts, options(versus=True), run_id=1)
    table = report.tables[-1]
    assert table.title == f"{expert.name} against the other judges (the seed's Table 3)"
    assert table.columns == ("judge", "pairs", "r", "ρ", "τ", "MAE", "RMSE", "κ", "α", "%")
    rows = {row[0]: row for row in table.rows}
    assert set(rows) == {half.name, swapped.name, twin.name}  # the best is not its own row
    assert rows[twin.name][1:] == (80, "1.000", "1.000", "1.000", "0.000", "0.000", "1.000", "1.000", "100.00")
    assert rows[half.name][1] == 40 and rows[half.name][-1] == "100.00"
    assert float(rows[swapped.name][2]) < 0 and float(rows[swapped.name][-1]) < 100
    versus = report.data["versus"]
    expert_table = TASK.report(context, expert, items, JudgmentStore(db, "pairwise").latest(expert), options(),
                               run_id=1).evaluation.mean
    assert versus["best"] == expert.name and versus["best_mean_correlation"] == pytest.approx(
        (expert_table["pearson"] + expert_table["spearman"] + expert_table["kendall"]) / 3
    )
    assert [dimension["dimension"] for dimension in versus["rows"][0]["dimensions"]] == ["logical", "rhetorical"]
    assert json.dumps(report.data)  # --json carries the same numbers

    # with several prompts, Table 3 follows the last one only (when every prompt is stored)
    earlier = TASK.report(context, swapped, items, verdicts, options(versus=True, variant=["zero", "few"]), run_id=1)
    assert "versus" not in earlier.data and len(earlier.tables) == len(report.tables) - 1


def test_versus_with_one_stored_judge_says_so(db, tmp_path):
    context = ctx(db, tmp_path)
    items = TASK.items(context, options())
    only = store_judge(db, items, "only", lambda item: item.reference)
    report = TASK.report(context, only, items, JudgmentStore(db, "pairwise").latest(only), options(versus=True),
                         run_id=1)
    assert report.notes[-1] == "Table 3 needs two stored judges of these pairs; 1 found"
    assert "versus" not in report.data


def test_run_variability_is_table_4_in_percent_per_dimension_and_overall(db, tmp_path):
    context = ctx(db, tmp_path)
    items = TASK.items(context, options())
    # logical: every pair's runs all differ; rhetorical: two of three agree
    runs = {"logical": ["A", "B", "Tie"], "rhetorical": ["A", "A", "B"]}
    verdicts = {item.key: Verdict(label="Tie", data={"run_labels": runs[item.payload.dimension]}) for item in items}
    report = TASK.report(context, JudgeId.of("gpu", "m", "zero/runs3@t1"), items, verdicts, options(), run_id=1)
    table = report.tables[1]
    assert table.title == "Run-to-run variability (the seed's Table 4)"
    assert [row[:5] for row in table.rows] == [
        ("logical", 40, "0.00", "0.00", "100.00"),
        ("rhetorical", 40, "0.00", "100.00", "0.00"),
        ("all", 80, "0.00", "50.00", "50.00"),
    ]
    assert report.data["variability"][2]["two_equal"] == 0.5
