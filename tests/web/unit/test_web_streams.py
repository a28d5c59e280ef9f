"""Web's event streams (sse-starlette's EventSourceResponse, driven here as uvicorn drives it): the same
bytes on the wire as the page's reader expects, keep-alive comments while the source is quiet, and a clean
stop when the browser leaves (the source is closed, so the gRPC stream behind it is cancelled)."""

from __future__ import annotations

import asyncio

from services.web.api import _event, event_stream

KEEPALIVE = b": keep-alive\n\n"


async def serve(source, on_body, browser_left: asyncio.Event) -> None:
    """One GET answered by `event_stream(source)`; each body chunk goes to `on_body`; setting `browser_left`
    is the connection closing."""

    async def receive():
        await browser_left.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.body":
            on_body(message["body"])

    await asyncio.wait_for(event_stream(source, 0.01)({"type": "http", "method": "GET"}, receive, send), 30)


def test_events_are_written_as_the_page_reads_them():
    assert _event({"a": [1, "é"]}).encode() == b'data: {"a":[1,"\\u00e9"]}\n\n'
    assert _event({"b": 2}, "3:7").encode() == b'id: 3:7\ndata: {"b":2}\n\n'


def test_a_quiet_source_gets_keep_alives_and_its_events_in_order():
    async def scenario():
        release = asyncio.Event()

        async def source():
            yield _event({"n": 1})
            await release.wait()
            yield _event({"n": 2})

        seen = []

        def on_body(chunk):
            seen.append(chunk)
            if seen.count(KEEPALIVE) == 2:
                release.set()

        await serve(source(), on_body, asyncio.Event())
        return seen

    seen = asyncio.run(scenario())
    events = [chunk for chunk in seen if chunk not in (KEEPALIVE, b"")]
    assert events == [b'data: {"n":1}\n\n', b'data: {"n":2}\n\n'] and seen[0] == events[0]
    assert seen.count(KEEPALIVE) >= 2 and seen[-1] == b""  # the source's end ends the response


def test_leaving_closes_the_source_while_it_waits():
    async def scenario():
        closed, left = asyncio.Event(), asyncio.Event()

        async def source():
            try:
                yield _event({"n": 1})
                await asyncio.Event().wait()  # never sends again
            finally:
                closed.set()

        def on_body(chunk):
            if chunk == KEEPALIVE:
                left.set()  # the browser goes away while the source is quiet

        await serve(source(), on_body, left)
        return closed.is_set()

    assert asyncio.run(scenario())
