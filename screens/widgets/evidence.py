"""The evidence of a bot turn (`EvidencePanel`): every retrieved argument, what it was found for and how
far the turn used it. One block of lines per argument, so it wraps in a narrow side panel."""

from __future__ import annotations

from typing import Sequence

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.text import Text
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from engines.debate.records import EvidenceRow


def use_of(row: EvidenceRow) -> str:
    """How far the turn got with the argument: used in the reply, kept by the final selection,
    selected for its query, or only retrieved."""
    return "used" if row.used else "final" if row.final else "selected" if row.selected else "retrieved"


def evidence_row(row: EvidenceRow) -> Text:
    use = use_of(row)
    head = Text(use, style="bold green" if use == "used" else "bold")
    head.append(f" · query {row.query} · {row.strategy}", style="dim")
    relation = row.relation_found or row.relation
    if relation:
        head.append(f" · {relation}", style="dim")
    if row.context:  # the hit a chain starts from: shown, never offered for selection
        head.append(" · context", style="italic")
    return Text.assemble(head, "\n", (row.text, "dim" if row.context else ""), (f"\n{row.id} · {row.topic}", "dim"))


def evidence_view(rows: Sequence[EvidenceRow]) -> RenderableType:
    if not rows:
        return Text("No evidence yet.", style="dim")
    blocks: list[RenderableType] = []
    for row in rows:
        if blocks:
            blocks.append(Rule(style="dim"))
        blocks.append(evidence_row(row))
    return Group(*blocks)


class EvidencePanel(Static):
    """The Evidence tab: the evidence of the bot reply in view, told by its typed message."""

    class Show(Message, bubble=False):
        def __init__(self, rows: Sequence[EvidenceRow]) -> None:
            super().__init__()
            self.rows = tuple(rows)

    rows: reactive[tuple[EvidenceRow, ...]] = reactive((), init=False)

    def on_mount(self) -> None:
        self._render_panel()

    def on_evidence_panel_show(self, message: Show) -> None:
        self.rows = message.rows

    def watch_rows(self) -> None:
        self._render_panel()

    def _render_panel(self) -> None:
        self.update(evidence_view(self.rows))
