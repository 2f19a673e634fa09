"""InspireScore against expert ratings: the statistics on hand-made numbers, the UKPConvArg1
readers, the seeded sample, the pairwise judge's stored verdicts matched to the sampled
arguments, and `argtui eval inspire --against ibm-argq` on the real llama-server."""

from __future__ import annotations

import json
import math
import sys
import time

import pytest

from argtui.cli import main
from argtui.config import load_config
from engines.datasets import DataFormatError
from engines.datasets.ukpconv import load_ukpconv, read_ranking, read_strict, side_title
from engines.inspire.validation import correlation, grouped, preference_agreement, topic_mean
from engines.judging.store import JudgmentStore
from engines.judging.task import TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.pairwise.run import PairItem
from engines.tasks.inspire_turns import InspireOptions
from engines.tasks.inspire_against import PER_TOPIC, pairwise_rows, rated_arguments, spread_sample

# ---------------------------------------------------------------- statistics


def test_spearman_and_pearson_of_known_numbers_with_intervals_around_them():
    # Ranks that differ by one in four places: ρ = 1 − 6·Σd² / (n(n² − 1)) = 1 − 24/120.
    swapped = [(1, 2), (2, 1), (3, 4), (4, 3), (5, 5)]
    rho = correlation("spearman", swapped)
    assert rho.value == pytest.approx(0.8) and rho.n == 5 and rho.reason is None
    assert rho.low <= rho.value <= rho.high
    # Monotone but not linear: ρ = 1, r = 3 / sqrt(2 · 42/9).
    curved = [(1, 1), (2, 2), (3, 4)]
    assert correlation("spearman", curved).value == pytest.approx(1.0)
    assert correlation("pearson", curved).value == pytest.approx(3 / math.sqrt(2 * 42 / 9))
    # The same resamples for the same seed.
    assert correlation("pearson", swapped, seed=3) == correlation("pearson", swapped, seed=3)


def test_a_correlation_over_too_few_or_constant_values_has_no_value_but_a_reason():
    few = correlation("spearman", [(0.1, 1.0), (0.2, 2.0)])
    assert few.value is None and few.low is None and few.reason == "2 values; needs at least 3"
    flat = correlation("pearson", [(0.0, 1.0), (0.0, 2.0), (0.0, 3.0)], score_name="clarity")
    assert flat.value is None and flat.reason == "clarity is constant (0.000 for all 3)"
    expert = correlation("spearman", [(0.1, 1.0), (0.2, 1.0), (0.3, 1.0)], expert_name="WA")
    assert expert.value is None and "WA is constant" in expert.reason
    assert correlation("spearman", []).reason == "no value; needs at least 3"


def test_the_mean_over_topics_leaves_out_topics_without_a_correlation():
    by_topic = grouped([
        *(("same", x, x) for x in (1.0, 2.0, 3.0)),  # ρ = 1
        *(("reversed", x, -x) for x in (1.0, 2.0, 3.0, 4.0)),  # ρ = −1
        *(("flat", 0.5, x) for x in (1.0, 2.0, 3.0)),  # the score is constant: no ρ
        ("missing", None, 1.0),  # an argument without a score is no pair at all
    ])
    assert set(by_topic) == {"same", "reversed", "flat"}
    mean = topic_mean("spearman", by_topic)
    assert mean.value == pytest.approx(0.0) and mean.topics == 2 and mean.reason is None
    assert mean.low == pytest.approx(-1.0) and mean.high == pytest.approx(1.0)
    each = dict(mean.per_topic)
    assert each["same"].value == pytest.approx(1.0) and each["flat"].value is None and "constant" in each["flat"].reason
    nothing = topic_mean("pearson", {"a": [(1.0, 1.0), (2.0, 2.0)]})
    assert nothing.value is None and nothing.topics == 0
    assert nothing.reason == "no topic of 1 has a correlation: fewer than 3 values in 1"


def test_reproduced_preferences_count_ties_apart():
    # (score of the expert-preferred argument, score of the other)
    agreement = preference_agreement([(0.9, 0.1), (0.5, 0.5), (0.2, 0.7), (0.6, 0.3)])
    assert (agreement.pairs, agreement.reproduced, agreement.reversed, agreement.tied) == (4, 2, 1, 1)
    assert agreement.share == pytest.approx(0.5) and agreement.decisive_share == pytest.approx(2 / 3)
    assert 0.0 <= agreement.low <= agreement.share <= agreement.high <= 1.0
    none = preference_agreement([])
    assert none.share is None and none.decisive_share is None and none.reason


# ---------------------------------------------------------------- sampling


def test_the_sample_is_seeded_spread_over_topics_and_keeps_units_whole():
    units = {f"t{t}": [(f"t{t}-{i}",) for i in range(20)] for t in range(10)}
    sample = spread_sample(units, 20, seed=1)
    assert sample == spread_sample(units, 20, seed=1) and sample != spread_sample(units, 20, seed=2)
    per_topic = {key.split("-")[0] for key in sample}
    assert len(sample) == 20 and len(per_topic) == 20 // PER_TOPIC
    assert all(sum(key.startswith(t + "-") for key in sample) == PER_TOPIC for t in per_topic)
    # Pairs are taken whole: every sampled key comes with its partner.
    pairs = {"a": [("a1", "a2"), ("a3", "a4"), ("a1", "a3")], "b": [("b1", "b2")]}
    picked = spread_sample(pairs, 3, seed=0)
    assert len(picked) <= 3 and all(any(set(p) <= set(picked) for p in pairs[k[0]]) for k in picked)
    # A topic used up makes way for the next, until every key is taken.
    assert sorted(spread_sample({"a": [("x",)], "b": [("y",)], "c": [("z",)]}, 3, seed=0)) == ["x", "y", "z"]
    assert len(spread_sample(units, 1000, seed=0)) == 200


# ---------------------------------------------------------------- UKPConvArg1 readers


def _ukp_release(root, strict: str, ranking: str):
    (root / "UKPConvArg1Strict-CSV").mkdir(parents=True)
    (root / "UKPConvArg1-Ranking-CSV").mkdir()
    (root / "UKPConvArg1Strict-CSV" / "tv-is-better_books.csv").write_text(strict, encoding="utf-8")
    (root / "UKPConvArg1-Ranking-CSV" / "tv-is-better_books.csv").write_text(ranking, encoding="utf-8")
    return root


RANKING = (
    "#id\trank\targument\n"
    'arg1\t0.75\t"Books" make you think.<br/>TV does not.\n'
    "arg2\t0.10\tTV is fun\n"
    "arg3\t0.40\tBooks last longer than shows\n"
)
STRICT = "#id\tlabel\ta1\ta2\narg1_arg2\ta1\tx\ty\narg2_arg3\ta2\ty\tz\n"


def test_the_ukpconvarg1_readers_read_scores_pairs_and_line_breaks(tmp_path):
    corpus = load_ukpconv(_ukp_release(tmp_path / "ukp", STRICT, RANKING))
    side = "tv-is-better_books"
    first = corpus.arguments[(side, "arg1")]
    assert first.text == '"Books" make you think.\nTV does not.' and first.score == 0.75  # no CSV quoting
    assert [(p.preferred, p.other) for p in corpus.pairs] == [
        ((side, "arg1"), (side, "arg2")), ((side, "arg3"), (side, "arg2")),
    ]
    assert corpus.sides == (side,) and side_title(side) == "tv is better: books"


@pytest.mark.parametrize(("reader", "text", "line", "field"), [
    (read_strict, "#id\tlabel\ta1\ta2\narg1_arg2\ta1\tx\ty\narg1_arg3\tequal\tx\tz\n", 3, "label"),
    (read_strict, "#id\tlabel\ta1\ta2\narg1\ta1\tx\ty\n", 2, "#id"),
    (read_strict, "#id\tlabel\ta1\ta2\narg1_arg2\ta1\tx\n", 2, "a2"),
    (read_ranking, "#id\trank\targument\narg1\thigh\ttext\n", 2, "rank"),
    (read_ranking, "#id\trank\targument\narg1\t0.1\ttext\narg1\t0.2\tagain\n", 3, "#id"),
    (read_ranking, "#id\tscore\targument\narg1\t0.1\ttext\n", 1, "rank"),
])
def test_a_bad_line_names_the_file_line_and_field(tmp_path, reader, text, line, field):
    path = tmp_path / "side_a.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        reader(path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), line, field)
    assert str(caught.value).startswith(f"{path}, line {line}: field {field!r}: ")


def test_bad_against_input_is_one_line_and_exit_code_1(tmp_path, capsys):
    assert main(["eval", "inspire", "--against", "ukpconvarg1"]) == 1
    assert "--data PATH" in capsys.readouterr().err
    assert main(["eval", "inspire", "--against", "ukpconvarg1", "--data", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "UKPConvArg1Strict-CSV" in err and "folder not found" in err and "Traceback" not in err
    assert main(["eval", "inspire", "--against", "webis", "--debate", "1"]) == 1
    assert "exactly one of" in capsys.readouterr().err
    assert main(["eval", "inspire", "--debate", "1", "--data", str(tmp_path)]) == 1
    assert "--data is the data of --against" in capsys.readouterr().err


def test_ukpconvarg1_items_are_sampled_as_expert_pairs(tmp_path):
    root = _ukp_release(tmp_path / "ukp", STRICT, RANKING)
    found = rated_arguments(None, InspireOptions(against="ukpconvarg1", data=root, limit=2))
    assert [item.argument for item in found] in (
        ["ukpconvarg1/tv-is-better_books/arg1", "ukpconvarg1/tv-is-better_books/arg2"],
        ["ukpconvarg1/tv-is-better_books/arg3", "ukpconvarg1/tv-is-better_books/arg2"],
    )
    assert all(item.topic == "tv is better: books" and item.dialogue == () for item in found)


# ---------------------------------------------------------------- the pairwise judge's stored verdicts


class StoreOnly:
    """What `pairwise_rows` uses of the application: its database."""

    def __init__(self, db):
        self.db = db


def test_stored_pairwise_judgments_on_webis_give_the_pairwise_rows(db):
    sampled = rated_arguments(None, InspireOptions(against="webis", limit=10))
    assert len(sampled) == 10 and all(item.argument.startswith("webis/") for item in sampled)
    assert not pairwise_rows(StoreOnly(db), sampled, 0)[0]  # nothing stored yet
    # A judge that prefers the argument of higher logical expert score, on every pair of the sample's topics.
    judge = JudgeId.of("test", "model", "zero")
    rows = []
    by_topic: dict[str, list] = {}
    for item in sampled:
        by_topic.setdefault(item.group, []).append(item)
    for group in by_topic.values():
        for a in group:
            for b in group:
                if a.argument < b.argument:
                    ua, ub = a.argument.removeprefix("webis/"), b.argument.removeprefix("webis/")
                    key = f"logical/{ua}~{ub}"
                    pair = PairItem.from_key(key, "A")
                    label = "A" if dict(a.ratings)["logical"] > dict(b.ratings)["logical"] else "B"
                    rows.append((TaskItem(pair.key, key, key), Verdict(label=label)))
    JudgmentStore(db, "pairwise").save(judge, rows)
    found, note = pairwise_rows(StoreOnly(db), sampled, 0)
    [logical] = found
    assert logical.expert == "logical" and logical.score.endswith("· logical") and logical.arguments == 10
    spearman = logical.topic_means[0]
    assert spearman.value == pytest.approx(1.0) and spearman.topics == len(by_topic)  # BT ranks as the experts
    assert "1 row (judge × dimension)" in note
    ibm = rated_arguments(None, InspireOptions(against="ibm-argq", limit=3))
    ibm_rows, ibm_note = pairwise_rows(StoreOnly(db), ibm, 0)
    assert ibm_rows == [] and "no pairwise judgments stored for these items" in ibm_note


# ---------------------------------------------------------------- the real model


@pytest.mark.llm
def test_eval_inspire_against_ibm_reports_both_correlations_with_intervals(llama_profile, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    # Two shared cores: an argument's concurrent calls queue behind each other.
    load_config().add_backend(llama_profile.model_copy(update={"timeout_s": 600.0}), make_default=True)
    started = time.monotonic()
    assert main(["eval", "inspire", "--against", "ibm-argq", "--limit", "8", "--json"]) == 0
    seconds = time.monotonic() - started
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert result["arguments"] == 8 and result["judged_now"] == 8 and result["against"] == "ibm-argq"
    rows = {(row["expert"], row["score"]): row for row in result["correlations"]}
    assert {"WA", "MACE-P"} == {expert for expert, _ in rows}
    overall = rows[("WA", "overall")]
    for method in ("spearman", "pearson"):
        found = overall[method]
        assert found["n"] >= 3
        # a value inside its interval, or none with the reason (the embedded model may score all alike)
        assert (found["value"] is not None and found["low"] <= found["value"] <= found["high"]) or found["reason"]
        assert "per_topic" in overall and overall["per_topic"][method]["topics"] <= result["topics"]
    assert "no pairwise judgments stored" in result["pairwise_note"]
    assert json.dumps(result).find("NaN") == -1
    print(f"\neval inspire --against ibm-argq --limit 8 on the embedded model: {seconds:.0f} s; overall vs WA "
          f"ρ {overall['spearman']['value']} r {overall['pearson']['value']}", file=sys.stderr)
