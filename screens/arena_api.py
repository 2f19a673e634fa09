"""The contract between the Arena screen and the tasks it can run side by side.

A module `screens/arena_<task>.py` that defines `ARENA_TASK` (an object with
this shape) adds a task to the Arena: pairwise quality (A/B/Tie), Grice
maxims of a bot turn, argument components. The Arena draws an item, runs every
chosen judge (backend profile × task variant) on it concurrently, shows each
answer with its distribution and time as it arrives, and reveals the reference
(expert / gold) answer on demand.

Optional: a task may define `filters`, a mapping of a name to the options the
user may fix before a draw (e.g. {"dimension": ("logical", ...)}). The screen
then calls `draw(rng, **chosen)` with the fixed ones only; a task without
`filters` is always called as `draw(rng)`. Use `task_filters` and `draw_item`.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from engines.llm.client import LLMClient


@dataclass(frozen=True)
class ArenaItem:
    title: str  # one line: what is being judged, e.g. "Topic 3 · logical · pair 120"
    body: str  # the item as shown to the user (plain text; Rich markup escaped by the screen)
    reference: str | None  # the expert / gold answer, hidden until revealed
    payload: Any = None  # whatever the task's judge needs


@dataclass(frozen=True)
class ArenaAnswer:
    label: str | None  # None when the judge's output was invalid
    distribution: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    detail: str = ""  # rationale, transcript summary, …
    raw: str = ""  # the raw model output when invalid


class ArenaTask(Protocol):
    name: str  # short id, e.g. "pairwise"
    title: str  # shown in the task picker
    labels: tuple[str, ...]  # the answer labels, for distribution bars

    def variants(self) -> list[str]:
        """Prompting strategies this task offers (the first is the default)."""
        ...

    def draw(self, rng: random.Random) -> ArenaItem:
        """A random item to judge."""
        ...

    async def judge(self, item: ArenaItem, variant: str, client: LLMClient) -> ArenaAnswer:
        ...


def task_filters(task: ArenaTask) -> dict[str, tuple[str, ...]]:
    """The task's optional filters (empty when it defines none)."""
    return dict(getattr(task, "filters", None) or {})


def draw_item(task: ArenaTask, rng: random.Random, chosen: dict[str, str | None] | None = None) -> ArenaItem:
    """Draw an item, passing only the filters the user fixed (none: the plain contract)."""
    fixed = {name: value for name, value in (chosen or {}).items() if value is not None}
    return task.draw(rng, **fixed) if fixed else task.draw(rng)


def discover_arena_tasks() -> list[ArenaTask]:
    import screens

    tasks = []
    for info in pkgutil.iter_modules(screens.__path__):
        if info.name.startswith("arena_") and info.name != "arena_api":
            task = getattr(importlib.import_module(f"screens.{info.name}"), "ARENA_TASK", None)
            if task is not None:
                tasks.append(task)
    return sorted(tasks, key=lambda task: task.name)
