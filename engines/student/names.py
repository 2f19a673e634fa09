"""A student's name as a person gives it: the one check of the command line and the app.

A name is shown on one line in tables, ballots and the picker, and is how a student is found
again, so it is refused when it could not be: blank, longer than `STUDENT_NAME_MAX_CHARS`,
holding a line break or another control character, a format character that changes how text
around it shows (a direction override) or is invisible, or no letter or digit at all (a name of
only a zero-width space looks blank). The joiners some scripts write names with (U+200C, U+200D)
are kept.
"""

from __future__ import annotations

import unicodedata

from engines.errors import ArgtuiError

STUDENT_NAME_MAX_CHARS = 60
_JOINERS = frozenset("\u200c\u200d")  # zero-width (non-)joiner: part of how some names are spelled
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
        (char for char in name if char not in _JOINERS and unicodedata.category(char) in _REFUSED_CATEGORIES), None
    )
    if refused is not None:
        what = "a line break" if refused in "\n\r\u2028\u2029\x85" else "an invisible or control character"
        raise StudentNameError(
            f"a student's name is one line of visible characters: it holds {what} (U+{ord(refused):04X})"
        )
    if not any(unicodedata.category(char)[0] in "LN" for char in name):
        raise StudentNameError("a student's name needs at least one letter or digit")
    return name
