"""What a task is, and the registry every front end reads.

A task is one judge capability: pairwise argument quality, Grice maxims,
argument components, critique ratings, … It knows its items (from a dataset
or the store), its variants (prompting strategies, methods, modes), its own
options, how to judge one item with one variant through a client (a
`Verdict`), and how to score verdicts against the reference into a report.

`argtui eval <task>`, `argtui eval --list`, the Arena, the Leaderboard, the
Runs screen, the glossary and the palette read the registry, so a new task is
one module in `engines/tasks/` that defines `TASK` (plus its prompts), or a
`register(task)` call. `TaskBase` holds what most tasks do alike; a task states
its options as a model (`engines.judging.options`) and its variants' names.
"""

from __future__ import annotations

import copy
import importlib
import json
import pkgutil
import random
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Protocol, Sequence, runtime_checkable

from engines.errors import ArgtuiError
from engines.judging.context import TaskContext
from engines.judging.digest import content_digest
from engines.judging.options import Option, TaskOptions
from engines.judging.verdict import JudgeId, Verdict
from engines.judging.verify import StoredAnswers, Verification
from engines.llm.client import LLMClient
from engines.output import write_text_file

if TYPE_CHECKING:
    from engines.judging.evaluate import TaskRun

StoredJudgment = tuple[str, "str | None", Verdict]  # an item's key, its reference and the judge's verdict
# Told each part of a verdict as it finishes, before the verdict (a Grice maxim's judgment): a live debate shows them.
PartHook = Callable[[Any], None]


@dataclass(frozen=True)
class AuditedItem:
    """One stored judgment as the audit reads it: its reference, the answers given in each order
    (as shown, then with the two texts swapped, as the judge gave them), the labels of repeated
    runs, and the lengths in words of the two texts labelled A and B, where the task has them."""

    key: str
    reference: str | None
    verdict: Verdict
    orders: tuple[str | None, str | None] | None = None
    runs: tuple[str | None, ...] = ()
    lengths: tuple[int, int] | None = None


@dataclass(frozen=True)
class VariantName:
    """A variant's plain names: `title` wherever a name is shown in full, `short` (at most
    SHORT_VARIANT_CHARS) on a narrow card or table cell, and what it does, for the glossary."""

    title: str
    short: str
    definition: str


SHORT_VARIANT_CHARS = 10


@dataclass(frozen=True)
class ItemSide:
    """One of two texts an item compares (an argument of a pair), shown side by side."""

    heading: str  # e.g. "Argument A (arg123)"
    text: str


@dataclass(frozen=True)
class TaskItem:
    """One thing to judge, as a task hands it to the runner and the Arena."""

    key: str  # unique within the task: the store's item key
    title: str  # one line, e.g. "Topic 3 · logical · pair 120"
    body: str  # the item as shown to people (plain text, never markup)
    reference: str | None = None  # the expert / gold answer, when known
    payload: Any = None  # what the task's judge needs
    # How the Arena lays the item out: the two compared texts beside each other under the body,
    # the span of the body under judgment emphasised, what to show with the reference.
    sides: tuple[ItemSide, ItemSide] | None = None
    highlight: tuple[int, int] | None = None  # (start, end) of `body`
    reference_note: str = ""  # e.g. the published scores behind an expert label

    @cached_property
    def digest(self) -> str:
        """What the judge sees (the payload, or the body when there is none, and the compared texts)
        and the reference, as a short hex digest: stored with the verdict, so an item whose content
        changed is judged anew."""
        return content_digest(self.body if self.payload is None else self.payload, self.sides, self.reference)


@dataclass(frozen=True)
class ReportTable:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    caption: str = ""


@dataclass(frozen=True)
class TaskReport:
    """Scores of one judge against the reference: tables for people, `data` for --json."""

    title: str
    tables: tuple[ReportTable, ...] = ()
    notes: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Task(Protocol):
    name: str  # short id: the eval subcommand, the store's task column
    title: str  # one line for pickers
    labels: tuple[str, ...]  # answer labels, for distribution bars (empty: values only)
    Options: type[TaskOptions]  # the options model: flags, Arena controls, what the methods are handed
    options: tuple[Option, ...]  # the task's own options of that model
    variant_flag: str  # how the task's own docs name a variant: "prompt", "strategy", "method"
    # What follows has a default on TaskBase; a task of the bare protocol gets it from the registry (`declared`).
    variant_section: str  # the glossary's heading of the variants
    description: str  # `argtui eval TASK --help`'s description
    limit_help: str | None  # --limit's and --output's help where the task says what they mean for it
    output_help: str | None

    def variants(self) -> tuple[str, ...]:
        """The prompting strategies / methods / modes; the first is the default."""
        ...

    def variant_name(self, code: str) -> VariantName:
        """A variant's plain names and definition (the code itself when the task names none)."""
        ...

    def filters(self, ctx: TaskContext) -> dict[str, tuple[str, ...]]:
        """What an Arena user may fix before a draw (e.g. {"dimension": (...)})."""
        ...

    def check_options(self, options: Any) -> None:
        """What the model alone cannot check (e.g. against the variants run), before any backend starts."""
        ...

    def items(self, ctx: TaskContext, options: Any) -> list[TaskItem]:
        """The items of a batch run, from the options (read and checked before any call)."""
        ...

    def draw(self, ctx: TaskContext, rng: random.Random, **filters: str) -> TaskItem:
        """A random item for the Arena."""
        ...

    def probe_item(self, ctx: TaskContext, options: Any) -> TaskItem:
        """The fixed item the judge's requests are rendered for, as its identity
        (`engines.judging.identity`); `ctx` has no datasets and an empty database."""
        ...

    def judge_variant(self, variant: str, options: Any) -> str:
        """The variant as part of the judge's identity (e.g. "few/runs3@t1")."""
        ...

    def judge_settings(self, variant: str, options: Any) -> Any:
        """What the judge runs with beyond its options (e.g. token limits at their defaults), as a
        value with a canonical form: part of the judge's identity, so a changed default is a new judge."""
        ...

    async def settled_options(self, ctx: TaskContext, options: Any) -> Any:
        """`options` with what the context decides filled in (a default from the config file), so
        that the judge's identity, taken from them, names what the judge really runs with."""
        ...

    def concurrency(self, variant: str, client: LLMClient, options: Any) -> int:
        """Items judged at once so the backend's slots stay busy."""
        ...

    async def judge(self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: Any) -> Verdict:
        ...

    async def prepare(self, ctx: TaskContext, variant: str, client: LLMClient, options: Any) -> None:
        """Derive what every item of this judge shares, ahead of its first item (a live debate does
        it while the student writes), so that item waits no longer for it."""
        ...

    async def judge_in_parts(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: Any, on_part: PartHook,
    ) -> Verdict:
        """`judge`, telling `on_part` each part of the verdict as it finishes, for a task that judges in parts."""
        ...

    def report(
        self, ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict], options: Any,
        run_id: int,
    ) -> TaskReport:
        """Scores of the verdicts (every item's, stored ones included) of the batch run `run_id`."""
        ...

    def summary(self, runs: Sequence[TaskRun]) -> TaskReport | None:
        """A table over all the runs of one command (None: none)."""
        ...

    def run_offline(self, options: Any) -> TaskReport | None:
        """The report of a judge that needs no backend (e.g. the experts), nothing run or stored; None to run."""
        ...

    def write_output(self, path: Path, runs: Sequence[TaskRun]) -> None:
        """--output's file of the runs."""
        ...

    def panel_data(self, verdicts: Sequence[Verdict]) -> dict[str, Any]:
        """What a panel's verdict adds of its members' valid verdicts for this task's report."""
        ...


class TaskBase:
    """What a task does unless it says otherwise: no own options, no Arena filters, the variant as
    the judge names it, as many items at once as the backend has slots, variants named by their code.

    A subclass sets `Options` to its model; `options` (its option descriptors) follows from it.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    labels: ClassVar[tuple[str, ...]] = ()
    variant_flag: ClassVar[str] = "variant"
    Options: ClassVar[type[TaskOptions]] = TaskOptions
    options: ClassVar[tuple[Option, ...]] = ()
    variant_names: ClassVar[Mapping[str, VariantName]] = {}  # by code; a code left out is shown as itself
    # What stores the figures an audit of this task lacks (engines/judging/audit.py), by `Fills` field:
    # the options that, over a judge's stored run's, judge its items so (in both orders; in three runs).
    audit_fills: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    limit_help: ClassVar[str | None] = None
    output_help: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.options = cls.Options.task_options()

    @property
    def variant_section(self) -> str:
        return f"{self.title} ({self.variant_flag}s)"

    @property
    def description(self) -> str:
        return self.title

    def variant_name(self, code: str) -> VariantName:
        return self.variant_names.get(code) or VariantName(code, code, "")

    def filters(self, ctx: TaskContext) -> dict[str, tuple[str, ...]]:
        return {}

    def check_options(self, options: Any) -> None:
        return None

    def judge_variant(self, variant: str, options: Any) -> str:
        return variant

    def probe_item(self, ctx: TaskContext, options: Any) -> TaskItem:
        """The draw with seed 0: with no datasets and an empty database, one of the task's built-in items."""
        return self.draw(ctx, random.Random(0))  # type: ignore[attr-defined]

    def judge_settings(self, variant: str, options: Any) -> Any:
        return None

    async def settled_options(self, ctx: TaskContext, options: Any) -> Any:
        return options

    def concurrency(self, variant: str, client: LLMClient, options: Any) -> int:
        return client.profile.max_concurrency

    async def prepare(self, ctx: TaskContext, variant: str, client: LLMClient, options: Any) -> None:
        """Here nothing: each item is judged from scratch."""

    async def judge_in_parts(
        self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: Any, on_part: PartHook,
    ) -> Verdict:
        """Here the verdict whole: no part is told before it."""
        return await self.judge(ctx, item, variant, client, options)

    def summary(self, runs: Sequence[TaskRun]) -> TaskReport | None:
        return None

    def run_offline(self, options: Any) -> TaskReport | None:
        return None

    def write_output(self, path: Path, runs: Sequence[TaskRun]) -> None:
        """The runs' results as `--json` prints them."""
        write_text_file(path, json.dumps(results_json(self, runs), indent=2, default=str), make_parents=True)

    def panel_data(self, verdicts: Sequence[Verdict]) -> dict[str, Any]:
        return {}

    def audited_items(self, judge: JudgeId, stored: Sequence[StoredJudgment]) -> list[AuditedItem]:
        """The stored judgments as an audit reads them: here without answers in each order, runs or
        lengths, which a task that has them adds."""
        return [AuditedItem(key, reference, verdict) for key, reference, verdict in stored]

    def verify(self, ctx: TaskContext, verdict: Verdict, answers: StoredAnswers) -> Verification:
        """This task's checks of a stored verdict (`argtui runs verify`) beyond those every verdict
        keeps: its answers read again with today's readers, its invariants."""
        return Verification(not_recomputable=f"the {self.name} task does not say how its verdicts are recomputed")


def results_json(task: Task, runs: Sequence[TaskRun]) -> dict[str, Any]:
    """The runs of one `argtui eval` command as its --json prints them."""
    return {
        "task": task.name,
        "results": [
            {
                "judge": run.judge.name, "run_id": run.outcome.run.id, "items": run.outcome.progress.total,
                "judged_now": run.outcome.judged_now, "resumed": run.outcome.resumed,
                "invalid": run.outcome.progress.invalid, "usage": run.outcome.progress.usage.as_dict(),
                "wall_seconds": run.outcome.wall_s, **run.report.data,
            }
            for run in runs
        ],
    }


def declared(task: Task) -> TaskBase:
    """`task` with every capability TaskBase declares: itself when it is a TaskBase; a task of the bare
    protocol (no base class) as a copy whose class is its own first, TaskBase's defaults after, so
    that no front end probes a task for what it has."""
    if isinstance(task, TaskBase):
        return task
    own = type(task)
    based = type(own.__name__, (own, TaskBase), {"__module__": own.__module__, "__doc__": own.__doc__})
    found = copy.copy(task)
    found.__class__ = based
    return found


class UnknownTask(ArgtuiError):
    pass


_registered: dict[str, TaskBase] = {}
_discovered = False


def register(task: Task) -> TaskBase:
    """Add a task (a module in engines/tasks/ is found without this), as `declared` makes it."""
    found = _registered[task.name] = declared(task)
    return found


def unregister(name: str) -> None:
    _registered.pop(name, None)


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    import engines.tasks

    for info in pkgutil.iter_modules(engines.tasks.__path__):
        task = getattr(importlib.import_module(f"engines.tasks.{info.name}"), "TASK", None)
        if task is not None:
            _registered.setdefault(task.name, declared(task))
    _discovered = True


def tasks() -> list[TaskBase]:
    """Every task, by name."""
    _discover()
    return [_registered[name] for name in sorted(_registered)]


def task(name: str) -> TaskBase:
    _discover()
    try:
        return _registered[name]
    except KeyError:
        raise UnknownTask(f"unknown task {name!r}; tasks: {', '.join(sorted(_registered))}") from None


def canonical_variant(task: Task, text: str) -> str:
    """A variant as the task spells it, accepting any letter case."""
    for variant in task.variants():
        if variant.lower() == text.lower():
            return variant
    raise ArgtuiError(f"task {task.name!r} has no {task.variant_flag} {text!r}; choose one of {', '.join(task.variants())}")


def default_options(task: Task, **overrides: Any) -> TaskOptions:
    """The options a batch run would have with no flags given (and `overrides`), checked: what the
    Arena and live judging start from."""
    return task.Options.from_values(overrides)
