"""How long one call may wait for its answer: the profile's `timeout_s`, or longer when the
call's token budget needs it at the speed the backend was measured to answer at.

No fixed limit fits every budget on a CPU server: the components judge's reason ran to 3,432
tokens in 572 s on the embedded model of a busy 2-core machine, a label takes a second or
two. So each client keeps the speed of its recent answers, in tokens per second of waiting
for one sequence: the client's own clock, so the prompt's reading and a busy server's queue
are in it, on every kind of server. A call that asks for `max_tokens` may then take
`SAFETY_FACTOR` times what they take at that speed. A call in flight gets the longer limit
as soon as an answer measures a slower speed.

The first calls of a run go out before any answer measured anything, and on a CPU server
each can take longer than `timeout_s` (the components judge's 4,096-token reasons do). So a
call that waits unmeasured asks the server, before its `timeout_s` is up, how many tokens it
has generated so far (`progress`: llama-server counts them per slot), and that count over
the time waited is the first measurement. Before that, a profile's `tokens_per_s` (what
`argtui config use` measured of the server with one short answer) stands for the speed, so a
long budget gets its longer limit from the first call of a run on every kind of server.
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import AsyncIterator, Awaitable, Callable

SPEED_WINDOW = 16  # the answers the speed is measured over: recent enough to follow the load
SAFETY_FACTOR = 2.0  # how much slower than the measured speed an answer may come
PROGRESS_AT = 0.8  # of timeout_s: when an unmeasured call asks the server how far it got

# Tokens generated so far per call waiting, as the server counts them; None when it does not say.
Progress = Callable[[], Awaitable[float | None]]


@dataclass
class Deadline:
    """A call's limit in seconds and which rule set it, as its timeout message says."""

    seconds: float
    reason: str

    def __str__(self) -> str:
        return f"{round(self.seconds, 1):g} s ({self.reason})"


class GenerationSpeed:
    """The tokens per second a backend answered one sequence at, over its last answers, and the
    deadlines of calls that follow from it."""

    def __init__(self, timeout_s: float, profile_tokens_per_s: float | None = None):
        self.timeout_s = timeout_s
        self.profile_tokens_per_s = profile_tokens_per_s  # the speed until an answer measures one
        self._answers: deque[tuple[float, float]] = deque(maxlen=SPEED_WINDOW)  # (tokens, seconds)
        # The calls waiting, by token budget, each told the deadline its budget now has.
        self._waiting: dict[int, set[Callable[[Deadline], None]]] = {}

    @property
    def measured(self) -> bool:
        """Whether an answer (or the server's progress) has measured the speed yet."""
        return bool(self._answers)

    @property
    def tokens_per_s(self) -> float | None:
        """Tokens over seconds of the recent answers together (long answers weigh most); before
        any answer was measured, the profile's speed, or None."""
        if not self._answers:
            return self.profile_tokens_per_s
        return sum(t for t, _ in self._answers) / sum(s for _, s in self._answers)

    def record(self, tokens: float, seconds: float) -> None:
        """One fresh answer: `tokens` generated for one sequence in `seconds` of waiting."""
        if tokens <= 0 or seconds <= 0:
            return  # nothing generated (or a clock that did not move): no speed to learn
        # Once per budget, not per call: hundreds of calls wait at once in a batch run. A waiting
        # call's deadline is at least its budget's limit before this answer (it began with it or
        # was moved to it), so only a limit this answer made longer moves any.
        before = {max_tokens: self.limit(max_tokens).seconds for max_tokens in self._waiting}
        self._answers.append((tokens, seconds))
        for max_tokens, extends in list(self._waiting.items()):
            longer = self.limit(max_tokens)
            if longer.seconds > before[max_tokens]:
                for extend in list(extends):
                    extend(longer)

    def limit(self, max_tokens: int | None) -> Deadline:
        """The deadline of a call asking for at most `max_tokens` (None: the server decides)."""
        speed = self.tokens_per_s
        if max_tokens and speed:
            needed = SAFETY_FACTOR * max_tokens / speed
            if needed > self.timeout_s:
                source = f"the measured {speed:.3g} tokens/s" if self.measured else (
                    f"the profile's tokens_per_s, {speed:.3g}"
                )
                return Deadline(needed, f"{SAFETY_FACTOR:g} × the time {max_tokens} tokens take at {source}")
        if max_tokens and speed is None:  # the first calls: what a long budget needs is not known yet
            return Deadline(self.timeout_s, "the profile's timeout_s; no answer has measured the server's speed yet")
        return Deadline(self.timeout_s, "the profile's timeout_s")

    @asynccontextmanager
    async def deadline(self, max_tokens: int | None, progress: Progress | None = None) -> AsyncIterator[Deadline]:
        """The call's deadline over the whole answer (a server trickling bytes resets no clock),
        moved later while the call waits whenever an answer (or, before any, the server's
        `progress`) measures a slower speed; on expiry the body gets TimeoutError, and the
        yielded Deadline says which limit it was."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        current = self.limit(max_tokens)
        watcher = None
        if progress is not None and max_tokens and not self.measured:
            watcher = asyncio.create_task(self._ask_progress(progress, started))
        async with asyncio.timeout_at(started + current.seconds) as scope:

            def extend(longer: Deadline) -> None:
                if longer.seconds > current.seconds and not scope.expired():
                    current.seconds, current.reason = longer.seconds, longer.reason
                    scope.reschedule(started + longer.seconds)

            # A call without a budget keeps timeout_s: no answer moves it.
            waiting = self._waiting.setdefault(max_tokens, set()) if max_tokens else set()
            waiting.add(extend)
            try:
                yield current
            finally:
                waiting.discard(extend)
                if max_tokens and not waiting:
                    self._waiting.pop(max_tokens, None)
                if watcher is not None:
                    watcher.cancel()

    async def _ask_progress(self, progress: Progress, started: float) -> None:
        """Shortly before `timeout_s` is up, if no answer has measured the speed meanwhile: the
        tokens generated per waiting call so far, over the time this call has waited."""
        loop = asyncio.get_running_loop()
        await asyncio.sleep(started + PROGRESS_AT * self.timeout_s - loop.time())
        if not self.measured:
            tokens = await progress()
            if tokens and not self.measured:
                self.record(tokens, loop.time() - started)
