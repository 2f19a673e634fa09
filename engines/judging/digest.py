"""Digests of what a judgment depends on: an item's content, a judge's requests, a
profile's sampling. One canonical encoding, so the same value always gives the same digest."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from datetime import date, datetime
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from engines.llm.profile import Sampling


def canonical(value: Any) -> Any:
    """`value` as plain JSON values: dataclasses and pydantic models as their fields, tuples and
    sets as lists (sets sorted), paths and times as text. Anything else is a TypeError."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return canonical(value.value)
    if isinstance(value, BaseModel):
        return {name: canonical(getattr(value, name)) for name in type(value).model_fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: canonical(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): canonical(item) for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(item) for item in value), key=_encoded)
    if isinstance(value, PurePath):
        return value.as_posix()
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    raise TypeError(f"no canonical form for a {type(value).__name__}")


def _encoded(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any, length: int = 16) -> str:
    """A short hex digest of `value`'s canonical form."""
    return hashlib.sha256(_encoded(canonical(value)).encode()).hexdigest()[:length]


def content_digest(seen: Any, sides: Any, reference: str | None) -> str:
    """What a judge sees of an item (its payload or its body, the texts it compares) and its reference."""
    return digest([seen, sides, reference])


def sampling_digest(sampling: Sampling) -> str:
    """The sampling a profile adds to every call ("" when it adds none)."""
    values = sampling.as_request()
    return digest(values, 8) if values else ""
