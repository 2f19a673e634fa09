"""What differs between OpenAI-compatible backends, one adapter per kind.

The client looks the adapter up by the profile's kind (or the detected one) and
asks it for the constrained-choice request fields, the largest `n` a request
may carry and the HTTP statuses worth retrying. Every kind reads labels the
same way, so a server that ignores its constraint is judged like any other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from engines.llm.json_reader import UnreadableJSON, read_json
from engines.llm.profile import BackendKind


@dataclass(frozen=True)
class Choice:
    """A constrained choice among labels; the adapter turns it into request fields."""

    labels: tuple[str, ...]


Constraint = dict | Choice


def json_schema_format(fields: Constraint | None) -> dict:
    """The `json_schema` member of request fields that constrain an answer to a JSON schema
    (its `name` and `schema`); empty for any other fields."""
    response_format = fields.get("response_format") if isinstance(fields, dict) else None
    json_schema = response_format.get("json_schema") if isinstance(response_format, dict) else None
    return json_schema if isinstance(json_schema, dict) else {}


def gbnf_choice(labels: Sequence[str]) -> str:
    """A llama.cpp grammar that admits exactly one of the labels."""
    return "root ::= " + " | ".join(json.dumps(label) for label in labels)


def parse_label(text: str, labels: Sequence[str]) -> str | None:
    """The label in constrained output: the bare label, or {"label": ...} (JSON-schema servers)."""
    candidate = text.strip()
    if candidate in labels:
        return candidate
    try:
        data = read_json(candidate)
    except UnreadableJSON:  # not JSON, or JSON no parser reads (5,000 digits, 100,000 brackets)
        return None
    label = data.get("label") if isinstance(data, dict) else None
    return label if isinstance(label, str) and label in labels else None


class OpenAIAdapter:
    """Any OpenAI-compatible server: a JSON-schema enum is the constraint they all accept."""

    kind: ClassVar[BackendKind] = "openai"
    max_n: ClassVar[int | None] = None  # no limit of our own; the server says if it has one
    retry_statuses: ClassVar[frozenset[int]] = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
    progress_path: ClassVar[str | None] = None  # beside the API: how far the answers in progress are

    def generated_tokens(self, progress: Any) -> int | None:
        """Tokens generated so far for the answers in progress, from `progress_path`'s JSON."""
        return None

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
    progress_path: ClassVar[str | None] = "/slots"

    def generated_tokens(self, progress: Any) -> int | None:
        """The tokens llama-server's busy slots have decoded for their answers (`next_token` is
        one entry per sequence, or one object on older servers); None for another shape."""
        try:
            total = 0
            for slot in progress:
                if slot.get("is_processing"):
                    entries = slot["next_token"]
                    total += sum(int(e["n_decoded"]) for e in (entries if isinstance(entries, list) else [entries]))
            return total
        except (AttributeError, KeyError, TypeError, ValueError, OverflowError):
            return None

    def choice_fields(self, labels: Sequence[str]) -> dict:
        return {"grammar": gbnf_choice(labels)}


class OllamaAdapter(OpenAIAdapter):
    """Ollama's OpenAI API enforces `response_format` JSON schemas (by grammar) and ignores `n`:
    one request per sample."""

    kind: ClassVar[BackendKind] = "ollama"
    max_n: ClassVar[int | None] = 1


class LMStudioAdapter(OpenAIAdapter):
    """LM Studio enforces `response_format` JSON schemas and answers one choice per request."""

    kind: ClassVar[BackendKind] = "lmstudio"
    max_n: ClassVar[int | None] = 1


ADAPTERS: dict[BackendKind, OpenAIAdapter] = {
    adapter.kind: adapter
    for adapter in (OpenAIAdapter(), VLLMAdapter(), LlamaCppAdapter(), OllamaAdapter(), LMStudioAdapter())
}
