"""The service runtime in-process, over real mTLS: readiness, errors, graceful stop."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from shared.rpc import runtime
from shared.rpc.channels import aio_channel
from shared.rpc.encoded_replies import EncodedReply, answers_encoded
from shared.rpc.errors import error_details
from shared.rpc.refusals import Invalid, Unavailable
from shared.rpc.runtime import registration_for, start_server
from tessera.compiler.v1 import compiler_pb2, compiler_pb2_grpc
from tessera.host.v1 import host_pb2, host_pb2_grpc
from tests.fixtures.waiting import wait_until_async

GET_INFO = "/tessera.compiler.v1.CompilerService/GetInfo"
COMPILE = "/tessera.compiler.v1.CompilerService/Compile"


class _Compiler(compiler_pb2_grpc.CompilerServiceServicer):
    """A test servicer: GetInfo is slow, Compile fails in the two ways servicers can."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def GetInfo(self, request, context):
        self.started.set()
        await asyncio.sleep(0.5)
        return compiler_pb2.GetInfoResponse(catalog_ids=["slow"])

    async def Compile(self, request, context):
        if request.proposal_json == "precise":
            raise Invalid("PROPOSAL_INVALID", "bad proposal", {"at": "/"})
        raise ZeroDivisionError("secret internal detail")


async def _call(channel, path, message=b""):
    serializer = (lambda m: m.SerializeToString()) if not isinstance(message, bytes) else None
    return await channel.unary_unary(path, request_serializer=serializer)(message, timeout=5)


async def _health(channel) -> int:
    reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    return reply.status


async def _health_is(channel, status: int) -> bool:
    return await _health(channel) == status


async def _health_refused(channel) -> grpc.StatusCode | None:
    """The code of a refused health check; None while the server still answers it."""
    try:
        await _health(channel)
    except grpc.aio.AioRpcError as refused:
        return refused.code()
    return None


def _database_probe(monkeypatch):
    """A readiness probe answering what the test sets in problem["now"] (None: ready), asked every 0.05 s."""
    monkeypatch.setattr(runtime, "READINESS_INTERVAL_SECONDS", 0.05)
    problem = {"now": "database unreachable"}

    async def database() -> str | None:
        return problem["now"]

    return problem, database


def test_readiness_follows_the_probes(credentials, monkeypatch):
    problem, database = _database_probe(monkeypatch)

    async def scenario():
        running = await start_server(credentials("compiler"), [registration_for("compiler", _Compiler())],
                                     readiness=[database])
        try:
            async with aio_channel(f"127.0.0.1:{running.port}", credentials("cli"), "compiler") as channel:
                assert await _health(channel) == health_pb2.HealthCheckResponse.NOT_SERVING
                problem["now"] = None
                await wait_until_async(lambda: _health_is(channel, health_pb2.HealthCheckResponse.SERVING),
                                       what="health SERVING once the probe passes")
                problem["now"] = "disk full"
                await wait_until_async(lambda: _health_is(channel, health_pb2.HealthCheckResponse.NOT_SERVING),
                                       what="health NOT_SERVING once the probe fails")
        finally:
            await running.stop(0)

    asyncio.run(scenario())


def test_errors_are_mapped_without_leaking_internals(credentials):
    async def scenario():
        running = await start_server(credentials("compiler"), [registration_for("compiler", _Compiler())])
        try:
            async with aio_channel(f"127.0.0.1:{running.port}", credentials("host"), "compiler") as channel:
                with pytest.raises(grpc.aio.AioRpcError) as precise:
                    await _call(channel, COMPILE, compiler_pb2.CompileRequest(proposal_json="precise"))
                with pytest.raises(grpc.aio.AioRpcError) as crashed:
                    await _call(channel, COMPILE, compiler_pb2.CompileRequest(proposal_json="other"))
                with pytest.raises(grpc.aio.AioRpcError) as missing:
                    await _call(channel, "/tessera.compiler.v1.CompilerService/PresentUiSchema")
        finally:
            await running.stop(0)
        return error_details(precise.value), error_details(crashed.value), error_details(missing.value)

    precise, crashed, missing = asyncio.run(scenario())
    assert (precise.code, precise.reason, precise.metadata) == (
        grpc.StatusCode.INVALID_ARGUMENT, "PROPOSAL_INVALID", {"at": "/"})
    assert crashed.code == grpc.StatusCode.INTERNAL and crashed.reason == "INTERNAL"
    assert "secret" not in crashed.message and crashed.metadata["request_id"] in crashed.message
    assert missing.code == grpc.StatusCode.UNIMPLEMENTED and missing.reason == "NOT_IMPLEMENTED"


def test_graceful_stop_finishes_in_flight_calls_and_refuses_new_ones(credentials):
    servicer = _Compiler()

    async def scenario():
        running = await start_server(credentials("compiler"), [registration_for("compiler", servicer)])
        async with aio_channel(f"127.0.0.1:{running.port}", credentials("cli"), "compiler") as channel:
            in_flight = asyncio.create_task(_call(channel, GET_INFO))
            await servicer.started.wait()
            stopping = asyncio.create_task(running.stop(grace=5))
            await wait_until_async(lambda: _health_refused(channel), what="the stopping server refusing new calls")
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await _call(channel, GET_INFO)
            reply = await in_flight
            await stopping
        return compiler_pb2.GetInfoResponse.FromString(reply), refused.value.code()

    reply, refused_code = asyncio.run(scenario())
    assert list(reply.catalog_ids) == ["slow"]
    assert refused_code == grpc.StatusCode.UNAVAILABLE


def test_the_health_only_port_answers_health_in_plaintext_and_nothing_else(credentials, monkeypatch):
    problem, database = _database_probe(monkeypatch)

    async def scenario():
        health_only = await runtime.start_health_only("127.0.0.1", 0)
        running = await start_server(credentials("compiler"), [registration_for("compiler", _Compiler())],
                                     readiness=[database], health_only=health_only)
        try:
            assert running.health_port and running.health_port != running.port
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.health_port}") as plain:
                # Same statuses as the mTLS port: a probe sees real readiness.
                assert await _health(plain) == health_pb2.HealthCheckResponse.NOT_SERVING
                problem["now"] = None
                await wait_until_async(lambda: _health_is(plain, health_pb2.HealthCheckResponse.SERVING),
                                       what="the plaintext port reporting SERVING once the probe passes")
                refused = {}
                for path in (GET_INFO, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"):
                    with pytest.raises(grpc.aio.AioRpcError) as caught:
                        await _call(plain, path)
                    refused[path] = caught.value.code()
            # The contract port still refuses plaintext.
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as plain_to_contract:
                with pytest.raises(grpc.aio.AioRpcError) as no_tls:
                    await _health(plain_to_contract)
        finally:
            await running.stop(0)
        return refused, no_tls.value.code()

    refused, no_tls = asyncio.run(scenario())
    assert set(refused.values()) == {grpc.StatusCode.UNIMPLEMENTED}
    assert no_tls == grpc.StatusCode.UNAVAILABLE


class _PreEncoding(compiler_pb2_grpc.CompilerServiceServicer):
    """GetInfo answers with bytes it serialised itself (and says so); Compile with a message, or a refusal."""

    @answers_encoded
    async def GetInfo(self, request, context):
        return EncodedReply(compiler_pb2.GetInfoResponse(catalog_ids=["pre-encoded"]).SerializeToString())

    async def Compile(self, request, context):
        if request.proposal_json == "refuse":
            raise Invalid("PROPOSAL_INVALID", "bad proposal")
        return compiler_pb2.CompileResponse(content_hash="a message")


def test_a_reply_serialised_by_its_servicer_is_sent_as_it_is_and_logged_like_any(credentials, caplog):
    async def scenario():
        running = await start_server(credentials("compiler"), [registration_for("compiler", _PreEncoding())])
        try:
            async with aio_channel(f"127.0.0.1:{running.port}", credentials("cli"), "compiler") as as_cli, \
                    aio_channel(f"127.0.0.1:{running.port}", credentials("host"), "compiler") as as_host:
                encoded = await _call(as_cli, GET_INFO)
                message = await _call(as_host, COMPILE, compiler_pb2.CompileRequest(proposal_json="fine"))
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await _call(as_host, COMPILE, compiler_pb2.CompileRequest(proposal_json="refuse"))
        finally:
            await running.stop(0)
        return encoded, message, error_details(refused.value)

    with caplog.at_level("INFO", logger="tessera.rpc"):
        encoded, message, refused = asyncio.run(scenario())
    assert list(compiler_pb2.GetInfoResponse.FromString(encoded).catalog_ids) == ["pre-encoded"]
    assert compiler_pb2.CompileResponse.FromString(message).content_hash == "a message"
    assert (refused.code, refused.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "PROPOSAL_INVALID")
    lines = [(r.fields["method"], r.fields["code"]) for r in caplog.records if r.getMessage() == "rpc"]
    assert lines == [(GET_INFO, "OK"), (COMPILE, "OK"), (COMPILE, "INVALID_ARGUMENT")]


class _Restarting(host_pb2_grpc.HostServiceServicer):
    """A host that is 'still starting' for its first two calls of each RPC."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] <= 2:
            raise Unavailable("STARTING", "not ready yet")

    async def GetRevision(self, request, context):
        self._count("GetRevision")
        return host_pb2.GetRevisionResponse()

    async def OpenSession(self, request, context):
        self._count("OpenSession")
        return host_pb2.OpenSessionResponse()


def test_reads_the_contract_declares_side_effect_free_are_retried_and_nothing_else(credentials):
    """GetRevision carries `idempotency_level = NO_SIDE_EFFECTS`, so our channels retry it through a brief
    UNAVAILABLE; OpenSession does not, so it fails at once and its caller decides."""
    servicer = _Restarting()

    async def scenario():
        running = await start_server(credentials("host"), [registration_for("host", servicer)])
        try:
            async with aio_channel(f"127.0.0.1:{running.port}", credentials("web"), "host") as channel:
                stub = host_pb2_grpc.HostServiceStub(channel)
                await stub.GetRevision(host_pb2.GetRevisionRequest(), timeout=10)
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stub.OpenSession(host_pb2.OpenSessionRequest(request_id="open-1"), timeout=10)
                return refused.value.code()
        finally:
            await running.stop(None)

    assert asyncio.run(scenario()) == grpc.StatusCode.UNAVAILABLE
    assert servicer.calls == {"GetRevision": 3, "OpenSession": 1}


class _Named(compiler_pb2_grpc.CompilerServiceServicer):
    """GetInfo answers which server this is, and remembers each caller's address (a connection's port)."""

    def __init__(self, name: str) -> None:
        self.name, self.peers = name, []

    async def GetInfo(self, request, context):
        self.peers.append(context.peer())
        return compiler_pb2.GetInfoResponse(catalog_ids=[self.name])


async def _answering(channel) -> str:
    reply = await channel.unary_unary(GET_INFO, response_deserializer=compiler_pb2.GetInfoResponse.FromString)(
        b"", timeout=5)
    return reply.catalog_ids[0]


def test_a_peer_channel_shares_its_calls_among_every_address_of_the_peer(credentials):
    """gRPC's own TLS with round_robin (shared.rpc.channels.peer_options): a name standing for two replicas (here
    the two addresses themselves, as a headless Service's DNS answer would list them) gets calls at both."""
    async def scenario():
        servers = [await start_server(credentials("compiler"), [registration_for("compiler", _Named(name))])
                   for name in ("first", "second")]
        target = "ipv4:" + ",".join(f"127.0.0.1:{running.port}" for running in servers)
        try:
            async with aio_channel(target, credentials("cli"), "compiler") as channel:
                await wait_until_async(lambda: _both_answer(channel), what="calls reaching both replicas")
                return [await _answering(channel) for _ in range(20)]
        finally:
            for running in servers:
                await running.stop(0)

    answers = asyncio.run(scenario())
    assert {name: answers.count(name) for name in set(answers)} == {"first": 10, "second": 10}


async def _both_answer(channel) -> bool:
    return {await _answering(channel) for _ in range(4)} == {"first", "second"}


def test_a_connection_older_than_the_maximum_age_is_replaced_without_failing_a_call(credentials):
    """max_connection_age: the server sends GOAWAY, the client re-dials (re-resolving the peer's name) and no
    call fails; each new connection shows as a new client port."""
    servicer = _Named("only")

    async def scenario():
        running = await start_server(credentials("compiler"), [registration_for("compiler", servicer)],
                                     max_connection_age=0.3)
        try:
            async with aio_channel(f"127.0.0.1:{running.port}", credentials("cli"), "compiler") as channel:
                await wait_until_async(lambda: _answering_from_new_connections(channel, servicer, 3),
                                       what="calls over three successive connections")
        finally:
            await running.stop(0)

    asyncio.run(scenario())


async def _answering_from_new_connections(channel, servicer: _Named, count: int) -> bool:
    assert await _answering(channel) == "only"  # a failed call fails the test
    return len(set(servicer.peers)) >= count
