"""SurfaceFanout against an in-memory journal: one read per change, not per viewer; wake-ups; safety re-reads."""

from __future__ import annotations

import asyncio

import pytest

from services.host import fanout as fanout_module
from services.host.fanout import SurfaceFanout
from services.host.store import Appended, JournalEntry
from shared.rpc.wake_rounds import WakeRounds
from tessera.host.v1 import host_pb2
from tests.fixtures.waiting import wait_until_async


class Journal:
    """The store methods SurfaceFanout uses, over a list; counts the reads."""

    replica = "hst_this"

    def __init__(self) -> None:
        self.entries: list[tuple[str, int, int]] = []  # (surface, epoch, sequence)
        self.reads = 0

    def append(self, surface_id: str, count: int = 1, epoch: int = 1) -> Appended:
        last = max((s for f, e, s in self.entries if f == surface_id and e == epoch), default=0)
        for sequence in range(last + 1, last + count + 1):
            self.entries.append((surface_id, epoch, sequence))
        return Appended(epoch, last + count, [self._envelope(surface_id, epoch, sequence)
                                              for sequence in range(last + 1, last + count + 1)])

    def _envelope(self, surface_id, epoch, sequence) -> JournalEntry:
        # Stored without its place, as the store keeps it: the fan-out writes the place in.
        return JournalEntry(epoch, sequence, "", host_pb2.SurfaceEnvelope(surface_id=surface_id).SerializeToString())

    def position(self, surface_id):
        mine = [(e, s) for f, e, s in self.entries if f == surface_id]
        return max(mine) if mine else (1, 0)

    def positions(self, surface_ids):
        return {f: self.position(f) for f in surface_ids if self.position(f) != (1, 0)}

    def events_since(self, surface_id, epoch, sequence, limit=500):
        self.reads += 1
        return [self._envelope(f, e, s) for f, e, s in sorted(self.entries)
                if f == surface_id and (e, s) > (epoch, sequence)][:limit]

    def events_after(self, surface_id, epoch, sequence, limit=500):
        self.reads += 1
        return [self._envelope(f, e, s) for f, e, s in sorted(self.entries)
                if f == surface_id and e == epoch and s > sequence][:limit]

    def compact(self, surface_id, retention):
        raise AssertionError("not under test")


class Db:
    def __init__(self, store) -> None:
        self.store = store

    async def __call__(self, function, *args, **kwargs):
        return function(*args, **kwargs)


def _fanout(**options) -> tuple[Journal, SurfaceFanout]:
    """A fan-out over a fresh fake journal (what it reads is counted there)."""
    journal = Journal()
    return journal, SurfaceFanout(Db(journal), retention=10_000, **options)


async def _viewer(fanout, after: int, count: int) -> tuple[list, asyncio.Task]:
    """One viewer of srf_a collecting `count` envelopes after `after`, once it watches: (what it saw, its task)."""
    seen: list = []
    viewer = asyncio.create_task(_collect(fanout, "srf_a", after, count, seen))
    await wait_until_async(lambda: "srf_a" in fanout._surfaces, what="srf_a watched")
    return seen, viewer


async def _collect(fanout, surface_id, after, count, into: list) -> None:
    epoch, _ = await fanout.watch(surface_id)
    try:
        async for response in fanout.stream(surface_id, epoch, after):
            into.append((response.envelope.epoch, response.envelope.sequence,
                         response.envelope.WhichOneof("payload")))
            if len(into) == count:
                return
    finally:
        fanout.unwatch(surface_id)


def test_many_viewers_cost_one_read_per_change():
    async def scenario():
        journal, fanout = _fanout()
        journal.append("srf_a", 3)
        seen = [[] for _ in range(50)]
        viewers = [asyncio.create_task(_collect(fanout, "srf_a", 3, 4, into)) for into in seen]
        await wait_until_async(lambda: fanout._surfaces.get("srf_a") and fanout._surfaces["srf_a"].viewers == 50,
                               what="50 viewers watching srf_a")
        reads = journal.reads
        for _ in range(4):
            journal.append("srf_a")  # committed on another replica
            await fanout.refresh("srf_a")  # what its wake-up does
        await asyncio.gather(*viewers)
        assert all(s == [(1, n, None) for n in (4, 5, 6, 7)] for s in seen)
        assert journal.reads - reads == 4  # one read per change for all 50 viewers
        assert "srf_a" not in fanout._surfaces  # the last viewer left: the tail is gone

    asyncio.run(scenario())


def test_notifications_wake_known_surfaces_only():
    async def scenario():
        journal, fanout = _fanout()
        seen, viewer = await _viewer(fanout, 0, 2)
        reads = journal.reads
        fanout.notified("srf_unknown 1 5")  # another replica's surface nobody watches here: ignored
        fanout.notified("")
        fanout.notified("srf_a 1 0")  # a position this replica has already read: nothing to do
        await asyncio.sleep(0)
        assert journal.reads == reads
        fanout.notified("srf_a not-a-position")  # unreadable, for a watched surface: read to be sure
        await wait_until_async(lambda: journal.reads == reads + 1, what="one journal read")
        assert seen == []  # nothing new was there
        journal.append("srf_a", 2)  # committed "on another replica"
        fanout.notified("srf_a 1 2")
        await asyncio.wait_for(viewer, 10)
        assert [s for _, s, _ in seen] == [1, 2]
        assert journal.reads == reads + 2
        fanout.notified("srf_a not-a-position")  # unreadable, for a surface nobody watches any more
        await asyncio.sleep(0)
        assert journal.reads == reads + 2

    asyncio.run(scenario())


def test_own_commits_join_the_tail_without_a_read_and_own_wake_ups_are_skipped():
    async def scenario():
        journal, fanout = _fanout()
        seen, viewer = await _viewer(fanout, 0, 4)
        reads = journal.reads
        ours = journal.append("srf_a", 2)  # committed here
        fanout.notified(f"srf_a {ours.epoch} {ours.last} {journal.replica}")  # our own wake-up: nothing to read
        await asyncio.sleep(0)
        assert journal.reads == reads
        await fanout.published("srf_a", ours)
        assert journal.reads == reads  # the tail ended right before them: appended as committed
        journal.append("srf_a", 1)  # another replica's commit, not heard yet
        ours = journal.append("srf_a", 1)  # then ours: it does not follow the tail
        await fanout.published("srf_a", ours)
        assert journal.reads == reads + 1  # so the journal is read, in order
        await asyncio.wait_for(viewer, 10)
        assert [s for _, s, _ in seen] == [1, 2, 3, 4]

    asyncio.run(scenario())


def test_a_subscriber_behind_gets_batches_of_at_most_max_envelopes_in_order():
    async def scenario():
        journal = Journal()
        journal.append("srf_a", 7)
        fanout = SurfaceFanout(Db(journal), retention=10_000)
        epoch, _ = await fanout.watch("srf_a")
        replies = []
        try:
            async for response in fanout.stream("srf_a", epoch, 1, max_envelopes=4):
                replies.append([e.sequence for e in (response.envelope, *response.following)])
                if replies[-1][-1] == 7:
                    break
            one_each = []
            async for response in fanout.stream("srf_a", epoch, 5):  # the default: one per reply
                one_each.append([response.envelope.sequence, len(response.following)])
                if response.envelope.sequence == 7:
                    break
        finally:
            fanout.unwatch("srf_a")
        assert replies == [[2, 3, 4, 5], [6, 7]]
        assert one_each == [[6, 0], [7, 0]]

    asyncio.run(scenario())


def test_a_lost_notification_costs_latency_not_an_event():
    async def scenario():
        journal, fanout = _fanout(safety_seconds=0.05)
        safety = asyncio.create_task(fanout.safety_reads())
        seen, viewer = await _viewer(fanout, 0, 3)
        journal.append("srf_a", 3)  # no wake-up at all
        await asyncio.wait_for(viewer, 10)
        safety.cancel()
        assert [s for _, s, _ in seen] == [1, 2, 3]

    asyncio.run(scenario())


def test_a_new_epoch_tells_the_subscriber_a_snapshot_follows():
    async def scenario():
        journal, fanout = _fanout()
        journal.append("srf_a", 2)
        seen, viewer = await _viewer(fanout, 2, 3)
        journal.entries = [("srf_a", 2, 1), ("srf_a", 2, 2)]  # compacted by another replica
        fanout.notified("srf_a 2 2")
        await asyncio.wait_for(viewer, 10)
        assert seen == [(2, 0, "snapshot_required"), (2, 1, None), (2, 2, None)]

    asyncio.run(scenario())


@pytest.mark.parametrize("url, expected", [
    ("sqlite:///var/host.sqlite", None),
    ("postgresql+psycopg://postgres:secret@db:5432/host", "postgresql://postgres:secret@db:5432/host"),
])
def test_only_postgresql_listens(url, expected):
    assert fanout_module.listen_url(url) == expected


def test_viewers_are_woken_at_once_after_a_quiet_spell_and_once_per_interval_in_a_burst():
    async def scenario():
        journal = Journal()
        interval = 1.0
        # Coalescing from the first viewer (by default only surfaces with more than a slice of viewers are).
        fanout = SurfaceFanout(Db(journal), retention=10_000, wake_interval=interval, coalesce_viewers=0)
        epoch, _ = await fanout.watch("srf_a")
        state = fanout._surfaces["srf_a"]
        stream = fanout.stream("srf_a", epoch, 0, max_envelopes=16)
        loop = asyncio.get_running_loop()
        pending = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)
        started = loop.time()
        await fanout.published("srf_a", journal.append("srf_a"))  # after a quiet spell: at once
        first = await pending
        first_at, woken_at = loop.time(), state.rounds.woken_at
        for _ in range(5):  # a burst while the viewer is still busy with its first reply: held back
            await fanout.published("srf_a", journal.append("srf_a"))
        second = await asyncio.wait_for(anext(stream), 10)  # the viewer waits for it instead of pulling
        second_at = loop.time()
        await stream.aclose()
        fanout.unwatch("srf_a")
        assert [[e.sequence for e in (r.envelope, *r.following)] for r in (first, second)] == [[1], [2, 3, 4, 5, 6]]
        assert first_at - started < interval  # the first change did not wait
        assert second_at >= woken_at + interval  # the burst went out one interval after the last wake-up

    asyncio.run(scenario())


def test_a_big_surface_is_woken_a_slice_at_a_time_so_other_work_interleaves():
    async def scenario():
        journal, fanout = _fanout()
        slice_size = WakeRounds(0.0, 0).slice_size
        seen = [[] for _ in range(4 * slice_size)]
        viewers = [asyncio.create_task(_collect(fanout, "srf_a", 0, 1, into)) for into in seen]
        await wait_until_async(lambda: "srf_a" in fanout._surfaces
                               and len(fanout._surfaces["srf_a"].waiters) == len(seen), what="every viewer waiting")
        await fanout.published("srf_a", journal.append("srf_a"))
        received_before_other_work: list[int] = []
        asyncio.get_running_loop().call_soon(lambda: received_before_other_work.append(sum(map(len, seen))))
        await asyncio.gather(*viewers)
        # Work queued right after the wake-up (say, a commit's next step) ran once a slice or two of viewers
        # had their turn, not after all of them; and every viewer got the change.
        assert 0 < received_before_other_work[0] <= 2 * slice_size
        assert all(into == [(1, 1, None)] for into in seen)

    asyncio.run(scenario())


def test_a_held_back_wake_up_goes_with_the_last_viewer():
    async def scenario():
        journal, fanout = _fanout(wake_interval=1.0, coalesce_viewers=0)
        await fanout.watch("srf_a")
        await fanout.published("srf_a", journal.append("srf_a"))  # wakes at once
        rounds = fanout._surfaces["srf_a"].rounds
        await fanout.published("srf_a", journal.append("srf_a"))  # within the interval: held back
        assert rounds.due_at == pytest.approx(rounds.woken_at + 1.0)
        fanout.unwatch("srf_a")
        assert rounds.due_at is None  # not run for nobody

    asyncio.run(scenario())


def test_a_surface_few_watch_is_woken_at_once_for_every_change_even_in_a_burst():
    """A person waiting for the rows of a table and the figures of an answer is not held back by the
    interval meant for surfaces that hundreds watch."""
    async def scenario():
        journal, fanout = _fanout(wake_interval=60.0)
        epoch, _ = await fanout.watch("srf_a")
        stream = fanout.stream("srf_a", epoch, 0, max_envelopes=16)
        got = []
        for _ in range(4):  # four changes in a row: each reaches the viewer without waiting a minute
            pending = asyncio.ensure_future(anext(stream))
            await asyncio.sleep(0)
            await fanout.published("srf_a", journal.append("srf_a"))
            got.append((await asyncio.wait_for(pending, 5)).envelope.sequence)
        assert fanout._surfaces["srf_a"].rounds.due_at is None
        await stream.aclose()
        fanout.unwatch("srf_a")
        return got

    assert asyncio.run(scenario()) == [1, 2, 3, 4]
