"""One module per `argtui` subcommand; each defines `register(subparsers)`."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, TypeVar

from argtui.runtime import Runtime

T = TypeVar("T")


def run_with_runtime(work: Callable[[Runtime], Awaitable[T]]) -> T:
    """Run `work` on a fresh Runtime in its own event loop, always closing it."""

    async def runner() -> T:
        runtime = Runtime()
        try:
            return await work(runtime)
        finally:
            await runtime.aclose()

    return asyncio.run(runner())
