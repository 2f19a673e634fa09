"""How long a piece of work took: the one clock of items, steps, turns and builds."""

from __future__ import annotations

import time
from typing import Awaitable, TypeVar

T = TypeVar("T")


class Stopwatch:
    """Started when made; `seconds` is the time since, on the monotonic high-resolution clock."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


async def timed(work: Awaitable[T]) -> tuple[T, float]:
    """What `work` gives, and the seconds it took: how an item's judgment is timed, by whoever
    asks for it (a run, the Arena), so that no judge times itself."""
    stopwatch = Stopwatch()
    result = await work
    return result, stopwatch.seconds
