"""A student's message against the length limit: its word count, and on request the
message cut to the limit or split into messages that each fit.

Words are what `str.split()` finds; the text between them is kept as written.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+")
_LETTERS = re.compile(r"[^\W\d_]+")
# Words nearly every English sentence of a few words has one of; other languages' messages
# (the argument base is English) have none of them, or only by chance.
_ENGLISH_WORDS = frozenset(
    "a an the is are was were be been it its this that these those they we you he she i not no and or but if "
    "because so to of in on for with by as at from should would could can will do does did have has had more "
    "less than all any their our your them us my me there what why how who which".split()
)
ENGLISH_CHECK_WORDS = 4  # shorter messages are not judged
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


def count_words(text: str) -> int:
    return sum(1 for _ in _WORD.finditer(text))


def likely_english(text: str) -> bool:
    """Whether a message reads as English: True for one too short to tell."""
    words = [word.lower() for word in _LETTERS.findall(text)]
    if len(words) < ENGLISH_CHECK_WORDS:
        return True
    return sum(word in _ENGLISH_WORDS for word in words) / len(words) >= 0.1


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
