"""What differs between OpenAI-compatible backends, one adapter per kind.

The client looks the adapter up by the profile's kind (or the detected one) and
asks it for the constrained-choice request fields, the largest `n` a request
may carry and the HTTP statuses worth retrying. Every kind reads labels the
same way, so a server that ignores its constraint is judged like any other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar, Sequence

from engines.llm.profile import BackendKind


@dataclass(frozen=True)
class Choice:
    """A constrained choice among labels; the adapter turns it into request fields."""

    labels: tuple[str, ...]


Constraint = dict | Choice


def gbnf_choice(labels: Sequence[str]) -> str:
    """A llama.cpp grammar that admits exactly one of the labels."""
    return "root ::= " + " | ".join(json.dumps(label) for label in labels)


def parse_label(text: str, labels: Sequence[str]) -> str | None:
    """The label in constrained output: the bare label, or {"label": ...} (JSON-schema servers)."""
    candidate = text.strip()
    if candidate in labels:
        return candidate
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError:
        return None
    label = data.get("label") if isinstance(data, dict) else None
    return label if isinstance(label, str) and label in labels else None


class OpenAIAdapter:
    """Any OpenAI-compatible server: a JSON-schema enum is the constraint they all accept."""

    kind: ClassVar[BackendKind] = "openai"
    max_n: ClassVar[int | None] = None  # no limit of our own; the server says if it has one
    retry_statuses: ClassVar[frozenset[int]] = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

    def choice_fields(self, labels: Sequence[str]) -> dict:
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "choice",
                    "strict": True,
                    "schema": {
                        "type": "object",
                        "properties": {"label": {"type": "string", "enum": list(labels)}},
                        "required": ["label"],
                        "additionalProperties": False,
                    },
                },
            }
        }

    def request_fields(self, constraint: Constraint) -> dict:
        return self.choice_fields(constraint.labels) if isinstance(constraint, Choice) else constraint


class VLLMAdapter(OpenAIAdapter):
    kind: ClassVar[BackendKind] = "vllm"

    def choice_fields(self, labels: Sequence[str]) -> dict:
        return {"structured_outputs": {"choice": list(labels)}}


class LlamaCppAdapter(OpenAIAdapter):
    kind: ClassVar[BackendKind] = "llamacpp"
    max_n: ClassVar[int | None] = 4  # llama-server refuses n > 4

    def choice_fields(self, labels: Sequence[str]) -> dict:
        return {"grammar": gbnf_choice(labels)}


ADAPTERS: dict[BackendKind, OpenAIAdapter] = {
    adapter.kind: adapter for adapter in (OpenAIAdapter(), VLLMAdapter(), LlamaCppAdapter())
}
