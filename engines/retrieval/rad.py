"""Reading Touché RAD argument files (JSON lines, plain or gzipped).

Each line is one ClaimRev argument: `{id, topic, tags, attacks, supports, text,
references, original}` (`score` and `key` may appear and are ignored). The data
is research-only: argtui reads it from the path the user gives and never copies it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from engines.datasets import DataFormatError, open_text
from engines.retrieval.types import RELATIONS, Argument

RAD_SOURCE = "touche25-rad"


def iter_rad_arguments(path: Path) -> Iterator[Argument]:
    """Arguments in file order; the first malformed line raises DataFormatError naming line and field."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, None, "file not found")
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield _argument(path, number, line)


def count_rad_arguments(path: Path) -> int:
    """Validates the whole file (so an import can be all or nothing) and counts its arguments."""
    return sum(1 for _ in iter_rad_arguments(path))


def _argument(path: Path, line: int, raw: str) -> Argument:
    try:
        record = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, line, None, f"not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(record, dict):
        raise DataFormatError(path, line, None, f"expected a JSON object, got {type(record).__name__}")

    def text(name: str, required: bool) -> str | None:
        value = record.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            raise DataFormatError(path, line, name, f"expected a non-empty string, got {value!r}")
        return value.strip() or None

    original = record.get("original")
    if original is not None and original not in RELATIONS:
        raise DataFormatError(path, line, "original", f"expected 'attacks' or 'supports', got {original!r}")
    tags = record.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise DataFormatError(path, line, "tags", f"expected a list of strings, got {tags!r}")
    argument = Argument(
        id=text("id", True),  # type: ignore[arg-type]
        text=text("text", True),  # type: ignore[arg-type]
        topic=text("topic", False) or "",
        attacks=text("attacks", False),
        supports=text("supports", False),
        tags=tuple(tags),
        source=RAD_SOURCE,
        relation=original,
    )
    if original is not None and argument.target is None:
        raise DataFormatError(path, line, original, f"'original' is {original!r} but that field is empty")
    return argument
