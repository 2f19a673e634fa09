"""Bundled dataset readers: counts from the dataset documentation, quirks, clear errors."""

from __future__ import annotations

from collections import Counter

import pytest

from engines.datasets import DataFormatError
from engines.datasets.ibm import load_ibm
from engines.datasets.webis import load_webis

LABEL_COUNTS = {
    "logical": {"A": 6222, "B": 5719, "Tie": 2011},
    "rhetorical": {"A": 5833, "B": 5660, "Tie": 2459},
    "dialectical": {"A": 6005, "B": 5767, "Tie": 2180},
}


@pytest.fixture(scope="module")
def webis():
    return load_webis()


def test_bundled_webis_counts(webis):
    assert len(webis.topics) == 20
    assert len(webis.arguments) == 1610
    assert sum(a.is_argument for a in webis.arguments.values()) == 1271
    for dimension, expected in LABEL_COUNTS.items():
        comparisons = webis.comparisons[dimension]
        assert len(comparisons) == 13952
        assert Counter(c.label for c in comparisons) == expected
    keys = {k for c in webis.comparisons["logical"] for k in (c.a, c.b)}
    assert len(keys) == 1266
    # Three of the keys listed under two topics are compared within both.
    covered = {(c.topic_id, k) for c in webis.comparisons["logical"] for k in (c.a, c.b)}
    assert len(covered) == 1269


def test_webis_quirks(webis):
    non_arguments = [a for a in webis.arguments.values() if not a.is_argument]
    assert len(non_arguments) == 339 and all(a.scores is None for a in non_arguments)
    example = webis.argument(10, (33373, 6))
    assert example.stance is False and example.scores["logical"] == pytest.approx(-0.8012, abs=1e-4)
    # A key under two topics is two arguments.
    assert webis.argument(1, (18018, 3)).uid != webis.argument(2, (18018, 3)).uid
    for c in webis.comparisons["logical"][:500]:
        assert (c.topic_id, c.a) in webis.arguments and (c.topic_id, c.b) in webis.arguments


@pytest.mark.shared_data
def test_bundled_webis_matches_the_original_release(webis, shared_data):
    original = load_webis(shared_data / "webis-argquality-20")
    assert original.arguments == webis.arguments
    assert original.comparisons == webis.comparisons


def test_bundled_ibm_counts():
    arguments = load_ibm()
    assert len(arguments) == 30497
    assert len({a.topic for a in arguments}) == 71
    assert Counter(a.split for a in arguments) == {"train": 20974, "dev": 3208, "test": 6315}
    assert {a.stance for a in arguments} <= {-1, 0, 1}


def test_bad_rows_name_file_line_and_field(tmp_path):
    path = tmp_path / "ibm.csv"
    path.write_text(
        "argument,topic,set,WA,MACE-P,stance_WA,stance_WA_conf\n"
        '"ok",T,train,0.5,0.5,1,1\n'
        '"bad",T,train,0.5,0.5,7,1\n'
    )
    with pytest.raises(DataFormatError) as caught:
        load_ibm(path)
    assert (caught.value.line, caught.value.field) == (3, "stance_WA")
    assert "ibm.csv" in str(caught.value)


def test_missing_column_is_named(tmp_path):
    path = tmp_path / "ibm.csv"
    path.write_text("argument,topic\nx,y\n")
    with pytest.raises(DataFormatError, match="set"):
        load_ibm(path)
