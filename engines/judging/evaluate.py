"""Running a task's judge over its items (`run_task`) and the agreement every
task gets for free: its stored verdicts against the stored references."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from engines.judging.judge_one import settle
from engines.judging.runner import RunOutcome, RunProgress, RunSpec, run_tracked
from engines.judging.store import JudgmentStore
from engines.judging.task import Task, TaskContext, TaskItem, TaskReport
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.llm.embedded import reproducibility
from engines.metrics.classification import classification_report


@dataclass(frozen=True)
class TaskRun:
    judge: JudgeId
    outcome: RunOutcome
    report: TaskReport


async def run_task(
    ctx: TaskContext,
    task: Task,
    client: LLMClient,
    variant: str,
    options: Any,
    items: list[TaskItem],
    *,
    selection: dict[str, Any] | None = None,
    concurrency: int | None = None,
    on_progress: Callable[[RunProgress], None] = lambda progress: None,
    retry_invalid: bool = False,
) -> TaskRun:
    """Judge the items not yet judged (a tracked, resumable run; with `retry_invalid` those judged
    invalid too, asking the backend anew), then score every verdict."""
    settled = await settle(ctx, task, client, variant, options)
    spec = RunSpec(
        task.name, settled.judge, selection or {},
        concurrency or task.concurrency(variant, client, settled.options), reproducibility(client.profile),
    )

    async def one(item: TaskItem) -> Verdict:
        return await settled.ask(ctx, item)

    outcome = await run_tracked(ctx.db, spec, items, one, on_progress=on_progress, retry_invalid=retry_invalid)
    report = task.report(ctx, settled.judge, items, outcome.verdicts, settled.options, outcome.run.id)
    return TaskRun(settled.judge, outcome, report)


@dataclass(frozen=True)
class JudgeStanding:
    """One stored judge of a task against the stored references (the Leaderboard's generic rows)."""

    judge: JudgeId
    judgments: int
    invalid: int
    labelled: int  # judgments whose item has a reference
    accuracy: float | None
    macro_f1: float | None


def standings(ctx: TaskContext, task: Task) -> list[JudgeStanding]:
    """Every stored judge of the task, best macro F1 first (judges without references last)."""
    store = JudgmentStore(ctx.db, task.name)
    rows = []
    for stored in store.judges():
        labelled = store.labelled(stored.judge)
        if labelled and task.labels:
            report = classification_report(
                [reference if reference in task.labels else None for _, reference, _ in labelled],
                [verdict.label for _, _, verdict in labelled],
                task.labels,
            )
            accuracy, macro = report.accuracy, report.macro_f1
        else:
            accuracy = macro = None
        rows.append(JudgeStanding(stored.judge, stored.judgments, stored.invalid, len(labelled), accuracy, macro))
    return sorted(rows, key=lambda row: (row.macro_f1 is None, -(row.macro_f1 or 0.0), row.judge.name))
