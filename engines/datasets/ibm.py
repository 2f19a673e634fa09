"""IBM-ArgQ-Rank-30kArgs: 30,497 arguments on 71 topics with quality and stance."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engines.datasets import BUNDLED, DataFormatError, read_csv_rows

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
        try:
            stance = int(float(row["stance_WA"]))
            wa, mace = float(row["WA"]), float(row["MACE-P"])
        except ValueError as exc:
            raise DataFormatError(path, line, "WA/MACE-P/stance_WA", f"not a number: {exc}") from None
        if stance not in (-1, 0, 1):
            raise DataFormatError(path, line, "stance_WA", f"expected 1, -1 or 0, got {stance}")
        arguments.append(
            IbmArgument(len(arguments), row["argument"].strip(), row["topic"].strip(), row["set"], wa, mace, stance)
        )
    return arguments
