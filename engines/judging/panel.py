"""A panel of judges as one judge: several judges (profiles × variants) answer an item, and the
panel's answer is their majority label, the mean of their label probabilities and of their values.

A panel asks nothing itself. Its members judge through the path every judge takes (`run_task`,
a tracked run each, their verdicts stored under their own identities as they are: a member that
already judged the items is not asked again); the panel's verdict of an item is their verdicts
combined (`combine`), stored under the panel's identity (`JudgeId.of_panel`) by a tracked run of
its own, so the Leaderboard, the audit and the Runs screen see a panel as any judge.

Ties: among the labels with the most votes, the one with the highest mean probability over the
members that gave a distribution; on equal probability, the first in the task's label order (for
pairwise A, B, Tie). A task may add to the panel's verdict what its own report reads
(`panel_data(verdicts)`: pairwise votes its answers in each order, so a panel has position figures).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Mapping, Sequence

from engines.judging.evaluate import TaskRun
from engines.judging.runner import RunProgress, RunSpec, run_tracked
from engines.judging.task import Task, TaskContext, TaskItem
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.types import Usage

NO_VALID_MEMBER = "no member of the panel gave a valid answer"


def majority(labels: Sequence[str | None], distribution: Mapping[str, float], order: Sequence[str]) -> tuple[str | None, str]:
    """The label most of `labels` give (None ones are no vote), and how a tie was broken ("" for no
    tie): the tied label of the highest probability in `distribution`, then the first in `order`
    (labels not in it after those that are, alphabetically)."""
    counts = Counter(label for label in labels if label is not None)
    if not counts:
        return None, ""
    most = max(counts.values())
    tied = sorted(label for label, count in counts.items() if count == most)
    if len(tied) == 1:
        return tied[0], ""

    def rank(label: str) -> tuple[float, int, str]:
        return (-distribution.get(label, 0.0), order.index(label) if label in order else len(order), label)

    chosen = min(tied, key=rank)
    by_probability = distribution.get(chosen, 0.0) > max(distribution.get(label, 0.0) for label in tied if label != chosen)
    return chosen, "by mean probability" if by_probability else "by label order"


def mean_distribution(distributions: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of the members' label probabilities (a label a member left out is 0 there); members
    with no distribution are left out."""
    given = [distribution for distribution in distributions if distribution]
    labels = dict.fromkeys(label for distribution in given for label in distribution)
    return {label: sum(d.get(label, 0.0) for d in given) / len(given) for label in labels}


def combine(task: Task, members: Sequence[tuple[JudgeId, Verdict]]) -> Verdict:
    """The panel's verdict from its members' verdicts of one item: the majority label, the mean
    probabilities and value of the valid ones; the usage and seconds of all of them (what the
    panel's answer cost). Invalid when no member's verdict is valid."""
    valid = [verdict for _, verdict in members if verdict.valid]
    usage = Usage.total(verdict.usage for _, verdict in members)
    seconds = sum(verdict.seconds for _, verdict in members)
    votes = [verdict.label if verdict.valid else None for _, verdict in members]
    data: dict[str, Any] = {"members": [judge.name for judge, _ in members], "votes": votes}
    if not valid:
        return Verdict.invalid(NO_VALID_MEMBER, usage=usage, data=data, seconds=seconds)
    distribution = mean_distribution([verdict.distribution for verdict in valid])
    label, tie = majority(votes, distribution, task.labels)
    values = [verdict.value for verdict in valid if verdict.value is not None]
    counted = Counter(label for label in votes if label is not None)
    detail = f"majority of {len(members)} judges: " + ", ".join(f"{name} {count}" for name, count in counted.most_common())
    if len(valid) < len(members):
        detail += f", {len(members) - len(valid)} invalid"
    if tie:
        detail += f"; tie broken {tie}"
    return Verdict(
        label=label, value=sum(values) / len(values) if values else None,
        data={**data, **task.panel_data(valid)}, distribution=distribution,
        detail=detail, usage=usage, seconds=seconds,
    )


async def run_panel(
    ctx: TaskContext,
    task: Task,
    members: Sequence[TaskRun],
    options: Any,
    items: list[TaskItem],
    *,
    selection: dict[str, Any] | None = None,
    on_progress: Callable[[RunProgress], None] = lambda progress: None,
    retry_invalid: bool = False,
) -> TaskRun:
    """The panel of the judges of `members` (their runs over `items`, done) as a tracked run of its
    own: its verdicts combined from theirs, stored under the panel's identity, then its report."""
    judge = JudgeId.of_panel([run.judge for run in members])
    spec = RunSpec(task.name, judge, selection or {}, concurrency=1)  # nothing is asked: combining is instant

    async def one(item: TaskItem) -> Verdict:
        return combine(task, [(run.judge, run.outcome.verdicts[item.key]) for run in members])

    outcome = await run_tracked(ctx.db, spec, items, one, on_progress=on_progress, retry_invalid=retry_invalid)
    options = await task.settled_options(ctx, options)
    report = task.report(ctx, judge, items, outcome.verdicts, options, outcome.run.id)
    return TaskRun(judge, outcome, report)
