"""One module per `argtui` subcommand; each defines `register(subparsers)`."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Awaitable, Callable, TypeVar

if TYPE_CHECKING:
    from argtui.runtime import Runtime

T = TypeVar("T")


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
