"""A viewer that goes away is normal: the host's Subscribe stream ends quietly; a real failure is still an error.

The host serves over real mTLS in this process (the shared interceptor, real gRPC transport). With a journal
full of large envelopes the client leaves while the server is blocked writing to it: the write that fails
then is what used to be logged as "unhandled error in Subscribe" (and by gRPC itself, at error level). With an
empty journal it leaves while the server waits for news.
"""

from __future__ import annotations

import asyncio
import logging

import grpc
import pytest

from shared.identity.actors import assert_actor
from tessera.host.v1 import host_pb2
from tests.fixtures.host_in_process import WEB_KEY, HostOverMtls
from tests.fixtures.waiting import wait_until_async

SUBSCRIBE = "/tessera.host.v1.HostService/Subscribe"
ENVELOPES = 40


def errors(records: list[logging.LogRecord]) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in records if r.levelno >= logging.ERROR]


def subscribe_outcomes(records: list[logging.LogRecord]) -> list[str]:
    """The access log's status codes of Subscribe calls."""
    return [r.fields["code"] for r in records
            if r.getMessage() == "rpc" and getattr(r, "fields", {}).get("method") == SUBSCRIBE]


async def _leave_and_wait(host: HostOverMtls, envelopes: int, leave, caplog) -> None:
    call, surface = await host.subscription(envelopes)
    await leave(call)
    # The stream has ended on the server when its viewer is gone and the access log has its line.
    await wait_until_async(lambda: not host.fanout.watched(surface) and subscribe_outcomes(caplog.records),
                           what="the host noticed the viewer left")


@pytest.mark.parametrize("leave", ["cancel", "disconnect"])
@pytest.mark.parametrize("envelopes", [ENVELOPES, 0], ids=["while-writing", "while-waiting"])
def test_a_viewer_that_cancels_or_disconnects_logs_no_error(tmp_path, credentials, caplog, leave, envelopes):
    async def cancel(call):
        call.cancel()

    async def scenario():
        async with HostOverMtls(tmp_path, credentials) as host:
            disconnect = host.channel.close
            await _leave_and_wait(host, envelopes, cancel if leave == "cancel" else (lambda call: disconnect()),
                                  caplog)

    caplog.set_level(logging.DEBUG)
    asyncio.run(scenario())
    assert subscribe_outcomes(caplog.records) == ["CANCELLED"]
    assert errors(caplog.records) == []


def test_a_real_failure_of_the_stream_is_still_an_error(tmp_path, credentials, caplog, monkeypatch):
    async def broken_stream(*args, **kwargs):
        yield host_pb2.SubscribeResponse()
        raise RuntimeError("the journal could not be read")

    async def scenario():
        async with HostOverMtls(tmp_path, credentials) as host:
            monkeypatch.setattr(host.fanout, "stream", broken_stream)
            actor = assert_actor(WEB_KEY, "bob", "acme")
            session = await host.stub.OpenSession(host_pb2.OpenSessionRequest(actor=actor, request_id="open-2"))
            call = host.stub.Subscribe(host_pb2.SubscribeRequest(actor=actor, session_id=session.session_id,
                                                                 surface_id=session.surface_id))
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                async for _ in call:
                    pass
            assert failed.value.code() == grpc.StatusCode.INTERNAL
            assert not host.fanout.watched(session.surface_id)  # the servicer's own cleanup still ran

    caplog.set_level(logging.DEBUG)
    asyncio.run(scenario())
    assert f"tessera.rpc: unhandled error in {SUBSCRIBE}" in errors(caplog.records)
