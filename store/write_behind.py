"""A write-behind buffer: rows that arrive hundreds a second, written in one transaction.

One transaction per row cost batch judging more client time than the request
behind it. While an event loop runs, rows put here are written together at
most `FLUSH_INTERVAL_S` after the first of them, on `flush()` and at
interpreter exit, so a process killed with `kill -9` loses at most that
interval's rows. Outside an event loop (scripts, synchronous callers) every
`put` is written at once.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
from typing import Callable, Generic, Hashable, TypeVar

from store.db import StoreError

FLUSH_INTERVAL_S = 0.1
RETRY_MAX_S = 5.0  # a failing database is tried again at doubling intervals up to this
log = logging.getLogger("argtui.store")

KeyT = TypeVar("KeyT", bound=Hashable)
RowT = TypeVar("RowT")

# Strong references: a buffer holding unwritten rows is kept until they are written.
_UNFLUSHED: "set[WriteBehind]" = set()


@atexit.register
def _flush_at_exit() -> None:
    for buffer in list(_UNFLUSHED):
        try:
            buffer.flush()
        except Exception:  # exit goes on: what could not be written is redone by a rerun
            log.warning("writing %d buffered %s at exit failed", len(buffer), buffer.what, exc_info=True)


class WriteBehind(Generic[KeyT, RowT]):
    """Rows by key (a newer row replaces an unwritten older one), written by `write` in arrival order."""

    def __init__(self, write: Callable[[list[RowT]], None], what: str, interval_s: float = FLUSH_INTERVAL_S):
        self._write = write
        self.what = what  # what the rows are, for the log
        self._interval_s = interval_s
        self._pending: dict[KeyT, RowT] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._failures = 0  # timer flushes failed in a row

    def __len__(self) -> int:
        """Rows put but not yet written."""
        return len(self._pending)

    def get(self, key: KeyT) -> RowT | None:
        return self._pending.get(key)

    def put(self, key: KeyT, row: RowT) -> None:
        self._pending[key] = row
        if self._handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        _UNFLUSHED.add(self)
        self._handle = loop.call_later(self._interval_s, self._flush_on_timer, loop)

    def _flush_on_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        self._handle = None
        try:
            self.flush()
        except Exception as exc:  # e.g. the database stayed locked or is gone: the rows wait for the next attempt
            if not self._failures:
                log.warning("writing %d buffered %s failed; trying again: %s", len(self._pending), self.what, exc,
                            exc_info=not isinstance(exc, StoreError))  # a StoreError says all there is
            self._failures += 1
            _UNFLUSHED.add(self)
            delay = min(self._interval_s * 2 ** self._failures, RETRY_MAX_S)
            self._handle = loop.call_later(delay, self._flush_on_timer, loop)
            return
        if self._failures:
            log.info("wrote the buffered %s after %d failed attempts", self.what, self._failures)
            self._failures = 0

    def flush(self) -> None:
        """Write every buffered row in one call to `write`; on failure they stay buffered."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        _UNFLUSHED.discard(self)
        if not self._pending:
            return
        rows = list(self._pending.items())
        try:
            self._write([row for _, row in rows])
        except BaseException:
            _UNFLUSHED.add(self)  # still written at exit if nothing else manages
            raise
        # Only now: rows put while a failed write waited stay buffered for the next flush.
        for key, row in rows:
            if self._pending.get(key) is row:
                del self._pending[key]
