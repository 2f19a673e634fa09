"""One colour per argument-component label, for every screen that shows components."""

from __future__ import annotations

LABEL_COLOURS = {"MajorClaim": "#8e3b9e", "Claim": "#2160b0", "Premise": "#7cc47f"}
LABEL_STYLES = {
    "MajorClaim": f"bold white on {LABEL_COLOURS['MajorClaim']}",
    "Claim": f"white on {LABEL_COLOURS['Claim']}",
    "Premise": f"black on {LABEL_COLOURS['Premise']}",
}
UNKNOWN_LABEL_STYLE = "reverse"  # a label outside the three (an invalid answer)
