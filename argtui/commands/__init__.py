"""One module per `argtui` subcommand; each defines `register(subparsers)`."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Awaitable, Callable, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

    from argtui.runtime import Runtime

T = TypeVar("T")

# Piped output has no width to fit: wider than any row, so rows stay whole (a table keeps its
# natural width) instead of being cut or folded at 80 columns.
PIPED_WIDTH = 10_000


def output_console() -> Console:
    """The console of a command's output: the terminal's width, or PIPED_WIDTH when piped."""
    # imported when a command prints, not when `argtui --help` lists them
    from engines.terminal_text import VisibleControlsConsole

    return VisibleControlsConsole() if sys.stdout.isatty() else VisibleControlsConsole(width=PIPED_WIDTH)


def run_with_runtime(work: Callable[[Runtime], Awaitable[T]]) -> T:
    """Run `work` on a fresh Runtime in its own event loop, always closing it."""
    from argtui.runtime import Runtime  # imported when a command runs, not when `argtui --help` lists them

    result: list[T] = []

    async def runner() -> None:
        runtime = Runtime()
        try:
            result.append(await work(runtime))
        finally:
            await runtime.aclose()

    # The result is kept out of the main task: on Python 3.11, asyncio.run's check of the SIGINT
    # handler formats that task, result and all (every verdict of a batch run: a quarter second).
    asyncio.run(runner())
    return result[0]
