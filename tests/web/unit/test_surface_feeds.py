"""Fan-out at the edge (services/web/surface_feeds.py) against the real host servicer over mTLS in this process.

The oracle for every stream is the host itself: what a viewer gets through the edge must be exactly what its own
`Subscribe` from the same cursor gives (ids, order, payloads, snapshot-required included), while the host serves
one stream per surface however many watch it.
"""

from __future__ import annotations

import asyncio
import json
import time

import grpc
import pytest
import sqlalchemy as sa

from services.web import surface_feeds
from services.web.api import _encoded_envelope, _encoded_refusal
from services.web.surface_feeds import SurfaceFeeds, ViewerKey
from shared.identity.actors import assert_actor
from tessera.host.v1 import host_pb2
from tests.fixtures.host_in_process import WEB_KEY, HostOverMtls
from tests.fixtures.waiting import wait_until_async

KEEPALIVE = b": keep-alive\n\n"
SLACK_SECONDS = 5.0  # a loaded 2-core machine answering late


class CountingHost:
    """The web side's host stub, counting the calls the edge makes."""

    def __init__(self, stub) -> None:
        self.stub, self.subscribes, self.authorizations = stub, 0, 0

    def Subscribe(self, request, **kwargs):
        self.subscribes += 1
        return self.stub.Subscribe(request, **kwargs)

    def AuthorizeViewer(self, request, **kwargs):
        self.authorizations += 1
        return self.stub.AuthorizeViewer(request, **kwargs)


class Browser:
    """What web wrote to one viewer's stream; `hold` stops it taking more (a reader that fell behind)."""

    def __init__(self) -> None:
        self.written = bytearray()
        self.writes = 0
        self.held = asyncio.Event()
        self.held.set()

    async def send(self, message: dict) -> None:
        await self.held.wait()
        self.written += message.get("body", b"")
        self.writes += 1

    def events(self) -> list[tuple[str, dict]]:
        """(id, data) of each event written (keep-alive comments left out)."""
        out = []
        for block in bytes(self.written).decode().split("\n\n"):
            lines = [line for line in block.split("\n") if line and not line.startswith(":")]
            if lines:
                fields = dict(line.split(": ", 1) for line in lines)
                out.append((fields.get("id", ""), json.loads(fields["data"])))
        return out

    def ids(self) -> list[str]:
        return [event_id for event_id, _ in self.events()]


class Edge:
    """One web replica's feeds in front of the in-process host, for one person's session."""

    def __init__(self, host: HostOverMtls, session, access_seconds: float = 60.0, keepalive_seconds: float = 60.0,
                 wake_interval: float = 0.05):
        self.host, self.session = host, session
        self.stub = CountingHost(host.stub)
        self.feeds = SurfaceFeeds(self.stub, _encoded_envelope, _encoded_refusal, access_seconds, keepalive_seconds,
                                  KEEPALIVE, wake_interval)
        self.key = ViewerKey("alice", "acme", session.session_id, session.surface_id)
        self.tasks: list[asyncio.Task] = []

    async def watch(self, cursor: str | None = None, key: ViewerKey | None = None) -> tuple[Browser, object]:
        browser = Browser()
        resume = host_pb2.Cursor(epoch=int(cursor.split(":")[0]), sequence=int(cursor.split(":")[1])) if cursor \
            else None
        viewer = await self.feeds.join(key or self.key, alice, resume)
        self.tasks.append(asyncio.create_task(self.feeds.serve(viewer, browser.send)))
        return browser, viewer

    async def direct(self, cursor: str | None, count: int) -> list[tuple[str, dict]]:
        """The oracle: `count` events of the host's own Subscribe from `cursor`, encoded as web encodes them."""
        request = host_pb2.SubscribeRequest(actor=alice(), session_id=self.session.session_id)
        if cursor:
            epoch, sequence = cursor.split(":")
            request.resume_after.CopyFrom(host_pb2.Cursor(epoch=int(epoch), sequence=int(sequence)))
        browser, call = Browser(), self.host.stub.Subscribe(request)
        async for reply in call:
            browser.written += _encoded_envelope(reply.envelope)
            if len(browser.events()) >= count:
                break
        call.cancel()
        return browser.events()

    async def close(self) -> None:
        await self.feeds.close()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def alice():
    return assert_actor(WEB_KEY, "alice", "acme")


async def _session(host: HostOverMtls, request_id: str = "open-1"):
    return await host.stub.OpenSession(host_pb2.OpenSessionRequest(actor=alice(), request_id=request_id))


def _host_streams(host: HostOverMtls, surface: str) -> int:
    state = host.fanout._surfaces.get(surface)
    return state.viewers if state is not None else 0


async def _until_received(browser: Browser, last_id: str, what: str = "the viewer's events") -> None:
    await wait_until_async(lambda: browser.ids() and browser.ids()[-1] == last_id, what=what,
                           detail=lambda: browser.ids()[-5:])


def _assert_exact(events: list[tuple[str, dict]]) -> None:
    """Within an epoch, consecutive sequences; a new epoch only after the host's snapshot-required at its 0."""
    position = None
    for event_id, data in events:
        epoch, sequence = map(int, event_id.split(":"))
        if position is not None and epoch != position[0]:
            assert (sequence, data["kind"]) == (0, "snapshot_required"), (event_id, data)
        elif position is not None:
            assert sequence == position[1] + 1, (position, event_id)
        position = (epoch, sequence)


def test_viewers_of_one_surface_share_one_host_stream_and_each_gets_what_its_own_would_give(tmp_path, credentials):
    async def scenario():
        async with HostOverMtls(tmp_path, credentials) as host:
            session = await _session(host)
            edge = Edge(host, session)
            await host.publish(session.surface_id, 5)
            cursors = [None, None, "1:2", "1:5", "1:0"]
            watching = [(cursor, *await edge.watch(cursor)) for cursor in cursors]
            await host.publish(session.surface_id, 20, start=5)
            for _, browser, _ in watching:
                await _until_received(browser, "1:25")
            for cursor, browser, _ in watching:
                expected = await edge.direct(cursor, 25 - int((cursor or "1:0").split(":")[1]))
                assert browser.events() == expected, cursor
            # The ones that started behind the feed read from the host until the feed held their position; now
            # the host serves one stream for all of them.
            await wait_until_async(lambda: _host_streams(host, session.surface_id) == 1,
                                   what="the viewers' own host streams ended")
            subscribes = edge.stub.subscribes
            late = [await edge.watch("1:25") for _ in range(10)]  # at the head: served by the feed alone
            await host.publish(session.surface_id, 3, start=25)
            for browser, _ in late:
                await _until_received(browser, "1:28")
                assert browser.ids() == ["1:26", "1:27", "1:28"]
            assert edge.stub.subscribes == subscribes and _host_streams(host, session.surface_id) == 1
            assert edge.stub.authorizations == 1  # one key: the host's answer is remembered
            await edge.close()
            await wait_until_async(lambda: _host_streams(host, session.surface_id) == 0,
                                   what="the feed's host stream closed with its last viewer")

    asyncio.run(scenario())


def test_a_cursor_the_journal_never_issued_gets_the_hosts_own_answer(tmp_path, credentials):
    async def scenario():
        async with HostOverMtls(tmp_path, credentials) as host:
            session = await _session(host)
            edge = Edge(host, session)
            await host.publish(session.surface_id, 3)
            watched = [(cursor, (await edge.watch(cursor))[0]) for cursor in ("1:999", "0:1", "7:0")]
            for cursor, browser in watched:
                await wait_until_async(lambda b=browser: len(b.events()) >= 4, what=f"the replay after {cursor}")
                assert browser.events()[:4] == await edge.direct(cursor, 4), cursor
                assert browser.events()[0][1]["kind"] == "snapshot_required"
            await edge.close()

    asyncio.run(scenario())


def test_a_viewer_that_falls_behind_the_tail_misses_nothing(tmp_path, credentials, monkeypatch):
    monkeypatch.setattr(surface_feeds, "TAIL_EVENTS", 4)

    async def scenario():
        async with HostOverMtls(tmp_path, credentials) as host:
            session = await _session(host)
            edge = Edge(host, session)
            slow, _ = await edge.watch(None)
            quick, _ = await edge.watch(None)
            await host.publish(session.surface_id, 2)
            await _until_received(slow, "1:2")
            slow.held.clear()
            await host.publish(session.surface_id, 15, start=2)
            await _until_received(quick, "1:17")
            slow.held.set()
            await _until_received(slow, "1:17", "the slow viewer caught up")
            assert slow.events() == quick.events() == await edge.direct(None, 17)
            await edge.close()

    asyncio.run(scenario())


def test_a_new_epoch_reaches_every_viewer_as_the_host_tells_it(tmp_path, credentials):
    async def scenario():
        async with HostOverMtls(tmp_path, credentials, retention=10) as host:
            session = await _session(host)
            edge = Edge(host, session)
            await host.publish(session.surface_id, 4, path="/same")
            watching = [await edge.watch(cursor) for cursor in (None, "1:4", "1:2")]
            # Past the retention: the journal starts epoch 2 with a snapshot (one entry: one path).
            await host.publish(session.surface_id, 8, start=4, path="/same")
            epoch, last = await host.db(host.db.store.position, session.surface_id)
            assert epoch > 1, (epoch, last)
            for browser, _ in watching:
                await _until_received(browser, f"{epoch}:{last}")
                _assert_exact(browser.events())
            joined, _ = await edge.watch(f"{epoch}:0")  # a cursor of the new epoch: the feed holds it
            subscribes = edge.stub.subscribes
            await host.publish(session.surface_id, 1, start=12, path="/same")
            await _until_received(joined, f"{epoch}:{last + 1}")
            assert joined.events() == await edge.direct(f"{epoch}:0", last + 1) and edge.stub.subscribes == subscribes
            await edge.close()

    asyncio.run(scenario())


def test_a_viewer_the_host_does_not_allow_is_refused_and_one_it_stops_allowing_stops_within_the_bound(
        tmp_path, credentials):
    access_seconds = 0.5

    async def scenario():
        async with HostOverMtls(tmp_path, credentials) as host:
            session = await _session(host)
            edge = Edge(host, session, access_seconds=access_seconds)
            stranger = ViewerKey("mallory", "acme", session.session_id, session.surface_id)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await edge.feeds.join(stranger, lambda: assert_actor(WEB_KEY, "mallory", "acme"), None)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            browser, _ = await edge.watch(None)
            await host.publish(session.surface_id, 1)
            await _until_received(browser, "1:1")
            with host.engine.begin() as connection:  # the session is gone: the host no longer allows it
                connection.execute(sa.text("DELETE FROM sessions WHERE session_id = :s"),
                                   {"s": session.session_id})
            gone = time.monotonic()
            await asyncio.wait_for(edge.tasks[0], 2 * access_seconds + SLACK_SECONDS)
            assert time.monotonic() - gone <= 2 * access_seconds + SLACK_SECONDS
            assert browser.events()[-1][1]["error"]["reason"] == "SESSION_UNKNOWN"
            await host.publish(session.surface_id, 1, start=1)
            assert "1:2" not in browser.ids()
            await edge.close()

    asyncio.run(scenario())


def test_when_the_feed_fails_each_viewer_is_told_and_its_stream_ends(tmp_path, credentials):
    async def scenario():
        async with HostOverMtls(tmp_path, credentials) as host:
            session = await _session(host)
            edge = Edge(host, session)
            browsers = [(await edge.watch(None))[0] for _ in range(3)]
            await host.publish(session.surface_id, 1)
            for browser in browsers:
                await _until_received(browser, "1:1")
            await host.server.stop(None)
            await asyncio.wait_for(asyncio.gather(*edge.tasks), 30)
            for browser in browsers:
                assert "error" in browser.events()[-1][1], browser.events()
            assert edge.feeds.watching(session.surface_id) == 0
            await edge.close()

    asyncio.run(scenario())


def test_many_viewers_of_a_burst_are_woken_at_most_once_per_interval_and_miss_nothing(tmp_path, credentials):
    viewers = surface_feeds.COALESCE_VIEWERS + 8

    async def scenario():
        async with HostOverMtls(tmp_path, credentials) as host:
            session = await _session(host)
            edge = Edge(host, session, wake_interval=0.5)
            browsers = [(await edge.watch("1:0"))[0] for _ in range(viewers)]
            await host.publish(session.surface_id, 1)
            for browser in browsers:
                await _until_received(browser, "1:1")
            started = time.monotonic()
            await host.publish(session.surface_id, 12, start=1)  # a burst inside one interval
            for browser in browsers:
                await _until_received(browser, "1:13")
            expected = await edge.direct(None, 13)
            for browser in browsers:
                assert browser.events() == expected
            # The burst took no more writes than wake intervals passed (plus the one at once after the quiet).
            intervals = int((time.monotonic() - started) / 0.5) + 2
            assert max(browser.writes for browser in browsers) - 1 <= intervals < 12
            await edge.close()

    asyncio.run(scenario())


def test_an_idle_viewer_gets_keep_alive_comments(tmp_path, credentials):
    async def scenario():
        async with HostOverMtls(tmp_path, credentials) as host:
            session = await _session(host)
            edge = Edge(host, session, keepalive_seconds=0.2)
            browser, _ = await edge.watch(None)
            await wait_until_async(lambda: KEEPALIVE in browser.written, what="a keep-alive comment")
            await edge.close()

    asyncio.run(scenario())
