"""gRPC's own TLS between services (TESSERA_CLIENT_TLS=native, the default), over real mTLS handshakes.

The client expects the DNS name derived from the peer's SPIFFE id, whatever address it dialled; grpc core
checks the chain and that name. The same server negatives as the bridge's
(tests/shared/integration/test_spiffe_channels.py) are refused before any RPC reaches the server.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from cryptography import x509
from grpc_health.v1 import health_pb2, health_pb2_grpc

from shared.config import CLIENT_TLS_NATIVE, CLIENT_TLS_VARIABLE
from shared.identity.certs import CredentialError, Credentials, create_ca, load_credentials
from shared.identity.principals import server_name_for, server_name_for_spiffe
from shared.rpc import channels
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
    pem,
)
from tests.fixtures.waiting import wait_until_async

HOST_NAME = server_name_for("host")
COMPILER_NAME = server_name_for("compiler")


@pytest.fixture(autouse=True)
def native(monkeypatch):
    monkeypatch.delenv(CLIENT_TLS_VARIABLE, raising=False)  # the default


def _credentials(deployment: Deployment) -> Credentials:
    files = deployment.files
    return load_credentials("agent", files.ca_file, files.cert_file, files.key_file)


def _check(target: str, deployment: Deployment, peer: str = "host"):
    with channels.sync_channel(target, _credentials(deployment), peer) as channel:
        return health_pb2_grpc.HealthStub(channel).Check(REQUEST, timeout=WAIT)


def _serial(peer: dict) -> int:
    return x509.load_pem_x509_certificate(peer["x509_pem_cert"][0]).serial_number


def test_the_name_is_derived_from_the_spiffe_id_and_refused_when_it_has_no_dns_form():
    assert HOST_NAME == "host.svc.tessera.local"
    assert server_name_for("cli") == "cli.user-agent.tessera.local"
    for impossible in ("spiffe://tessera.local/svc/Host", "spiffe://tessera.local/svc/a_b", "https://x/svc/host",
                       "spiffe://tessera.local/svc//host"):
        with pytest.raises(ValueError, match="no DNS form"):
            server_name_for_spiffe(impossible)


def test_the_server_is_checked_by_its_derived_name_whatever_address_was_dialled(deployment, servers, client_loop):
    port, servicer = servers.grpc_server(*deployment.server(dns=[HOST_NAME]), deployment.ca_pem)
    target = f"127.0.0.1:{port}"  # an address the certificate does not name
    assert _check(target, deployment).status == SERVING

    async def aio_check():
        async with channels.aio_channel(target, _credentials(deployment), "host") as channel:
            return await health_pb2_grpc.HealthStub(channel).Check(REQUEST, timeout=WAIT)

    assert client_loop.run(aio_check()).status == SERVING
    # mTLS end to end: the server verified the client's own certificate and read its SPIFFE id.
    assert [peer["peer_spiffe_id"] for peer in servicer.peers] == [[CLIENT_ID.encode()]] * 2


def _another_services_certificate(deployment):
    return deployment.server(OTHER_ID, dns=[COMPILER_NAME])


def _other_ca(deployment):
    other, other_key = create_ca("another CA")
    cert, key = issue(other, other_key, uris=[SERVER_ID], dns=[HOST_NAME])
    return pem(cert), key_pem(key)


def _expired(deployment):
    return deployment.server(dns=[HOST_NAME], days=(-3, -1))


def _signed_by_another_services_certificate(deployment):
    """A service that holds its own certificate and key (not a CA) mints one for the host."""
    compiler, compiler_key = issue(deployment.ca, deployment.ca_key, uris=[OTHER_ID], dns=[COMPILER_NAME])
    cert, key = issue(compiler, compiler_key, uris=[SERVER_ID], dns=[HOST_NAME])
    return pem(cert) + pem(compiler), key_pem(key)


def _via_a_foreign_intermediate(deployment):
    other, other_key = create_ca("another CA")
    intermediate, intermediate_key = issue(other, other_key, common_name="intermediate", is_ca=True)
    cert, key = issue(intermediate, intermediate_key, uris=[SERVER_ID], dns=[HOST_NAME])
    return pem(cert) + pem(intermediate), key_pem(key)


def _uri_san_alone(deployment):
    return deployment.server()  # what URI-only identity providers issue: needs the bridge


def _two_uri_sans_no_name(deployment):
    cert, key = issue(deployment.ca, deployment.ca_key, uris=[SERVER_ID, OTHER_ID])
    return pem(cert), key_pem(key)


def _loopback_name_only(deployment):
    return deployment.server(dns=["localhost"])


@pytest.mark.parametrize("make_server", [
    _another_services_certificate, _other_ca, _expired, _signed_by_another_services_certificate,
    _via_a_foreign_intermediate, _uri_san_alone, _two_uri_sans_no_name, _loopback_name_only,
])
def test_untrusted_server_certificates_are_refused_before_any_rpc(deployment, servers, make_server):
    port, servicer = servers.grpc_server(*make_server(deployment), deployment.ca_pem)
    for target in (f"127.0.0.1:{port}", f"localhost:{port}"):
        with pytest.raises(grpc.RpcError) as refused:
            _check(target, deployment)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert servicer.peers == []


def test_a_chain_through_an_intermediate_the_deployment_ca_signed_is_that_cas_word(deployment, servers):
    """Unlike the bridge (leaves issued directly by the CA only), grpc core accepts a chain through an
    intermediate our CA signed, even though our CA's path length is 0: BoringSSL does not apply a trust
    anchor's own constraints. Only the CA's key makes such an intermediate, and that key can mint any leaf
    directly, so this trusts nothing the CA did not vouch for."""
    intermediate, intermediate_key = issue(deployment.ca, deployment.ca_key, common_name="intermediate", is_ca=True)
    cert, key = issue(intermediate, intermediate_key, uris=[SERVER_ID], dns=[HOST_NAME])
    port, _ = servers.grpc_server(pem(cert) + pem(intermediate), key_pem(key), deployment.ca_pem)
    assert _check(f"127.0.0.1:{port}", deployment).status == SERVING


def test_a_server_refuses_a_certificate_that_also_names_another_service(deployment):
    """grpc core accepts a server whose certificate carries the expected name among others, so a service
    never starts on one that would let it answer as another service."""
    cert, key = issue(deployment.ca, deployment.ca_key, uris=[SERVER_ID], dns=[HOST_NAME, COMPILER_NAME])
    directory = deployment.directory
    (directory / "host.pem").write_bytes(pem(cert))
    (directory / "host.key").write_bytes(key_pem(key))
    (directory / "host.key").chmod(0o600)
    with pytest.raises(CredentialError, match=f"also carries {COMPILER_NAME}, another service's name"):
        load_credentials("host", deployment.files.ca_file, directory / "host.pem", directory / "host.key")


def test_a_renewed_client_certificate_serves_new_calls_and_a_running_stream_is_not_cut(
        deployment, servers, client_loop, monkeypatch):
    monkeypatch.setattr(channels, "RENEWAL_CHECK_SECONDS", 0.0)
    port, servicer = servers.grpc_server(*deployment.server(dns=[HOST_NAME]), deployment.ca_pem)
    first = x509.load_pem_x509_certificate(deployment.files.cert_file.read_bytes())

    async def scenario():
        channel = channels.aio_channel(f"127.0.0.1:{port}", _credentials(deployment), "host")
        stub = health_pb2_grpc.HealthStub(channel)
        assert (await stub.Check(REQUEST, timeout=WAIT)).status == SERVING
        watch = stub.Watch(REQUEST)
        assert (await watch.read()).status == SERVING
        renewed = deployment.rotate_client()
        assert (await stub.Check(REQUEST, timeout=WAIT)).status == SERVING
        # The stream opened before the renewal still delivers.
        changed = asyncio.run_coroutine_threadsafe(
            servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING), servers.loop)
        await asyncio.wrap_future(changed)
        assert (await asyncio.wait_for(watch.read(), WAIT)).status == health_pb2.HealthCheckResponse.NOT_SERVING
        old = channel._retired[0].channel
        assert old.get_state() != grpc.ChannelConnectivity.SHUTDOWN
        watch.cancel()
        # Its last call ended: the old channel closes.
        await wait_until_async(lambda: old.get_state() == grpc.ChannelConnectivity.SHUTDOWN, WAIT,
                               what="the channel of the old certificate closes once its stream ended")
        await channel.close()
        return renewed

    renewed = client_loop.run(scenario())
    assert [_serial(peer) for peer in servicer.peers] == [first.serial_number, first.serial_number,
                                                          renewed.serial_number]


def test_a_half_written_renewal_keeps_the_current_certificate(deployment, servers, client_loop, monkeypatch):
    monkeypatch.setattr(channels, "RENEWAL_CHECK_SECONDS", 0.0)
    port, servicer = servers.grpc_server(*deployment.server(dns=[HOST_NAME]), deployment.ca_pem)
    first = x509.load_pem_x509_certificate(deployment.files.cert_file.read_bytes())

    async def scenario():
        async with channels.aio_channel(f"127.0.0.1:{port}", _credentials(deployment), "host") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            await stub.Check(REQUEST, timeout=WAIT)
            new_cert, _ = issue(deployment.ca, deployment.ca_key, uris=[CLIENT_ID])
            deployment.files.cert_file.write_bytes(pem(new_cert))  # the key is not renewed yet
            assert (await stub.Check(REQUEST, timeout=WAIT)).status == SERVING

    client_loop.run(scenario())
    assert [_serial(peer) for peer in servicer.peers] == [first.serial_number] * 2


def test_the_mode_is_a_checked_setting(monkeypatch):
    from shared.config import ConfigError, client_tls_mode

    assert client_tls_mode() == CLIENT_TLS_NATIVE
    monkeypatch.setenv(CLIENT_TLS_VARIABLE, "bridge")
    with pytest.raises(ConfigError, match="TESSERA_CLIENT_TLS='bridge': expected native"):
        client_tls_mode()
