"""How many tokens a schema-constrained answer can need: its longest JSON instance.

A cap at what the schema allows costs a valid answer nothing and keeps a rambling one from
holding a slot. Two caps make that true and keep the common case as it was:

- `max_tokens_for`, the cap a call asks with: the longest instance at `CHARS_PER_TOKEN`,
  which holds what models write (English JSON runs at 3.5–4.5 characters per token). It is
  not the worst case because a request must fit the server's context (vLLM refuses one whose
  prompt and `max_tokens` together pass it), and the worst case of the longest schemas runs
  to 25,000 tokens, of a short one to 4,000: more than a 4,096-token context holds.
- `worst_case_tokens`, the cap an answer cut at the first one (finish reason "length", no
  readable JSON) is asked again with, once (`engines/llm/reasking.py`). No tokenizer takes
  more than one token per byte, and a constraining grammar counts a `\\uXXXX` escape as one
  character of a string's `maxLength`: so the longest instance with every free-string
  character escaped (6 ASCII bytes, at least the UTF-8 bytes of any character written as it
  is) bounds the tokens of every answer the grammar admits. Text a tokenizer takes at a token
  per character ("1.1.1…") needs 2.5 times the first cap, CJK text as it is 7 (the embedded model's). Whitespace
  past `SPACING_CHARS` before each member, item and closing bracket is rambling, and cut.

A valid answer thus costs at most one more call, never the answer: where the server refuses
the larger cap, the call asking again leaves the limit to the server's context.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from typing import TypeVar

from pydantic import BaseModel, Field, create_model

M = TypeVar("M", bound=BaseModel)

CHARS_PER_TOKEN = 2.5  # English JSON runs at 3.5–4.5 characters per token; a small model's odd words fewer
UNBOUNDED_STRING_CHARS = 1000  # a string field without maxLength or a bounded pattern
MAX_PATTERN_CHARS = 100_000  # a pattern's width past this is an unbounded repeat (`+`, `*`)
SCALAR_CHARS = {"integer": 20, "number": 24, "boolean": 5, "null": 4}
SPACING_CHARS = 5  # per member, item and closing bracket: the whitespace an indented answer puts before it
ESCAPED_CHAR_CHARS = 6  # a free-string character written as a \uXXXX escape


def max_json_chars(schema: dict, definitions: dict | None = None, *, string_char_chars: int = 1) -> int:
    """Characters of the longest JSON value `schema` allows: enum and const values JSON-escaped
    as ASCII, each character of a free string as `string_char_chars` characters (1: written as
    it is; `ESCAPED_CHAR_CHARS`: every one escaped)."""
    definitions = definitions if definitions is not None else schema.get("$defs", {})

    def longest(part: dict) -> int:
        return max_json_chars(part, definitions, string_char_chars=string_char_chars)

    if "$ref" in schema:
        return longest(definitions[schema["$ref"].rsplit("/", 1)[-1]])
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return max(longest(option) for option in options)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return max(len(json.dumps(value)) for value in values)
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        members = [len(json.dumps(name)) + 1 + SPACING_CHARS + longest(value) for name, value in properties.items()]
        return 2 + SPACING_CHARS + sum(members) + max(0, len(members) - 1)
    if kind == "array":
        items = schema.get("maxItems")
        item = longest(schema.get("items", {}))
        count = items if items is not None else 8
        return 2 + SPACING_CHARS + count * (item + 1 + SPACING_CHARS)
    if kind == "string":
        return 2 + string_char_chars * string_chars(schema)
    return SCALAR_CHARS.get(kind, UNBOUNDED_STRING_CHARS)


def string_chars(schema: dict) -> int:
    """The longest string a string schema admits: its `maxLength`, else the most its `pattern`
    matches (a patterned string carries no length bound of its own: vLLM's grammar engines
    refuse the two together), else `UNBOUNDED_STRING_CHARS`."""
    if "maxLength" in schema:
        return schema["maxLength"]
    pattern = schema.get("pattern")
    return pattern_chars(pattern) if isinstance(pattern, str) else UNBOUNDED_STRING_CHARS


@cache
def pattern_chars(pattern: str) -> int:
    """The most characters a string matching `pattern` has (`UNBOUNDED_STRING_CHARS` for an
    unbounded one), from the regex parser's own width of the pattern."""
    try:
        widest = re._parser.parse(pattern).getwidth()[1]  # the parser `re.compile` uses
    except (re.error, RecursionError, OverflowError):
        return UNBOUNDED_STRING_CHARS
    return widest if widest <= MAX_PATTERN_CHARS else UNBOUNDED_STRING_CHARS


def max_tokens_for(model_cls: type[BaseModel]) -> int:
    """The `max_tokens` to ask with: fits the longest answer `model_cls` accepts as models write it."""
    return schema_tokens(model_cls.model_json_schema())


def schema_tokens(schema: dict) -> int:
    """`max_tokens_for` of a JSON schema."""
    return math.ceil(max_json_chars(schema) / CHARS_PER_TOKEN)


def worst_case_tokens(schema: dict) -> int:
    """The most tokens an answer constrained to `schema` can take: one per byte of its longest
    instance, every free-string character escaped."""
    return max_json_chars(schema, string_char_chars=ESCAPED_CHAR_CHARS)


@cache
def with_at_most(model: type[M], field: str, items: int) -> type[M]:
    """`model` with its list `field` admitting at most `items`, for an answer sized to its input: a
    small model fills what a schema allows, and the cap follows the schema. The same name, so the
    schema a server sees differs only in that bound."""
    annotation = model.model_fields[field].annotation
    return create_model(model.__name__, __base__=model, **{field: (annotation, Field(max_length=items))})
