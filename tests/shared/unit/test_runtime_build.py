"""A build whose blocking preparation hangs (a database that accepts and never answers) never holds a stop
up: the process told to stop returns at once, leaving the hung attempt on a daemon thread."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import pytest

from shared.rpc import runtime


def test_a_stop_during_a_hung_build_is_obeyed_at_once():
    released, entered = threading.Event(), threading.Event()

    def hung_preparation() -> str:
        entered.set()
        released.wait(60)  # a connect or a migration that does not return
        return "prepared"

    async def build(_context):
        return [await runtime.off_loop(hung_preparation)]

    context = SimpleNamespace(settings=SimpleNamespace(dependency_wait_seconds=0, ready_file=None))

    async def serve_and_stop():
        stop = asyncio.Event()
        building = asyncio.create_task(runtime._build_when_reachable(context, build, stop))
        while not entered.is_set():
            await asyncio.sleep(0.01)
        stop.set()
        return await building

    started = time.monotonic()
    try:
        outcome = asyncio.run(serve_and_stop())  # asyncio.run waits for executor threads: not for this one
        elapsed = time.monotonic() - started
    finally:
        released.set()
    assert outcome is None
    assert elapsed < 30, elapsed


def test_a_build_that_finishes_hands_over_its_result_and_errors():
    async def build(_context):
        return [await runtime.off_loop(lambda: "prepared")]

    async def failing(_context):
        return [await runtime.off_loop(_fail)]

    context = SimpleNamespace(settings=SimpleNamespace(dependency_wait_seconds=0, ready_file=None))
    assert asyncio.run(runtime._build_when_reachable(context, build, asyncio.Event())) == ["prepared"]
    with pytest.raises(runtime.StartupError, match="^no such model file$"):
        asyncio.run(runtime._build_when_reachable(context, failing, asyncio.Event()))


def _fail():
    raise runtime.StartupError("no such model file")
