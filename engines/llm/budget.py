"""How many tokens a schema-constrained answer can need: its longest JSON instance.

A constrained model that rambles stops at `max_tokens`; a cap at what the schema allows
costs a valid answer nothing and keeps a rambling one from holding a slot.
"""

from __future__ import annotations

import json
import math

from pydantic import BaseModel

CHARS_PER_TOKEN = 2.5  # English JSON runs at 3.5–4.5 characters per token; a small model's odd words fewer
UNBOUNDED_STRING_CHARS = 1000  # a string field without maxLength
SCALAR_CHARS = {"integer": 20, "number": 24, "boolean": 5, "null": 4}
SPACING_CHARS = 5  # per member or item: the whitespace a JSON grammar allows around it


def max_json_chars(schema: dict, definitions: dict | None = None) -> int:
    """Characters of the longest JSON value `schema` allows (strings JSON-escaped as ASCII)."""
    definitions = definitions if definitions is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return max_json_chars(definitions[schema["$ref"].rsplit("/", 1)[-1]], definitions)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return max(max_json_chars(option, definitions) for option in options)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return max(len(json.dumps(value)) for value in values)
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        members = [
            len(json.dumps(name)) + 1 + SPACING_CHARS + max_json_chars(value, definitions)
            for name, value in properties.items()
        ]
        return 2 + sum(members) + max(0, len(members) - 1)
    if kind == "array":
        items = schema.get("maxItems")
        item = max_json_chars(schema.get("items", {}), definitions)
        count = items if items is not None else 8
        return 2 + count * (item + 1 + SPACING_CHARS)
    if kind == "string":
        return 2 + schema.get("maxLength", UNBOUNDED_STRING_CHARS)
    return SCALAR_CHARS.get(kind, UNBOUNDED_STRING_CHARS)


def max_tokens_for(model_cls: type[BaseModel]) -> int:
    """A `max_tokens` that fits the longest answer `model_cls` accepts."""
    return math.ceil(max_json_chars(model_cls.model_json_schema()) / CHARS_PER_TOKEN)
