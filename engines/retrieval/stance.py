"""Which topic of the argument base a debate claim is on, and which side of it each debater takes.

The bundled corpus labels every argument with its stance on its topic (IBM's `stance_WA`,
Webis's Stance: `supports` or `attacks` the topic), and a student's claim is often the
topic worded the other way: "School uniforms should be mandatory" is the negation of the
base's "We should abandon the use of school uniform". A claim is on a topic when most of
the words that say what each is about are shared ("school", "uniform"); the words that say
which way it goes ("abandon" against, "mandatory" for, a "not") decide whether the claim
says what the topic says or its opposite. A word that both share is subject, not direction
("keep" in "abolish the right to keep and bear arms" and "people have the right to keep arms").
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Literal

from engines.errors import ArgtuiError
from engines.retrieval.corpus import bundled_arguments
from engines.retrieval.embedded import ANALYZER
from engines.retrieval.types import Relation, TopicSide

Side = Literal["pro", "con"]


def _stems(words: str) -> frozenset[str]:
    return frozenset(stem for word in words.split() for stem in ANALYZER.analyze(word))


# Words that say which way a claim goes, as the topics and students word them: verbs act on
# what follows them ("reduce bullying" says nothing for or against uniforms), the rest on the
# claim's subject ("Social media is good").
AGAINST_VERBS = _stems(
    "abandon abolish abolition ban prohibit forbid outlaw cancel close end stop oppose fight limit restrict reduce "
    "remove eliminate scrap reject decrease cut"
)
FOR_VERBS = _stems(
    "keep kept retain maintain continue require adopt introduce legalize legalise allow permit subsidize subsidise "
    "fund support increase expand improve protect promote encourage"
)
AGAINST = AGAINST_VERBS | _stems("criminal illegal harm harmful bad wrong against")
FOR = FOR_VERBS | _stems("legal mandatory compulsory good beneficial benefit favour favor")
VERBS = AGAINST_VERBS | FOR_VERBS
DIRECTION = AGAINST | FOR
# Words that say neither what a claim is about nor which way it goes ("We should …", "the use of …").
FILLER = _stems("we should shouldn must ought shall would need have has do does can may people more than use bring")
NEGATIONS = frozenset({"not", "no", "never", "cannot", "nor", "neither"})
PASSIVE = frozenset({"be", "been", "being", "is", "are", "was", "were"})  # "should be funded": it acts on the subject
MIN_SHARED = 0.5  # of each side's subject words: "Homework should be kept" is not "Should Daylight Saving Time be kept?"



class NoTopicError(ArgtuiError):
    """The debate's claim is on no topic of the argument base."""

    def __init__(self) -> None:
        super().__init__("the argument base has no arguments on this claim; pick one of its topics or a level with a model")


@dataclass(frozen=True)
class LabelledTopic:
    """A topic of the bundled corpus and how many of its arguments take each side."""

    text: str
    source: str  # the corpus it comes from (`engines.retrieval.corpus`)
    supports: int
    attacks: int


@dataclass(frozen=True)
class ClaimTopic:
    """The topic a debate claim is on, and whether the claim says what the topic says."""

    topic: LabelledTopic
    agrees: bool  # False: the claim is the topic's negation

    def student(self, user_side: Side) -> TopicSide:
        """The side of the topic a student arguing `user_side` of the claim takes."""
        supports = (user_side == "pro") == self.agrees
        return TopicSide(self.topic.text, "supports" if supports else "attacks")

    def bot(self, user_side: Side) -> TopicSide:
        """The side of the topic the bot takes: the other one."""
        return self.student(user_side).other

    def arguments(self, side: TopicSide) -> int:
        return self.topic.supports if side.relation == "supports" else self.topic.attacks


@dataclass(frozen=True)
class _Wording:
    stems: tuple[str, ...]  # in order, filler left out
    passive: tuple[bool, ...]  # per stem: right after a form of "be"
    negated: bool  # an odd number of negations

    @classmethod
    def of(cls, text: str) -> "_Wording":
        words = re.findall(r"[a-z]+(?:'[a-z]+)?", text.lower().replace("\u2019", "'"))
        stems, passive = [], []
        for before, word in zip([None, *words], words):
            for stem in ANALYZER.analyze(word):
                if stem not in FILLER and len(stem) > 1:
                    stems.append(stem)
                    passive.append(before in PASSIVE)
        negations = sum(word in NEGATIONS or word.endswith("n't") for word in words)
        return cls(tuple(stems), tuple(passive), negations % 2 == 1)

    def subject(self, shared: set[str]) -> set[str]:
        """What it is about: every word but those that only say which way it goes."""
        return {stem for stem in self.stems if stem in shared or stem not in DIRECTION}

    def direction(self, shared: set[str]) -> int | None:
        """+1 for, -1 against: its first direction word the other wording lacks, then its
        negations; None when that word is a verb acting on something the other wording is not
        about ("Uniforms reduce bullying")."""
        for at, stem in enumerate(self.stems):
            if stem not in DIRECTION or stem in shared:
                continue
            following = self.stems[at + 1] if at + 1 < len(self.stems) else None
            if stem in VERBS and not self.passive[at] and following not in (None, *shared, *DIRECTION):
                return None
            sign = -1 if stem in AGAINST else 1
            break
        else:
            sign = 1
        return -sign if self.negated else sign


def _match(claim: _Wording, topic: _Wording) -> tuple[float, bool] | None:
    """How closely the claim is on the topic (Dice of their subject words), and whether it
    agrees with it; None when it is not on it, or its direction on it is unclear."""
    shared = set(claim.stems) & set(topic.stems)
    if not shared - DIRECTION:  # sharing "kept" or "ban" alone is no shared subject
        return None
    claim_subject, topic_subject = claim.subject(shared), topic.subject(shared)
    if len(shared) < MIN_SHARED * len(claim_subject) or len(shared) < MIN_SHARED * len(topic_subject):
        return None
    claim_direction, topic_direction = claim.direction(shared), topic.direction(shared)
    if claim_direction is None or topic_direction is None:
        return None
    return 2 * len(shared) / (len(claim_subject) + len(topic_subject)), claim_direction == topic_direction


@cache
def labelled_topics() -> tuple[LabelledTopic, ...]:
    """The bundled corpus's topics whose arguments carry their stance on the topic itself."""
    counts: Counter[tuple[str, str, Relation]] = Counter(
        (argument.topic, argument.source, argument.relation) for argument in bundled_arguments()
        if argument.relation is not None and argument.target == argument.topic
    )
    topics = dict.fromkeys((topic, source) for topic, source, _ in counts)
    return tuple(
        LabelledTopic(topic, source, counts[topic, source, "supports"], counts[topic, source, "attacks"])
        for topic, source in topics
    )


@cache
def _topic_wordings() -> tuple[tuple[LabelledTopic, _Wording], ...]:
    return tuple((topic, _Wording.of(topic.text)) for topic in labelled_topics())


def claim_topic(claim: str) -> ClaimTopic | None:
    """The labelled topic the claim is on (the closest; of two as close, the one with more
    arguments), or None when it is on none."""
    wording = _Wording.of(claim)
    best: tuple[float, int, ClaimTopic] | None = None
    for topic, topic_wording in _topic_wordings():
        matched = _match(wording, topic_wording)
        if matched is None:
            continue
        score, agrees = matched
        candidate = (score, topic.supports + topic.attacks, ClaimTopic(topic, agrees))
        if best is None or candidate[:2] > best[:2]:
            best = candidate
    return best[2] if best else None

