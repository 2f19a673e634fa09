"""Text from data as it goes into a judge's prompt: it cannot pose as the prompt's structure."""

from __future__ import annotations

import re
from functools import cache


def inline(text: str, tags: tuple[str, ...] = ()) -> str:
    """The text on one line, every run of whitespace (line breaks included) one space, so it
    cannot start a line of the prompt, such as a header ("Argument B:") or a speaker's turn;
    and any of the prompt's own `tags` in it defused (`</critique` becomes `‹/critique`), so it
    cannot close the block it is fenced in."""
    text = " ".join(text.split())
    return _tag_pattern(tags).sub(lambda m: f"‹{m.group(1)}{m.group(2)}", text) if tags else text


@cache
def _tag_pattern(tags: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"<(/?)(" + "|".join(map(re.escape, tags)) + r")\b", re.IGNORECASE)
