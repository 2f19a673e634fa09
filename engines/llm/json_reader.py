"""Reading JSON that a server or a model wrote, whatever it wrote.

One reader for server answers, stream events and constrained model output: anything it
cannot turn into Python (not JSON, nested deeper than a parser recurses, an integer past
Python's digit limit, bytes that are not UTF-8) is an `UnreadableJSON` that says why, never
another exception, so every caller has one case to handle.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


class UnreadableJSON(ValueError):
    """Text that cannot be read as JSON; the message says why."""


def read_json(text: str | bytes) -> Any:
    """JSON text to Python: orjson, or the standard parser for what only it reads (NaN, Infinity)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except RecursionError:
        raise UnreadableJSON("JSON nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise UnreadableJSON(f"non-JSON ({exc})") from None
    except UnicodeDecodeError:
        raise UnreadableJSON("non-JSON (not UTF-8 text)") from None
    except ValueError:  # the standard parser's limit on integer digits
        raise UnreadableJSON("JSON with a number too long to read") from None
