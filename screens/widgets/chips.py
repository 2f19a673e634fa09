"""Component labels as coloured chips (` Claim `), and the legend of all of them."""

from __future__ import annotations

from rich.text import Text

from screens.widgets.labels import LABEL_STYLES, UNKNOWN_LABEL_STYLE

INVALID = "invalid"  # what a chip says for an answer outside the labels


def label_chip(label: str | None) -> Text:
    """The label on its colour; a missing or unknown label as an `invalid` chip."""
    name = label or INVALID
    return Text(f" {name} ", style=LABEL_STYLES.get(name, UNKNOWN_LABEL_STYLE))


def chip_legend(title: str) -> Text:
    """`title` then every label's chip and the invalid one, side by side (their colours part them)."""
    return Text(title) + Text("").join(label_chip(label) for label in (*LABEL_STYLES, INVALID))


def labelled_text(content: str, spans: list[tuple[int, int, str | None]]) -> Text:
    """`content` with each (start, end, label) span on its label's colour."""
    text = Text(content)
    for start, end, label in spans:
        text.stylize(label_chip(label).style, start, end)
    return text
