"""Dataset readers. Bundled (openly licensed) data lives in `data/`; see data/ATTRIBUTION.md."""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path
from typing import Iterator

from engines.errors import ArgtuiError

BUNDLED = Path(__file__).parent / "data"


class DataFormatError(ArgtuiError):
    """A data file is not in the expected shape; names the file, line and field."""

    def __init__(self, path: Path | str, line: int | None, field: str | None, problem: str):
        self.path, self.line, self.field = str(path), line, field
        where = str(path) + (f", line {line}" if line is not None else "")
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}: {what}{problem}")


def open_text(path: Path, encoding: str = "utf-8") -> io.TextIOBase:
    """A text stream of a plain or gzipped file."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding=encoding, newline="")
    return open(path, encoding=encoding, newline="")


def read_csv_rows(path: Path, required: tuple[str, ...], delimiter: str = ",") -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) for each data row; a missing column fails with the file named."""
    if not path.is_file():
        raise DataFormatError(path, None, None, "file not found")
    with open_text(path) as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        missing = [name for name in required if name not in (reader.fieldnames or [])]
        if missing:
            raise DataFormatError(path, 1, missing[0], f"missing column (header: {reader.fieldnames})")
        for row in reader:
            yield reader.line_num, row
