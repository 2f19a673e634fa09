"""The classifier's view of a document: the whole text, the target and the other components tagged.

Only spans go in, never labels, so no gold label can leak into a prompt:
the target is wrapped in <TARGET>…</TARGET> and every other component in
the generic <ARG>…</ARG>. The document keeps its line breaks (its paragraphs), but
the prompts' tags, labels and turn markers in its text are defused
(`engines.components.prompts.quoted_document`), so the text cannot open or close a
component of its own.
"""

from __future__ import annotations

from typing import Sequence

from engines.components.prompts import quoted_document
from engines.components.types import Span

TARGET_OPEN, TARGET_CLOSE = "<TARGET>", "</TARGET>"
ARG_OPEN, ARG_CLOSE = "<ARG>", "</ARG>"


def check_spans(text: str, spans: Sequence[Span]) -> None:
    """Spans must lie in the text, match it, and come in order without overlapping."""
    previous_end = 0
    for index, span in enumerate(spans):
        if not previous_end <= span.start < span.end <= len(text):
            raise ValueError(f"span {index} ({span.start}-{span.end}) is out of order, empty or outside the text")
        if text[span.start : span.end] != span.text:
            raise ValueError(f"span {index} ({span.start}-{span.end}) does not match the text")
        previous_end = span.end


def mark_document(text: str, spans: Sequence[Span], target: int) -> str:
    """`text` with spans[target] in <TARGET> tags and every other span in <ARG> tags."""
    check_spans(text, spans)
    if not 0 <= target < len(spans):
        raise IndexError(f"target {target} is not one of the {len(spans)} spans")
    parts, cursor = [], 0
    for index, span in enumerate(spans):
        opening, closing = (TARGET_OPEN, TARGET_CLOSE) if index == target else (ARG_OPEN, ARG_CLOSE)
        parts += [quoted_document(text[cursor : span.start]), opening, quoted_document(span.text), closing]
        cursor = span.end
    parts.append(quoted_document(text[cursor:]))
    return "".join(parts)


def excerpt(text: str, span: Span, chars: int = 700) -> tuple[str, tuple[int, int]]:
    """The paragraph around `span` (at most about `chars` long), and where the span is in it."""
    start = text.rfind("\n", 0, span.start) + 1
    end = text.find("\n", span.end)
    end = len(text) if end == -1 else end
    if end - start > chars:
        start = max(start, span.start - chars // 2)
        end = min(end, span.end + chars // 2)
    before = ("…" if start > 0 else "") + text[start : span.start]
    after = text[span.end : end] + ("…" if end < len(text) else "")
    return before + span.text + after, (len(before), len(before) + len(span.text))
