"""Sentences of free text: where one ends, abbreviations ("e.g.", "Dr.") kept whole. Shared by
the splitting of messages into argument components and the checks that compare sentences."""

from __future__ import annotations

import re

# Words that end with a period without ending the sentence.
ABBREVIATIONS = frozenset(
    "e.g i.e etc vs mr mrs ms dr prof st no fig approx cf al jr sr inc ltd co u.s u.k".split()
)
SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|\n\s*\n|\n")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, its closing punctuation kept (abbreviations kept whole)."""
    return pieces(text, SENTENCE_END, 0, len(text))


def sentence_count(text: str) -> int:
    """How many sentences `text` has (at least one: a text without an end is one sentence)."""
    return max(1, len(sentence_spans(text)))


def pieces(text: str, boundary: re.Pattern, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of the parts of text[start:end] between boundary matches (abbreviations kept whole)."""
    found, cursor = [], start
    for match in boundary.finditer(text, start, end):
        if match.group().startswith(".") and _is_abbreviation(text, cursor, match.start()):
            continue
        if match.start() > cursor:
            found.append((cursor, match.start()))
        cursor = match.end()
    if cursor < end:
        found.append((cursor, end))
    return found


def _is_abbreviation(text: str, start: int, period: int) -> bool:
    word = re.search(r"([\w.]+)$", text[start:period])
    if word is None:
        return False
    token = word.group(1).lower()
    return token in ABBREVIATIONS or (len(token) == 1 and token.isalpha())
