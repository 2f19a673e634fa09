"""A rich progress bar that follows an engine's progress callbacks (a run's or an index build's)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from engines.terminal_text import VisibleControlsConsole


class Counts(Protocol):
    """What the bar reads of a progress event."""

    total: int
    done: int
    invalid: int

    @property
    def resumed(self) -> int: ...


@dataclass
class StepCounts:
    """The steps of one command done so far (a text's components, a ballot's judgments): what the bar
    reads where no batch run counts them."""

    total: int
    done: int = 0
    invalid: int = 0
    resumed: int = 0  # a command judging one thing resumes nothing


@contextmanager
def batch_progress_bar(description: str, console: Console | None = None) -> Iterator[Callable[[Counts], None]]:
    """Yields an `on_progress` callback; the bar goes to stderr so stdout stays clean for --json."""
    console = console or VisibleControlsConsole(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task(description, total=None, note="")

        def update(progress: Counts) -> None:
            notes = []
            if progress.resumed:
                notes.append(f"{progress.resumed} resumed")
            if progress.invalid:
                notes.append(f"{progress.invalid} invalid")
            bar.update(task, total=progress.total, completed=progress.done, note=", ".join(notes))

        yield update
