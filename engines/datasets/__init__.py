"""Dataset readers. Bundled (openly licensed) data lives in `data/`; see data/ATTRIBUTION.md."""

from __future__ import annotations

import codecs
import csv
import gzip
import json
import math
import operator
import re
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from engines.errors import ArgtuiError

BUNDLED = Path(__file__).parent / "data"


class DataFormatError(ArgtuiError):
    """A data file is not in the expected shape; names the file, line and field."""

    def __init__(self, path: Path | str, line: int | None, field: str | None, problem: str):
        self.path, self.line, self.field = str(path), line, field
        where = str(path) + (f", line {line}" if line is not None else "")
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}: {what}{problem}")


# Long texts (a critique, an essay) are legitimate CSV cells; csv's default limit is 128 KB.
csv.field_size_limit(64 * 1024 * 1024)
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def text_lines(path: Path, encoding: str = "utf-8") -> Iterator[str]:
    """The lines of a text file, plain or gzipped, UTF-8 unless a format says otherwise (a
    leading UTF-8 BOM is allowed); a file that is not such text fails with the file and line
    named, as does a NUL byte."""
    if not path.is_file():
        raise DataFormatError(path, None, None, "file not found")
    with open(path, "rb") as raw:
        head = raw.read(2)
    if head in UTF16_BOMS:
        raise DataFormatError(path, None, None, "is UTF-16 text: save it as UTF-8")
    number = 0
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            # Decoded a line at a time, so an error names its own line.
            for number, raw in enumerate(_byte_lines(handle), start=1):
                try:
                    line = raw.decode("utf-8-sig" if number == 1 and encoding == "utf-8" else encoding)
                except UnicodeDecodeError as exc:
                    name = "UTF-8" if encoding == "utf-8" else encoding
                    raise DataFormatError(
                        path, number, None, f"not {name} text (byte 0x{raw[exc.start]:02x})"
                    ) from None
                if "\0" in line:
                    raise DataFormatError(path, number, None, "contains a NUL byte: not a text file?")
                yield line
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise DataFormatError(path, number + 1, None, f"not a complete gzip file ({exc})") from None


_LINE_END = re.compile(rb"\r\n|\r|\n")


def _byte_lines(handle: BinaryIO, chunk_size: int = 1 << 16) -> Iterator[bytes]:
    """Lines ending in CR, LF or CRLF, terminators kept (as text mode with newline="" splits);
    linear in the input, however long a line is."""
    pending = bytearray()
    while chunk := handle.read(chunk_size):
        pending += chunk
        if b"\n" not in chunk and b"\r" not in chunk:
            continue
        end = 0
        for match in _LINE_END.finditer(pending):
            if match.end() == len(pending) and pending.endswith(b"\r"):
                break  # its LF may start the next chunk
            yield bytes(pending[end : match.end()])
            end = match.end()
        del pending[:end]
    if pending:
        yield bytes(pending)


def _unpaired_surrogate(value: Any, field: str | None = None) -> tuple[str | None, str] | None:
    """(field, character) of the first string in `value` holding a lone UTF-16 surrogate, which JSON's
    \\uD800-style escapes can spell but no text encoding (nor the database) can store."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return field, value[exc.start]
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _unpaired_surrogate(item, key if isinstance(key, str) else field)
        if found is not None:
            return found
    return None


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSON-lines file."""
    for number, line in enumerate(text_lines(path), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
            surrogate = _unpaired_surrogate(value) if "\\u" in line else None
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, number, None, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise DataFormatError(path, number, None, "JSON nested too deeply") from None
        except ValueError as exc:  # e.g. an integer of thousands of digits
            raise DataFormatError(path, number, None, f"not valid JSON: {exc}") from None
        if surrogate is not None:
            field, character = surrogate
            problem = f"holds an unpaired surrogate ({character!r}), which no text can store"
            raise DataFormatError(path, number, field, problem)
        yield number, value


EXTRA_CELLS = "\0extra"  # where DictReader puts the cells of a row longer than its header


def _records(path: Path, reader: Any) -> Iterator[Any]:
    """The reader's records; one csv cannot read fails with its line named (`reader.line_num`
    is the current record's while it is handled)."""
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DataFormatError(path, reader.line_num, None, f"not valid CSV: {exc}") from None
        yield record


def _checked_rows(path: Path, reader: csv.DictReader) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of each row; a row with more or fewer cells than the header, or one
    csv cannot read, fails with the line named."""
    for row in _records(path, reader):
        if EXTRA_CELLS in row:
            raise DataFormatError(
                path, reader.line_num, None,
                f"{len(reader.fieldnames or []) + len(row[EXTRA_CELLS])} cells but the header has "
                f"{len(reader.fieldnames or [])} columns",
            )
        if None in row.values():  # DictReader's filler for the cells of a short row
            missing = [name for name, value in row.items() if value is None]
            raise DataFormatError(
                path, reader.line_num, missing[0],
                f"{len(row) - len(missing)} cells but the header has {len(row)} columns",
            )
        yield reader.line_num, row


def _checked_header(
    path: Path, read: Callable[[], list[str] | None], required: tuple[str, ...], known: tuple[str, ...] | None
) -> list[str]:
    """The header row `read` returns; a missing column (or, given `known`, an unknown one) fails
    with the file named."""
    try:
        header = read() or []
    except csv.Error as exc:
        raise DataFormatError(path, 1, None, f"not valid CSV: {exc}") from None
    missing = [name for name in required if name not in header]
    if missing:
        raise DataFormatError(path, 1, missing[0], f"missing column (header: {header})")
    unknown = sorted(set(header) - set(known)) if known is not None else []
    if unknown:
        raise DataFormatError(path, 1, unknown[0], f"unknown column (known: {', '.join(known or ())})")
    return header


def read_csv_rows(
    path: Path, required: tuple[str, ...], delimiter: str = ",", *, known: tuple[str, ...] | None = None,
    encoding: str = "utf-8", quoting: int = csv.QUOTE_MINIMAL,
) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) for each data row; a missing column (or, given `known`, an unknown
    one) fails with the file named. `quoting=csv.QUOTE_NONE` for a format whose cells may start
    with a quote that is text (tab-separated files without quoting)."""
    reader = csv.DictReader(text_lines(path, encoding), delimiter=delimiter, restkey=EXTRA_CELLS, quoting=quoting)
    _checked_header(path, lambda: reader.fieldnames, required, known)
    yield from _checked_rows(path, reader)


def read_csv_columns(
    path: Path, columns: tuple[str, ...], delimiter: str = ",", *, encoding: str = "utf-8",
) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(line number, the cells of `columns` in that order) for each data row, with the checks of
    `read_csv_rows` and its messages, but no dict per row: for files of many thousand rows."""
    reader = csv.reader(text_lines(path, encoding), delimiter=delimiter)
    header = _checked_header(path, lambda: next(reader, None), columns, None)
    width = len(header)
    # the last of equal names, as DictReader keeps
    picks = [width - 1 - header[::-1].index(name) for name in columns]
    pick = operator.itemgetter(*picks) if len(picks) > 1 else lambda cells: (cells[picks[0]],)
    for cells in _records(path, reader):
        if len(cells) != width:
            if not cells:  # a blank line, which DictReader skips too
                continue
            field = header[len(cells)] if len(cells) < width else None
            raise DataFormatError(path, reader.line_num, field, f"{len(cells)} cells but the header has {width} columns")
        yield reader.line_num, pick(cells)


def integer_cell(row: dict[str, str], name: str, path: Path, line: int) -> int:
    """The cell as an integer, or an error naming the file, line and column."""
    try:
        return int(row[name])
    except (TypeError, ValueError):  # ValueError too for an integer of thousands of digits
        raise DataFormatError(path, line, name, f"expected an integer, got {_clip(row.get(name))!r}") from None


def number_cell(row: dict[str, str], name: str, path: Path, line: int) -> float:
    """The cell as a finite number, or an error naming the file, line and column."""
    try:
        value = float(row[name])
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise DataFormatError(path, line, name, f"expected a number, got {_clip(row.get(name))!r}")
    return value


def _clip(value: str | None, limit: int = 40) -> str | None:
    """A cell short enough to quote in a message."""
    return value if value is None or len(value) <= limit else value[:limit] + "…"
