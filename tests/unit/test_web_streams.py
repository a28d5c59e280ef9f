"""Web's event streams: keep-alive comments while the source is quiet, and a clean stop when the browser
leaves (the source is closed, so the gRPC stream behind it is cancelled)."""

from __future__ import annotations

import asyncio

from services.web.api import KEEPALIVE, with_keepalive


def test_a_quiet_source_gets_keep_alives_and_its_chunks_in_order():
    async def scenario():
        release = asyncio.Event()

        async def source():
            yield "first"
            await release.wait()
            yield "second"

        seen = []
        async for chunk in with_keepalive(source(), 0.01):
            seen.append(chunk)
            if seen.count(KEEPALIVE) == 2:
                release.set()
            if chunk == "second":
                break
        return seen

    seen = asyncio.run(scenario())
    assert seen[0] == "first" and seen[-1] == "second" and seen.count(KEEPALIVE) >= 2


def test_leaving_closes_the_source_while_it_waits():
    async def scenario():
        closed = asyncio.Event()

        async def source():
            try:
                yield "first"
                await asyncio.Event().wait()  # never sends again
            finally:
                closed.set()

        stream = with_keepalive(source(), 0.01)
        assert await stream.__anext__() == "first"
        assert await stream.__anext__() == KEEPALIVE
        await stream.aclose()  # what Starlette does when the browser goes away
        return closed.is_set()

    assert asyncio.run(scenario())
