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
from engines.llm.types import Completion, Structured, TokenLogprob

ModelT = TypeVar("ModelT", bound=BaseModel)

# What reading an answer of a shape other than the API's raises (a number where a list should
# be, infinity as a token count, a list nested too deeply to print).
SHAPE_ERRORS = (AttributeError, TypeError, ValueError, OverflowError, RecursionError)

Answer = tuple[str, str | None, tuple[TokenLogprob, ...]]  # text, finish reason, logprobs


def label_distribution(
    labels: Sequence[str], completion: Completion, label_offset: int = 0
) -> dict[str, float]:
    """P(label) from the top logprobs of the token where the label starts.

    A candidate token counts for a label when it is a non-empty prefix of that
    label and of no other; the mass is renormalised over the labels (what the
    constraint allows). Empty when the server sent no usable logprobs.
    """
    position, consumed = 0, 0
    for position, entry in enumerate(completion.logprobs):
        if consumed + len(entry.token) > label_offset:
            break
        consumed += len(entry.token)
    else:
        return {}
    entry = completion.logprobs[position]
    candidates = entry.top or ((entry.token, entry.logprob),)
    mass: dict[str, float] = {label: 0.0 for label in labels}
    seen: set[str] = set()
    for token, logprob in candidates:
        piece = token.strip()
        if not piece or piece in seen:
            continue
        seen.add(piece)
        matching = [label for label in labels if label.startswith(piece)]
        if len(matching) == 1:
            mass[matching[0]] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return {}
    return {label: value / total for label, value in mass.items()}


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
    """The per-token logprobs (with their top alternatives) of one answer choice."""
    content = (choice.get("logprobs") or {}).get("content") or []
    return tuple(
        TokenLogprob(
            token=str(item.get("token", "")),
            logprob=float(item.get("logprob", -math.inf)),
            top=tuple(
                (str(alt.get("token", "")), float(alt.get("logprob", -math.inf)))
                for alt in item.get("top_logprobs") or []
            ),
        )
        for item in content
    )


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
