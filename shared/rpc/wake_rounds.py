"""Waking many waiters of one source (a surface's stream viewers) without letting them crowd the event loop.

A source with few waiters wakes them at every change: each waits for exactly that change, and waking a few costs
little. One with more than `coalesce_up_to` is woken at most once per `interval` (a change after a quiet spell at
once, one during a burst at the end of the interval), so under a burst each waiter takes everything new in one
step. A round of wake-ups releases `slice_size` waiters per event loop turn, so other work queued in the same loop
(a commit, another request) waits behind one slice, never behind every waiter; and while a round takes more than
half the interval (many waiters, a busy loop) the interval stretches, up to `stretch_limit` times.

The host's fan-out of a surface's journal to its Subscribe streams and web's fan-out of a surface feed to its SSE
viewers both wake this way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TypeVar

Waiter = TypeVar("Waiter")


class WakeRounds:
    def __init__(self, interval: float, coalesce_up_to: int, slice_size: int = 32, stretch_limit: int = 4) -> None:
        self.interval = interval
        self.coalesce_up_to = coalesce_up_to
        self.slice_size = slice_size
        self.stretch_limit = stretch_limit
        self.woken_at = float("-inf")  # loop time of the last round's start
        self.round_seconds = 0.0  # how long the last round took to release everyone
        self._later: asyncio.TimerHandle | None = None  # a round held back to the end of the interval

    def wake(self, waiting: int, start_round: Callable[[], None]) -> None:
        """A change for `waiting` waiters: `start_round` (which calls `begin` and `release`) now, or at the end of
        the interval; nothing when a round is due already (it takes this change too) or nobody waits."""
        if self._later is not None or not waiting:
            return
        if waiting <= self.coalesce_up_to:
            start_round()
            return
        loop = asyncio.get_running_loop()
        due = self.woken_at + max(self.interval, min(2 * self.round_seconds, self.stretch_limit * self.interval))
        if loop.time() >= due:
            start_round()
        else:
            self._later = loop.call_at(due, start_round)

    def begin(self) -> None:
        """A round starts now (whether `wake` held it back or another cause, a keep-alive, asked for it): a round
        still held back is not needed any more, it would wake everyone for nothing."""
        self.cancel()
        self.woken_at = asyncio.get_running_loop().time()

    def release(self, waiters: Sequence[Waiter], wake_one: Callable[[Waiter], None], start: int = 0) -> None:
        """Call `wake_one` on each of `waiters`, a slice per event loop turn; the last slice notes the round's
        length."""
        for waiter in waiters[start:start + self.slice_size]:
            wake_one(waiter)
        loop = asyncio.get_running_loop()
        if start + self.slice_size < len(waiters):
            loop.call_soon(self.release, waiters, wake_one, start + self.slice_size)
        else:
            self.round_seconds = loop.time() - self.woken_at

    def cancel(self) -> None:
        """The source has no waiters any more (or ended): a held-back round is not run."""
        if self._later is not None:
            self._later.cancel()
            self._later = None

    @property
    def due_at(self) -> float | None:
        """The loop time a held-back round runs at; None when none is held back."""
        return None if self._later is None else self._later.when()
