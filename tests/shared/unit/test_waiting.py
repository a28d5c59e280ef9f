"""The one helper tests use to wait for a condition instead of sleeping for a guessed time."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from tests.fixtures.waiting import FIRST_INTERVAL, LONGEST_INTERVAL, wait_until, wait_until_async


def test_a_condition_that_already_holds_returns_its_value_without_waiting():
    pauses: list[float] = []
    assert wait_until(lambda: {"row": 1}, what="a row", sleep=pauses.append) == {"row": 1}
    assert pauses == []


def test_the_value_returned_is_the_first_truthy_one():
    values = iter([None, 0, "", [], "ready"])
    assert wait_until(lambda: next(values), what="readiness", sleep=lambda _: None) == "ready"


def test_the_interval_starts_short_and_grows_to_a_ceiling():
    pauses: list[float] = []
    calls = itertools.count()
    wait_until(lambda: next(calls) == 40, what="the fortieth check", sleep=pauses.append)
    assert len(pauses) == 40
    assert pauses[0] == FIRST_INTERVAL
    assert all(later >= earlier for earlier, later in itertools.pairwise(pauses))
    assert pauses[-1] == LONGEST_INTERVAL > FIRST_INTERVAL


@pytest.mark.parametrize("falsy", [None, False, 0, "", [], {}])
def test_a_predicate_that_never_holds_cannot_pass(falsy):
    with pytest.raises(AssertionError):
        wait_until(lambda: falsy, timeout=0.05, what="nothing")


def test_the_timeout_says_what_was_awaited_and_the_last_value_seen():
    with pytest.raises(AssertionError) as failure:
        wait_until(lambda: [], timeout=0.05, what="the host to answer")
    assert str(failure.value) == "waited 0.05 s for the host to answer; last seen: []"


def test_a_timeout_waits_the_whole_timeout_then_ends_promptly():
    began = time.monotonic()
    with pytest.raises(AssertionError):
        wait_until(lambda: False, timeout=0.3, what="nothing")
    assert 0.3 <= time.monotonic() - began < 0.3 + LONGEST_INTERVAL + 5  # ends; the slack is for a loaded machine


def test_detail_adds_context_to_the_failure():
    with pytest.raises(AssertionError, match="output: boom"):
        wait_until(lambda: False, timeout=0.01, what="a line", detail=lambda: "output: boom")


def test_a_detail_that_fails_still_leaves_the_timeout_message():
    with pytest.raises(AssertionError, match=r"for a line; last seen: False; \(detail failed: FileNotFoundError"):
        wait_until(lambda: False, timeout=0.01, what="a line", detail=lambda: open("/nonexistent/log").read())


def test_ignored_exceptions_mean_not_yet_and_the_last_one_is_reported():
    attempts = iter([ConnectionRefusedError("refused"), ConnectionRefusedError("refused"), "up"])

    def connect():
        outcome = next(attempts)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert wait_until(connect, what="the port", ignoring=(ConnectionError,), sleep=lambda _: None) == "up"
    with pytest.raises(AssertionError, match="refused"):
        wait_until(lambda: (_ for _ in ()).throw(ConnectionRefusedError("refused")), timeout=0.01,
                   what="the port", ignoring=(ConnectionError,))


def test_other_exceptions_are_not_swallowed():
    with pytest.raises(ZeroDivisionError):
        wait_until(lambda: 1 / 0, what="arithmetic", ignoring=(ConnectionError,))


def test_the_async_twin_returns_at_once_and_awaits_async_predicates():
    async def scenario():
        assert await wait_until_async(lambda: 7, what="seven") == 7
        event = asyncio.Event()
        asyncio.get_running_loop().call_later(0.02, event.set)

        async def is_set():
            return event.is_set()

        return await wait_until_async(is_set, what="the event")

    assert asyncio.run(scenario()) is True


def test_the_async_twin_lets_the_loop_run_and_times_out_with_the_description():
    async def scenario():
        with pytest.raises(AssertionError, match="the flag; last seen: False"):
            await wait_until_async(lambda: False, timeout=0.05, what="the flag")

    asyncio.run(scenario())
