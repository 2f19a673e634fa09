"""Text from data, a model or a server on its way to a terminal: its control characters shown, never sent.

A terminal obeys the control characters it is sent: ESC starts sequences that set the window
title, clear the screen or write the clipboard (OSC 52), and the 8-bit C1 controls (U+0080 to
U+009F; U+009B is CSI) do the same in one character. Rich and Textual drop only BEL, BS, VT,
FF and CR. `visible` shows each C0 control and DEL as its Unicode control picture (ESC as ␛)
and each C1 control, which has no picture, as the replacement character �; newlines and tabs
stay, layout needs them. Every control becomes one character of one cell (`CONTROL_PICTURES`),
so text keeps its length (styles stay on their characters) and is laid out at the width it shows.

What argtui prints for people goes through `VisibleControlsConsole` (the CLI's rich consoles);
in the app, rich's and Textual's own control-code stripping shows them with the same pictures
before any layout, and `visible_segment` where Textual renders each line (argtui/app.py).
Data printed as it is (CSV, JSONL, JSON) goes through `print_data`, which shows the controls
only on a terminal: a pipe, like a file written with --output, gets the data unchanged.
"""

from __future__ import annotations

import re
import sys
from typing import Iterable, TextIO

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

_KEPT = "\n\t"
# Code point -> the one single-cell character shown for it.
CONTROL_PICTURES = {
    **{code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in _KEPT},  # ␀ … ␟
    0x7F: "\u2421",  # ␡
    **{code: "\ufffd" for code in range(0x80, 0xA0)},  # C1 controls have no pictures: �
}
_CONTROL = re.compile("[" + "".join(re.escape(chr(code)) for code in CONTROL_PICTURES) + "]")


def has_controls(text: str) -> bool:
    """Whether `text` has a control character that `visible` shows."""
    return _CONTROL.search(text) is not None


def visible(text: str) -> str:
    """`text` with every control character but newline and tab shown (the same object if it has none)."""
    return text.translate(CONTROL_PICTURES) if has_controls(text) else text


def visible_text(text: Text) -> Text:
    """A rich Text with its control characters shown and its styles kept on the same characters."""
    plain = text.plain
    if not has_controls(plain):
        return text
    shown = text.blank_copy(visible(plain))
    shown.spans = list(text.spans)  # one character for one: the offsets stay
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
    """Print `text`: as it is to a pipe or a file, with its control characters shown on a terminal
    (where CSV's CRLF line ends are line ends)."""
    out = sys.stdout if file is None else file
    out.write((visible(text.replace("\r\n", "\n")) if out.isatty() else text) + end)
