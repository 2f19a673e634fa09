"""A student's message against the length limit: its word count, and on request the
message cut to the limit or split into messages that each fit.

Words are what `str.split()` finds; the text between them is kept as written.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


def count_words(text: str) -> int:
    return sum(1 for _ in _WORD.finditer(text))


def trim_message(text: str, limit: int) -> str:
    """The message up to its `limit`-th word."""
    ends = [match.end() for match in _WORD.finditer(text)]
    return text[: ends[limit - 1]].strip() if len(ends) > limit else text.strip()


def split_message(text: str, limit: int) -> list[str]:
    """Consecutive parts of at most `limit` words each, cut after a sentence where one ends
    within the limit (else after the `limit`-th word), so every part reads on its own."""
    words = list(_WORD.finditer(text))
    parts: list[str] = []
    start = 0  # index of the part's first word
    while start < len(words):
        end = min(start + limit, len(words))  # one past the part's last word
        if end < len(words):
            sentence_ends = [i + 1 for i in range(start, end) if _SENTENCE_END.search(words[i].group())]
            end = sentence_ends[-1] if sentence_ends else end
        parts.append(text[words[start].start(): words[end - 1].end()])
        start = end
    return parts
