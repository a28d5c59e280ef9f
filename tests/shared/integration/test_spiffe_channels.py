"""The SPIFFE bridge: clients authenticate the server by its URI SAN, over real mTLS handshakes.

Servers run on their own event loop in a background thread; the tests call them
with the blocking API, from other threads, and with grpc.aio from a second loop.
Loops that ran grpc.aio are stopped but never closed: grpc's poller may still
post a late event to them (grpc/grpc#25364), which a closed loop would log as
"Event loop is closed".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import stat
import threading

import grpc
import pytest
from cryptography import x509
from grpc_health.v1 import health_pb2_grpc

from shared.identity.certs import create_ca
from shared.rpc import spiffe_channels
from shared.rpc.spiffe_channels import CredentialFiles, aio_channel, close_bridge, failure_counts, sync_channel
from tests.fixtures.tls_servers import (
    CLIENT_ID,
    OTHER_ID,
    REQUEST,
    SERVER_ID,
    SERVING,
    WAIT,
    Deployment,
    issue,
    key_pem,
    lax_ca,
    pem,
)
from tests.fixtures.waiting import wait_until


@pytest.fixture(autouse=True)
def fresh_bridge():
    yield
    close_bridge()


def _check(target: str, files: CredentialFiles, identity: str = SERVER_ID, options=()):
    with sync_channel(target, files, identity, options) as channel:
        return health_pb2_grpc.HealthStub(channel).Check(REQUEST, timeout=WAIT)


def _refusal(target: str, files: CredentialFiles, identity: str = SERVER_ID) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as failure:
        _check(target, files, identity)
    return failure.value.code()


def _serial_seen(peer: dict) -> int:
    return x509.load_pem_x509_certificate(peer["x509_pem_cert"][0]).serial_number


# --- tests ------------------------------------------------------------------------------------------------------


def test_a_stock_client_cannot_verify_a_uri_san_only_server(deployment, servers):
    """The problem this module solves: grpc core's verifier ignores URI SANs."""
    port, servicer = servers.grpc_server(*deployment.server(), deployment.ca_pem)
    credentials = grpc.ssl_channel_credentials(deployment.ca_pem, deployment.files.key_file.read_bytes(),
                                               deployment.files.cert_file.read_bytes())
    with grpc.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
        with pytest.raises(grpc.RpcError) as failure:
            health_pb2_grpc.HealthStub(channel).Check(REQUEST, timeout=WAIT)
    assert failure.value.code() == grpc.StatusCode.UNAVAILABLE
    assert servicer.peers == []


def test_uri_san_only_server_is_reached_sync_and_aio_and_sees_the_client_id(deployment, servers, client_loop):
    port, servicer = servers.grpc_server(*deployment.server(), deployment.ca_pem)
    target = f"127.0.0.1:{port}"
    assert _check(target, deployment.files).status == SERVING

    async def aio_check():
        async with aio_channel(target, deployment.files, SERVER_ID) as channel:
            return await health_pb2_grpc.HealthStub(channel).Check(REQUEST, timeout=WAIT)

    assert client_loop.run(aio_check()).status == SERVING
    # mTLS is end to end: the server authenticated the client's own certificate.
    assert [peer["peer_spiffe_id"] for peer in servicer.peers] == [[CLIENT_ID.encode()]] * 2
    assert all(peer["transport_security_type"] == [b"ssl"] for peer in servicer.peers)
    assert failure_counts(target) == {}


def test_a_server_with_dns_and_uri_sans_works_the_same(deployment, servers):
    chain, key = deployment.server(dns=["localhost"], common_name="tessera-host")
    port, _ = servers.grpc_server(chain, key, deployment.ca_pem)
    assert _check(f"localhost:{port}", deployment.files).status == SERVING


def test_repeated_channels_share_one_private_listener(deployment, servers):
    port, servicer = servers.grpc_server(*deployment.server(), deployment.ca_pem)
    target = f"127.0.0.1:{port}"
    for _ in range(3):
        assert _check(target, deployment.files).status == SERVING
    bridge = spiffe_channels._current
    [first], _ = bridge.listen(target, deployment.files, SERVER_ID)  # an IP address: one server, one socket
    assert bridge.listen(target, deployment.files, SERVER_ID)[0] == [first]
    assert bridge.listen(target, deployment.files, OTHER_ID)[0] != [first]
    directory = first.parent
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert len(list(directory.iterdir())) == 2
    close_bridge()
    assert not directory.exists()
    # A later channel starts a new bridge.
    assert _check(target, deployment.files).status == SERVING


def test_a_server_with_another_services_id_is_refused_before_any_rpc(deployment, servers):
    port, servicer = servers.grpc_server(*deployment.server(OTHER_ID), deployment.ca_pem)
    target = f"127.0.0.1:{port}"
    assert _refusal(target, deployment.files) == grpc.StatusCode.UNAVAILABLE
    assert failure_counts(target).keys() == {spiffe_channels.SERVER_IDENTITY_MISMATCH}
    assert servicer.peers == []
    # Same server, right expectation: fine.
    assert _check(target, deployment.files, OTHER_ID).status == SERVING


def test_nothing_is_forwarded_to_a_server_with_the_wrong_identity(deployment, servers, tmp_path, caplog):
    port, received, closed = servers.tls_server(*deployment.server(OTHER_ID), deployment.ca_pem, tmp_path)
    target = f"127.0.0.1:{port}"
    with caplog.at_level("WARNING", logger="tessera.channels"):
        assert _refusal(target, deployment.files) == grpc.StatusCode.UNAVAILABLE
    assert closed.wait(WAIT)
    assert received[0] == b""  # not even the HTTP/2 preface
    record = [r for r in caplog.records if getattr(r, "fields", {}).get("target") == target][0]
    assert record.levelname == "WARNING"
    assert record.fields["reason"] == spiffe_channels.SERVER_IDENTITY_MISMATCH
    assert OTHER_ID in record.getMessage()


def test_a_server_not_negotiating_h2_is_refused(deployment, servers, tmp_path):
    port, received, closed = servers.tls_server(*deployment.server(), deployment.ca_pem, tmp_path, alpn=())
    target = f"127.0.0.1:{port}"
    assert _refusal(target, deployment.files) == grpc.StatusCode.UNAVAILABLE
    assert failure_counts(target).keys() == {spiffe_channels.ALPN_NOT_H2}
    assert closed.wait(WAIT) and received[0] == b""


def _other_ca_server(deployment):
    other, other_key = create_ca("another CA")
    cert, key = issue(other, other_key, uris=[SERVER_ID])
    return pem(cert), key_pem(key)


def _via_intermediate(deployment):
    intermediate, intermediate_key = issue(deployment.ca, deployment.ca_key, common_name="intermediate", is_ca=True)
    cert, key = issue(intermediate, intermediate_key, uris=[SERVER_ID])
    return pem(cert) + pem(intermediate), key_pem(key)


def _expired(deployment):
    return deployment.server(days=(-3, -1))


def _two_uri_sans(deployment):
    cert, key = issue(deployment.ca, deployment.ca_key, uris=[SERVER_ID, OTHER_ID])
    return pem(cert), key_pem(key)


def _no_uri_san(deployment):
    cert, key = issue(deployment.ca, deployment.ca_key, dns=["localhost"], common_name="host")
    return pem(cert), key_pem(key)


@pytest.mark.parametrize("make_server, reason", [
    (_other_ca_server, spiffe_channels.SERVER_NOT_ISSUED_BY_CA),
    (_via_intermediate, spiffe_channels.SERVER_NOT_ISSUED_BY_CA),
    (_expired, spiffe_channels.SERVER_CERT_NOT_VALID_NOW),
    (_two_uri_sans, spiffe_channels.SERVER_IDENTITY_INVALID),
    (_no_uri_san, spiffe_channels.SERVER_IDENTITY_INVALID),
])
def test_untrusted_server_certificates_are_refused_with_a_precise_reason(deployment, servers, make_server, reason):
    port, servicer = servers.grpc_server(*make_server(deployment), deployment.ca_pem)
    target = f"127.0.0.1:{port}"
    assert _refusal(target, deployment.files) == grpc.StatusCode.UNAVAILABLE
    assert failure_counts(target).keys() == {reason}
    assert servicer.peers == []


def test_an_intermediate_is_refused_even_when_openssl_accepts_the_chain(tmp_path, servers):
    """With no path length limit on the CA, OpenSSL verifies the chain; the bridge's own check refuses it."""
    deployment = Deployment(tmp_path, *lax_ca())
    port, servicer = servers.grpc_server(*_via_intermediate(deployment), deployment.ca_pem)
    target = f"127.0.0.1:{port}"
    assert _refusal(target, deployment.files) == grpc.StatusCode.UNAVAILABLE
    assert failure_counts(target).keys() == {spiffe_channels.SERVER_NOT_ISSUED_BY_CA}
    # The same CA, a leaf issued directly: fine.
    port, _ = servers.grpc_server(*deployment.server(), deployment.ca_pem)
    assert _check(f"127.0.0.1:{port}", deployment.files).status == SERVING


def test_unreachable_and_non_tls_targets_fail_unavailable(deployment, server_loop):
    listener = server_loop.run(asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0))
    closing_port = listener.sockets[0].getsockname()[1]
    server_loop.run(_close(listener))
    assert _refusal(f"127.0.0.1:{closing_port}", deployment.files) == grpc.StatusCode.UNAVAILABLE
    assert failure_counts(f"127.0.0.1:{closing_port}").keys() == {spiffe_channels.TARGET_UNREACHABLE}

    hangup = server_loop.run(asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0))
    try:
        target = f"127.0.0.1:{hangup.sockets[0].getsockname()[1]}"
        assert _refusal(target, deployment.files) == grpc.StatusCode.UNAVAILABLE
        assert failure_counts(target).keys() == {spiffe_channels.TLS_HANDSHAKE_FAILED}
    finally:
        server_loop.run(_close(hangup))


async def _close(server: asyncio.AbstractServer) -> None:
    server.close()


def test_a_client_certificate_the_server_does_not_trust_fails_the_call(deployment, servers):
    other, other_key = create_ca("another CA")
    port, servicer = servers.grpc_server(*deployment.server(), pem(other))
    target = f"127.0.0.1:{port}"
    assert _refusal(target, deployment.files) == grpc.StatusCode.UNAVAILABLE
    # grpc core sends no alert, it hangs up: the bridge tells that apart from a server that talks.
    assert failure_counts(target).keys() == {spiffe_channels.SERVER_CLOSED_AFTER_HANDSHAKE}
    assert servicer.peers == []


def test_a_renewed_client_certificate_is_used_by_the_next_connection(deployment, servers):
    port, servicer = servers.grpc_server(*deployment.server(), deployment.ca_pem)
    target = f"127.0.0.1:{port}"
    own_connection = [("grpc.use_local_subchannel_pool", 1)]  # a new channel must open a new connection
    first = x509.load_pem_x509_certificate(deployment.files.cert_file.read_bytes())
    assert _check(target, deployment.files, options=own_connection).status == SERVING
    renewed = deployment.rotate_client()
    assert _check(target, deployment.files, options=own_connection).status == SERVING
    assert [_serial_seen(peer) for peer in servicer.peers] == [first.serial_number, renewed.serial_number]
    assert servicer.peers[1]["peer_spiffe_id"] == [CLIENT_ID.encode()]


def test_a_half_written_rotation_keeps_the_last_good_credentials(deployment, servers):
    port, servicer = servers.grpc_server(*deployment.server(), deployment.ca_pem)
    target = f"127.0.0.1:{port}"
    own_connection = [("grpc.use_local_subchannel_pool", 1)]
    first = x509.load_pem_x509_certificate(deployment.files.cert_file.read_bytes())
    assert _check(target, deployment.files, options=own_connection).status == SERVING
    new_cert, _ = issue(deployment.ca, deployment.ca_key, uris=[CLIENT_ID])
    deployment.files.cert_file.write_bytes(pem(new_cert))  # the key is not renewed yet
    assert _check(target, deployment.files, options=own_connection).status == SERVING
    assert _serial_seen(servicer.peers[-1]) == first.serial_number


def test_streaming_and_concurrent_calls_from_threads_and_another_loop(deployment, servers, client_loop):
    port, servicer = servers.grpc_server(*deployment.server(), deployment.ca_pem)
    target = f"127.0.0.1:{port}"

    with sync_channel(target, deployment.files, SERVER_ID) as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(REQUEST, timeout=WAIT)
        assert next(watch).status == SERVING
        watch.cancel()

    def many_checks(_):
        with sync_channel(target, deployment.files, SERVER_ID) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            return [stub.Check(REQUEST, timeout=WAIT).status for _ in range(20)]

    async def aio_calls():
        async with aio_channel(target, deployment.files, SERVER_ID) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            checks = await asyncio.gather(*(stub.Check(REQUEST, timeout=WAIT) for _ in range(20)))
            stream = stub.Watch(REQUEST, timeout=WAIT)
            first = await stream.read()
            stream.cancel()
            assert await stream.code() == grpc.StatusCode.CANCELLED  # settled before this loop closes
            return [c.status for c in checks] + [first.status]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        from_loop = pool.submit(client_loop.run, aio_calls())
        from_threads = list(pool.map(many_checks, range(6)))
        assert from_loop.result(WAIT) == [SERVING] * 21
    assert from_threads == [[SERVING] * 20] * 6
    assert len(servicer.peers) == 1 + 6 * 20 + 21


def test_bad_arguments_are_refused_at_once(deployment):
    with pytest.raises(ValueError, match="host:port"):
        sync_channel("localhost", deployment.files, SERVER_ID)
    with pytest.raises(ValueError, match="spiffe://"):
        sync_channel("localhost:1", deployment.files, "host")


def test_missing_client_credentials_are_reported(deployment, servers, tmp_path):
    port, _ = servers.grpc_server(*deployment.server(), deployment.ca_pem)
    files = CredentialFiles(deployment.files.ca_file, tmp_path / "missing.pem", tmp_path / "missing.key")
    assert _refusal(f"127.0.0.1:{port}", files) == grpc.StatusCode.UNAVAILABLE
    assert failure_counts(f"127.0.0.1:{port}").keys() == {spiffe_channels.CLIENT_CREDENTIALS_INVALID}


def test_bytes_flow_both_ways_with_backpressure_and_the_servers_close_is_passed_on(deployment, servers, tmp_path):
    """Below gRPC: 8 MiB through the bridge and back, then the server's EOF reaches the local client."""
    size = 8 * 1024 * 1024
    port, received, closed = servers.tls_server(*deployment.server(), deployment.ca_pem, tmp_path, echo=size)
    target = f"127.0.0.1:{port}"
    [path], _ = spiffe_channels._bridge().listen(target, deployment.files, SERVER_ID)
    payload = bytes(range(256)) * (size // 256)
    with socket.socket(socket.AF_UNIX) as local:
        local.settimeout(WAIT)
        local.connect(str(path))
        sender = threading.Thread(target=local.sendall, args=(payload,))
        sender.start()
        echoed = bytearray()
        while chunk := local.recv(1 << 20):
            echoed += chunk
        sender.join(WAIT)
    assert bytes(echoed) == payload
    assert closed.wait(WAIT) and received[0] == payload
    assert failure_counts(target) == {}


def test_a_server_that_never_answers_the_handshake_times_out(deployment, server_loop, monkeypatch):
    monkeypatch.setattr(spiffe_channels, "HANDSHAKE_TIMEOUT_SECONDS", 0.2)
    hold = asyncio.Event()

    async def silent(reader, writer):
        await hold.wait()
        writer.close()

    listener = server_loop.run(asyncio.start_server(silent, "127.0.0.1", 0))
    try:
        target = f"127.0.0.1:{listener.sockets[0].getsockname()[1]}"
        assert _refusal(target, deployment.files) == grpc.StatusCode.UNAVAILABLE
        assert failure_counts(target).keys() == {spiffe_channels.TLS_HANDSHAKE_FAILED}
    finally:
        server_loop.loop.call_soon_threadsafe(hold.set)
        server_loop.run(_close(listener))


def test_closing_the_bridge_ends_open_streams(deployment, servers):
    port, _ = servers.grpc_server(*deployment.server(), deployment.ca_pem)
    with sync_channel(f"127.0.0.1:{port}", deployment.files, SERVER_ID) as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(REQUEST, timeout=WAIT)
        assert next(watch).status == SERVING
        close_bridge()
        with pytest.raises(grpc.RpcError) as ended:
            next(watch)
    assert ended.value.code() == grpc.StatusCode.UNAVAILABLE


def test_peer_channels_reconnect_promptly_but_keep_grpc_connect_timeout():
    """Re-dial a restarted peer at most 0.5 s apart; never shorten the connect timeout, which gRPC core takes
    from grpc.min_reconnect_backoff_ms (a short one failed TLS handshakes on a loaded machine)."""
    from shared.rpc.channels import peer_options

    options = dict(peer_options("host"))
    assert options["grpc.max_reconnect_backoff_ms"] <= 500
    assert "grpc.min_reconnect_backoff_ms" not in options


def _resolving_to(monkeypatch, addresses: list[str], port: int) -> None:
    """The bridge's name lookups answer `addresses` as they are at each lookup (a headless Service's pods)."""
    async def resolve(host, _port):
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))
                for address in addresses]

    monkeypatch.setattr(spiffe_channels, "_resolve", resolve)


def _open_connections(target: str) -> dict[str, int]:
    """The bridge's connections to `target` per server address, read on the bridge's own loop."""
    bridge = spiffe_channels._current

    async def snapshot() -> dict[str, int]:
        return {address: count for listener in bridge._listeners.values() if listener.target == target
                for address, count in listener.open.items()}

    return asyncio.run_coroutine_threadsafe(snapshot(), bridge._loop).result(WAIT)


def test_calls_to_a_name_are_shared_by_every_server_it_resolves_to(deployment, servers, monkeypatch):
    chain, key = deployment.server()
    port, first = servers.grpc_server(chain, key, deployment.ca_pem)
    _, second = servers.grpc_server(chain, key, deployment.ca_pem, address=f"127.0.0.2:{port}")
    _resolving_to(monkeypatch, ["127.0.0.1", "127.0.0.2"], port)
    target = f"replicas.test:{port}"
    with sync_channel(target, deployment.files, SERVER_ID) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        assert stub.Check(REQUEST, timeout=WAIT).status == SERVING
        # round_robin connects every socket; each connection went to the server with fewer of them.
        half = spiffe_channels.SLOTS_PER_NAME // 2
        wait_until(lambda: _open_connections(target) == {"127.0.0.1": half, "127.0.0.2": half},
                   what="the bridged connections, half to each server", detail=lambda: _open_connections(target))
        before = len(first.peers), len(second.peers)
        for _ in range(40):
            assert stub.Check(REQUEST, timeout=WAIT).status == SERVING
    shares = len(first.peers) - before[0], len(second.peers) - before[1]
    assert sum(shares) == 40 and min(shares) >= 15, shares
    assert failure_counts(target) == {}


def test_a_server_added_behind_the_name_gets_calls_once_connections_age(deployment, servers, monkeypatch):
    """A replica scaled up later: the servers' max_connection_age makes the channel re-dial, and the re-dial goes
    to the server with the fewest connections. No call fails while connections are replaced."""
    chain, key = deployment.server()
    aged = [("grpc.max_connection_age_ms", 300)]
    port, first = servers.grpc_server(chain, key, deployment.ca_pem, options=aged)
    _, second = servers.grpc_server(chain, key, deployment.ca_pem, address=f"127.0.0.2:{port}", options=aged)
    addresses = ["127.0.0.1"]
    _resolving_to(monkeypatch, addresses, port)
    target = f"replicas.test:{port}"
    with sync_channel(target, deployment.files, SERVER_ID) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        assert stub.Check(REQUEST, timeout=WAIT).status == SERVING
        assert second.peers == []
        addresses.append("127.0.0.2")
        wait_until(lambda: stub.Check(REQUEST, timeout=WAIT).status == SERVING and second.peers,
                   what="the added server answering calls")
    assert first.peers and failure_counts(target) == {}


@pytest.mark.parametrize("dead", ["refuses", "never answers"])
def test_a_dead_address_behind_the_name_is_passed_over_without_failing_a_dial(deployment, servers, monkeypatch, dead):
    """A replica whose pod is gone refuses (nothing listens), or, when its node is gone, never answers: each dial
    gives it a bounded share of the connect budget and goes on to the live one, so no dial fails; afterwards it
    is tried last."""
    monkeypatch.setattr(spiffe_channels, "ADDRESS_CONNECT_SECONDS", 0.3)
    chain, key = deployment.server()
    port, alive = servers.grpc_server(chain, key, deployment.ca_pem)
    dead_address = "127.0.0.3"  # nothing listens there: refused at once
    if dead == "never answers":
        dead_address = "192.0.2.1"  # TEST-NET-1; its connects are made to hang, as to a node that is gone
        bridge_loop = spiffe_channels._bridge()._loop
        real_connect = bridge_loop.sock_connect

        async def connect(sock, address):
            if address[0] == dead_address:
                await asyncio.Event().wait()
            return await real_connect(sock, address)

        monkeypatch.setattr(bridge_loop, "sock_connect", connect)
    _resolving_to(monkeypatch, [dead_address, "127.0.0.1"], port)
    target = f"replicas.test:{port}"
    with sync_channel(target, deployment.files, SERVER_ID) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for _ in range(10):
            assert stub.Check(REQUEST, timeout=WAIT).status == SERVING
        wait_until(lambda: _open_connections(target) == {"127.0.0.1": spiffe_channels.SLOTS_PER_NAME},
                   what="every bridged connection at the address that answers",
                   detail=lambda: _open_connections(target))
    assert len(alive.peers) == 10
    assert failure_counts(target) == {}, "a dial failed instead of going on to the live address"
