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

    async def runner() -> T:
        runtime = Runtime()
        try:
            return await work(runtime)
        finally:
            await runtime.aclose()

    return asyncio.run(runner())
