"""UKPConvArg1 (Habernal & Gurevych 2016): convincingness of arguments on 32 debate sides.

Two files per debate side, read from the release folder (not bundled; `--data PATH` or the
config's [datasets] entry `ukpconvarg1`):

* `UKPConvArg1Strict-CSV/<side>.csv`: expert preference pairs, `#id\\tlabel\\ta1\\ta2`, the id
  being `<a1 id>_<a2 id>` and the label the more convincing argument (a1 or a2; the strict
  set has no ties);
* `UKPConvArg1-Ranking-CSV/<side>.csv`: `#id\\trank\\targument`, a convincingness score per argument.

Both are tab-separated with a header comment line and no quoting (a cell may start with a
quote that is text); line breaks inside a text are written `<br/>`. An argument is keyed by
(side, id): the side is the file's name without `.csv`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engines.datasets import DataFormatError, number_cell, read_csv_rows

DATASET = "ukpconvarg1"  # its key in the config file's [datasets] table
STRICT_FOLDER = "UKPConvArg1Strict-CSV"
RANKING_FOLDER = "UKPConvArg1-Ranking-CSV"
STRICT_COLUMNS = ("#id", "label", "a1", "a2")
RANKING_COLUMNS = ("#id", "rank", "argument")
LINE_BREAK = "<br/>"
Label = Literal["a1", "a2"]

ArgumentKey = tuple[str, str]  # (debate side, argument id)


@dataclass(frozen=True)
class UkpArgument:
    side: str  # the debate side: its files' name, e.g. "ban-plastic-water-bottles_yes-emergencies-only"
    id: str
    text: str
    score: float  # the Ranking CSV's convincingness score

    @property
    def key(self) -> ArgumentKey:
        return (self.side, self.id)


@dataclass(frozen=True)
class UkpPair:
    """An expert preference between two arguments of one debate side."""

    side: str
    a1: str
    a2: str
    label: Label

    @property
    def preferred(self) -> ArgumentKey:
        return (self.side, self.a1 if self.label == "a1" else self.a2)

    @property
    def other(self) -> ArgumentKey:
        return (self.side, self.a2 if self.label == "a1" else self.a1)


@dataclass(frozen=True)
class UkpCorpus:
    arguments: dict[ArgumentKey, UkpArgument]  # every argument of the Ranking CSVs
    pairs: tuple[UkpPair, ...]  # every Strict pair, file by file in name order, each file's in line order

    @property
    def sides(self) -> tuple[str, ...]:
        return tuple(sorted({side for side, _ in self.arguments}))


def side_title(side: str) -> str:
    """A debate side's file name as words: "ban-plastic-water-bottles_yes-emergencies-only" ->
    "ban plastic water bottles: yes emergencies only"."""
    debate, _, stance = side.partition("_")
    words = [part.replace("-", " ").strip() for part in (debate, stance) if part.strip("-")]
    return ": ".join(words)


def _text(cell: str) -> str:
    return cell.replace(LINE_BREAK, "\n").strip()


def read_ranking(path: Path) -> list[UkpArgument]:
    """The arguments of one Ranking CSV, in file order."""
    side, found, seen = path.name.removesuffix(".csv"), [], set()
    for line, row in read_csv_rows(path, RANKING_COLUMNS, "\t", known=RANKING_COLUMNS, quoting=csv.QUOTE_NONE):
        argument_id, text = row["#id"].strip(), _text(row["argument"])
        if not argument_id:
            raise DataFormatError(path, line, "#id", "empty argument id")
        if argument_id in seen:
            raise DataFormatError(path, line, "#id", f"argument {argument_id!r} appears twice")
        if not text:
            raise DataFormatError(path, line, "argument", "empty text")
        seen.add(argument_id)
        found.append(UkpArgument(side, argument_id, text, number_cell(row, "rank", path, line)))
    return found


def read_strict(path: Path) -> list[UkpPair]:
    """The preference pairs of one Strict CSV, in file order."""
    side, found = path.name.removesuffix(".csv"), []
    for line, row in read_csv_rows(path, STRICT_COLUMNS, "\t", known=STRICT_COLUMNS, quoting=csv.QUOTE_NONE):
        ids = row["#id"].strip().split("_")
        if len(ids) != 2 or not all(ids) or ids[0] == ids[1]:
            raise DataFormatError(path, line, "#id", f"expected <a1 id>_<a2 id> of two arguments, got {row['#id']!r}")
        label = row["label"].strip()
        if label not in ("a1", "a2"):
            raise DataFormatError(path, line, "label", f"expected a1 or a2, got {label!r}")
        found.append(UkpPair(side, ids[0], ids[1], label))  # type: ignore[arg-type]
    return found


def _csv_files(root: Path, folder: str) -> list[Path]:
    where = root / folder
    if not where.is_dir():
        raise DataFormatError(where, None, None, f"folder not found: expected the UKPConvArg1 release folder, "
                                                 f"holding {STRICT_FOLDER}/ and {RANKING_FOLDER}/")
    files = sorted(where.glob("*.csv"))
    if not files:
        raise DataFormatError(where, None, None, "holds no .csv file")
    return files


def load_ukpconv(root: Path) -> UkpCorpus:
    """The Ranking and Strict CSVs of the release folder `root`."""
    root = Path(root).expanduser()
    arguments = {a.key: a for path in _csv_files(root, RANKING_FOLDER) for a in read_ranking(path)}
    pairs = tuple(pair for path in _csv_files(root, STRICT_FOLDER) for pair in read_strict(path))
    return UkpCorpus(arguments, pairs)
