"""Webis-ArgQuality-20: arguments with expert Bradley-Terry scores and raw pairwise judgments.

Quirks handled here (see the dataset README): non-arguments carry the score
sentinel -4.0 (read as None); `Stance` is True/False; an argument is keyed by
(Discussion ID, Argument ID) and 4 keys appear under two topics, so the full
identity is (topic, discussion, argument); pair files have no topic column, so
a pair's topic is the one topic both of its arguments belong to.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Literal, Mapping, Sequence

from engines.datasets import BUNDLED, DataFormatError, integer_cell, number_cell, read_csv_columns, read_csv_rows

DIMENSIONS = ("logical", "rhetorical", "dialectical")
Dimension = Literal["logical", "rhetorical", "dialectical"]
Label = Literal["A", "B", "Tie"]
LABELS = frozenset(("A", "B", "Tie"))
NON_ARGUMENT_SENTINEL = -4.0
BUNDLED_WEBIS = BUNDLED / "webis-argquality-20"

ArgumentKey = tuple[int, int]  # (discussion id, argument id)


@dataclass(frozen=True)
class WebisTopic:
    id: int
    category: str
    long_query: str
    short_query: str


@dataclass(frozen=True)
class WebisArgument:
    topic_id: int
    key: ArgumentKey
    text: str
    is_argument: bool
    stance: bool
    relevance: float
    scores: dict[str, float] | None  # per dimension; None for non-arguments
    combined: float | None

    @property
    def uid(self) -> str:
        """Stable id across the product: topic/discussion/argument."""
        return f"{self.topic_id}/{self.key[0]}/{self.key[1]}"


@dataclass(frozen=True, slots=True)  # slots: 13,952 a dimension are made at a time
class Comparison:
    topic_id: int
    a: ArgumentKey
    b: ArgumentKey
    label: Label


class LazyComparisons(Mapping[str, list[Comparison]]):
    """Each dimension's comparisons, read from its file when first asked for: a run of one
    dimension reads one of the three (a tenth of a second of a short run's start)."""

    def __init__(self, dimensions: Sequence[str], read: Callable[[str], list[Comparison]]):
        self._dimensions, self._read = tuple(dimensions), read
        self._read_ones: dict[str, list[Comparison]] = {}

    def __getitem__(self, dimension: str) -> list[Comparison]:
        if dimension not in self._read_ones:
            if dimension not in self._dimensions:
                raise KeyError(dimension)
            self._read_ones[dimension] = self._read(dimension)
        return self._read_ones[dimension]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dimensions)

    def __len__(self) -> int:
        return len(self._dimensions)

    def __contains__(self, dimension: object) -> bool:
        return dimension in self._dimensions


@dataclass
class WebisCorpus:
    topics: dict[int, WebisTopic]
    arguments: dict[tuple[int, ArgumentKey], WebisArgument]
    comparisons: Mapping[str, list[Comparison]] = field(default_factory=dict)

    def argument(self, topic_id: int, key: ArgumentKey) -> WebisArgument:
        return self.arguments[(topic_id, key)]

    def topic_arguments(self, topic_id: int, only_arguments: bool = True) -> list[WebisArgument]:
        return [
            a for (t, _), a in self.arguments.items()
            if t == topic_id and (a.is_argument or not only_arguments)
        ]


def _file(root: Path, bundled: bool, name: str) -> Path:
    if bundled:
        return root / f"{name}.csv.gz"
    folder = "Webis-ArgQuality-20-Raw" if "-raw-" in name else "Webis-ArgQuality-20-Full"
    return root / folder / f"{name}.csv"


def load_webis(path: Path | None = None, dimensions: tuple[str, ...] = DIMENSIONS, *, lazy: bool = False) -> WebisCorpus:
    """The bundled copy, or the original release folder at `path`. `lazy`: each dimension's
    comparisons are read (and checked) when first used, not here."""
    bundled = path is None
    root = BUNDLED_WEBIS if bundled else Path(path)
    topics_path = _file(root, bundled, "webis-argquality20-topics")
    topics = {}
    for line, row in read_csv_rows(topics_path, ("Topic ID", "Category", "Long Query", "Short Query")):
        topic_id = integer_cell(row, "Topic ID", topics_path, line)
        topics[topic_id] = WebisTopic(topic_id, row["Category"], row["Long Query"].strip(), row["Short Query"].strip())

    arguments_path = _file(root, bundled, "webis-argquality20-arguments")
    columns = ("Topic ID", "Argument ID", "Discussion ID", "Premise", "Relevance", "Is Argument?",
               "Rhetorical Quality", "Logical Quality", "Dialectical Quality", "Stance", "Combined Quality")
    arguments: dict[tuple[int, ArgumentKey], WebisArgument] = {}
    topics_of_key: dict[ArgumentKey, set[int]] = defaultdict(set)
    for line, row in read_csv_rows(arguments_path, columns):
        topic_id = integer_cell(row, "Topic ID", arguments_path, line)
        if topic_id not in topics:
            raise DataFormatError(arguments_path, line, "Topic ID", f"unknown topic {topic_id}")
        key = (
            integer_cell(row, "Discussion ID", arguments_path, line),
            integer_cell(row, "Argument ID", arguments_path, line),
        )
        is_argument = _bool(row, "Is Argument?", arguments_path, line)
        scores = {d: number_cell(row, f"{d.capitalize()} Quality", arguments_path, line) for d in DIMENSIONS}
        combined = number_cell(row, "Combined Quality", arguments_path, line)
        if not is_argument or all(v == NON_ARGUMENT_SENTINEL for v in scores.values()):
            scores, combined = None, None
        arguments[(topic_id, key)] = WebisArgument(
            topic_id=topic_id,
            key=key,
            text=row["Premise"].strip(),
            is_argument=is_argument,
            stance=_bool(row, "Stance", arguments_path, line),
            relevance=number_cell(row, "Relevance", arguments_path, line),
            scores=scores,
            combined=combined,
        )
        topics_of_key[key].add(topic_id)

    comparisons = LazyComparisons(dimensions, lambda dimension: _comparisons(root, bundled, dimension, topics_of_key))
    if not lazy:
        comparisons = {dimension: comparisons[dimension] for dimension in dimensions}
    return WebisCorpus(topics, arguments, comparisons)


def _comparisons(root: Path, bundled: bool, dimension: str, topics_of_key) -> list[Comparison]:
    path = _file(root, bundled, f"webis-argquality20-raw-{dimension}")
    columns = ("Discussion ID A", "Argument ID A", "Discussion ID B", "Argument ID B", "Comparison")
    result = []
    nowhere: set[int] = set()
    # most arguments lie in one topic: a pair of two such of one topic needs no set intersection
    only_topic = {key: next(iter(topics)) for key, topics in topics_of_key.items() if len(topics) == 1}
    # 13,952 rows a dimension: read as tuples of the five cells, checked cell by cell only on failure
    for line, cells in read_csv_columns(path, columns):
        try:
            a, b = (int(cells[0]), int(cells[1])), (int(cells[2]), int(cells[3]))
        except ValueError:
            row = dict(zip(columns, cells))
            for name in columns[:4]:
                integer_cell(row, name, path, line)
            raise
        if a == b:  # no preference between an argument and itself; the Bradley-Terry fit cannot take it
            raise DataFormatError(path, line, "Argument ID B", f"compares argument {a} with itself")
        label = cells[4].strip()
        if label not in LABELS:
            raise DataFormatError(path, line, "Comparison", f"expected A, B or Tie, got {label!r}")
        topic = only_topic.get(a)
        if topic is None or only_topic.get(b) != topic:
            shared = topics_of_key.get(a, nowhere) & topics_of_key.get(b, nowhere)
            if len(shared) != 1:
                raise DataFormatError(
                    path, line, "Argument ID A/B",
                    f"arguments {a} and {b} share {len(shared)} topics; a pair must lie within one topic",
                )
            topic = next(iter(shared))
        result.append(Comparison(topic, a, b, label))  # type: ignore[arg-type]
    return result


def _bool(row: dict, name: str, path: Path, line: int) -> bool:
    value = (row.get(name) or "").strip()
    if value not in ("True", "False"):
        raise DataFormatError(path, line, name, f"expected True or False, got {value!r}")
    return value == "True"
