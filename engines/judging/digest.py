"""Digests of what a judgment depends on: an item's content, a judge's requests, a
profile's sampling. One canonical encoding, so the same value always gives the same digest."""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
from datetime import date, datetime
from pathlib import PurePath
from typing import Any, Callable

from pydantic import BaseModel

from engines.llm.profile import Sampling


def canonical(value: Any) -> Any:
    """`value` as plain JSON values: dataclasses and pydantic models as their fields, tuples and
    sets as lists (sets sorted), paths and times as text. Anything else is a TypeError."""
    return _canonical_form(type(value))(value)


@functools.cache
def _canonical_form(kind: type) -> Callable[[Any], Any]:
    """How `canonical` turns a value of `kind` into plain JSON values, decided once per type: a
    batch run digests thousands of items made of the same few types."""
    if kind is type(None) or issubclass(kind, (bool, int, float, str)):
        return _itself
    if issubclass(kind, enum.Enum):
        return lambda value: canonical(value.value)
    if issubclass(kind, BaseModel):
        return _fields_of(tuple(kind.model_fields))
    if dataclasses.is_dataclass(kind) and not issubclass(kind, type):
        return _fields_of(tuple(field.name for field in dataclasses.fields(kind)))
    if issubclass(kind, dict):
        return lambda value: {
            str(key): canonical(item) for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))
        }
    if issubclass(kind, (list, tuple)):
        return lambda value: [canonical(item) for item in value]
    if issubclass(kind, (set, frozenset)):
        return lambda value: sorted((canonical(item) for item in value), key=_encoded)
    if issubclass(kind, PurePath):
        return PurePath.as_posix
    if issubclass(kind, (datetime, date)):
        return lambda value: value.isoformat()
    return _refused


def _itself(value: Any) -> Any:
    return value


def _fields_of(names: tuple[str, ...]) -> Callable[[Any], dict[str, Any]]:
    return lambda value: {name: canonical(getattr(value, name)) for name in names}


def _refused(value: Any) -> Any:
    raise TypeError(f"no canonical form for a {type(value).__name__}")


# json.dumps with these options builds this encoder on every call
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _encoded(value: Any) -> str:
    return _ENCODER.encode(value)


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
