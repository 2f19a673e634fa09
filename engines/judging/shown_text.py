"""The one check of free text a model writes for a person to read: ballot reasons, fixes and
rewrites, the Coach's claims and explanations, Grice rationales, drill feedback.

A small model often writes what it did not mean: its prompt read back ("the student's sentence
that most needs work is …"), a placeholder left as it is ("Turn N", "{claim}"), one clause
over and over, or a chatbot's disclaimer instead of an answer. Such text is not shown: the
answer counts as invalid, is asked again where the caller can, and when it stays so the
screen says `NO_USABLE_ANSWER` instead. The check is deliberately narrow (runs of words, fixed
phrases), so a plain answer that happens to share a few words with its prompt passes.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from typing import Sequence

NO_USABLE_ANSWER = "no usable answer from this model"
RUN_WORDS = 6  # words in a row that make an echo of the prompt, or, said twice, a loop
CLAUSE_REPEATS = 3  # the same clause this often is a loop, however short
CLAUSE_MIN_WORDS = 2
SENTENCE_MIN_WORDS = 3  # a sentence of this many words said twice is a loop ("I'm not sure. I'm not sure.")

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_TEMPLATE_FIELD = re.compile(r"\{[^{}]*\}")
_NAME = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")  # snake_case: a field an answer is asked to fill
# Split at the marks alone (not `engines.sentences`, which looks past a period): a sentence or
# clause whole in the part of an answer written so far is then whole in the finished answer.
_SENTENCE_MARKS = ".!?…\n"
_CLAUSE_MARKS = ",;:" + _SENTENCE_MARKS
_CLAUSE_BREAK = re.compile(f"[{_CLAUSE_MARKS}]+")
_SENTENCE_END = re.compile(f"[{_SENTENCE_MARKS}]+")
# What a model writes before an item of a list: a bullet, or a number of one or two digits a
# level ("1.", "2)", "1.1.1.1:"), never a number the item states ("1.5 million", "2020 saw …").
_LIST_MARK = re.compile(r"^\s*(?:[-*•‣◦]+|\(?\d{1,2}(?:\.\d{1,2})*[.):])(?=\s|$)\s*")
_TEMPLATE_LABEL = re.compile(r"^([A-Z][A-Za-z ]{0,30}):", re.MULTILINE)  # "Debate topic: {topic}"
PLACEHOLDERS = re.compile(
    r"\b(?:turn|reply to turn|argument|premise|claim)\s+(?-i:[NX])\b"  # "Turn N", as a template writes it
    r"|\{[A-Za-z_][A-Za-z0-9_ ]*\}"  # a template's field
    r"|<(?:claim|topic|text|sentence|answer|reason|student|bot|insert)[^<>]{0,30}>"
    r"|\[(?:insert|your|the student|student|bot|claim|sentence|text|reason|answer)[^\]]{0,40}\]",
    re.IGNORECASE,
)
DISCLAIMERS = re.compile(
    r"\bas an? (?:ai|artificial intelligence|language model|large language model|chatbot|assistant)\b"
    r"|\bi(?:'m| am) (?:sorry|unable|not able)\b"
    r"|\bi (?:cannot|can't|can not) (?:help|assist|provide|answer|do that)\b"
    r"|\bapologi[sz]e for (?:any|the) confusion\b",
    re.IGNORECASE,
)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _runs(tokens: list[str], size: int = RUN_WORDS) -> list[tuple[str, ...]]:
    return [tuple(tokens[i:i + size]) for i in range(len(tokens) - size + 1)]


@cache
def _template_runs(template: str) -> frozenset[tuple[str, ...]]:
    """The runs of words of a prompt template's own text (its fields left out)."""
    return frozenset(run for part in _TEMPLATE_FIELD.split(template) for run in _runs(words(part)))


@cache
def _template_names(template: str) -> frozenset[str]:
    """The snake_case names of a prompt template's own text: the answer fields it asks for."""
    return frozenset(name for part in _TEMPLATE_FIELD.split(template) for name in _NAME.findall(part.lower()))


def unmeant(text: str, template: str = "") -> str | None:
    """Why `text` is not what the model meant to say, or None: no words at all, a placeholder,
    a chatbot's disclaimer, RUN_WORDS words in a row of its prompt's `template` (fields left
    out, so quoting the debate is no echo) or one of its field names, or a loop (RUN_WORDS
    words in a row said twice, a whole sentence twice, a clause CLAUSE_REPEATS times)."""
    tokens = words(text)
    if not tokens:
        return "it has no words"
    placeholder = PLACEHOLDERS.search(text)
    if placeholder:
        return f"it has a placeholder ({placeholder.group()!r})"
    disclaimer = DISCLAIMERS.search(text)
    if disclaimer:
        return f"it is a disclaimer, not an answer ({disclaimer.group()!r})"
    if template:
        echoed = next((run for run in _runs(tokens) if run in _template_runs(template)), None)
        if echoed:
            return f"it repeats the prompt ({' '.join(echoed)!r})"
        field_name = next((name for name in _NAME.findall(text.lower()) if name in _template_names(template)), None)
        if field_name:
            return f"it names a field of the prompt ({field_name!r}) instead of answering"
    repeated = next((run for run, count in Counter(_runs(tokens)).items() if count > 1), None)
    if repeated:
        return f"it repeats itself ({' '.join(repeated)!r})"
    # Only sentences that are whole: what follows the last end may still be being written.
    sentences = Counter(
        tuple(sentence_words) for sentence in _SENTENCE_END.split(text)[:-1]
        if len(sentence_words := words(sentence)) >= SENTENCE_MIN_WORDS
    )
    said_twice = next((sentence for sentence, count in sentences.items() if count > 1), None)
    if said_twice:
        return f"it repeats a sentence ({' '.join(said_twice)!r})"
    clauses = Counter(
        tuple(clause_words) for clause in _CLAUSE_BREAK.split(text)
        if len(clause_words := words(clause)) >= CLAUSE_MIN_WORDS
    )
    looped = next((clause for clause, count in clauses.items() if count >= CLAUSE_REPEATS), None)
    if looped:
        return f"it repeats a clause {clauses[looped]} times ({' '.join(looped)!r})"
    return None


def unmeant_so_far(text: str, template: str = "") -> str | None:
    """`unmeant` of the part of `text`, an answer still being written, up to its last clause
    break, or None before the first: there every word and clause is whole, so a problem found
    there (a placeholder, a disclaimer, an echo, a loop) stays whatever the model writes next."""
    cut = max(text.rfind(mark) for mark in _CLAUSE_MARKS) + 1
    return unmeant(text[:cut], template) if cut and words(text[:cut]) else None


def shown(text: str, template: str = "") -> str:
    """`text` as a person may read it: itself, or `NO_USABLE_ANSWER` where `unmeant` finds it
    is not what the model meant (for text judged before the check, or where asking again is not
    the caller's to do). Blank text stays blank: nothing was asked for, or nothing is shown."""
    return NO_USABLE_ANSWER if text.strip() and unmeant(text, template) else text


@cache
def _label_prefix(template: str, labels: tuple[str, ...]) -> re.Pattern[str] | None:
    names = sorted({*labels, *_TEMPLATE_LABEL.findall(template)}, key=len, reverse=True)
    if not names:
        return None
    return re.compile(r"^\s*(?:" + "|".join(map(re.escape, names)) + r")(?:\s+\d{1,2})?\s*:\s*", re.IGNORECASE)


def without_labels(text: str, template: str = "", labels: Sequence[str] = ()) -> str:
    """`text` without what a model wrote before it as an item of a list: its numbering ("1.",
    "1.1.1.1:", "-") and the labels of its prompt `template` ("Debate topic:") or `labels`
    ("Claim 1:"), however many there are in a row."""
    prefix = _label_prefix(template, tuple(labels))
    while True:
        stripped = _LIST_MARK.sub("", text, count=1)
        if prefix is not None:
            stripped = prefix.sub("", stripped, count=1)
        if stripped == text:
            return text.strip()
        text = stripped
