"""A student's name as a person gives it: the one check of the command line and the app.

A name is shown on one line in tables, ballots and the picker, and is how a student is found
again, so it is refused when it could not be: blank, longer than `STUDENT_NAME_MAX_CHARS`,
holding a line break or another control character, a format character that changes how text
around it shows (a direction override) or is invisible, or no letter or digit at all (a name of
only a zero-width space looks blank, and so does one of only a Hangul filler, invisible though a
letter). The joiners some scripts write names with (U+200C, U+200D) are kept, and so are the
variation selectors that make a symbol an emoji (U+FE0E, U+FE0F: "❤️").
"""

from __future__ import annotations

import unicodedata

from engines.errors import ArgtuiError
from engines.judging.quoting import OTHER_IGNORABLE

STUDENT_NAME_MAX_CHARS = 60
# Zero-width (non-)joiners: part of how some names are spelled; text and emoji presentation selectors.
_KEPT = frozenset("\u200c\u200d\ufe0e\ufe0f")
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class StudentNameError(ArgtuiError):
    """A student's name that cannot be one."""


def student_name(text: str) -> str:
    """`text` without its surrounding whitespace, when it can be a student's name; else
    `StudentNameError`, saying why."""
    name = text.strip()
    if not name:
        raise StudentNameError("a student needs a name")
    if len(name) > STUDENT_NAME_MAX_CHARS:
        raise StudentNameError(
            f"a student's name may have at most {STUDENT_NAME_MAX_CHARS} characters, not {len(name):,}"
        )
    refused = next(
        (char for char in name if char not in _KEPT
         and (unicodedata.category(char) in _REFUSED_CATEGORIES or OTHER_IGNORABLE.match(char))), None
    )
    if refused is not None:
        what = "a line break" if refused in "\n\r\u2028\u2029\x85" else "an invisible or control character"
        raise StudentNameError(
            f"a student's name is one line of visible characters: it holds {what} (U+{ord(refused):04X})"
        )
    if not any(unicodedata.category(char)[0] in "LN" for char in name):
        raise StudentNameError("a student's name needs at least one letter or digit")
    return name
