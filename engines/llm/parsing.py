"""Reading what an OpenAI-compatible server answered: choices, stream events, token counts,
logprobs, error bodies, label distributions and schema-constrained output.

Whatever shape a server sends, reading it raises `UnreadableJSON` or one of `SHAPE_ERRORS`,
which the client turns into a `BackendError` naming the server.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from engines.llm.json_reader import UnreadableJSON, read_json
from engines.llm.types import Completion, LabelReading, Structured, TokenLogprob

ModelT = TypeVar("ModelT", bound=BaseModel)

# What reading an answer of a shape other than the API's raises (a number where a list should
# be, infinity as a token count, a list nested too deeply to print).
SHAPE_ERRORS = (AttributeError, TypeError, ValueError, OverflowError, RecursionError)

Answer = tuple[str, str | None, tuple[TokenLogprob, ...]]  # text, finish reason, logprobs


def label_distribution(
    labels: Sequence[str], completion: Completion, label: str, offset: int, *, greedy: bool
) -> LabelReading:
    """P(label) over `labels` from the top logprobs of the token that emitted `label`, which starts
    at `offset` of the completion's text.

    The token is found by what the tokens spell, never by counting the text's characters: a server
    may send text without part of what its tokens wrote (a code fence around a JSON answer), so the
    text is found in the tokens' bytes and the token covering the label's first byte is read. A
    candidate there counts for a label when, past the part of the emitted token before the label,
    it holds a non-empty prefix of that label and of no other (whitespace aside); the mass is
    renormalised over `labels`.

    Not read (`LabelReading.unread` says why) when no logprobs came, when the tokens do not spell
    the text, when the token there does not begin the label or its candidates hold none of it, or
    when a `greedy` answer's label is not the most probable one: at temperature 0 the emitted label
    is the model's likeliest, so a distribution ranking another first misreads it (read at another
    token, or summing spellings the constraint did not allow: the top logprobs come before it).
    """
    if not completion.logprobs:
        return LabelReading({}, "the server sent no logprobs")
    if not label or offset < 0 or not completion.text.startswith(label, offset):
        return LabelReading({}, f"{label!r} is not where it was looked for in the answer's text")
    found = b"".join(entry.spelled for entry in completion.logprobs).find(completion.text.encode())
    if found < 0:
        return LabelReading({}, "the tokens' logprobs do not spell the answer's text")
    at, start = found + len(completion.text[:offset].encode()), 0
    for entry in completion.logprobs:  # the text, so the label, lies within the tokens: one covers it
        if start + len(entry.spelled) > at:
            break
        start += len(entry.spelled)
    lead = entry.spelled[: at - start].decode(errors="replace")
    emitted = entry.spelled.decode(errors="replace")
    if _label_begun(emitted, lead, labels) != label:
        return LabelReading({}, f"the token {emitted!r} at the label does not begin {label!r}")
    mass: dict[str, float] = dict.fromkeys(labels, 0.0)
    seen: set[str] = set()
    for token, logprob in entry.top or ((entry.token, entry.logprob),):
        begun = _label_begun(token, lead, labels)
        if begun is not None and token.strip() not in seen:
            seen.add(token.strip())
            mass[begun] += math.exp(logprob)
    if mass[label] <= 0:
        return LabelReading({}, f"the top logprobs at the token of {label!r} do not hold it")
    likeliest = max(labels, key=mass.__getitem__)
    if greedy and mass[likeliest] > mass[label] * (1 + 1e-9):
        return LabelReading(
            {}, f"the most probable label read there, {likeliest!r}, is not the emitted {label!r} of a greedy answer"
        )
    total = sum(mass.values())
    return LabelReading({name: value / total for name, value in mass.items()})


def _label_begun(token: str, lead: str, labels: Sequence[str]) -> str | None:
    """The one label whose non-empty prefix `token` holds past `lead` (whitespace aside), or None."""
    piece, lead = token.strip(), lead.strip()
    if not piece.startswith(lead):
        return None
    rest = piece[len(lead):].lstrip()
    matching = [name for name in labels if rest and name.startswith(rest)]
    return matching[0] if len(matching) == 1 else None


def parse_structured(model_cls: type[ModelT], completion: Completion) -> Structured[ModelT]:
    """Validate a completion's text into `model_cls`; failures keep the raw text and why."""
    try:
        value = model_cls.model_validate_json(completion.text)
        return Structured(value, completion.text, None, completion.usage)
    except ValidationError as exc:
        error = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'output'}: {e['msg']}" for e in exc.errors()
        )
        return Structured(None, completion.text, error, completion.usage)


def parse_logprobs(choice: dict) -> tuple[TokenLogprob, ...]:
    """The per-token logprobs (with their top alternatives and, where they differ from the
    token's text, its `bytes`) of one answer choice."""
    content = (choice.get("logprobs") or {}).get("content") or []
    return tuple(
        TokenLogprob(
            token=str(item.get("token", "")),
            logprob=float(item.get("logprob", -math.inf)),
            top=tuple(
                (str(alt.get("token", "")), float(alt.get("logprob", -math.inf)))
                for alt in item.get("top_logprobs") or []
            ),
            token_bytes=_bytes_of(item),
        )
        for item in content
    )


def _bytes_of(item: dict) -> bytes | None:
    """A token's `bytes` (a list of 0–255), None where the server sent none or they spell its text."""
    raw = item.get("bytes")
    if raw is None:
        return None
    if not isinstance(raw, list):  # bytes(10**12) would allocate a terabyte
        raise TypeError(f"bytes is a {type(raw).__name__}, not a list")
    spelled = bytes(raw)  # ValueError (one of SHAPE_ERRORS) for a number outside 0–255
    return None if spelled == str(item.get("token", "")).encode() else spelled


def answer_choices(data: dict) -> tuple[list[Answer], tuple[int, int, int]]:
    """The choices of a chat completion answer in index order, and its token counts
    (`token_counts`). Raises one of `SHAPE_ERRORS` for an answer of another shape."""
    choices = sorted(data.get("choices") or [], key=lambda c: c.get("index", 0))
    answers = [
        (str((choice.get("message") or {}).get("content") or ""), finish_reason(choice), parse_logprobs(choice))
        for choice in choices
    ]
    return answers, token_counts(data.get("usage") or {})


def stream_event(data: str) -> tuple[list[str], str | None, tuple[int, int, int] | None]:
    """The text deltas, finish reason and token counts (None: no usage) of one stream event.
    Raises UnreadableJSON, or one of `SHAPE_ERRORS` for JSON of another shape than a chunk's."""
    chunk = read_json(data)
    if not isinstance(chunk, dict):
        raise TypeError(f"a {type(chunk).__name__}, not an object")
    choices = chunk.get("choices") or []
    if not isinstance(choices, list):
        raise TypeError("choices is not a list")
    deltas, reason = [], None
    for choice in choices:
        delta = (choice.get("delta") or {}).get("content")
        if delta:
            deltas.append(str(delta))
        reason = finish_reason(choice) or reason
    usage = chunk.get("usage")
    return deltas, reason, token_counts(usage) if usage else None


def finish_reason(choice: dict) -> str | None:
    reason = choice.get("finish_reason")
    return reason if isinstance(reason, str) else None


def token_counts(usage: dict) -> tuple[int, int, int]:
    """Prompt, completion and prompt-cache tokens of an answer's `usage` (servers that do not
    report the cache leave `prompt_tokens_details` out)."""
    details = usage.get("prompt_tokens_details") or {}
    return (
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        int(details.get("cached_tokens") or 0),
    )


def listed(data: dict) -> list[dict]:
    """The items of a `GET /models` answer."""
    items = data.get("data")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def excerpt(data: Any) -> str:
    """The start of a JSON answer, for a message."""
    try:
        return json.dumps(data)[:200]
    except RecursionError:
        return f"a {type(data).__name__} nested too deeply to show"


def error_text(response: httpx.Response) -> str:
    """An error answer's status and the server's message (or the start of its body)."""
    try:
        detail = read_json(response.content)
        if isinstance(detail, dict):
            error = detail.get("error", detail)
            if isinstance(error, dict):
                detail = error.get("message", error)
            else:
                detail = error
        shown = detail if isinstance(detail, str) else excerpt(detail)
    except UnreadableJSON:
        shown = response.text[:300]
    return f"HTTP {response.status_code}: {shown}"
