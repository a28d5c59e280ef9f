"""Surface fan-out at the edge: one host `Subscribe` per watched surface per web replica, shared by every browser
watching that surface here, so the host's cost per committed event does not grow with the people watching.

- **A viewer's right is the host's decision.** `AuthorizeViewer` is asked when a viewer joins, remembered for
  `access_seconds` per (person, session, surface), and asked again every `access_seconds` while anyone watches
  under it; a refusal ends those viewers' streams with the host's reason. Sign-out ends a stream as before (the
  caller watches the browser session).
- **Encoded once.** Each envelope becomes its SSE event bytes (the `id:` is the host's cursor) once, in the feed's
  tail (bounded in events and bytes); a viewer writes everything new since its own position in one write.
- **Resume is exact per viewer.** A viewer whose position the tail holds reads from it. Any other (a fresh page, a
  cursor older than the tail, a viewer that fell behind it, an epoch the feed has not reached) reads from the host
  with a `Subscribe` of its own, exactly as before the edge existed, until its position is one the tail holds;
  then it joins the feed. The feed opens after the journal's head as the host reported it, so it replays nothing.
- **Failures are the host's.** When the feed's stream fails, each of its viewers gets the refusal and its stream
  ends, as with a stream of its own; the page resumes from its last event id, on any replica.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
from cachetools import TTLCache

from shared.logs import log
from shared.rpc.wake_rounds import WakeRounds
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2

logger = logging.getLogger("tessera.web.feeds")
TAIL_EVENTS = 1_000
TAIL_BYTES = 16 * 2**20  # a window envelope carries up to 1,000 rows: the tail is bounded in bytes too
UPSTREAM_BATCH = 64  # envelopes per host reply to a feed (the host's most)
SSE_BATCH = 16  # envelopes per host reply to a viewer that reads from the host itself
ACCESS_ENTRIES = 10_000
# Waking costs web per viewer: a surface with more viewers than COALESCE_VIEWERS is woken at most once per wake
# interval (a change after a quiet spell at once), a slice of viewers per event loop turn, and the interval
# stretches while a round of wake-ups takes more than half of it (wake_rounds.py): under a burst each
# viewer writes everything new at once, and the replica's other requests keep their turn.
COALESCE_VIEWERS = 32
# Who refused: the host's answer about this viewer. Anything else (the host unreachable) decides nothing.
_REFUSING = {grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAUTHENTICATED,
             grpc.StatusCode.INVALID_ARGUMENT}

Send = Callable[[dict], Awaitable[None]]


@dataclass(frozen=True)
class ViewerKey:
    """Whose right to watch what: the unit the host's answer is remembered for."""

    actor_id: str
    tenant_id: str
    session_id: str
    surface_id: str


@dataclass(eq=False)
class Viewer:
    """One browser stream. `index` is the absolute position of the next feed entry it writes, or None while it
    reads from the host itself; `cursor` the (epoch, sequence) of the last envelope it was sent."""

    key: ViewerKey
    actor: Callable[[], common_pb2.ActorAssertion]  # a fresh assertion for the person, for each call made for them
    feed: Feed
    cursor: tuple[int, int] | None
    index: int | None = None
    ending: list[bytes] | None = None  # set once: what to send before the stream closes
    wake: asyncio.Future | None = None
    call: object | None = None  # its own host stream, while it reads one
    writes: int = 0  # since the last keep-alive round
    ticks_seen: int = 0

    def end(self, events: list[bytes]) -> None:
        if self.ending is None:
            self.ending = events
        self.nudge()
        if self.call is not None:
            self.call.cancel()

    def nudge(self) -> None:
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)


@dataclass(eq=False)
class Feed:
    """One surface's shared stream on this replica: the tail of encoded entries, (epoch, sequence, bytes).

    Entries of the current epoch are consecutive from `first` at absolute index `epoch_start`, so where a cursor
    continues is arithmetic, not a search."""

    surface_id: str
    epoch: int
    first: int  # the first sequence of `epoch` the feed holds (or will: the entry at `epoch_start`)
    rounds: WakeRounds  # how its viewers are woken
    entries: deque = field(default_factory=deque)
    base: int = 0  # absolute index of entries[0]
    epoch_start: int = 0
    size: int = 0  # bytes in the tail
    viewers: set = field(default_factory=set)
    ended: list[bytes] | None = None
    ticks: int = 0  # keep-alive rounds: a viewer that wrote nothing since the last one sends a comment
    tasks: list = field(default_factory=list)

    def index_after(self, epoch: int, sequence: int, issued: bool = False) -> int | None:
        """The absolute index of the entry after (epoch, sequence), when the tail holds everything from there.

        A position past the feed's last entry counts only when the host `issued` it (the feed will reach it);
        a cursor a browser brought may be one the journal never issued, which is the host's to answer."""
        if epoch != self.epoch or sequence + 1 < self.first:
            return None
        index = self.epoch_start + sequence + 1 - self.first
        end = self.base + len(self.entries)
        return index if self.base <= index and (issued or index <= end) else None

    def since(self, index: int, cursor: tuple[int, int]) -> tuple[bytes, tuple[int, int] | None] | None:
        """Everything from `index` on as one write, and the cursor of its last entry; None when that is not what
        follows `cursor` (trimmed, or the journal moved to a new epoch before the feed reached it)."""
        start = index - self.base
        if start < 0:
            return None
        if start >= len(self.entries):
            return b"", None
        epoch, sequence, _ = self.entries[start]
        # What follows a cursor: the next sequence, or a snapshot-required (which replaces everything before it).
        if (epoch, sequence) != (cursor[0], cursor[1] + 1) and not (sequence == 0 and epoch > cursor[0]):
            return None
        if start == len(self.entries) - 1:  # the usual case: one new entry
            epoch, sequence, data = self.entries[-1]
            return data, (epoch, sequence)
        tail = list(itertools.islice(self.entries, start, None))
        return b"".join(data for _, _, data in tail), (tail[-1][0], tail[-1][1])

    def add(self, envelope: host_pb2.SurfaceEnvelope, data: bytes) -> None:
        if envelope.WhichOneof("payload") == "snapshot_required" or envelope.epoch != self.epoch:
            # A new epoch begins here (its snapshot follows): cursors of the old one are the host's to answer.
            self.epoch, self.first = envelope.epoch, envelope.sequence
            self.epoch_start = self.base + len(self.entries)
        self.entries.append((envelope.epoch, envelope.sequence, data))
        self.size += len(data)
        while len(self.entries) > TAIL_EVENTS or (self.size > TAIL_BYTES and len(self.entries) > 1):
            self.size -= len(self.entries.popleft()[2])
            self.base += 1

    def wake(self) -> None:
        """Wake the viewers at once, or at the end of the wake interval when many watch (wake_rounds.py)."""
        self.rounds.wake(len(self.viewers), self.wake_now)

    def wake_now(self) -> None:
        self.rounds.begin()
        self.rounds.release(list(self.viewers), Viewer.nudge)


class ViewerAccess:
    """The host's answer to "may this person's session watch this surface", remembered briefly per key; viewers
    joining at once under one key share one question."""

    def __init__(self, host, ttl_seconds: float) -> None:
        self._host = host
        self._answers: TTLCache = TTLCache(ACCESS_ENTRIES, ttl_seconds)
        self._asking: dict[ViewerKey, asyncio.Future] = {}

    async def check(self, key: ViewerKey, request: host_pb2.AuthorizeViewerRequest) -> host_pb2.AuthorizeViewerResponse:
        """The host's answer for `key`; raises the host's grpc.aio.AioRpcError when it refuses or cannot answer."""
        answer = self._answers.get(key)
        if answer is not None:
            return answer
        asking = self._asking.get(key)
        if asking is None:
            asking = self._asking[key] = asyncio.ensure_future(self._ask(key, request))
            asking.add_done_callback(lambda _: self._asking.pop(key, None))
        return await asyncio.shield(asking)

    async def _ask(self, key: ViewerKey, request: host_pb2.AuthorizeViewerRequest):
        answer = await self._host.AuthorizeViewer(request, timeout=10)
        self._answers[key] = answer
        return answer

    def forget(self, key: ViewerKey) -> None:
        self._answers.pop(key, None)


class SurfaceFeeds:
    """This replica's feeds, by surface, and the viewers they serve.

    `encode(envelope)` is an envelope's SSE event bytes; `refusal(exc)` the SSE event bytes that tell the page a
    host call failed (and why)."""

    def __init__(self, host, encode: Callable[[host_pb2.SurfaceEnvelope], bytes],
                 refusal: Callable[[grpc.aio.AioRpcError], bytes], access_seconds: float,
                 keepalive_seconds: float, keepalive: bytes, wake_interval: float = 0.05) -> None:
        self._host = host
        self._wake_interval = wake_interval
        self._encode, self._refusal = encode, refusal
        self._access_seconds, self._keepalive_seconds, self._keepalive = access_seconds, keepalive_seconds, keepalive
        self.access = ViewerAccess(host, access_seconds)
        self._feeds: dict[str, Feed] = {}

    def watching(self, surface_id: str) -> int:
        feed = self._feeds.get(surface_id)
        return len(feed.viewers) if feed is not None else 0

    async def join(self, key: ViewerKey, actor: Callable[[], common_pb2.ActorAssertion],
                   resume_after: host_pb2.Cursor | None) -> Viewer:
        """A viewer of `key`'s surface after `resume_after` (None: the epoch from its start), once the host allows
        it; raises the host's grpc.aio.AioRpcError when it does not (or cannot say)."""
        allowed = await self.access.check(key, self._access_request(key, actor))
        feed = self._feeds.get(allowed.surface_id) or self._open(allowed, key, actor)
        # A fresh page reads the epoch from its start; the tail serves it only when it holds that start.
        cursor = (resume_after.epoch, resume_after.sequence) if resume_after is not None else None
        viewer = Viewer(key, actor, feed, cursor, ticks_seen=feed.ticks)
        viewer.index = feed.index_after(*cursor) if cursor else feed.index_after(feed.epoch, 0)
        if cursor is None and viewer.index is not None:
            viewer.cursor = (feed.epoch, 0)
        feed.viewers.add(viewer)
        return viewer

    async def serve(self, viewer: Viewer, send: Send) -> None:
        """Write the viewer's stream until it ends (the feed failed, its right or session ended, it left)."""
        feed = viewer.feed
        try:
            while viewer.ending is None:
                if viewer.index is None:
                    await self._from_host(feed, viewer, send)
                elif not await self._from_feed(feed, viewer, send):
                    viewer.wake = asyncio.get_running_loop().create_future()
                    await viewer.wake
                    viewer.wake = None
            for data in viewer.ending:
                await send({"type": "http.response.body", "body": data, "more_body": True})
        finally:
            self.leave(viewer)

    async def _from_feed(self, feed: Feed, viewer: Viewer, send: Send) -> bool:
        """Write what is new for the viewer; False when there was nothing to write."""
        found = feed.since(viewer.index, viewer.cursor)
        if found is None:  # fell behind the tail (or the feed skipped past it): the host has it
            viewer.index = None
            return True
        data, cursor = found
        if not data:
            if feed.ended is not None:
                viewer.end(feed.ended)
                return True
            if viewer.ticks_seen != feed.ticks:  # a keep-alive round passed
                viewer.ticks_seen = feed.ticks
                if not viewer.writes:
                    data = self._keepalive
                viewer.writes = 0
            if not data:
                return False
        else:
            viewer.index, viewer.cursor = feed.base + len(feed.entries), cursor
            viewer.writes += 1
        await send({"type": "http.response.body", "body": data, "more_body": True})
        return True

    async def _from_host(self, feed: Feed, viewer: Viewer, send: Send) -> None:
        """Read from the host with the viewer's own Subscribe until the feed's tail holds its position."""
        key = viewer.key
        request = host_pb2.SubscribeRequest(actor=viewer.actor(), session_id=key.session_id,
                                            surface_id=key.surface_id, max_envelopes=SSE_BATCH)
        if viewer.cursor is not None:
            request.resume_after.CopyFrom(host_pb2.Cursor(epoch=viewer.cursor[0], sequence=viewer.cursor[1]))
        viewer.call = call = self._host.Subscribe(request)
        try:
            async for reply in call:
                envelopes = (reply.envelope, *reply.following)
                await send({"type": "http.response.body", "more_body": True,
                            "body": b"".join(self._encode(envelope) for envelope in envelopes)})
                viewer.cursor = (envelopes[-1].epoch, envelopes[-1].sequence)
                viewer.index = feed.index_after(*viewer.cursor, issued=True)
                if viewer.index is not None or viewer.ending is not None:
                    return
            viewer.end([])  # the host ended the stream
        except grpc.aio.AioRpcError as exc:
            viewer.end([] if exc.code() == grpc.StatusCode.CANCELLED else [self._refusal(exc)])
        finally:
            viewer.call = None
            call.cancel()

    # --- the feed's own work -------------------------------------------------------------------------

    @staticmethod
    def _access_request(key: ViewerKey, actor: Callable[[], common_pb2.ActorAssertion]):
        return host_pb2.AuthorizeViewerRequest(actor=actor(), session_id=key.session_id, surface_id=key.surface_id)

    def _open(self, allowed: host_pb2.AuthorizeViewerResponse, key: ViewerKey,
              actor: Callable[[], common_pb2.ActorAssertion]) -> Feed:
        """The surface's feed, following the journal from its head as the host just reported it."""
        head = allowed.head
        feed = self._feeds[allowed.surface_id] = Feed(allowed.surface_id, head.epoch, head.sequence + 1,
                                                      WakeRounds(self._wake_interval, COALESCE_VIEWERS))
        upstream = host_pb2.SubscribeRequest(actor=actor(), session_id=key.session_id, surface_id=allowed.surface_id,
                                             max_envelopes=UPSTREAM_BATCH, resume_after=head)
        feed.tasks = [asyncio.create_task(self._follow(feed, upstream), name=f"feed {feed.surface_id}"),
                      asyncio.create_task(self._tick(feed), name=f"feed ticks {feed.surface_id}"),
                      asyncio.create_task(self._recheck(feed), name=f"feed access {feed.surface_id}")]
        log(logger, logging.INFO, "surface feed opened", surface_id=feed.surface_id)
        return feed

    async def _follow(self, feed: Feed, request: host_pb2.SubscribeRequest) -> None:
        call = self._host.Subscribe(request)
        ending: list[bytes] = []
        try:
            async for reply in call:
                for envelope in (reply.envelope, *reply.following):
                    feed.add(envelope, self._encode(envelope))
                feed.wake()
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                ending = [self._refusal(exc)]
                log(logger, logging.WARNING, "surface feed failed", surface_id=feed.surface_id,
                    code=exc.code().name)
        finally:
            call.cancel()
            self._close(feed, ending)

    async def _tick(self, feed: Feed) -> None:
        """Keep-alive rounds: a viewer that wrote nothing during one sends a comment, so proxies keep it open."""
        while True:
            await asyncio.sleep(self._keepalive_seconds)
            feed.ticks += 1
            feed.wake_now()

    async def _recheck(self, feed: Feed) -> None:
        """Ask the host again, once per key, whether the feed's viewers may still watch; end those it refuses."""
        while True:
            await asyncio.sleep(self._access_seconds)
            for key, viewers in _by_key(feed.viewers).items():
                self.access.forget(key)
                try:
                    await self.access.check(key, self._access_request(key, viewers[0].actor))
                except grpc.aio.AioRpcError as exc:
                    if exc.code() in _REFUSING:
                        log(logger, logging.INFO, "viewers refused", surface_id=key.surface_id,
                            viewers=len(viewers), code=exc.code().name)
                        for viewer in viewers:
                            viewer.end([self._refusal(exc)])

    def _close(self, feed: Feed, ending: list[bytes]) -> None:
        if feed.ended is not None:
            return
        feed.ended = ending
        feed.rounds.cancel()
        if self._feeds.get(feed.surface_id) is feed:
            del self._feeds[feed.surface_id]
        for task in feed.tasks:
            if task is not asyncio.current_task():
                task.cancel()
        for viewer in list(feed.viewers):
            viewer.end(ending)

    def leave(self, viewer: Viewer) -> None:
        """The viewer's stream ended; the last viewer to leave closes the feed."""
        feed = viewer.feed
        feed.viewers.discard(viewer)
        if not feed.viewers and feed.ended is None:
            self._close(feed, [])
            log(logger, logging.INFO, "surface feed closed", surface_id=feed.surface_id)

    async def close(self) -> None:
        """End every feed and its viewers' streams (web is stopping)."""
        for feed in list(self._feeds.values()):
            self._close(feed, [])
        await asyncio.sleep(0)  # the viewers' tasks see their end before the channels close


def _by_key(viewers) -> dict[ViewerKey, list[Viewer]]:
    grouped: dict[ViewerKey, list[Viewer]] = {}
    for viewer in viewers:
        grouped.setdefault(viewer.key, []).append(viewer)
    return grouped



SERVER_SEND = "tessera.server_send"  # scope key: the server's own `send`, as the outermost middleware got it


class ServerSend:
    """ASGI middleware, outermost: keeps the server's `send` in the scope, so that a long stream can write its body
    without passing every chunk through the middlewares (they act on a response's start: its headers, whether it
    began), which costs more than the write itself when a thousand streams each take every event."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[SERVER_SEND] = send
        await self.app(scope, receive, send)


class FeedResponse:
    """A viewer's stream as the ASGI response of its request: the event-stream headers (through the middlewares),
    then `SurfaceFeeds.serve` in a task of its own writing with the server's `send` (a wake-up then resumes a
    short coroutine, not the whole middleware stack), until the stream ends; it ends early when the browser leaves
    or `until_ended` (the browser session ending: the events that say so) returns."""

    headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store"),
               (b"x-accel-buffering", b"no")]

    def __init__(self, feeds: SurfaceFeeds, viewer: Viewer, until_ended: Callable[[], Awaitable[list[bytes]]]) -> None:
        self._feeds, self._viewer, self._until_ended = feeds, viewer, until_ended

    async def __call__(self, scope, receive, send: Send) -> None:
        watchers = [asyncio.create_task(self._until_left(receive)), asyncio.create_task(self._until_signed_out())]
        serving = None
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.headers})
            serving = asyncio.create_task(self._feeds.serve(self._viewer, scope.get(SERVER_SEND, send)))
            await serving
        finally:
            for task in (*watchers, serving):
                if task is not None:
                    task.cancel()
            self._feeds.leave(self._viewer)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _until_left(self, receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self._viewer.end([])

    async def _until_signed_out(self) -> None:
        self._viewer.end(await self._until_ended())
