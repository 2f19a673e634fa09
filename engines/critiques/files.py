"""Critique files: JSONL (one object per critique) and CSV (one row per rating).

JSONL shape, one line per critique:

    {"position_id": ..., "position": ..., "critique_id": ..., "critique": ...,
     "source": ..., "topic": ...,                                   (optional)
     "ratings": [{"rater": ..., "centrality": ..., "strength": ..., "correctness": ...,
                  "clarity": ..., "dead_weight": ..., "single_issue": ..., "overall": ...,
                  "note": ...,                                      (optional)
                  "id": ..., "revises": ..., "reason": ...,         (optional: revision chains)
                  "rater_kind": "human"|"judge", "source_seen": bool,
                  "valid": bool, "raw": ..., "error": ..., "created_at": ISO time}]}

CSV has the same fields as columns, one row per rating (`rating_id` for the
rating's `id`); a critique without ratings is one row with the rating columns
empty; a text that would start a spreadsheet formula has an apostrophe before
it (`engines.output.csv_cell`), taken off again when read. Reading validates the whole file first and names file, line and field
of the first problem; importing then writes everything in one transaction.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Literal, TextIO

from engines.datasets import DataFormatError, json_lines, read_csv_rows
from engines.output import csv_text, write_csv
from store.critiques import (
    DIMENSIONS,
    HUMAN,
    JUDGE,
    CritiqueError,
    CritiqueRepository,
    ImportCounts,
    NewCritique,
    NewPosition,
    NewRating,
)

FileFormat = Literal["jsonl", "csv"]
CRITIQUE_KEYS = ("position_id", "position", "critique_id", "critique", "source", "topic")
RATING_KEYS = (
    "id", "rater", "rater_kind", *DIMENSIONS, "note", "revises", "reason",
    "source_seen", "valid", "raw", "error", "created_at",
)
CSV_COLUMNS = (*CRITIQUE_KEYS, "rating_id", *RATING_KEYS[1:])
RATER_KINDS = (HUMAN, JUDGE)


@dataclass
class CritiqueFile:
    """A validated file, ready to import; `where` maps (kind, uid) to (line, field prefix)."""

    path: Path
    positions: list[NewPosition] = field(default_factory=list)
    critiques: list[NewCritique] = field(default_factory=list)
    ratings: list[NewRating] = field(default_factory=list)
    where: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)


@dataclass
class _Entry:
    """One critique as read from either format, before validation."""

    line: int
    fields: dict[str, Any]
    ratings: list[tuple[int, str, dict[str, Any]]]  # (line, field prefix, rating object)


def detect_format(path: Path) -> FileFormat:
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    raise DataFormatError(path, None, None, "unknown format: name it .jsonl or .csv (optionally .gz), or pass --format")


# ---------------------------------------------------------------------- reading


def _jsonl_entries(path: Path) -> Iterator[_Entry]:
    for number, obj in json_lines(path):
        if not isinstance(obj, dict):
            raise DataFormatError(path, number, None, "each line must be a JSON object (one critique)")
        unknown = sorted(set(obj) - {*CRITIQUE_KEYS, "ratings"})
        if unknown:
            raise DataFormatError(path, number, unknown[0], f"unknown field (known: {', '.join(CRITIQUE_KEYS)}, ratings)")
        ratings = obj.get("ratings") or []
        if not isinstance(ratings, list):
            raise DataFormatError(path, number, "ratings", "must be a list of rating objects")
        for k, rating in enumerate(ratings):
            if not isinstance(rating, dict):
                raise DataFormatError(path, number, f"ratings[{k}]", "must be an object")
            unknown = sorted(set(rating) - set(RATING_KEYS))
            if unknown:
                raise DataFormatError(path, number, f"ratings[{k}].{unknown[0]}", f"unknown field (known: {', '.join(RATING_KEYS)})")
        yield _Entry(
            number,
            {key: obj.get(key) for key in CRITIQUE_KEYS},
            [(number, f"ratings[{k}].", rating) for k, rating in enumerate(ratings)],
        )


def _csv_entries(path: Path) -> Iterator[_Entry]:
    entries: dict[str, _Entry] = {}
    required = ("position_id", "position", "critique_id", "critique")
    for line, row in read_csv_rows(path, required, known=CSV_COLUMNS):
        cells = {key: (csv_text(value) if value != "" else None) for key, value in row.items() if key is not None}
        fields = {key: cells.get(key) for key in CRITIQUE_KEYS}
        entry = entries.get(fields["critique_id"] or "")
        if entry is None:
            entry = _Entry(line, fields, [])
            if fields["critique_id"]:
                entries[fields["critique_id"]] = entry
            else:
                yield entry  # validation reports the missing id
                continue
        else:
            for key in CRITIQUE_KEYS:
                if fields[key] != entry.fields[key]:
                    raise DataFormatError(path, line, key, f"differs from line {entry.line} for the same critique_id")
        rating = {key: cells.get("rating_id" if key == "id" else key) for key in RATING_KEYS}
        if any(value is not None for value in rating.values()):
            entry.ratings.append((line, "", _typed_csv_rating(path, line, rating)))
    yield from entries.values()


def _typed_csv_rating(path: Path, line: int, rating: dict[str, str | None]) -> dict[str, Any]:
    typed: dict[str, Any] = dict(rating)
    for name in DIMENSIONS:
        if rating[name] is not None:
            try:
                typed[name] = float(rating[name])
            except ValueError:
                raise DataFormatError(path, line, name, f"not a number: {rating[name]!r}") from None
    for name in ("source_seen", "valid"):
        if rating[name] is not None:
            flag = rating[name].strip().lower()
            if flag not in ("true", "false", "1", "0"):
                raise DataFormatError(path, line, name, f"expected true or false, got {rating[name]!r}")
            typed[name] = flag in ("true", "1")
    return typed


def _text(path: Path, line: int, name: str, value: Any, *, required: bool, identifier: bool = False) -> str | None:
    """Free text kept as written; identifiers (ids, rater names) without surrounding blanks."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise DataFormatError(path, line, name, "missing (every critique needs its position: position_id and position)"
                                  if name.startswith("position") else "missing")
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataFormatError(path, line, name, f"expected text, got {type(value).__name__}")
    return str(value).strip() if identifier else str(value)


def _score(path: Path, line: int, name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise DataFormatError(path, line, name, f"expected a number in [0, 1], got {value!r}")
    if not 0 <= value <= 1:
        raise DataFormatError(path, line, name, f"{value} is outside [0, 1]")
    return float(value)


def _flag(path: Path, line: int, name: str, value: Any, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise DataFormatError(path, line, name, f"expected true or false, got {value!r}")
    return value


def _time(path: Path, line: int, name: str, value: Any) -> datetime | None:
    text = _text(path, line, name, value, required=False)
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise DataFormatError(path, line, name, f"not an ISO 8601 time: {text!r}") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def read_critiques(path: Path, file_format: FileFormat | None = None) -> CritiqueFile:
    """Read and validate a whole file; the first problem raises DataFormatError."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, None, "file not found")
    entries = _csv_entries(path) if (file_format or detect_format(path)) == "csv" else _jsonl_entries(path)
    result = CritiqueFile(path)
    positions: dict[str, tuple[str, int]] = {}
    critique_lines: dict[str, int] = {}
    ratings_by_uid: dict[str, NewRating] = {}
    for entry in entries:
        line, fields = entry.line, entry.fields
        position_uid = _text(path, line, "position_id", fields["position_id"], required=True, identifier=True)
        position_text = _text(path, line, "position", fields["position"], required=True)
        critique_uid = _text(path, line, "critique_id", fields["critique_id"], required=True, identifier=True)
        critique_text = _text(path, line, "critique", fields["critique"], required=True)
        if position_uid in positions:
            if positions[position_uid][0] != position_text:
                raise DataFormatError(
                    path, line, "position",
                    f"position {position_uid!r} has another text on line {positions[position_uid][1]}",
                )
        else:
            positions[position_uid] = (position_text, line)
            result.positions.append(NewPosition(position_uid, position_text))
            result.where[("position", position_uid)] = (line, "")
        if critique_uid in critique_lines:
            raise DataFormatError(path, line, "critique_id", f"{critique_uid!r} already on line {critique_lines[critique_uid]}")
        critique_lines[critique_uid] = line
        result.critiques.append(
            NewCritique(
                critique_uid, position_uid, critique_text,
                source=_text(path, line, "source", fields["source"], required=False),
                topic=_text(path, line, "topic", fields["topic"], required=False),
            )
        )
        result.where[("critique", critique_uid)] = (line, "")
        chains: dict[str, list[str]] = {}
        for rating_line, prefix, rating in entry.ratings:
            new = _rating(path, rating_line, prefix, rating, critique_uid, chains, ratings_by_uid)
            ratings_by_uid[new.uid] = new
            result.ratings.append(new)
            result.where[("rating", new.uid)] = (rating_line, prefix)
    if not result.critiques:
        raise DataFormatError(path, None, None, "holds no critique: nothing to import")
    return result


def _rating(
    path: Path,
    line: int,
    prefix: str,
    rating: dict[str, Any],
    critique_uid: str,
    chains: dict[str, list[str]],
    earlier: dict[str, NewRating],
) -> NewRating:
    """Validate one rating; `chains` holds the uids each rater has so far for this critique."""
    rater = _text(path, line, prefix + "rater", rating.get("rater"), required=True, identifier=True)
    kind = rating.get("rater_kind") or HUMAN
    if kind not in RATER_KINDS:
        raise DataFormatError(path, line, prefix + "rater_kind", f"expected one of {RATER_KINDS}, got {kind!r}")
    values = {name: _score(path, line, prefix + name, rating.get(name)) for name in DIMENSIONS}
    valid = _flag(path, line, prefix + "valid", rating.get("valid"), True)
    if valid and values["overall"] is None:
        raise DataFormatError(path, line, prefix + "overall", "missing (a valid rating needs at least overall)")
    chain = chains.setdefault(rater, [])
    uid = _text(path, line, prefix + "id", rating.get("id"), required=False, identifier=True) or f"{critique_uid}/{rater}/{len(chain) + 1}"
    if uid in earlier or uid in chain:
        raise DataFormatError(path, line, prefix + "id", f"rating id {uid!r} appears twice")
    revises = _text(path, line, prefix + "revises", rating.get("revises"), required=False, identifier=True)
    reason = _text(path, line, prefix + "reason", rating.get("reason"), required=False)
    if revises is None and chain:
        raise DataFormatError(
            path, line, prefix + "revises",
            f"{rater} already rated this critique; a later rating must name the one it revises "
            "in 'revises' and give a 'reason'",
        )
    if revises is not None:
        target = earlier.get(revises)
        if target is not None and (target.critique_uid, target.rater) != (critique_uid, rater):
            raise DataFormatError(path, line, prefix + "revises", f"{revises!r} is another critique's or rater's rating")
        if chain and revises != chain[-1]:
            raise DataFormatError(path, line, prefix + "revises", f"must be {rater}'s latest rating {chain[-1]!r}, got {revises!r}")
        if reason is None:
            raise DataFormatError(path, line, prefix + "reason", "a revision needs a reason")
    chain.append(uid)
    return NewRating(
        uid=uid, critique_uid=critique_uid, rater=rater, values=values, rater_kind=kind,
        note=_text(path, line, prefix + "note", rating.get("note"), required=False),
        revises_uid=revises, reason=reason,
        source_seen=_flag(path, line, prefix + "source_seen", rating.get("source_seen"), False),
        valid=valid,
        raw=_text(path, line, prefix + "raw", rating.get("raw"), required=False),
        error=_text(path, line, prefix + "error", rating.get("error"), required=False),
        created_at=_time(path, line, prefix + "created_at", rating.get("created_at")),
    )


def import_critiques(repo: CritiqueRepository, path: Path, file_format: FileFormat | None = None) -> ImportCounts:
    """Validate the whole file, then store it in one transaction (nothing is stored on any error)."""
    parsed = read_critiques(path, file_format)
    try:
        return repo.import_items(parsed.positions, parsed.critiques, parsed.ratings)
    except CritiqueError as exc:
        line, prefix = parsed.where.get((exc.kind, exc.uid), (None, ""))
        field_name = prefix + exc.field if exc.field else None
        raise DataFormatError(path, line, field_name, f"{exc.kind} {exc.uid!r}: {exc.problem}") from None


# ---------------------------------------------------------------------- writing


def export_records(repo: CritiqueRepository) -> list[dict[str, Any]]:
    """Every critique with all its ratings (first ratings and every revision), in the JSONL shape."""
    by_critique: dict[int, list[dict[str, Any]]] = {}
    for rating in repo.ratings(which="all"):
        record: dict[str, Any] = {"id": rating.uid, "rater": rating.rater, "rater_kind": rating.rater_kind}
        record.update(rating.values)
        optional = {"note": rating.note, "revises": rating.revises_uid, "reason": rating.reason}
        record.update({k: v for k, v in optional.items() if v is not None})
        record["source_seen"] = rating.source_seen
        record["valid"] = rating.valid
        record.update({k: v for k, v in (("raw", rating.raw), ("error", rating.error)) if v is not None})
        record["created_at"] = rating.created_at.isoformat()
        by_critique.setdefault(rating.critique_id, []).append(record)
    records = []
    for position in repo.positions():
        for critique in position.critiques:
            record: dict[str, Any] = {
                "position_id": position.uid, "position": position.text,
                "critique_id": critique.uid, "critique": critique.text,
            }
            record.update({k: v for k, v in (("source", critique.source), ("topic", critique.topic)) if v is not None})
            record["ratings"] = by_critique.get(critique.id, [])
            records.append(record)
    return records


def write_jsonl(records: list[dict[str, Any]], handle: TextIO) -> None:
    for record in records:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _csv_rows(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for record in records:
        base = {key: record.get(key) for key in CRITIQUE_KEYS}
        for rating in record["ratings"] or [{}]:
            row = dict(base)
            for key, value in rating.items():
                row["rating_id" if key == "id" else key] = str(value).lower() if isinstance(value, bool) else value
            yield row


def render(records: list[dict[str, Any]], file_format: FileFormat) -> str:
    buffer = io.StringIO()
    if file_format == "csv":
        write_csv(buffer, CSV_COLUMNS, _csv_rows(records))
    else:
        write_jsonl(records, buffer)
    return buffer.getvalue()
