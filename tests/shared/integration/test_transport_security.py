"""Servers require a client certificate issued by the deployment CA."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from cli.launcher import cli_credentials
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import SERVICES, invoke


def _ca(cert_dir):
    return (cert_dir / "ca.pem").read_bytes()


@pytest.mark.parametrize("service", list(SERVICES))
def test_no_client_certificate_is_refused(running_set, cert_dir, service):
    creds = grpc.ssl_channel_credentials(root_certificates=_ca(cert_dir))
    with grpc.secure_channel(running_set.handles[service].address, creds) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("service", list(SERVICES))
def test_certificate_from_another_ca_is_refused(running_set, cert_dir, other_ca_dir, service):
    impostor = cli_credentials(other_ca_dir, "cli")
    # The impostor trusts our CA (so it can verify the server), but presents
    # a client certificate that our CA never issued.
    creds = grpc.ssl_channel_credentials(root_certificates=_ca(cert_dir), private_key=impostor.key_pem,
                                         certificate_chain=impostor.cert_pem)
    with grpc.secure_channel(running_set.handles[service].address, creds) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            invoke(channel, service, "GetInfo", timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_plaintext_is_refused(running_set):
    with grpc.insecure_channel(running_set.handles["host"].address) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_client_does_not_trust_a_server_from_another_ca(running_set, other_ca_dir, credentials):
    ours = credentials("cli")
    foreign_root = (other_ca_dir / "ca.pem").read_bytes()
    creds = grpc.ssl_channel_credentials(root_certificates=foreign_root, private_key=ours.key_pem,
                                         certificate_chain=ours.cert_pem)
    with grpc.secure_channel(running_set.handles["host"].address, creds) as channel:
        with pytest.raises(grpc.RpcError):
            invoke(channel, "host", "GetInfo", timeout=5)


def test_identity_comes_from_the_certificate_not_metadata(running_set, credentials):
    # The agent claims to be the CLI in metadata; the broker still sees the agent.
    with sync_channel(running_set.handles["capabilities"].address, credentials("agent"), "capabilities") as channel:
        from shared.rpc.errors import error_details

        call = channel.unary_unary("/tessera.capabilities.v1.CapabilityBrokerService/Decide")
        with pytest.raises(grpc.RpcError) as denied:
            call(b"", timeout=5, metadata=[("x-spiffe-id", "spiffe://tessera.local/user-agent/cli"),
                                            ("x-caller", "cli")])
    details = error_details(denied.value)
    assert details.reason == "CALLER_NOT_ALLOWED"
    assert details.metadata["caller"] == "spiffe://tessera.local/svc/agent"
