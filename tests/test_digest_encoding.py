"""Content digests find stored verdicts: a faster encoder must give every value the digest it had.

The pinned digests were computed by the first encoder (a plain recursive `canonical` and
`json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`)."""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from engines.judging.digest import canonical, canonical_json, content_digest, digest
from engines.judging.task import ItemSide
from engines.pairwise.run import PairItem


class Colour(enum.Enum):
    RED = "red"
    DEEP = ("deep", 2)


class Level(enum.IntEnum):
    HIGH = 3


class Mode(str, enum.Enum):
    FAST = "fast"


@dataclass(frozen=True)
class Inner:
    when: date
    tags: frozenset[str]


@dataclass
class Outer:
    zeta: float
    alpha: list[Inner]
    extra: dict = field(default_factory=dict)


class Settings(BaseModel):
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    mode: Mode = Mode.FAST


VALUES = {
    "none": None,
    "bools": [True, False],
    "ints": [0, -1, 2**63, -(2**70)],
    "floats": [0.0, -0.0, 1.5, 0.1 + 0.2, 1e-05, 1e16, 1.0e22, 123456789.125, 5e-324, float("inf"), float("nan")],
    "unicode": ["é", "\u2028 line separator", "emoji 🦜", "quote \" backslash \\ tab \t nl \n", "\x00\x1f\x7f", "中文"],
    "enums": [Colour.RED, Colour.DEEP, Level.HIGH, Mode.FAST],
    "nested": {"b": [1, (2, 3), {"z": 1, "a": [None]}], "a": {"y": {3, 1, 2}, 10: "ten", 9: "nine"}},
    "sets": [{"b", "a", "é"}, frozenset({(1, "x"), (0, "y")}), set()],
    "dataclass": Outer(2.5, [Inner(date(2024, 2, 29), frozenset({"x", "ä"}))], {"k": Colour.RED}),
    "pydantic": Settings(temperature=0.7, stop=("\n\n", "Ende")),
    "paths_times": [PurePosixPath("data/a b/ü.json"), datetime(2026, 1, 2, 3, 4, 5, 600, tzinfo=timezone.utc)],
}

PINNED = {
    "none": "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b",
    "bools": "153c9dbcc7025ecd7e50ce6d83f1995233dfc636bc869098e3a8d84288fd938a",
    "ints": "b1452d11cd7380e7214853b0c14b8576d75a61fc9b813fbabd6d1b2af489b96f",
    "floats": "bbde1b994f5e10ef6f3137186d8513cdb47808a1a32ed6126be95462f499df56",
    "unicode": "a5fb0ac0f32e9e83ce7ee880ebf083d794da999a6986578b6836868f960da1d6",
    "enums": "8b11a50e28fea11e0fb70c227ac202fc43fb8bf4b344895dd02066340e7b6da1",
    "nested": "62e80f3bc80e743b1f543abe0fee4214ffe5e01b7f1a44bae4fe279544189a76",
    "sets": "b5fb3fb7f6b084de8980fd1e0bb7e856c1f49a18f15d624dfb87e4a6bc5e2bf8",
    "dataclass": "28d0bfbf0a6b5236fe28beb0bf28f9495c2b88ea3518cf65ad5d8c256203a8f3",
    "pydantic": "418719a49ceae64382ceb9d65c2cfabdd037cbc621a48e80ccf9269c04a632e5",
    "paths_times": "5284460990b93d70292a70de40bb4df7605651d1b43d5dac40a854fa51a05b91",
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_every_kind_of_value_keeps_its_digest(name):
    assert digest(VALUES[name], 64) == PINNED[name]


def test_a_pairwise_items_content_keeps_its_digest():
    pair = PairItem("logical", 7, (1, 2), (1, 5), "A")
    sides = (ItemSide("Argument A (7/1/2)", "Zoos „protect“ species — 100 %."),
             ItemSide("Argument B (7/1/5)", "Cages\tare\ncages."))
    assert content_digest(pair, sides, "A") == PINNED_PAIR


PINNED_PAIR = "e31ed0990fa56ace"


def test_values_with_no_canonical_form_are_refused():
    with pytest.raises(TypeError, match="object"):
        canonical(object())
    with pytest.raises(TypeError, match="type"):
        canonical(Inner)  # a dataclass's class, not an instance


def first_encoding(value) -> str:
    """The first encoder, as the pinned digests were computed: a plain recursive canonical form
    written by json.dumps."""

    def plain(value):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, enum.Enum):
            return plain(value.value)
        if isinstance(value, BaseModel):
            return {name: plain(getattr(value, name)) for name in type(value).model_fields}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, dict):
            return {str(key): plain(item) for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))}
        if isinstance(value, (list, tuple)):
            return [plain(item) for item in value]
        if isinstance(value, (set, frozenset)):
            return sorted((plain(item) for item in value), key=dump)
        if isinstance(value, PurePosixPath):
            return value.as_posix()
        if isinstance(value, (datetime, date)):
            return value.isoformat()
        raise TypeError(type(value).__name__)

    def dump(value):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    return dump(plain(value))


LONG_TEXT = "Zoos „protect“ species — 100 %; \"quoted\" \\ and a tab\t, " * 3  # long enough to be kept
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats() | st.floats(allow_nan=False, width=32) | st.text() | st.text(min_size=64)
    | st.just(LONG_TEXT) | st.sampled_from([Colour.RED, Colour.DEEP, Level.HIGH, Mode.FAST])
    | st.dates().map(lambda day: Inner(day, frozenset({"x", LONG_TEXT})))
)
HASHABLE = st.recursive(SCALARS.filter(lambda value: not isinstance(value, Inner)) | st.text(),
                        lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4), max_leaves=8)
VALUES_OF_EVERY_KIND = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5) | st.tuples(inner, inner) | st.frozensets(HASHABLE, max_size=5)
        | st.dictionaries(st.text() | st.integers() | st.sampled_from([1, "1", Colour.RED, "Colour.RED"]),
                          inner, max_size=5)
        | st.builds(Outer, st.floats(), st.lists(st.dates().map(lambda day: Inner(day, frozenset())), max_size=2),
                    st.dictionaries(st.text(), inner, max_size=3))
        | st.builds(Settings, temperature=st.floats(allow_nan=False), stop=st.lists(st.text(), max_size=3).map(tuple))
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(VALUES_OF_EVERY_KIND)
def test_the_encoding_is_the_first_encoders_for_values_of_every_kind(value):
    """Unicode, floats of every kind (NaN, infinities, -0.0, 1e-05), ints against floats, big ints,
    enums, nested containers, sets, keys of one text (1 and "1"), models; long texts met again."""
    assert canonical_json(value) == first_encoding(value)
    assert canonical_json(value) == first_encoding(value)  # the second time from kept texts


@pytest.mark.parametrize("name", sorted(VALUES))
def test_canonical_is_the_plain_value_the_encoding_writes(name):
    assert json.dumps(canonical(VALUES[name]), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False) == first_encoding(VALUES[name])
