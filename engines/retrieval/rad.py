"""Reading Touché RAD argument files (JSON lines, plain or gzipped).

Each line is one ClaimRev argument: `{id, topic, tags, attacks, supports, text,
references, original}` (`score` and `key` may appear and are ignored). The data
is research-only: argtui reads it from the path the user gives and never copies it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from engines.datasets import DataFormatError, json_lines
from engines.retrieval.types import RELATIONS, Argument

RAD_SOURCE = "touche25-rad"


def iter_rad_arguments(path: Path) -> Iterator[Argument]:
    """Arguments in file order; the first malformed line raises DataFormatError naming line and field."""
    path = Path(path)
    for number, record in json_lines(path):
        yield _argument(path, number, record)


def count_rad_arguments(path: Path) -> int:
    """Validates the whole file (so an import can be all or nothing) and counts its arguments."""
    total = sum(1 for _ in iter_rad_arguments(path))
    if not total:
        raise DataFormatError(path, None, None, "no arguments in the file")
    return total


def _argument(path: Path, line: int, record: Any) -> Argument:
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
