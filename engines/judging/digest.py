"""Digests of what a judgment depends on: an item's content, a judge's requests, a
profile's sampling. One canonical encoding, so the same value always gives the same digest."""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import math
from datetime import date, datetime
from json.encoder import encode_basestring
from pathlib import PurePath
from typing import Any, Callable

from pydantic import BaseModel

from engines.llm.profile import Sampling


def canonical(value: Any) -> Any:
    """`value` as plain JSON values: dataclasses and pydantic models as their fields, tuples and
    sets as lists (sets sorted), paths and times as text. Anything else is a TypeError."""
    return json.loads(canonical_json(value))


def canonical_json(value: Any) -> str:
    """`value`'s canonical form as JSON text: keys sorted, no spaces, text as it is (not escaped
    to ASCII), as `json.dumps(canonical(value), sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)` writes it. Written part by part, so a long text met again (an argument
    in each of its pairs) is escaped once."""
    return _writer(type(value))(value)


@functools.cache
def _writer(kind: type) -> Callable[[Any], str]:
    """How `canonical_json` writes a value of `kind`, decided once per type: a batch run digests
    thousands of items made of the same few types. Each case writes what `json` writes for the
    plain value (an int or float subclass as the int or float, a str subclass as its text)."""
    if kind is type(None):
        return lambda value: "null"
    if issubclass(kind, bool):
        return lambda value: "true" if value else "false"
    if issubclass(kind, str):
        return _string
    if issubclass(kind, int):
        return int.__repr__
    if issubclass(kind, float):
        return _float
    if issubclass(kind, enum.Enum):
        return lambda value: canonical_json(value.value)
    if issubclass(kind, BaseModel):
        return _fields_of(kind.model_fields)
    if dataclasses.is_dataclass(kind) and not issubclass(kind, type):
        return _fields_of(field.name for field in dataclasses.fields(kind))
    if issubclass(kind, dict):
        return _dict
    if issubclass(kind, (list, tuple)):
        return lambda value: "[" + ",".join(map(canonical_json, value)) + "]"
    if issubclass(kind, (set, frozenset)):
        return lambda value: "[" + ",".join(sorted(map(canonical_json, value))) + "]"
    if issubclass(kind, PurePath):
        return lambda value: _string(value.as_posix())
    if issubclass(kind, (datetime, date)):
        return lambda value: _string(value.isoformat())
    return _refused


# Texts at least this long are escaped once and kept (a batch run's arguments, each in many pairs).
_KEPT_TEXT_LENGTH = 64


def _string(value: str) -> str:
    return encode_basestring(value) if len(value) < _KEPT_TEXT_LENGTH else _kept_string(value)


@functools.lru_cache(maxsize=8192)
def _kept_string(value: str) -> str:
    return encode_basestring(value)


def _float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _fields_of(names: Any) -> Callable[[Any], str]:
    """A dataclass's or model's fields as a JSON object, keys sorted."""
    keyed = tuple((name, encode_basestring(name) + ":") for name in sorted(names))
    return lambda value: "{" + ",".join(key + canonical_json(getattr(value, name)) for name, key in keyed) + "}"


def _dict(value: dict) -> str:
    # keys as text, sorted; of keys with the same text the last in that order is kept
    entries = {
        str(key): canonical_json(item) for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))
    }
    return "{" + ",".join(_string(key) + ":" + item for key, item in entries.items()) + "}"


def _refused(value: Any) -> str:
    raise TypeError(f"no canonical form for a {type(value).__name__}")


def digest(value: Any, length: int = 16) -> str:
    """A short hex digest of `value`'s canonical form."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:length]


def content_digest(seen: Any, sides: Any, reference: str | None) -> str:
    """What a judge sees of an item (its payload or its body, the texts it compares) and its reference."""
    return digest([seen, sides, reference])


def sampling_digest(sampling: Sampling) -> str:
    """The sampling a profile adds to every call ("" when it adds none)."""
    values = sampling.as_request()
    return digest(values, 8) if values else ""
