"""The persistent response cache's side of a completion: its key and the stored form.

A cached answer is keyed by who serves it (the client's endpoint), the model, the messages,
the request parameters and the sample index, and stored as a plain JSON-able dict so that any
`ResponseCache` (SQLite or PostgreSQL, `store/llm_cache.py`) and batch imports
(`engines/llm/batch.py`) write the same shape the client reads back.
"""

from __future__ import annotations

import hashlib
import json
from typing import Protocol, Sequence

from engines.llm.types import Completion, TokenLogprob, Usage


class ResponseCache(Protocol):
    def get(self, key: str) -> dict | None: ...
    def put(self, key: str, model: str, response: dict) -> None: ...
    def flush(self) -> None: ...


def cache_key(
    endpoint: str, model: str, messages: Sequence[dict[str, str]], params: dict, sample_index: int
) -> str:
    """One answer's key: who serves it (`endpoint`, the client's identity), what, and which sample."""
    payload = json.dumps(
        {"endpoint": endpoint, "model": model, "messages": list(messages), "params": params, "sample": sample_index},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def completion_to_cache(c: Completion) -> dict:
    """The stored form of an answer."""
    return {
        "text": c.text,
        "finish_reason": c.finish_reason,
        "prompt_tokens": c.usage.prompt_tokens,
        "completion_tokens": c.usage.completion_tokens,
        # A token's bytes follow when they are not its text's (part of a character).
        "logprobs": [
            [t.token, t.logprob, [list(p) for p in t.top], *([] if t.token_bytes is None else [list(t.token_bytes)])]
            for t in c.logprobs
        ],
    }


def completion_from_cache(data: dict, sample_index: int) -> Completion:
    """An answer read back from the cache: its usage counts it as one cached call, whose prompt no
    server computed."""
    return Completion(
        text=data["text"],
        finish_reason=data.get("finish_reason"),
        usage=Usage(
            prompt_tokens=data.get("prompt_tokens", 0),
            completion_tokens=data.get("completion_tokens", 0),
            calls=1,
            cached_calls=1,
            cached_prompt_tokens=data.get("prompt_tokens", 0),
        ),
        logprobs=tuple(
            TokenLogprob(token, logprob, tuple((t, lp) for t, lp in top), bytes(raw[0]) if raw else None)
            for token, logprob, top, *raw in data.get("logprobs", [])
        ),
        sample_index=sample_index,
    )
