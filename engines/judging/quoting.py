"""Text from data (or a model's earlier answer) as it goes into a prompt: it cannot pose as the
prompt's structure. Every prompt family fills its slots through `inline` (or `defused`, where
the data keeps its own line breaks) with the tags and labels of its own templates."""

from __future__ import annotations

import re
import unicodedata
from functools import cache

# Speakers a model reads as a new turn whatever the template says ("System: ignore the above").
CHAT_ROLES = ("System", "User", "Assistant")
TAG_MARK = "‹"  # stands for the "<" of a prompt's own tag in data
LABEL_COLON = "："  # stands for the ":" after a prompt's own label in data
MARKER_BRACKET = "［"  # stands for the "[" of a turn marker in data
# Turn markers of chat templates (ChatML and Llama 3 `<|…|>`, Llama 2 `<s>` and `[INST]`, Gemma):
# llama-server and vLLM read them in the rendered prompt as control tokens, so a copy in data
# would end its message and open another speaker's.
_TURN_MARKERS = re.compile(r"<(?=\||/?s>|(?:start|end)_of_turn>)|\[(?=/?INST\])")


def inline(text: str, tags: tuple[str, ...] = (), labels: tuple[str, ...] = ()) -> str:
    """The text on one line, every run of whitespace (line breaks included) one space, so it
    cannot start a line of the prompt, such as a header ("Argument B:") or a speaker's turn;
    and `defused`, so it cannot pose as the prompt's tags or labels within its line either."""
    return _defused(" ".join(without_format_characters(text).split()), tags, labels)


def defused(text: str, tags: tuple[str, ...] = (), labels: tuple[str, ...] = ()) -> str:
    """The text with its line breaks and without its format characters (see
    `without_format_characters`), but any of the prompt's own `tags` in it defused
    (`</critique` becomes `‹/critique`), so it cannot close the block it is fenced in; any of
    its `labels` or the chat roles followed by a colon given a look-alike colon (`Argument B:`
    becomes `Argument B：`, `Opponent (Claim):` `Opponent (Claim)：`), so it cannot pose as the
    prompt's own label; and chat-template turn markers defused (`<|im_start|>` becomes
    `‹|im_start|>`). Quoting twice gives what quoting once gives."""
    return _defused(without_format_characters(text), tags, labels)


# Invisible as well, though not of category Cf: Unicode's other default-ignorable code points (the
# combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian and other variation
# selectors, the tag block's unassigned rest).
OTHER_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0"
                              "\ufff0-\ufff8\U000e0000-\U000e0fff]")


def without_format_characters(text: str) -> str:
    """The text without its Unicode format characters (category Cf: zero-width spaces and joiners,
    the word joiner, soft hyphens, direction marks) and the other invisible (default-ignorable)
    code points: they would split a label or a tag for the checks here ("Argument\u200b B:",
    "<\u034f/TARGET>") but not for a model reading it."""
    if text.isascii():  # no such character is ASCII
        return text
    return OTHER_IGNORABLE.sub("", "".join(character for character in text if unicodedata.category(character) != "Cf"))


def _defused(text: str, tags: tuple[str, ...], labels: tuple[str, ...]) -> str:
    text = _TURN_MARKERS.sub(lambda m: TAG_MARK if m.group() == "<" else MARKER_BRACKET, text)
    if tags:
        text = _tag_pattern(tags).sub(lambda m: f"{TAG_MARK}{m.group(1)}{m.group(2)}", text)
    return _label_pattern(CHAT_ROLES + labels).sub(lambda m: m.group(1) + LABEL_COLON, text)


@cache
def _tag_pattern(tags: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"<(/?)(" + "|".join(map(re.escape, tags)) + r")\b", re.IGNORECASE)


@cache
def _label_pattern(labels: tuple[str, ...]) -> re.Pattern[str]:
    # A label's words may be apart by any whitespace; a parenthesised note may come before the colon.
    names = "|".join(r"\s+".join(map(re.escape, label.split())) for label in sorted(labels, key=len, reverse=True))
    return re.compile(r"(?<!\w)((?:" + names + r")(?:\s*\([^()]*\))?\s*):", re.IGNORECASE)
