"""Text from data, a model or a server on its way to a terminal: its control characters shown, never sent.

A terminal obeys the control characters it is sent: ESC starts sequences that set the window
title, clear the screen or write the clipboard (OSC 52), and the 8-bit C1 controls (U+0080 to
U+009F; U+009B is CSI) do the same in one character. Rich and Textual drop only BEL, BS, VT,
FF and CR. `visible` shows each C0 control and DEL as its Unicode control picture (ESC as ␛)
and each C1 control as `\\xNN`; newlines and tabs stay, layout needs them.

What argtui prints for people goes through `VisibleControlsConsole` (the CLI's rich consoles)
or, in the app, through `visible_segment` where Textual renders each line (argtui/app.py).
Data printed as it is (CSV, JSONL, JSON) goes through `print_data`, which shows the controls
only on a terminal: a pipe, like a file written with --output, gets the data unchanged.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_left
from itertools import accumulate
from typing import Iterable, TextIO

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Span, Text

_KEPT = "\n\t"
_SHOWN = {
    **{code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in _KEPT},  # ␀ … ␟
    0x7F: "\u2421",  # ␡
    **{code: f"\\x{code:02x}" for code in range(0x80, 0xA0)},  # C1 controls have no pictures
}
_CONTROL = re.compile("[" + "".join(re.escape(chr(code)) for code in _SHOWN) + "]")


def has_controls(text: str) -> bool:
    """Whether `text` has a control character that `visible` shows."""
    return _CONTROL.search(text) is not None


def visible(text: str) -> str:
    """`text` with every control character but newline and tab shown (the same object if it has none)."""
    return text.translate(_SHOWN) if has_controls(text) else text


def visible_text(text: Text) -> Text:
    """A rich Text with its control characters shown and its styles kept on the same characters."""
    plain = text.plain
    controls = [match.start() for match in _CONTROL.finditer(plain)]
    if not controls:
        return text
    shown = text.blank_copy(visible(plain))
    # A C1 control is shown in four characters: the offsets after it move.
    added = list(accumulate(len(_SHOWN[ord(plain[at])]) - 1 for at in controls))

    def moved(offset: int) -> int:
        before = bisect_left(controls, offset)
        return offset + (added[before - 1] if before else 0)

    shown.spans = [Span(moved(span.start), moved(span.end), span.style) for span in text.spans]
    return shown


def visible_segment(segment: Segment) -> Segment:
    """A segment's text with its control characters shown; a control segment (rich's own codes) as it is."""
    if segment.control:
        return segment
    shown = visible(segment.text)
    return segment if shown is segment.text else Segment(shown, segment.style)


class VisibleControlsConsole(Console):
    """A rich Console that shows the control characters of what it prints (see `visible`).

    Text is made visible before it is laid out, so wrapping and table widths count the
    pictures; any other segment as it is rendered. The control segments rich emits itself
    (cursor moves, a live display's redraws) pass as they are.
    """

    def render_str(self, text: str, **options) -> Text:
        return visible_text(super().render_str(text, **options))

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        if isinstance(renderable, Text):
            renderable = visible_text(renderable)
        for segment in super().render(renderable, options):
            yield visible_segment(segment)


def print_data(text: str, file: TextIO | None = None, end: str = "\n") -> None:
    """Print `text`: as it is to a pipe or a file, with its control characters shown on a terminal."""
    out = sys.stdout if file is None else file
    out.write((visible(text) if out.isatty() else text) + end)
