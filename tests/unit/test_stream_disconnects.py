"""A viewer that goes away is normal: the host's Subscribe stream ends quietly; a real failure is still an error.

The host serves over real mTLS in this process (the shared interceptor, real gRPC transport). With a journal
full of large envelopes the client leaves while the server is blocked writing to it: the write that fails
then is what used to be logged as "unhandled error in Subscribe" (and by gRPC itself, at error level). With an
empty journal it leaves while the server waits for news.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from services.host.database import AsyncStore
from services.host.envelopes import data_model_update
from services.host.fanout import SurfaceFanout
from services.host.peers import Peers
from services.host.server import HostService, host_parts
from services.host.store import HostStore, engine_for, migrate
from shared import runtime
from shared.actors import ActorVerifier, assert_actor
from shared.channels import aio_channel
from shared.ui.contracts import load_catalog
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2, host_pb2_grpc
from tests.fixtures.waiting import wait_until_async

SUBSCRIBE = "/tessera.host.v1.HostService/Subscribe"
ENVELOPES = 40
ENVELOPE_CHARS = 200_000  # 40 of these are far more than a stream's flow-control window: the server must wait
WEB_KEY = ed25519.Ed25519PrivateKey.generate()


class Unused:
    def __getattr__(self, name):
        raise AssertionError(f"the host called a peer for {name}")


class HostOverMtls:
    """The host's servicer behind the real server runtime, and a web client channel to it."""

    def __init__(self, tmp_path, credentials) -> None:
        self.tmp_path, self.credentials = tmp_path, credentials

    async def __aenter__(self) -> HostOverMtls:
        self.engine = engine_for(f"sqlite:///{self.tmp_path / 'host.sqlite'}")
        migrate(self.engine)
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.db = AsyncStore(HostStore(self.engine), self.pool)
        self.fanout = SurfaceFanout(self.db, retention=1_000)
        parts = host_parts(common_pb2.ServiceInfo(name="host"), ActorVerifier({"web": WEB_KEY.public_key()}),
                           self.db, self.fanout, Peers(Unused(), Unused(), Unused()), load_catalog(),
                           ed25519.Ed25519PrivateKey.generate().public_key(), ed25519.Ed25519PrivateKey.generate())
        self.server = await runtime.start_server(self.credentials("host"),
                                                 [runtime.registration_for("host", HostService(parts))])
        self.channel = aio_channel(f"127.0.0.1:{self.server.port}", self.credentials("web"), "host")
        self.stub = host_pb2_grpc.HostServiceStub(self.channel)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.channel.close()
        await self.server.stop(None)
        self.pool.shutdown(wait=True)
        self.engine.dispose()

    async def subscription(self, envelopes: int):
        """A subscription to a surface whose journal holds `envelopes` large ones (more than the client will read),
        once the server streams it: the first envelope has arrived, or (none) the server is waiting for news."""
        actor = assert_actor(WEB_KEY, "alice", "acme")
        session = await self.stub.OpenSession(host_pb2.OpenSessionRequest(actor=actor, request_id="open-1"))
        surface = session.surface_id
        for n in range(envelopes):
            update = {"updateDataModel": {"surfaceId": surface, "path": f"/big{n}", "value": "x" * ENVELOPE_CHARS}}
            appended = await self.db(self.db.store.append_events, surface, [data_model_update(surface, update)])
            await self.fanout.published(surface, appended)
        call = self.stub.Subscribe(host_pb2.SubscribeRequest(actor=actor, session_id=session.session_id,
                                                             surface_id=surface))
        if envelopes:
            first = await call.read()
            assert first.envelope.sequence == 1
        else:
            await wait_until_async(lambda: self.fanout.watched(surface), what="the host streams the surface")
        return call, surface


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
