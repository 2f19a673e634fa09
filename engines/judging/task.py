"""What a task is, and the registry every front end reads.

A task is one judge capability: pairwise argument quality, Grice maxims,
argument components, critique ratings, … It knows its items (from a dataset
or the store), its variants (prompting strategies, methods, modes), its own
options, how to judge one item with one variant through a client (a
`Verdict`), and how to score verdicts against the reference into a report.

`argtui eval <task>`, `argtui eval --list`, the Arena, the Leaderboard and
the Runs screen read the registry, so a new task is one module in
`engines/tasks/` that defines `TASK` (plus its prompts), or a `register(task)`
call.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from engines.errors import ArgtuiError
from engines.judging.verdict import JudgeId, Verdict
from engines.llm.client import LLMClient
from engines.llm.profile import BackendProfile
from engines.retrieval.types import ProgressCallback, Retriever
from store.db import Database


@dataclass(frozen=True)
class Option:
    """One task-specific option: a command-line flag of `argtui eval <task>`.

    `name` is the flag without dashes (`debates` → `--debates`, read back as
    `options.debates`); `kind` picks the argparse form.
    """

    name: str
    help: str
    type: Callable[[str], Any] = str
    default: Any = None
    choices: Sequence[str] | None = None
    required: bool = False
    kind: str = "value"  # value | flag (on/off) | many (one or more values)
    metavar: str | None = None
    # Changes the answers and `judge_variant` does not name it: part of the judge's identity
    # (as a digest) when set to something other than its default.
    judge_option: bool = False
    report_option: bool = False  # changes only the report: part of neither the judge nor the run

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class TaskItem:
    """One thing to judge, as a task hands it to the runner and the Arena."""

    key: str  # unique within the task: the store's item key
    title: str  # one line, e.g. "Topic 3 · logical · pair 120"
    body: str  # the item as shown to people (plain text, never markup)
    reference: str | None = None  # the expert / gold answer, when known
    payload: Any = None  # what the task's judge needs


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


class TaskContext(Protocol):
    """What a task may use of the application (argtui's Runtime is one)."""

    @property
    def db(self) -> Database: ...

    @property
    def data_dir(self) -> Path: ...

    def dataset_path(self, name: str) -> Path | None: ...

    def profile(self, name: str | None = None) -> BackendProfile:
        """A backend profile as configured (the default when None): a task's option may name one."""
        ...

    async def client(self, name: str | None = None) -> LLMClient:
        """The client of a backend profile, for a task whose roles run on backends of their own."""
        ...

    async def retriever(self, on_progress: ProgressCallback | None = None) -> Retriever:
        """The configured argument base, for a task that checks text against it."""
        ...


@runtime_checkable
class Task(Protocol):
    name: str  # short id: the eval subcommand, the store's task column
    title: str  # one line for pickers
    labels: tuple[str, ...]  # answer labels, for distribution bars (empty: values only)
    options: tuple[Option, ...]  # task-specific flags
    variant_flag: str  # how the task's own docs name a variant: "prompt", "strategy", "method"

    def variants(self) -> tuple[str, ...]:
        """The prompting strategies / methods / modes; the first is the default."""
        ...

    def filters(self, ctx: TaskContext) -> dict[str, tuple[str, ...]]:
        """What an Arena user may fix before a draw (e.g. {"dimension": (...)})."""
        ...

    def items(self, ctx: TaskContext, options: Any) -> list[TaskItem]:
        """The items of a batch run, from the parsed options (read and checked before any call)."""
        ...

    def draw(self, ctx: TaskContext, rng: random.Random, **filters: str) -> TaskItem:
        """A random item for the Arena."""
        ...

    def judge_variant(self, variant: str, options: Any) -> str:
        """The variant as part of the judge's identity (e.g. "few/runs3@t1")."""
        ...

    def concurrency(self, variant: str, client: LLMClient, options: Any) -> int:
        """Items judged at once so the backend's slots stay busy."""
        ...

    async def judge(self, ctx: TaskContext, item: TaskItem, variant: str, client: LLMClient, options: Any) -> Verdict:
        ...

    def report(
        self, ctx: TaskContext, judge: JudgeId, items: Sequence[TaskItem], verdicts: dict[str, Verdict], options: Any,
        run_id: int,
    ) -> TaskReport:
        """Scores of the verdicts (every item's, stored ones included) of the batch run `run_id`."""
        ...


class UnknownTask(ArgtuiError):
    pass


_registered: dict[str, Task] = {}
_discovered = False


def register(task: Task) -> Task:
    """Add a task (a module in engines/tasks/ is found without this)."""
    _registered[task.name] = task
    return task


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
            _registered.setdefault(task.name, task)
    _discovered = True


def tasks() -> list[Task]:
    """Every task, by name."""
    _discover()
    return [_registered[name] for name in sorted(_registered)]


def task(name: str) -> Task:
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


def default_options(task: Task, **overrides: Any) -> SimpleNamespace:
    """The options a batch run would have with no flags given: what the Arena and live use judge with."""
    values: dict[str, Any] = {"limit": None, "seed": 0, "judge": None, "concurrency": None}
    values.update({option.name: (False if option.kind == "flag" else option.default) for option in task.options})
    values.update(overrides)
    return SimpleNamespace(**values)
