"""The Grice evaluation protocol of the paper: the appendix prompts word for word (fixtures
copied from the paper's text), examples drawn at random with a seed and kept out of the
evaluated turns, and the report's reference judges (always yes, seeded random) with the
positive-class and the two-class macro scores, checked against hand-computed values."""

from __future__ import annotations

import json
from dataclasses import astuple
from pathlib import Path

import pytest

from argtui.runtime import Runtime
from engines.datasets.rad import align_labels, read_rad_debates, read_rad_labels
from engines.grice import METRICS, STRATEGIES, check_pool, context_of_turn, pool_from_rad
from engines.grice.evaluation import always_yes_scores, grice_report, random_scores
from engines.grice.pool import EXAMPLES_PER_LABEL
from engines.grice.prompts import ANALYZER_TEMPLATE, ZSL_TEMPLATE
from engines.judging.task import default_options
from engines.judging.verdict import JudgeId
from engines.tasks.grice import TASK, turn_verdict
from store.runs import RunRepository
from conftest import write_rad_debates
from test_grice import _judgment

DATA = Path(__file__).parent / "data"
SMALL_DEBATES, SMALL_LABELS = DATA / "grice_small-debates.jsonl", DATA / "grice_small-labels.jsonl"


def _appendix(name: str, heading: str) -> str:
    """A prompt as the paper's text prints it: its heading dropped, line breaks as spaces."""
    text = (DATA / name).read_text(encoding="utf-8")
    assert text.startswith(heading)
    return " ".join(text[len(heading):].split())


def _flat(template: str) -> str:
    return " ".join(template.split())


def test_zsl_template_is_the_appendix_text():
    assert _flat(ZSL_TEMPLATE) == _appendix("grice_prompt_zsl.txt", "Prompt ZSL (Subtask 2)")


def test_analyzer_template_is_the_appendix_text_to_its_end():
    appendix = _appendix("grice_prompt_analyzer_step2.txt", "Analysis Strategy Prompt for Step 2 (Subtask 2)")
    # The paper's text breaks off at its last word ("yes or"), and its placeholder for the no
    # reasons is garbled; the template completes the one and names the other as the yes one.
    assert appendix.endswith("Please respond only with ( {evaluation_question_metric} ) yes or")
    expected = appendix.replace("{answer_1[]}", "{answer_model_step1[no]}") + " no"
    assert _flat(ANALYZER_TEMPLATE) == expected
    assert "Now is your turn. Below you have the information of the debate: {debate_dialogue}" in expected


def _labelled_pool_files(folder: Path, debates: int = 10) -> tuple[Path, Path]:
    """`debates` debates of two turns, labelled in a fixed pattern with both answers on every metric."""
    debates_path = write_rad_debates(folder / "pool.jsonl", debates)
    labels_path = folder / "pool-labels.jsonl"
    lines = [
        [{metric: (d + t + number) % 2 for number, metric in enumerate(METRICS)} for t in range(2)]
        for d in range(debates)
    ]
    labels_path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return debates_path, labels_path


def _rad_pool(debates: Path, labels: Path):
    read = read_rad_debates(debates)
    return pool_from_rad(debates.name, read, align_labels(read, read_rad_labels(labels), labels))


def test_drawn_examples_depend_on_the_seed_and_serve_every_strategy(tmp_path):
    pool = _rad_pool(*_labelled_pool_files(tmp_path))
    draws = {seed: pool.drawn(seed) for seed in range(4)}
    assert draws[0].digest == pool.drawn(0).digest  # reproducible
    orders = {tuple(e.source for e in draw.examples) for draw in draws.values()}
    assert len(orders) == 4
    assert len({draw.digest for draw in draws.values()}) == 4
    first_yes = {draw.examples_for("quantity", 1, 1)[0].source for draw in draws.values()}
    assert len(first_yes) > 1  # FSL's example is not the first of the file for every seed
    for draw in draws.values():
        assert draw.seed is not None and {e.source for e in draw.examples} <= {e.source for e in pool.examples}
        for strategy in STRATEGIES:
            check_pool(strategy, draw)
        analyzer3 = draw.examples_for("quality", 1, 3)
        assert analyzer3[:1] == draw.examples_for("quality", 1, 1)  # Analyzer1's examples are Analyzer3's
        # The draw stops once every metric has its examples of each answer.
        assert len(draw.examples) < len(pool.examples)
        for metric in METRICS:
            for label in (0, 1):
                assert len(draw.examples_for(metric, label, EXAMPLES_PER_LABEL)) == EXAMPLES_PER_LABEL


def test_turns_drawn_as_examples_are_not_evaluated(tmp_path):
    debates, labels = _labelled_pool_files(tmp_path)
    turns = {
        f"{turn.debate_id}/{turn.index}": context_of_turn(turn)
        for debate in read_rad_debates(debates) for turn in debate.user_turns()
    }
    evaluated = set()
    for seed in (0, 1, 2):
        options = default_options(TASK, debates=debates, labels=labels, pool_debates=debates, pool_labels=labels,
                                  seed=seed)
        keys = {item.key for item in TASK.items(Runtime(), options)}
        draw = _rad_pool(debates, labels).drawn(seed)
        example_keys = {key for key, context in turns.items() if context in draw.contexts}
        assert len(example_keys) == len(draw.examples) > 0  # every example is a turn of the file
        assert keys.isdisjoint(example_keys) and keys | example_keys == set(turns)
        evaluated.add(frozenset(keys))
    assert len(evaluated) > 1


def test_the_seed_is_part_of_the_judge():
    names = {TASK.judge_variant("Analyzer3", default_options(TASK, seed=seed)) for seed in (0, 1)}
    assert len(names) == 2 and all(name.startswith("Analyzer3 pool=builtin:") for name in names)


def _small_report(seed: int = 0):
    """The task's report on the small labelled fixture, the judge answering 0.7 everywhere but
    invalid on quality of the second turn."""
    runtime = Runtime()
    try:
        options = default_options(TASK, debates=SMALL_DEBATES, labels=SMALL_LABELS, output=None, variant=None,
                                  seed=seed)
        items = TASK.items(runtime, options)
        verdicts = {
            item.key: turn_verdict(_judgment({m: None if (n, m) == (1, "quality") else 0.7 for m in METRICS}))
            for n, item in enumerate(items)
        }
        judge = JudgeId.of("gpu", "m", TASK.judge_variant("ZSL", options), {})
        run = RunRepository(runtime.db).open("eval-grice", "r", {}, len(items), task="grice", judge=judge.name)
        return items, TASK.report(runtime, judge, items, verdicts, options, run.id)
    finally:
        runtime.db.close()


# Always yes on the small fixture, by hand. Labelled turns and positives per metric:
# quantity 5 / 3, quality 4 / 1, relation 6 / 5, manner 5 / 3. Positive class: P = positives /
# labelled, R = 1. Two classes: the no class is never predicted (P = R = F1 = 0), so each macro
# value is half the yes class's, and the macro recall 1/2.
ALWAYS_YES_POSITIVE = {
    "quantity": (3 / 5, 1.0, 0.75),
    "quality": (1 / 4, 1.0, 0.4),
    "relation": (5 / 6, 1.0, 10 / 11),
    "manner": (3 / 5, 1.0, 0.75),
}
ALWAYS_YES_MACRO = {metric: (p / 2, 0.5, f1 / 2) for metric, (p, _, f1) in ALWAYS_YES_POSITIVE.items()}


def test_always_yes_row_matches_hand_computed_scores():
    items, report = _small_report()
    assert len(items) == 6
    positive, macro = report.tables
    yes_rows = {row[0]: row[2:] for row in positive.rows if row[1] == "always yes"}
    for metric, expected in ALWAYS_YES_POSITIVE.items():
        assert yes_rows[metric][:3] == pytest.approx(expected)
    assert yes_rows["quantity"][3:] == (5, 1, 0)  # labelled, null, invalid: always yes is never invalid
    assert yes_rows["mean"][:3] == pytest.approx(
        tuple(sum(v[i] for v in ALWAYS_YES_POSITIVE.values()) / 4 for i in range(3))
    )
    macro_rows = {row[0]: row[2:] for row in macro.rows if row[1] == "always yes"}
    for metric, expected in ALWAYS_YES_MACRO.items():
        assert macro_rows[metric] == pytest.approx(expected)

    # The judge answered yes everywhere too, but is invalid once on quality (gold no there):
    # its quality row differs from always yes only by that turn, now a correct "no".
    judge_rows = {row[0]: row[2:] for row in macro.rows if row[1] == "ZSL"}
    assert judge_rows["relation"] == pytest.approx(ALWAYS_YES_MACRO["relation"])
    # yes: P 1/3 R 1 F1 1/2; no: P 1 R 1/3 F1 1/2
    assert judge_rows["quality"] == pytest.approx(((1 / 3 + 1) / 2, (1 + 1 / 3) / 2, 0.5))

    reference = report.data["reference_scores"]["always yes"]["metrics"]
    assert tuple(reference["relation"]["positive_class"].values()) == pytest.approx(ALWAYS_YES_POSITIVE["relation"])
    assert tuple(reference["manner"]["two_class_macro"].values()) == pytest.approx(ALWAYS_YES_MACRO["manner"])
    assert report.data["scores"]["metrics"]["quality"]["invalid"] == 1


def test_random_row_is_the_seeded_random_judge_on_the_same_turns():
    items, first = _small_report(seed=3)
    _, again = _small_report(seed=3)
    _, other = _small_report(seed=4)
    random_data = first.data["reference_scores"]["random"]
    assert random_data["seed"] == 3 and random_data == again.data["reference_scores"]["random"]
    gold = {m: [item.payload.labels[m] for item in items] for m in METRICS}
    expected = grice_report(gold, random_scores(len(items), 3))
    assert random_data["metrics"]["quantity"]["positive_class"]["f1"] == pytest.approx(
        expected.metrics["quantity"].positive_class.f1
    )
    rows = [row for row in first.tables[0].rows if row[1] == "random (seed 3)"]
    assert [row[0] for row in rows] == [*METRICS, "mean"]
    assert first.data["reference_scores"]["random"] != other.data["reference_scores"]["random"]


def test_random_scores_are_uniform_and_seeded():
    scores = random_scores(4000, seed=7)
    assert scores == random_scores(4000, seed=7) and scores != random_scores(4000, seed=8)
    for metric in METRICS:
        values = scores[metric]
        assert all(0.0 <= v < 1.0 for v in values)
        assert sum(v >= 0.5 for v in values) / len(values) == pytest.approx(0.5, abs=0.03)
    assert always_yes_scores(3) == {metric: [1.0, 1.0, 1.0] for metric in METRICS}
    report = grice_report({m: [1, 0, None] for m in METRICS}, always_yes_scores(3))
    assert astuple(report.mean_positive_class) == pytest.approx((0.5, 1.0, 2 / 3))
