"""The judge audit: from a task's stored verdicts, what a researcher asks of a judge before
trusting it, each number with the items it rests on and a bootstrap interval.

Per judge and task: agreement with the reference (accuracy and Cohen's κ); for pairwise judges
asked in both orders (swap mode) the position figures (consistency, first-position preference),
as MT-Bench reports them; how often the longer text is preferred against how often the experts
prefer it; the agreement of repeated runs; the judge's label shares against the reference's; the
prompt and completion tokens and the seconds per 1,000 judgments, as AlpacaEval's judge table
reports them. A figure needing more items than are stored is no value but the reason, and the
command that stores what it needs where there is one; `fill_plan` names the runs that store it (the
judge's stored runs with another mode), for `argtui audit --fill`. Nothing here calls a backend.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

from engines.errors import ArgtuiError
from engines.judging.store import ARENA_PREFIX, JudgmentStore, is_arena_key
from engines.judging.task import AuditedItem, Task, declared
from engines.judging.verdict import JudgeId, Verdict
from engines.metrics.agreement import cohen_kappa
from engines.metrics.bootstrap import bootstrap_ci
from store.db import Database
from store.runs import RunRepository

# Every audit figure comes with a bootstrap interval over its items, and an interval needs two.
MIN_ITEMS = 2
# A correlation (and an error of z-scores) needs three paired values: with two, every correlation
# is ±1 and every z-score ±1, whatever was judged.
MIN_CORRELATED = 3
RESAMPLES = 1000
PER = 1000  # costs per this many judgments, as AlpacaEval's judge table states them


@dataclass(frozen=True)
class Figure:
    """One audit number on `items` items (`unit` says what they are), with its 95% interval; or
    no value and `missing`, why there is none. `reference`: the same figure of the reference
    (the experts) on the same items, where the audit compares the two."""

    name: str
    items: int
    unit: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    reference: float | None = None
    missing: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def too_few(items: int, needed: int, unit: str) -> str:
    """The reason a figure needing `needed` items is not shown on `items` ("" when it is)."""
    return "" if items >= needed else f"needs at least {needed} {unit}, {items} stored"


def _figure(
    name: str, unit: str, units: int, statistic: Callable[[np.ndarray], float], *,
    reference: float | None = None, fills: str = "", vectorized: bool = False,
) -> Figure:
    """`statistic(indices)` over `units` items with its percentile bootstrap interval, or the reason it
    is not shown (and what fills it). `vectorized`: as `bootstrap_ci`'s."""
    reason = too_few(units, MIN_ITEMS, unit)
    if reason:
        return Figure(name, units, unit, reference=reference, missing=f"{reason}{'; ' + fills if fills else ''}")
    interval = bootstrap_ci(statistic, units, resamples=RESAMPLES, vectorized=vectorized)
    if math.isnan(interval.estimate):
        return Figure(name, units, unit, reference=reference, missing="undefined: one label throughout on both sides")
    return Figure(name, units, unit, interval.estimate, _finite(interval.low), _finite(interval.high), reference)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _share(name: str, unit: str, hits: Sequence[bool], *, reference: float | None = None, fills: str = "") -> Figure:
    values = np.asarray(hits, dtype=float)
    return _figure(name, unit, len(values), lambda rows: values[rows].mean(axis=1), reference=reference, fills=fills,
                   vectorized=True)


def _mean_per(name: str, unit: str, values: Sequence[float], fills: str = "") -> Figure:
    array = np.asarray(values, dtype=float) * PER
    return _figure(name, unit, len(array), lambda rows: array[rows].mean(axis=1), fills=fills, vectorized=True)


@dataclass(frozen=True)
class JudgeAudit:
    task: str
    judge: JudgeId
    judgments: int
    invalid: int
    accuracy: Figure
    kappa: Figure
    consistency: Figure
    first_position: Figure
    longer: Figure
    runs_agree: Figure
    label_shares: tuple[Figure, ...]
    prompt_tokens: Figure
    completion_tokens: Figure
    seconds: Figure

    def figures(self) -> list[Figure]:
        """Every figure, in the order the audit shows them."""
        return [self.accuracy, self.kappa, self.consistency, self.first_position, self.longer, self.runs_agree,
                *self.label_shares, self.prompt_tokens, self.completion_tokens, self.seconds]

    def as_dict(self) -> dict:
        return {"task": self.task, "judge": self.judge.name, "judgments": self.judgments, "invalid": self.invalid,
                "figures": [figure.as_dict() for figure in self.figures()]}


@dataclass(frozen=True)
class Fills:
    """The commands that store what a task's missing figures need ("" where none does)."""

    orders: str = ""
    runs: str = ""


def audit_judge(
    task: str, judge: JudgeId, items: Sequence[AuditedItem], labels: Sequence[str] = (), fills: Fills = Fills(),
) -> JudgeAudit:
    """The audit of one judge's stored judgments of a task (`labels`: the task's answer labels)."""
    labelled = [item for item in items if item.reference is not None]
    given = [item.verdict.label for item in labelled]
    expected = [item.reference for item in labelled]
    return JudgeAudit(
        task, judge, len(items), sum(1 for item in items if not item.verdict.valid),
        accuracy=_share("accuracy", "judgments with a reference", [g == e for g, e in zip(given, expected)]),
        kappa=_figure("κ", "judgments with a reference", len(labelled),
                      lambda rows: cohen_kappa([given[i] for i in rows], [expected[i] for i in rows])),
        **_position(items, fills.orders),
        longer=_longer(items),
        runs_agree=_share(
            "runs agree", "judgments with repeated runs",
            [len(set(item.runs)) == 1 for item in items if len(item.runs) > 1],
            fills=fills.runs or "this task stores no repeated runs",
        ),
        label_shares=_label_shares(labelled, labels),
        **_costs(items),
    )


def _position(items: Sequence[AuditedItem], fills: str) -> dict[str, Figure]:
    """Consistency: the same verdict in both orders once the swap is undone. First position: of the
    decisive answers (A or B) in either order, the share naming the text shown first."""
    both = [item.orders for item in items if item.orders is not None]
    unit = "judgments in both orders"
    fills = fills or "this task does not judge in both orders"
    swap = {"A": "B", "B": "A"}
    consistent = [first is not None and first == swap.get(second, second) for first, second in both]
    firsts = np.asarray([sum(answer == "A" for answer in orders) for orders in both], dtype=float)
    decisive = np.asarray([sum(answer in ("A", "B") for answer in orders) for orders in both], dtype=float)

    def first_share(rows: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return firsts[rows].sum(axis=1) / decisive[rows].sum(axis=1)  # NaN: no decisive answer drawn

    return {
        "consistency": _share("position consistency", unit, consistent, fills=fills),
        "first_position": _figure("first position", unit, len(both), first_share, fills=fills, vectorized=True),
    }


def _longer(items: Sequence[AuditedItem]) -> Figure:
    """Of the judge's decisive labels on texts of unequal length, the share naming the longer one;
    beside it, the experts' share on their decisive labels of the same items."""
    unequal = [item for item in items if item.lengths is not None and item.lengths[0] != item.lengths[1]]
    unit = "decisive judgments of unequal texts"
    if not any(item.lengths is not None for item in items):
        return Figure("prefers longer", 0, unit, missing="this task's items have no two texts to compare")

    def longer(label: str | None, lengths: tuple[int, int]) -> bool:
        return (label == "A") == (lengths[0] > lengths[1])

    judge = [longer(item.verdict.label, item.lengths) for item in unequal if item.verdict.label in ("A", "B")]
    experts = [longer(item.reference, item.lengths) for item in unequal if item.reference in ("A", "B")]
    return _share("prefers longer", unit, judge, reference=sum(experts) / len(experts) if experts else None)


def _label_shares(labelled: Sequence[AuditedItem], labels: Sequence[str]) -> tuple[Figure, ...]:
    """Each label's share of the judge's judgments (invalid ones count, under no label) against its
    share of the references of the same items."""
    shown = list(labels) or sorted({item.reference for item in labelled if item.reference is not None})
    given = [item.verdict.label for item in labelled]
    expected = [item.reference for item in labelled]
    return tuple(
        _share(f"says {label}", "judgments with a reference", [g == label for g in given],
               reference=expected.count(label) / len(expected) if expected else None)
        for label in shown
    )


def _costs(items: Sequence[AuditedItem]) -> dict[str, Figure]:
    """Per 1,000 judgments, from the judgments whose every answer a server computed (a cached answer
    took no server time)."""
    recorded = [item.verdict for item in items if item.verdict.usage.calls]
    computed = [verdict for verdict in recorded if not verdict.usage.cached_calls]
    unit = "judgments computed, not cached"
    fills = ("" if computed else "the stored answers came from the response cache" if recorded
             else "no stored judgment recorded a server's usage")
    return {
        "prompt_tokens": _mean_per("prompt tokens per 1k", unit, [v.usage.prompt_tokens for v in computed], fills),
        "completion_tokens": _mean_per("completion tokens per 1k", unit,
                                       [v.usage.completion_tokens for v in computed], fills),
        "seconds": _mean_per("seconds per 1k", unit, [v.seconds for v in computed], fills),
    }


# ---------------------------------------------------------------------- reading the store


def stored_items(db: Database, task: str, judge: JudgeId) -> list[tuple[str, str | None, Verdict]]:
    """(item key, reference, verdict) of every stored judgment of the judge; an item judged in a batch
    run and in the Arena counts once, with the batch verdict (as on the Leaderboard)."""
    store = JudgmentStore(db, task)
    references = {key: reference for key, reference, _ in store.labelled(judge)}
    verdicts = store.latest(judge)
    return [
        (key, references.get(key), verdict) for key, verdict in sorted(verdicts.items())
        if not (is_arena_key(key) and key.removeprefix(ARENA_PREFIX) in verdicts)
    ]


FILLED = {"orders": ("consistency", "first_position"), "runs": ("runs_agree",)}  # the figures each fill gives


def _fills(task: Task) -> Fills:
    def command(changes: dict[str, Any]) -> str:
        flags = " ".join(f"--{name.replace('_', '-')} {value}" for name, value in changes.items())
        return f"run `argtui eval {task.name} {flags}` with this judge's model and prompt, or `argtui audit --fill`"

    return Fills(**{field: command(changes) for field, changes in declared(task).audit_fills.items()})


def audit_task(db: Database, task: Task, judge: str | None = None) -> list[JudgeAudit]:
    """The audit of every stored judge of the task (or of those whose name contains `judge`)."""
    stored = JudgmentStore(db, task.name).judges()
    chosen = [row.judge for row in stored if judge is None or judge.lower() in row.name.lower()]
    fills = _fills(task)
    return [
        audit_judge(task.name, found, declared(task).audited_items(found, stored_items(db, task.name, found)),
                    task.labels, fills)
        for found in chosen
    ]


def audit(db: Database, tasks: Sequence[Task], judge: str | None = None) -> list[JudgeAudit]:
    """The audits of the tasks' stored judges; an ArgtuiError when `judge` names none of them."""
    found = [row for task in tasks for row in audit_task(db, task, judge)]
    if judge is not None and not found:
        raise ArgtuiError(f"no stored judge of {', '.join(task.name for task in tasks)} has {judge!r} in its name; "
                          "`argtui audit` with no --judge lists them all")
    return found


# ---------------------------------------------------------------------- filling what is missing


@dataclass(frozen=True)
class Fill:
    """A run storing what `figures` of an audited judge lack: the judge's stored run (its prompt
    `variant` and its options `values`, by field name) with `changes`, as `argtui eval` runs it."""

    task: str
    judge: JudgeId
    figures: tuple[str, ...]
    variant: str
    values: dict[str, Any]
    changes: dict[str, Any]


@dataclass(frozen=True)
class FillPlan:
    fills: tuple[Fill, ...]
    unfillable: tuple[str, ...]  # per judge and figures, why no run fills them


def fill_plan(db: Database, tasks: Sequence[Task], judge: str | None = None) -> FillPlan:
    """The runs that store what the audited judges' figures lack for want of verdicts (the task's `audit_fills`):
    one per judge, figure and stored run of the judge, over that run's items and options. A figure the
    judge's own mode gives is filled by no other run (it lacks items, not verdicts). Nothing is run here."""
    by_name = {task.name: task for task in tasks}
    fills: dict[str, Fill] = {}
    unfillable: list[str] = []
    for audited in audit(db, tasks, judge):
        task = by_name[audited.task]
        model = task.Options
        runs = [run for run in RunRepository(db).list(kind=f"eval-{task.name}") if run.judge == audited.judge.name]
        for field, changes in declared(task).audit_fills.items():
            names = tuple(figure.name for figure in (getattr(audited, name) for name in FILLED[field])
                          if figure.value is None)
            if not names:
                continue
            where = f"{audited.judge.name}: {', '.join(names)}"
            if not runs:
                unfillable.append(f"{where}: no batch run of this judge is stored (judged in the Arena only), "
                                  "so no run says which items to judge")
            for run in runs:
                values = {name: value for name, value in run.config.items()
                          if name in model.model_fields and name not in ("judge", "variant")}
                values["judge"] = audited.judge.profile
                try:
                    stored, filled = model.from_values(values), model.from_values({**values, **changes})
                except ArgtuiError as exc:
                    unfillable.append(f"{where}: run {run.id}'s options are not today's: {exc}")
                    continue
                variant = next((v for v in task.variants() if task.judge_variant(v, stored) == audited.judge.variant),
                               None)
                if variant is None:
                    unfillable.append(f"{where}: no prompt of {task.name} with run {run.id}'s options is this "
                                      f"judge's variant {audited.judge.variant} (a panel: fill its members)")
                elif task.judge_variant(variant, filled) != audited.judge.variant:
                    # Two judges needing the same run (a logprob and a runs judge of one prompt, in swap mode): one run.
                    key = json.dumps([task.name, variant, {**values, **changes}], sort_keys=True, default=str)
                    fills.setdefault(key, Fill(task.name, audited.judge, names, variant, values, changes))
    return FillPlan(tuple(fills.values()), tuple(unfillable))
