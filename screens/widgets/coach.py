"""The Coach panel: the student's own InspireScore of each message in the Debate screen.

The dimensions measured with a bar each (and those not measured for this turn, said so),
the overall score with its coverage, the weakest dimension in one sentence, each derivation
read in words with its verdict, what the argument base says of each claim. The raw problems
(parser diagnostics, unreadable answers) are a details section a key shows, so a student
reads words, not diagnostics. Every piece of data is shown as plain text, never as markup.

The panel scores nothing itself: the debate's exchange does, and the screen tells the panel
what happened through its typed messages (`Scoring`, `Scored`, `Failed`, `Stopped`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from engines.inspire import coaching
from screens.widgets.distribution import share_bar

if TYPE_CHECKING:  # the task loads numpy and the judging runner: imported with the first score
    from engines.tasks.inspire_turns import TurnJudgment

BAR_WIDTH = 8  # fits the side panel at its narrowest (30 columns at 80×24)
VERDICT_STYLES = {"valid": "green", "invalid": "yellow", "inconsistent": "yellow", "circular": "yellow"}  # else dim
CLAIM_STYLES = {"supported": "green", "contradicted": "yellow"}  # else dim


def value_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _bullet(*lines: Text) -> Table:
    """One item of a list, its wrapped lines indented under its first."""
    grid = Table.grid(padding=(0, 1, 0, 0), expand=True)
    grid.add_column(width=1)
    grid.add_column(ratio=1)
    grid.add_row("•", Group(*lines))
    return grid


def _derivations(judgment: TurnJudgment) -> list[RenderableType]:
    notes = coaching.derivation_notes(judgment.score.logic)
    if not notes:
        return []
    parts: list[RenderableType] = [
        Text(f"Your reasoning ({len(notes)} step{'' if len(notes) == 1 else 's'})", style="bold")]
    for note in notes:
        formula = [Text(note.formula, style="dim")] if note.formula else []
        parts.append(_bullet(Text(note.reading), *formula,
                             Text.assemble("→ ", (note.verdict, VERDICT_STYLES.get(note.status, "dim")))))
    return parts


def _claims(judgment: TurnJudgment) -> list[RenderableType]:
    facts = judgment.score.facts
    if not facts.verdicts:
        return []
    parts: list[RenderableType] = [Text(f"Your claims ({len(facts.verdicts)})", style="bold")]
    for verdict in facts.verdicts:
        parts.append(_bullet(Text(f"“{verdict.claim}”"), Text.assemble(
            "→ ", (coaching.claim_sentence(verdict, facts.source), CLAIM_STYLES.get(verdict.verdict or "", "dim")))))
    return parts


def score_view(judgment: TurnJudgment, debate_overall: float | None, earlier: Sequence[TurnJudgment] = (),
               show_details: bool = False, details_key: str = "") -> Group:
    """One scored message: overall and coverage, the dimensions, the weakest explained, the
    derivations and claims in words; the raw problems with `show_details`."""
    score = judgment.score
    head = Text.assemble(("Coach", "bold"), f" · your message {coaching.message_number(judgment.dialogue)}")
    overall = Text.assemble(("overall ", "bold"), share_bar(score.overall, BAR_WIDTH),
                            (f" {value_text(score.overall)}", "bold"), (f" · {coaching.coverage_text(score)}", "dim"))
    table = Table(show_header=False, box=None, pad_edge=False, expand=True, padding=(0, 1, 0, 0))
    table.add_column(ratio=1, overflow="fold")
    table.add_column(width=BAR_WIDTH, no_wrap=True)
    table.add_column(width=4, justify="right", no_wrap=True)
    unmeasured = []
    for name, value in score.dimensions.items():
        title = coaching.dimension_title(score, name)
        if value is None:
            unmeasured.append(Text.assemble(f"{title}: ", (coaching.NOT_MEASURED, "italic"),
                                            (f" ({coaching.not_measured_reason(score, name)})", "dim")))
        else:
            table.add_row(Text(title), share_bar(value, BAR_WIDTH), Text(value_text(value)))
    weakest = Text.assemble(("Weakest: ", "bold"),
                            coaching.dimension_title(score, score.weakest) if score.weakest else "none", "\n",
                            (score.weakest_explanation, "italic"))
    parts = [head, overall, table, *unmeasured, weakest, *_derivations(judgment), *_claims(judgment)]
    left_out = coaching.left_out(score)
    if left_out:
        parts.append(Text(coaching.left_out_text(left_out), style="dim"))
    problems = score.problems
    if problems:
        if show_details:
            parts.append(Text(f"Details ({len(problems)}) · {details_key} hides them", style="bold"))
            parts += [_bullet(Text(problem)) for problem in problems]
        else:
            parts.append(Text(f"{details_key} shows the details ({len(problems)})", style="dim"))
    if earlier:
        parts.append(Text.assemble(("Earlier: ", "bold"), " · ".join(
            f"message {coaching.message_number(j.dialogue)} {value_text(j.score.overall)}" for j in earlier
        )))
    parts.append(Text.assemble(("This debate: ", "bold"), value_text(debate_overall),
                               (" (mean of its scored turns)", "dim")))
    return Group(*parts)


class CoachPanel(Static):
    """The latest scored message of the student, with a status line above it while scoring (the
    seconds ticking) or after a failure."""

    TICK_S = 1.0  # the "Coach 1 of 3 · N s" status advances at this pace

    class Scoring(Message, bubble=False):
        """A message is being scored."""

    class Progress(Message, bubble=False):
        """A part of the score finished: `done` of `total` are."""

        def __init__(self, done: int, total: int) -> None:
            super().__init__()
            self.done, self.total = done, total

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
    show_details: reactive[bool] = reactive(False, init=False)

    def __init__(self, details_key: str, enabled: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.details_key = details_key
        self.judgments: dict[int, TurnJudgment] = {}  # by dialogue position
        self._idle_status = Text(
            "Coach: your InspireScore shows here after each message." if enabled
            else "Coach: off (coach = false under [debate] in the config file).", style="dim",
        )
        self.set_reactive(CoachPanel.status, self._idle_status)
        self._checking_since: float | None = None  # while a score runs
        self._parts: tuple[int, int] | None = None  # the latest score's parts done and in all, once one is
        self._clock: Timer | None = None

    def on_mount(self) -> None:
        self._render_panel()

    def watch_status(self) -> None:
        self._render_panel()

    def watch_debate_overall(self) -> None:
        self._render_panel()

    def watch_show_details(self) -> None:
        self._render_panel()

    def _render_panel(self) -> None:
        parts: list = [self.status] if self.status is not None else []
        if self.judgments:
            latest = max(self.judgments)
            earlier = [self.judgments[p] for p in sorted(self.judgments) if p != latest]
            parts.append(score_view(self.judgments[latest], self.debate_overall, earlier, self.show_details,
                                    self.details_key))
        self.update(Group(*parts))

    def _show_checking(self) -> None:
        if self._checking_since is not None:
            seconds = f"{time.monotonic() - self._checking_since:.0f} s"
            self.status = Text(f"Coach {self._parts[0]} of {self._parts[1]} · {seconds}" if self._parts
                               else f"Coach: checking… {seconds}", style="dim")

    def _stop_clock(self) -> None:
        self._checking_since, self._parts = None, None
        if self._clock is not None:
            self._clock.stop()
            self._clock = None

    def on_coach_panel_scoring(self, _message: Scoring) -> None:
        self.in_progress += 1
        if self._checking_since is None:  # the clock counts from the first of the scores running
            self._checking_since = time.monotonic()
            self._clock = self.set_interval(self.TICK_S, self._show_checking)
        self._show_checking()

    def on_coach_panel_progress(self, message: Progress) -> None:
        self._parts = (message.done, message.total)
        self._show_checking()

    def on_coach_panel_scored(self, message: Scored) -> None:
        self.in_progress = max(0, self.in_progress - 1)
        if not self.in_progress:
            self._stop_clock()
        self.show_judgment(message.judgment, message.debate_overall)

    def on_coach_panel_failed(self, message: Failed) -> None:
        """One line, whatever went wrong."""
        self.in_progress = max(0, self.in_progress - 1)
        self._stop_clock()
        self.status = Text(f"Coach: scoring failed: {' '.join(message.reason.split())}", style="red", no_wrap=True,
                           overflow="ellipsis")

    def on_coach_panel_stopped(self, _message: Stopped) -> None:
        if self.in_progress:
            self.in_progress = 0
            self._stop_clock()
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
