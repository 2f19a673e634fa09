"""Whether what a model took from a text (a quoted step of its reasoning, an extracted claim)
is about that text, not an echo of the prompt's examples or of the debate topic.

A fragment is grounded when most of its content words (letters and digits, three or more
characters, common function words aside) occur in the source, compared by their first
`STEM_CHARS` characters so that "exonerated" meets "exoneration" and "cars" meets "car".
"""

from __future__ import annotations

import re

STEM_CHARS = 5
GROUNDED_SHARE = 0.6  # of the fragment's content words found in the source
FUNCTION_WORDS = frozenset(
    "the and for are but not you all any can her was one our out has had his how its may new now see two who "
    "did get him let say she too use that with have this will your from they been more when what were which "
    "their there than them then these would could should about into also only other some such very just over "
    "because does being those because while where after before most many much each every both either".split()
)
_WORD = re.compile(r"[^\W_]+")


def content_stems(text: str) -> set[str]:
    """The stems of the text's content words."""
    return {
        word[:STEM_CHARS] for word in _WORD.findall(text.lower())
        if len(word) >= 3 and word not in FUNCTION_WORDS
    }


def grounded(fragment: str, source: str, share: float = GROUNDED_SHARE) -> bool:
    """Whether at least `share` of the fragment's content words occur in `source`; a fragment
    without content words is grounded only when it is empty."""
    stems = content_stems(fragment)
    if not stems:
        return not fragment.strip()
    return len(stems & content_stems(source)) >= share * len(stems)
