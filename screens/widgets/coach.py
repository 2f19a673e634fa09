"""The Coach panel: the student's own InspireScore of each message in the Debate screen.

Six dimensions with a bar each, the overall score, the weakest dimension in one sentence,
and what did not parse or hold (translations, derivations, unsupported claims with their
evidence ids), so a low score can be read rather than trusted. Every piece of data is
shown as plain text, never as markup.

The panel scores nothing itself: the debate's exchange does, and the screen tells the panel
what happened through its typed messages (`Scoring`, `Scored`, `Failed`, `Stopped`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from engines.inspire.score import DIMENSION_TITLES, FACTUAL, InspireScore
from screens.widgets.distribution import share_bar

if TYPE_CHECKING:  # the task loads numpy and the judging runner: imported with the first score
    from engines.tasks.inspire import TurnJudgment

BAR_WIDTH = 8  # fits the side panel at its narrowest (30 columns at 80×24)


def value_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def problem_lines(score: InspireScore) -> list[str]:
    """What did not parse or hold, and every claim the argument base does not support, with its evidence."""
    unsupported = [
        f"claim {verdict.verdict}: {verdict.claim} · evidence: {', '.join(verdict.evidence_ids) or 'none'}"
        for verdict in score.facts.verdicts
        if verdict.valid and verdict.verdict != "supported"
    ]
    return score.problems + unsupported


# The dimension column fits the side panel at 80 columns (about 20 characters) without wrapping.
ROW_TITLES = {**DIMENSION_TITLES, FACTUAL: "factual truth"}


def score_view(judgment: TurnJudgment, debate_overall: float | None, earlier: Sequence[TurnJudgment] = ()) -> Group:
    """One scored message: overall, the dimensions, the weakest explained, the problems."""
    score = judgment.score
    head = Text.assemble(("Coach", "bold"), f" · your turn {judgment.position + 1}")
    overall = Text.assemble(("overall ", "bold"), share_bar(score.overall, BAR_WIDTH),
                            (f" {value_text(score.overall)}", "bold"))
    table = Table(show_header=False, box=None, pad_edge=False, expand=True, padding=(0, 1, 0, 0))
    table.add_column(ratio=1, overflow="fold")
    table.add_column(width=BAR_WIDTH, no_wrap=True)
    table.add_column(width=4, justify="right", no_wrap=True)
    for name, value in score.dimensions.items():
        table.add_row(Text(ROW_TITLES[name]), share_bar(value, BAR_WIDTH), Text(value_text(value)))
    weakest = Text.assemble(("Weakest: ", "bold"), DIMENSION_TITLES.get(score.weakest or "", "none"), "\n",
                            (score.weakest_explanation, "italic"))
    parts = [head, overall, table, weakest]
    problems = problem_lines(score)
    if problems:
        parts.append(Text(f"Unparsed or unsupported ({len(problems)})", style="bold yellow"))
        parts += [Text.assemble("• ", problem) for problem in problems]
    if earlier:
        parts.append(Text.assemble(("Earlier: ", "bold"), " · ".join(
            f"turn {j.position + 1} {value_text(j.score.overall)}" for j in earlier
        )))
    parts.append(Text.assemble(("This debate: ", "bold"), value_text(debate_overall),
                               (" (mean of its scored turns)", "dim")))
    return Group(*parts)


class CoachPanel(Static):
    """The latest scored message of the student, with a status line above it while scoring or after a failure."""

    class Scoring(Message, bubble=False):
        """A message is being scored."""

    class Scored(Message, bubble=False):
        def __init__(self, judgment: TurnJudgment, debate_overall: float | None) -> None:
            super().__init__()
            self.judgment, self.debate_overall = judgment, debate_overall

    class Failed(Message, bubble=False):
        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    class Stopped(Message, bubble=False):
        """Every scoring in progress was stopped with its turn."""

    status: reactive[Text | None] = reactive(None, init=False, always_update=True)
    in_progress: reactive[int] = reactive(0, init=False)  # scores running
    debate_overall: reactive[float | None] = reactive(None, init=False)

    def __init__(self, enabled: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.judgments: dict[int, TurnJudgment] = {}  # by dialogue position
        self._idle_status = Text(
            "Coach: your InspireScore shows here after each message." if enabled
            else "Coach: off (coach = false under [debate] in the config file).", style="dim",
        )
        self.set_reactive(CoachPanel.status, self._idle_status)

    def on_mount(self) -> None:
        self._render_panel()

    def watch_status(self) -> None:
        self._render_panel()

    def watch_debate_overall(self) -> None:
        self._render_panel()

    def _render_panel(self) -> None:
        parts: list = [self.status] if self.status is not None else []
        if self.judgments:
            latest = max(self.judgments)
            earlier = [self.judgments[p] for p in sorted(self.judgments) if p != latest]
            parts.append(score_view(self.judgments[latest], self.debate_overall, earlier))
        self.update(Group(*parts))

    def on_coach_panel_scoring(self, _message: Scoring) -> None:
        self.in_progress += 1
        self.status = Text("Coach: scoring…", style="dim")

    def on_coach_panel_scored(self, message: Scored) -> None:
        self.in_progress = max(0, self.in_progress - 1)
        self.show_judgment(message.judgment, message.debate_overall)

    def on_coach_panel_failed(self, message: Failed) -> None:
        """One line, whatever went wrong."""
        self.in_progress = max(0, self.in_progress - 1)
        self.status = Text(f"Coach: scoring failed: {' '.join(message.reason.split())}", style="red", no_wrap=True,
                           overflow="ellipsis")

    def on_coach_panel_stopped(self, _message: Stopped) -> None:
        if self.in_progress:
            self.in_progress = 0
            self.status = Text("Coach: stopped with the turn", style="dim")

    def show_judgment(self, judgment: TurnJudgment, debate_overall: float | None) -> None:
        """A message's score arrived (or is shown again)."""
        self.judgments[judgment.position] = judgment
        if not self.in_progress:
            self.set_reactive(CoachPanel.status, None)
        self.debate_overall = debate_overall
        self._render_panel()

    def show_off(self, reason: str | None) -> None:
        """Scoring cannot run for now, and why (e.g. no model answers); None: it can again."""
        self.status = Text(f"Coach: off, {reason}.", style="yellow") if reason else self._idle_status
