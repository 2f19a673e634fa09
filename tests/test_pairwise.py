"""Pairwise judges without a model: the seed's prompts and few-shot rule, the majority rule,
item selection, the store, the evaluation, and garbage output kept as invalid."""

from __future__ import annotations

import json

import httpx
import pytest

from engines.datasets.webis import Comparison, load_webis
from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from engines.llm.types import LabelChoice, Usage
from engines.pairwise.evaluation import (
    JudgedPair,
    evaluate,
    expert_judgments,
    judged_from_record,
    position_bias,
)
from engines.pairwise.fewshot import NoFewShotExample, few_shot_examples, select_example_comparisons
from engines.pairwise.judge import (
    JudgeSettings,
    combine_orders,
    argmax_label,
    judge_pair,
    majority_label,
    mode_of_variant,
    parse_label,
)
from engines.pairwise.prompts import ExamplePair, FewShotExamples, messages, system_prompt
from engines.pairwise.run import PairItem, PairJudge, SelectionError, run_pairwise, select_items
from store.pairwise import PairwiseRepository


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
    assert verdict.run_labels == ("A", "A")  # as answered in each order: a position bias
    assert verdict.distribution == pytest.approx({"A": 0.55, "B": 0.35, "Tie": 0.1})
    assert verdict.label == "A" and verdict.prompt_tokens == 20


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


def test_store_roundtrip_and_resume_keys(db, corpus):
    repository = PairwiseRepository(db)
    items = select_items(corpus, ["logical"], [20], limit=3)
    for item, label in zip(items, ("A", None, "Tie")):
        repository.add(
            judge="m@p", variant="zero/runs3@t1", dimension=item.dimension, topic_id=item.topic_id,
            a_uid=item.a_uid, b_uid=item.b_uid, expert=item.expert, label=label,
            run_labels=(label, label, None), distribution={"A": 1.0} if label else {}, raw="x",
        )
    repository.add(  # the same pair again: ignored, the first judgment stays
        judge="m@p", variant="zero/runs3@t1", dimension=items[0].dimension, topic_id=20,
        a_uid=items[0].a_uid, b_uid=items[0].b_uid, expert=items[0].expert, label="B",
        run_labels=("B",), distribution={}, raw="",
    )
    assert repository.done_keys("m@p", "zero/runs3@t1") == {item.key for item in items}
    assert repository.done_keys("m@p", "few/runs3@t1") == set()
    [stored] = repository.judges()
    assert (stored.judge, stored.variant, stored.judgments, stored.invalid) == ("m@p", "zero/runs3@t1", 3, 1)
    records = repository.judgments("m@p", "zero/runs3@t1")
    judged = [judged_from_record(r) for r in records]
    assert [j.item for j in judged] == items
    assert [j.label for j in judged] == ["A", None, "Tie"]
    assert judged[0].run_labels == ("A", "A", None)
    assert records[0].distribution == {"A": 1.0}


# ---------------------------------------------------------------------- garbage output


def garbage_transport():
    """A server that ignores the constraint and rambles (fault injection)."""
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        calls.append(body)
        choices = [
            {"index": i, "message": {"role": "assistant", "content": "Well, it depends"}, "finish_reason": "stop"}
            for i in range(body.get("n", 1))
        ]
        return httpx.Response(200, json={"choices": choices, "usage": {"prompt_tokens": 50, "completion_tokens": 3}})

    return httpx.MockTransport(handler), calls


async def test_garbage_output_is_stored_as_invalid_and_counted(db, corpus):
    transport, calls = garbage_transport()
    profile = BackendProfile(name="garbage", kind="llamacpp", base_urls=["http://fake.test/v1"], model="m")
    items = select_items(corpus, ["logical"], [20], limit=2)
    repository = PairwiseRepository(db)
    async with LLMClient(profile, transport=transport) as client:
        settings = JudgeSettings("zero", "runs")
        verdict = await judge_pair(client, settings, "logical", "a", "b")
        assert not verdict.valid and verdict.run_labels == (None, None, None)
        assert verdict.raw == "Well, it depends\nWell, it depends\nWell, it depends"
        assert calls[-1]["n"] == 3 and "grammar" in calls[-1]  # one request, constrained

        def store(item: PairItem, result) -> None:
            repository.add(
                judge="m@garbage", variant=settings.variant, dimension=item.dimension, topic_id=item.topic_id,
                a_uid=item.a_uid, b_uid=item.b_uid, expert=item.expert, label=result.label,
                run_labels=result.run_labels, distribution=result.distribution, raw=result.raw,
            )

        batch = await run_pairwise(items, PairJudge(client, settings, corpus), concurrency=2,
                                   is_done=lambda item: False, on_result=store)
    assert batch.progress.invalid == 2
    judged = [judged_from_record(r) for r in repository.judgments("m@garbage", settings.variant)]
    assert len(judged) == 2 and all(j.label is None for j in judged)
    assert all(r.raw.startswith("Well") for r in repository.judgments("m@garbage", settings.variant))
    [row] = evaluate(corpus, "garbage", judged, mode="runs").table_rows()
    assert row["invalid"] == 2 and row["percent"] == 0.0
