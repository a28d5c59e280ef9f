"""Wake rounds (shared/rpc/wake_rounds.py): at once for few waiters or after a quiet spell, at most once per interval
for many during a burst, the interval stretched after a slow round up to a limit, a slice of waiters per event
loop turn."""

from __future__ import annotations

import asyncio

import pytest

from shared.rpc.wake_rounds import WakeRounds


def _round(rounds: WakeRounds, waiters: list, woken: list):
    def start() -> None:
        rounds.begin()
        rounds.release(waiters, woken.append)
    return start


def test_few_waiters_are_woken_at_every_change_and_many_at_most_once_per_interval():
    async def scenario():
        woken: list = []
        few = WakeRounds(interval=60.0, coalesce_up_to=3)
        for _ in range(3):
            few.wake(3, _round(few, ["a", "b", "c"], woken))
        assert woken == ["a", "b", "c"] * 3 and few.due_at is None
        woken.clear()
        many = WakeRounds(interval=60.0, coalesce_up_to=3)
        start = _round(many, ["a", "b", "c", "d"], woken)
        many.wake(4, start)  # after a quiet spell: at once
        many.wake(4, start)  # within the interval: held back to its end
        many.wake(4, start)  # one round is due already: it takes this change too
        assert woken == ["a", "b", "c", "d"]
        assert many.due_at == pytest.approx(many.woken_at + 60.0)
        many.cancel()
        assert many.due_at is None

    asyncio.run(scenario())


def test_a_round_begun_by_another_cause_takes_the_place_of_one_held_back():
    async def scenario():
        woken: list = []
        rounds = WakeRounds(interval=60.0, coalesce_up_to=0)
        start = _round(rounds, ["a"], woken)
        rounds.wake(1, start)
        rounds.wake(1, start)  # held back to the end of the interval
        held = rounds._later
        start()  # a keep-alive round meanwhile: everyone takes the held-back change in it
        assert rounds.due_at is None and held.cancelled()  # the held-back round does not run as well
        assert woken == ["a", "a"]

    asyncio.run(scenario())


def test_nobody_waiting_is_no_round():
    async def scenario():
        rounds = WakeRounds(interval=0.0, coalesce_up_to=0)
        rounds.wake(0, lambda: pytest.fail("no round for nobody"))

    asyncio.run(scenario())


@pytest.mark.parametrize("last_round_seconds, held_for", [(0.1, 1.0), (1.5, 3.0), (30.0, 4.0)])
def test_the_interval_stretches_to_twice_a_slow_round_up_to_the_limit(last_round_seconds, held_for):
    async def scenario():
        rounds = WakeRounds(interval=1.0, coalesce_up_to=0, stretch_limit=4)
        rounds.wake(1, _round(rounds, ["a"], []))
        rounds.round_seconds = last_round_seconds  # waking every waiter took this long last time
        rounds.wake(1, _round(rounds, ["a"], []))
        assert rounds.due_at - rounds.woken_at == pytest.approx(held_for)
        rounds.cancel()

    asyncio.run(scenario())


def test_a_round_releases_a_slice_per_loop_turn_and_notes_its_length():
    async def scenario():
        rounds = WakeRounds(interval=1.0, coalesce_up_to=0, slice_size=10)
        woken: list[int] = []
        before_other_work: list[int] = []
        rounds.round_seconds = -1.0  # not yet noted
        rounds.begin()
        rounds.release(list(range(35)), woken.append)
        asyncio.get_running_loop().call_soon(lambda: before_other_work.append(len(woken)))
        while len(woken) < 35:
            await asyncio.sleep(0)
        assert woken == list(range(35))
        assert 0 < before_other_work[0] <= 20  # work queued behind the round waited for a slice or two
        assert rounds.round_seconds >= 0.0  # the last slice noted how long the round took

    asyncio.run(scenario())
