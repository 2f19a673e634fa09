"""The Coach panel: the student's own InspireScore of each message in the Debate screen.

Six dimensions with a bar each, the overall score, the weakest dimension in one sentence,
and what did not parse or hold (translations, derivations, unsupported claims with their
evidence ids), so a low score can be read rather than trusted. Every piece of data is
shown as plain text, never as markup.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.widgets import Static
from textual.worker import Worker

from engines.errors import ArgtuiError
from engines.inspire.score import DIMENSION_TITLES, FACTUAL, InspireScore, inspire_scores_by_debate
from engines.judging.task import TaskContext
from engines.llm.client import LLMClient
from screens.widgets.distribution import share_bar
from store import StoreError

if TYPE_CHECKING:  # the task loads numpy and the judging runner: imported with the first score
    from engines.tasks.inspire import TurnJudgment

log = logging.getLogger("argtui.coach")
BAR_WIDTH = 8  # fits the side panel at its narrowest (30 columns at 80×24)
WAIT_POLL_S = 0.1  # how often a deferred score checks whether the reply and the labels are done


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

    def __init__(self, enabled: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.judgments: dict[int, TurnJudgment] = {}  # by dialogue position
        self.debate_overall: float | None = None
        self._idle_status = Text(
            "Coach: your InspireScore shows here after each message." if enabled
            else "Coach: off (coach = false under [debate] in the config file).", style="dim",
        )
        self.status: Text | None = self._idle_status
        self.in_progress = 0  # scores running

    def on_mount(self) -> None:
        self._render_panel()

    def _render_panel(self) -> None:
        parts: list = [self.status] if self.status is not None else []
        if self.judgments:
            latest = max(self.judgments)
            earlier = [self.judgments[p] for p in sorted(self.judgments) if p != latest]
            parts.append(score_view(self.judgments[latest], self.debate_overall, earlier))
        self.update(Group(*parts))

    def show_scoring(self) -> None:
        self.status = Text("Coach: scoring…", style="dim")
        self._render_panel()

    def show_judgment(self, judgment: TurnJudgment, debate_overall: float | None) -> None:
        """A message's score arrived (or is shown again)."""
        self.judgments[judgment.position] = judgment
        self.debate_overall = debate_overall
        if not self.in_progress:
            self.status = None
        self._render_panel()

    def stop(self) -> None:
        """Stop every scoring in progress (with the turn it follows): its requests are cancelled."""
        if self.in_progress:
            self.workers.cancel_group(self, "coach")
            self.status = Text("Coach: stopped with the turn", style="dim")
            self._render_panel()

    def show_off(self, reason: str | None) -> None:
        """Scoring cannot run for now, and why (e.g. no model answers); None: it can again."""
        self.status = Text(f"Coach: off, {reason}.", style="yellow") if reason else self._idle_status
        self._render_panel()

    def show_failure(self, reason: str) -> None:
        """One line, whatever went wrong."""
        self.status = Text(f"Coach: scoring failed: {' '.join(reason.split())}", style="red", no_wrap=True,
                           overflow="ellipsis")
        self._render_panel()

    @work(group="coach")
    async def score_message(
        self, ctx: TaskContext, client: LLMClient, debate_id: int, position: int, after: Sequence[Worker | None] = ()
    ) -> None:
        """Score the student's message at stored `position` once the workers `after` are done, and store it."""
        from engines.tasks.inspire import TASK

        self.in_progress += 1
        self.show_scoring()
        try:
            while any(worker is not None and not worker.is_finished for worker in after):
                await asyncio.sleep(WAIT_POLL_S)
            judgment = await TASK.score_stored_turn(ctx, client, debate_id, position)
            overall = await asyncio.to_thread(inspire_scores_by_debate, ctx.db)
        except (ArgtuiError, StoreError) as exc:
            self.show_failure(str(exc))
            return
        except Exception as exc:  # a bug: the log has the traceback, the panel one line
            log.exception("scoring turn %s of debate %s", position, debate_id)
            self.show_failure(f"{type(exc).__name__} (details in logs/argtui.log)")
            return
        finally:
            self.in_progress -= 1
        self.show_judgment(judgment, overall.get(debate_id))
