"""The one distribution bar: a share of 0–1 as a row of blocks, and one such bar per label."""

from __future__ import annotations

from typing import Mapping, Sequence

from rich.text import Text

FILLED, EMPTY = "█", "·"


def share_bar(share: float | None, width: int, style: str = "bold") -> Text:
    """`██████····` for 0.6 at width 10; all dots (dim) when there is no value."""
    filled = 0 if share is None else round(min(1.0, max(0.0, share)) * width)
    return Text(FILLED * filled, style=style) + Text(EMPTY * (width - filled), style="dim")


def distribution_bars(
    labels: Sequence[str],
    distribution: Mapping[str, float],
    width: int = 10,
    styles: Mapping[str, str] | None = None,
) -> Text:
    """One line per label: `A   ██████····  62%` (a label's bar in its style, if given)."""
    pad = max((len(label) for label in labels), default=0)
    lines = []
    for label in labels:
        share = distribution.get(label, 0.0)
        line = Text(f"{label:<{pad}} ")
        line.append_text(share_bar(share, width, (styles or {}).get(label, "bold")))
        line.append(f" {share:>4.0%}")
        lines.append(line)
    return Text("\n").join(lines)
