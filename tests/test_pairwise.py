"""Pairwise judges without a model: the seed's prompts and few-shot rule, the majority rule,
item selection, the task (items, Arena draws, report, `--judge experts`), old judgments
carried into the judgment store, and garbage output kept as invalid."""

from __future__ import annotations

import json
import random
import re
from types import SimpleNamespace

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.datasets.webis import Comparison, load_webis
from engines.errors import ArgtuiError
from engines.judging.evaluate import run_task
from engines.judging.store import JudgmentStore
from engines.judging.task import default_options, task
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.llm.types import LabelChoice, Usage
from engines.pairwise.evaluation import JudgedPair, evaluate, expert_judgments, judged_pair, position_bias
from engines.pairwise.fewshot import NoFewShotExample, few_shot_examples, select_example_comparisons
from engines.pairwise.judge import (
    JudgeSettings,
    argmax_label,
    combine_orders,
    judge_pair,
    majority_label,
    mode_of_variant,
    parse_label,
    run_labels,
)
from engines.pairwise.prompts import LABELS, ExamplePair, FewShotExamples, messages, system_prompt
from engines.pairwise.run import PairItem, SelectionError, select_items
from engines.tasks.pairwise import TASK, write_reports
from fakes import FakeServer, chat_reply
from store import Database
from store.pairwise import copy_v1


@pytest.fixture(scope="module")
def corpus():
    return load_webis()


# ---------------------------------------------------------------------- prompts


def test_zero_shot_prompt_is_the_seed_text():
    chat = messages("zero", "rhetorical", "first text", "second text")
    assert chat == [
        {"role": "system", "content": "You are given two arguments: Argument A and Argument B. Decide which "
         "one is rhetorically stronger: Reply with only one of the following options: A, B, or Tie."},
        {"role": "user", "content": "Argument A: first text\nArgument B: second text"},
    ]


def test_few_shot_prompt_lists_the_three_examples_in_the_seed_layout():
    examples = FewShotExamples(ExamplePair("a1", "b1"), ExamplePair("a2", "b2"), ExamplePair("a3", "b3"))
    assert system_prompt("few", "logical", examples) == (
        "You are given two arguments: Argument A and Argument B. Decide which one is logically stronger: "
        "Reply with only one of the following options: A, B, or Tie.\n\n"
        "Examples:\n"
        "Argument A: a1\nArgument B: b1\nA\n\n"
        "Argument A: a2\nArgument B: b2\nB\n\n"
        "Argument A: a3\nArgument B: b3\ntie"
    )
    with pytest.raises(ValueError):
        system_prompt("few", "logical")


def test_chain_of_thought_prompt_carries_the_dimension_criteria():
    text = system_prompt("cot", "dialectical")
    assert text.startswith("You are given two arguments: Argument A and Argument B.\n"
                           "Decide which one is dialectically stronger considering these criteria:\n"
                           "- which would be acceptable to the audience?")
    assert "- which better anticipates or refutes counterarguments?" in text
    assert text.endswith("Let\u2019s think step by step and reply with only one of the following options: A, B, or Tie.")
    rhetoric = system_prompt("cot", "rhetorical")
    assert rhetoric.count("\n- ") == 5 and "authorative/trust worthy" in rhetoric and "appropiate style" in rhetoric
    assert system_prompt("cot", "logical").count("\n- ") == 3


# ---------------------------------------------------------------------- few-shot rule


def test_few_shot_rule_on_a_fixture_topic():
    scores = {(1, 1): 2.0, (1, 2): -1.0, (1, 3): 0.5, (1, 4): 0.45, (1, 5): 0.0}
    comparisons = [
        Comparison(7, (1, 1), (1, 3), "A"),  # gap +1.5
        Comparison(7, (1, 1), (1, 2), "A"),  # gap +3.0: the A example
        Comparison(7, (1, 2), (1, 3), "B"),  # gap -1.5
        Comparison(7, (1, 5), (1, 1), "B"),  # gap -2.0: the B example
        Comparison(7, (1, 3), (1, 5), "Tie"),  # |gap| 0.5
        Comparison(7, (1, 4), (1, 3), "Tie"),  # |gap| 0.05: the Tie example
        Comparison(7, (1, 4), (1, 5), "A"),  # not a Tie: never the Tie example
    ]
    a, b, tie = select_example_comparisons(comparisons, scores.__getitem__)
    assert (a.a, a.b) == ((1, 1), (1, 2))
    assert (b.a, b.b) == ((1, 5), (1, 1))
    assert (tie.a, tie.b) == ((1, 4), (1, 3))
    with pytest.raises(NoFewShotExample, match="Tie"):
        select_example_comparisons([c for c in comparisons if c.label != "Tie"], scores.__getitem__)


def test_few_shot_examples_on_a_real_topic_follow_the_rule(corpus):
    topic, dimension = 20, "dialectical"
    pool = [c for c in corpus.comparisons[dimension] if c.topic_id == topic]

    def score(key):
        return corpus.argument(topic, key).scores[dimension]

    best_a = max(pool, key=lambda c: score(c.a) - score(c.b))
    best_b = max(pool, key=lambda c: score(c.b) - score(c.a))
    best_tie = min((c for c in pool if c.label == "Tie"), key=lambda c: abs(score(c.a) - score(c.b)))
    examples = few_shot_examples(corpus, topic, dimension)
    text = lambda key: corpus.argument(topic, key).text  # noqa: E731
    assert examples.a_wins == ExamplePair(text(best_a.a), text(best_a.b))
    assert examples.b_wins == ExamplePair(text(best_b.a), text(best_b.b))
    assert examples.tie == ExamplePair(text(best_tie.a), text(best_tie.b))


# ---------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        (("A", "A", "A"), "A"),
        (("A", "A", "B"), "A"),
        (("B", "Tie", "B"), "B"),
        (("A", "A", "Tie"), "A"),
        (("A", "B", "Tie"), "Tie"),  # three-way split
        (("A", "Tie", "Tie"), "Tie"),  # a split with an explicit Tie
        (("Tie", "Tie", "Tie"), "Tie"),
        (("A", "A", None), "A"),
        (("B", None, None), "Tie"),  # one vote of three is no majority
        ((None, None, None), None),  # all invalid: invalid
    ],
)
def test_majority_rule(runs, expected):
    assert majority_label(runs) == expected


def test_labels_from_constrained_output():
    assert parse_label(" Tie\n") == "Tie"
    assert parse_label('{"label": "B"}') == "B"
    assert parse_label("Argument A") is None and parse_label("{broken") is None
    assert argmax_label({"A": 0.2, "B": 0.5, "Tie": 0.3}) == "B"
    assert argmax_label({"A": 0.4, "B": 0.4, "Tie": 0.2}) == "A"
    assert argmax_label({}) is None
    assert mode_of_variant("few/runs3@t1") == "runs" and mode_of_variant("cot/swap@t0") == "swap"
    assert JudgeSettings("few", "runs").variant == "few/runs3@t1"
    assert JudgeSettings("zero", "logprob").variant == "zero/logprob@t0"


def test_swap_mode_undoes_the_swap_and_averages():
    usage = Usage(prompt_tokens=10, completion_tokens=1)
    original = LabelChoice("A", {"A": 0.8, "B": 0.1, "Tie": 0.1}, "logprobs", "A", usage)
    swapped = LabelChoice("A", {"A": 0.6, "B": 0.3, "Tie": 0.1}, "logprobs", "A", usage)  # A = first shown
    verdict = combine_orders(original, swapped)
    assert run_labels(verdict) == ("A", "A")  # as answered in each order: a position bias
    assert verdict.distribution == pytest.approx({"A": 0.55, "B": 0.35, "Tie": 0.1})
    assert verdict.label == "A" and verdict.valid
    assert (verdict.usage.prompt_tokens, verdict.usage.completion_tokens) == (20, 2)
    one_sided = combine_orders(original, LabelChoice(None, {}, "text", "rambling", usage))
    assert one_sided.distribution == original.distribution and run_labels(one_sided) == ("A", None)
    neither = combine_orders(LabelChoice(None, {}, "text", "x", usage), LabelChoice(None, {}, "text", "y", usage))
    assert not neither.valid and neither.invalid_reason == "not one of A, B, Tie" and neither.raw == "x\ny"


# ---------------------------------------------------------------------- items and evaluation


def test_item_selection(corpus):
    items = select_items(corpus, ["logical"], [20])
    assert len(items) == 345 and {i.topic_id for i in items} == {20}
    small = select_items(corpus, ["logical"], [20], limit=10)
    larger = select_items(corpus, ["logical"], [20], limit=40)
    assert len(small) == 10 and set(small) <= set(larger)  # a larger limit extends a smaller one
    assert [items.index(i) for i in small] == sorted(items.index(i) for i in small)  # file order
    assert small != items[:10]  # a spread sample, not the head of the file
    both = select_items(corpus, ["logical", "rhetorical"], [20], limit=5)
    assert [i.dimension for i in both] == ["logical"] * 5 + ["rhetorical"] * 5
    with pytest.raises(SelectionError, match="dimension"):
        select_items(corpus, ["ethical"])
    with pytest.raises(SelectionError, match="topic"):
        select_items(corpus, ["logical"], [99])
    assert small[0].key.startswith("logical/20/") and "~20/" in small[0].key
    assert [PairItem.from_key(item.key, item.expert) for item in both] == both


def test_experts_agree_perfectly_with_themselves_and_position_bias_is_counted(corpus):
    items = select_items(corpus, ["logical"], [20])
    report = evaluate(corpus, "experts", expert_judgments(items))
    [row] = report.table_rows()
    assert row["kappa"] == pytest.approx(1.0) and row["percent"] == pytest.approx(1.0)
    assert row["spearman"] > 0.95 and row["invalid"] == 0
    swap = [
        JudgedPair(items[0], "A", ("A", "B")),  # consistent, no bias
        JudgedPair(items[1], "Tie", ("A", "A")),  # inconsistent: the first-shown argument both times
        JudgedPair(items[2], None, (None, "B")),
    ]
    bias = position_bias(swap)
    assert bias.pairs == 3
    assert bias.consistent == pytest.approx(1 / 3)
    assert bias.first_position == pytest.approx(3 / 5)  # A, A, A of the decisive A, B, A, A, B



# ---------------------------------------------------------------------- the task


def options(**values) -> SimpleNamespace:
    return default_options(TASK, **{"dimension": ["logical"], "topics": [20], "bootstrap": 0, **values})


def context(db, tmp_path) -> SimpleNamespace:
    return SimpleNamespace(db=db, data_dir=tmp_path, dataset_path=lambda name: None)


def test_the_task_is_registered_with_the_flags_of_the_old_command():
    assert task("pairwise") is TASK
    assert TASK.variants() == ("zero", "few", "cot") and TASK.variant_flag == "prompt"
    assert TASK.filters(None) == {"dimension": ("logical", "rhetorical", "dialectical")}
    assert {o.flag for o in TASK.options} == {
        "--dimension", "--topics", "--mode", "--runs", "--temperature", "--run-requests", "--data", "--bootstrap",
        "--fewshot-rule", "--versus",
    }
    assert TASK.judge_variant("few", options()) == "few/runs3@t1"
    assert TASK.judge_variant("zero", options(mode="logprob")) == "zero/logprob@t0"
    assert TASK.judge_variant("cot", options(runs=5, temperature=0.7)) == "cot/runs5@t0.7"
    client = SimpleNamespace(profile=SimpleNamespace(max_concurrency=8))
    assert [TASK.concurrency("zero", client, options(mode=mode)) for mode in ("runs", "logprob", "swap")] == [2, 8, 4]
    with pytest.raises(ArgtuiError, match="--runs"):
        TASK.check_options(options(runs=0, output=None))


def test_batch_items_carry_the_expert_label_and_draws_the_published_scores(corpus, db, tmp_path):
    ctx = context(db, tmp_path)
    items = TASK.items(ctx, options(limit=3))
    pairs = select_items(corpus, ["logical"], [20], limit=3)
    assert [item.key for item in items] == [pair.key for pair in pairs]
    assert [item.reference for item in items] == [pair.expert for pair in pairs]  # the plain label, for scoring
    assert [item.payload for item in items] == pairs

    first, again = TASK.draw(ctx, random.Random(4)), TASK.draw(ctx, random.Random(4))
    assert first == again
    assert [side.heading.split(" (")[0] for side in first.sides] == ["Argument A", "Argument B"]
    assert first.reference in LABELS and first.reference == first.payload.expert  # the plain label, as stored
    assert first.reference_note.startswith("published logical scores: A ")
    rhetorical = TASK.draw(ctx, random.Random(4), dimension="rhetorical")
    assert "· rhetorical ·" in rhetorical.title and "rhetorically stronger" in rhetorical.body
    assert rhetorical.payload.dimension == "rhetorical"


def test_the_report_is_table_1_and_table_4_with_cost(corpus, db, tmp_path):
    ctx = context(db, tmp_path)
    items = TASK.items(ctx, options(limit=20))
    flip = {"A": "B", "B": "A", "Tie": "Tie"}
    verdicts = {
        item.key: Verdict(label=item.reference, data={"run_labels": [item.reference, item.reference,
                                                                      flip[item.reference]]},
                          usage=Usage(prompt_tokens=300, completion_tokens=3, calls=3))
        for item in items
    }
    judge = JudgeId.of("gpu", "m", "zero/runs3@t1")
    report = TASK.report(ctx, judge, items, verdicts, options(), run_id=1)
    assert report.title == "m@gpu zero/runs3@t1 vs experts"
    table, variability = report.tables
    assert table.columns == ("dimension", "pairs", "invalid", "r", "ρ", "τ", "MAE", "RMSE", "κ", "α", "%")
    [row] = table.rows
    assert row[:3] == ("logical", 20, 0) and row[-1] == "100.00" and row[-3] == "1.000"
    ties = sum(1 for item in items if item.reference == "Tie")
    assert variability.columns == ("dimension", "pairs", "all equal %", "2 equal %", "all unequal %", "α")
    assert variability.rows == ((
        "logical", 20, f"{ties / 20 * 100:.2f}", f"{(20 - ties) / 20 * 100:.2f}", "0.00",
        f"{report.evaluation.dimensions[0].variability.alpha:.3f}",
    ),)
    assert report.notes[-1] == (
        "LLM cost per judgment over the 20 stored verdicts: 3.00 answers, 300.0 prompt + 3.0 completion tokens"
    )
    assert report.data["variant"] == "zero/runs3@t1" and report.data["table"][0]["pairs"] == 20
    assert "scores" not in report.data["dimensions"][0]  # --json stays short; --output has them

    write_reports(tmp_path / "out.json", [(report, {"run_id": 7})])
    [saved] = json.loads((tmp_path / "out.json").read_text())["results"]
    assert saved["run_id"] == 7 and saved["variant"] == "zero/runs3@t1"
    assert len(saved["dimensions"][0]["scores"]) == len(report.evaluation.dimensions[0].judge_scores) > 2
    write_reports(tmp_path / "out.csv", [(report, {})])
    lines = (tmp_path / "out.csv").read_text().splitlines()
    assert lines[0] == "judge,dimension,pairs,invalid,pearson,spearman,kendall,mae,rmse,kappa,alpha,percent"
    assert lines[1].startswith("m@gpu zero/runs3@t1,logical,20,0,") and lines[1].endswith(",1.0,1.0,1.0")


def test_the_experts_judge_needs_no_backend_and_stores_nothing(capsys, tmp_path):
    args = ["eval", "pairwise", "--judge", "experts", "--dimension", "logical", "--topics", "20", "--bootstrap", "0"]
    assert main([*args, "--json", "--output", str(tmp_path / "experts.csv")]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert result["variant"] == "expert comparisons" and result["judge"] == "experts"
    [row] = result["table"]
    assert row["pairs"] == 345 and row["kappa"] == pytest.approx(1.0) and row["spearman"] > 0.95
    assert (tmp_path / "experts.csv").read_text().splitlines()[1].startswith("experts,logical,345,0,")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "experts: BT on their own comparisons vs the published scores" in out and "logical" in out
    db = Database(load_config().paths.database)
    try:
        assert JudgmentStore(db, "pairwise").judges() == []
    finally:
        db.close()
    assert main([*args, "--output", str(tmp_path / "experts.txt")]) == 1
    assert "must end in .json or .csv" in capsys.readouterr().err


# ---------------------------------------------------------------------- judgments of schema 1


OLD_TABLE = """
CREATE TABLE pairwise_judgment (
    id INTEGER NOT NULL, judge VARCHAR NOT NULL, variant VARCHAR NOT NULL, dimension VARCHAR NOT NULL,
    topic_id INTEGER NOT NULL, a_uid VARCHAR NOT NULL, b_uid VARCHAR NOT NULL, expert VARCHAR NOT NULL,
    label VARCHAR, run_labels_json VARCHAR NOT NULL, distribution_json VARCHAR NOT NULL, raw VARCHAR NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, run_id INTEGER,
    created_at DATETIME NOT NULL, PRIMARY KEY (id), UNIQUE (judge, variant, dimension, a_uid, b_uid),
    FOREIGN KEY(run_id) REFERENCES batch_run (id)
)
"""


def test_old_pairwise_judgments_are_copied_into_the_judgment_store(db, corpus):
    with db.engine.begin() as conn:
        assert copy_v1(conn) == 0  # no old table: nothing to do
    first, second = select_items(corpus, ["logical"], [20], limit=2)
    with db.engine.begin() as conn:
        conn.exec_driver_sql(OLD_TABLE)
        for pair, label, runs, distribution, raw in (
            (first, "A", ["A", "A", "Tie"], {"A": 0.6667, "B": 0.0, "Tie": 0.3333}, "A\nA\nTie"),
            (second, None, [None, None, None], {}, "well\nwell\nwell"),
        ):
            conn.exec_driver_sql(
                "INSERT INTO pairwise_judgment (judge, variant, dimension, topic_id, a_uid, b_uid, expert, label,"
                " run_labels_json, distribution_json, raw, prompt_tokens, completion_tokens, run_id, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, '2026-12-01 11:04:17.085087')",
                ("org/m-7b@gpu", "zero/runs3@t1", pair.dimension, pair.topic_id, pair.a_uid, pair.b_uid,
                 pair.expert, label, json.dumps(runs), json.dumps(distribution), raw, 300, 3),
            )
        assert copy_v1(conn) == 2
    with db.engine.begin() as conn:
        copy_v1(conn)  # again: the copies are kept, not doubled

    store = JudgmentStore(db, "pairwise")
    [stored] = store.judges()
    judge = JudgeId.of("gpu", "org/m-7b", "zero/runs3@t1")
    assert (stored.judge, stored.judgments, stored.invalid) == (judge, 2, 1)
    assert stored.name == "org/m-7b@gpu zero/runs3@t1"
    verdicts = store.latest(judge)
    assert verdicts == {
        first.key: Verdict(label="A", data={"run_labels": ["A", "A", "Tie"]},
                           distribution={"A": 0.6667, "B": 0.0, "Tie": 0.3333}, raw="A\nA\nTie",
                           usage=Usage(prompt_tokens=300, completion_tokens=3, calls=3)),
        second.key: Verdict(data={"run_labels": [None, None, None]}, raw="well\nwell\nwell",
                            invalid_reason="not one of A, B, Tie",
                            usage=Usage(prompt_tokens=300, completion_tokens=3, calls=3)),
    }
    assert [(item, reference) for item, reference, _ in store.labelled(judge)] == [
        (first.key, first.expert), (second.key, second.expert),
    ]
    judged = [judged_pair(PairItem.from_key(key, pair.expert), verdicts[key])
              for key, pair in ((first.key, first), (second.key, second))]
    assert [j.item for j in judged] == [first, second] and judged[0].run_labels == ("A", "A", "Tie")


# ---------------------------------------------------------------------- through a server


def rambling(body: dict):
    """A server that ignores the constraint and rambles (fault injection)."""
    return chat_reply(*["Well, it depends"] * body.get("n", 1), prompt_tokens=50, completion_tokens=3)


async def test_garbage_output_is_stored_as_invalid_and_counted(db, corpus, tmp_path):
    with FakeServer(rambling) as fake:
        async with LLMClient(fake.profile(kind="llamacpp")) as client:
            verdict = await judge_pair(client, JudgeSettings("zero", "runs"), "logical", "a", "b")
            assert not verdict.valid and run_labels(verdict) == (None, None, None)
            assert verdict.raw == "Well, it depends\nWell, it depends\nWell, it depends"
            assert verdict.usage.calls == 3 and verdict.usage.prompt_tokens == 50
            assert fake.bodies[-1]["n"] == 3 and "grammar" in fake.bodies[-1]  # one request, constrained

            ctx, opts = context(db, tmp_path), options(limit=2)
            run = await run_task(ctx, TASK, client, "zero", opts, TASK.items(ctx, opts))
    assert run.outcome.progress.invalid == 2 and run.outcome.judged_now == 2
    stored = JudgmentStore(db, "pairwise").load(run.judge, TASK.items(ctx, opts))
    assert len(stored) == 2 and all(v.invalid_reason == "not one of A, B, Tie" for v in stored.values())
    assert all(v.raw.startswith("Well") for v in stored.values())
    [row] = run.report.tables[0].rows
    assert row[:3] == ("logical", 2, 2) and row[-1] == "0.00"


def votes(body: dict):
    return chat_reply(*["A", "B", "A"][: body.get("n", 1)], prompt_tokens=40)


def test_eval_pairwise_stores_judgments_and_a_rerun_sends_no_request(capsys):
    with FakeServer(votes) as fake:
        load_config().add_backend(fake.profile(kind="llamacpp"), make_default=True)
        args = ["eval", "pairwise", "--dimension", "logical", "--topics", "20", "--limit", "2", "--bootstrap", "0",
                "--json"]
        assert main(args) == 0
        [first] = json.loads(capsys.readouterr().out)["results"]
        sent = len(fake.received)
        assert re.fullmatch(r"m@fake zero/runs3@t1 #[0-9a-f]{8}", first["judge"]) and first["judged_now"] == 2
        assert first["usage"]["calls"] == 6 and first["usage"]["prompt_tokens"] == 80
        assert len(fake.bodies) == 2  # one request with n=3 per pair
        assert first["table"][0]["pairs"] == 2 and first["dimensions"][0]["run_variability"]["items"] == 2

        assert main(args) == 0
        [again] = json.loads(capsys.readouterr().out)["results"]
        assert len(fake.received) == sent  # not one HTTP request
        assert (again["judged_now"], again["resumed"], again["usage"]["calls"]) == (0, 2, 0)
        assert again["table"] == first["table"] and again["run_id"] == first["run_id"]


def test_separate_runs_draw_their_seeds_from_the_prompt_and_the_run():
    from engines.pairwise.judge import run_seed

    one, other = [{"role": "user", "content": "pair 1"}], [{"role": "user", "content": "pair 2"}]
    seeds = {run_seed(chat, run) for chat in (one, other) for run in range(3)}
    assert len(seeds) == 6 and all(0 <= seed < 2**31 for seed in seeds)
    assert run_seed(one, 1) == run_seed([dict(one[0])], 1)  # fixed for a rerun
