"""The Rating screen's panes, drawn from its state: the critique list, the editor of the seven
dimensions, the source line and the rubric of the selected dimension."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from engines.critiques.rubric import READING_RULES, RUBRIC
from screens.rating_state import RatingState
from screens.widgets.distribution import share_bar
from store.critiques import CritiqueView

BAR_WIDTH = 10


def critique_list_text(state: RatingState) -> Text:
    """One line per critique of the position: selected, rated, revised, changed, its opening words."""
    lines = []
    for index, critique in enumerate(state.position.critiques):
        focused = index == state.critique_index
        rating = state.current.get(critique.id)
        draft = state.drafts.get(critique.id)
        marks = ("●" if rating else "○") + ("↻" if rating and rating.revises_uid else " ")
        marks += "*" if draft and draft.changed else " "
        line = Text(f"{'▶' if focused else ' '} {marks}{index + 1:>2}  ", style="bold" if focused else "")
        line.append(critique.text.replace("\n", " "), style="" if focused else "dim")
        lines.append(line)
    return Text("\n").join(lines)


def editor_text(state: RatingState, critique: CritiqueView) -> Text:
    """Every dimension with its value and bar, the selected one marked, then whether it is saved."""
    draft = state.draft(critique)
    current = state.current.get(critique.id)
    text = Text()
    for index, dimension in enumerate(RUBRIC):
        focused = index == state.dimension
        value = draft.values[dimension.key]
        text.append("▸ " if focused else "  ", style="bold yellow")
        text.append(f"{dimension.label:<13}", style="bold" if focused else "")
        text.append(f"{value:4.2f} " if value is not None else "  —  ")
        text.append_text(share_bar(value, BAR_WIDTH, "green"))
        text.append("\n")
    if current is None:
        saved = "not rated yet" if not draft.changed else "draft: Enter confirms"
    elif draft.changed:
        saved = "changed: Enter revises (asks why)"
    else:
        saved = "confirmed" + (" (revised)" if current.revises_uid else "")
    text.append(saved, style="italic")
    if draft.note:
        text.append(f"\nnote: {draft.note}", style="dim")
    return text


def source_text(state: RatingState, critique: CritiqueView) -> Text:
    if critique.id in state.revealed:
        return Text(f"Source: {critique.source or 'none given'}")
    return Text("Source hidden (s reveals it; recorded)", style="dim")


def rubric_text(dimension_index: int) -> Text:
    dimension = RUBRIC[dimension_index]
    text = Text.assemble((dimension.label + "\n", "bold"), dimension.definition + "\n\n", ("Reading rules\n", "bold"))
    for rule in READING_RULES:
        text.append(f"• {rule}\n")
    return text


class RubricEditor(Static, can_focus=True):
    """The seven dimensions of the selected critique. It takes the focus so the ring shows where the
    rating keys go; the keys themselves are the screen's."""
