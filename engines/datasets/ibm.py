"""IBM-ArgQ-Rank-30kArgs: 30,497 arguments on 71 topics with quality and stance."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engines.datasets import BUNDLED, DataFormatError, number_cell, read_csv_rows

BUNDLED_IBM = BUNDLED / "ibm-argq-rank-30k" / "arg_quality_rank_30k.csv.gz"
COLUMNS = ("argument", "topic", "set", "WA", "MACE-P", "stance_WA")


@dataclass(frozen=True)
class IbmArgument:
    row: int  # 0-based position in the file: a stable id
    text: str
    topic: str
    split: str
    quality_wa: float
    quality_mace_p: float
    stance: int  # 1 pro, -1 con, 0 neutral


def load_ibm(path: Path | None = None) -> list[IbmArgument]:
    """The bundled file, or the original CSV (plain or gzipped) at `path`."""
    path = path or BUNDLED_IBM
    arguments = []
    for line, row in read_csv_rows(path, COLUMNS):
        wa, mace = number_cell(row, "WA", path, line), number_cell(row, "MACE-P", path, line)
        stance = number_cell(row, "stance_WA", path, line)  # written as 1.0, -1.0 or 0.0
        if stance not in (-1, 0, 1):
            raise DataFormatError(path, line, "stance_WA", f"expected 1, -1 or 0, got {row['stance_WA']!r}")
        text, topic = row["argument"].strip(), row["topic"].strip()
        arguments.append(IbmArgument(len(arguments), text, topic, row["set"], wa, mace, int(stance)))
    return arguments
