"""Certificates with the SPIFFE URI SAN alone, as csi-driver-spiffe and SPIRE issue them (no DNS or IP names, ids
named after each pod's ServiceAccount in their own trust domain): the whole set runs on them with
TESSERA_CLIENT_TLS=spiffe-bridge and that identity scheme, every client checking the server's URI SAN itself;
gRPC's own TLS (the default) cannot reach them."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from cli.launcher import ServiceSet, cli_credentials
from shared.config import CLIENT_TLS_NATIVE, CLIENT_TLS_SPIFFE_BRIDGE, CLIENT_TLS_VARIABLE
from shared.identity.actors import assert_actor
from shared.identity.certs import issue_deployment, load_signing_key, signing_key_path
from shared.identity.principals import GRPC_SERVICE_NAMES
from shared.rpc import spiffe_channels
from shared.rpc.channels import direct_sync_channel, sync_channel
from shared.rpc.contracts import invoke, invoke_stream
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2

SERVICE_ACCOUNT_SCHEME = {"TESSERA_TRUST_DOMAIN": "cluster.local",
                          "TESSERA_SPIFFE_PATH": "/ns/tessera/sa/{principal}"}


@pytest.fixture(scope="module")
def spiffe_set(tmp_path_factory, service_env):
    certs = tmp_path_factory.mktemp("spiffe-certs")
    env = {**service_env, "TESSERA_HOST_DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('h') / 'host.sqlite'}",
           "TESSERA_CAPABILITIES_DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('b') / 'broker.sqlite'}",
           "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{tmp_path_factory.mktemp('r') / 'results.sqlite'}"}
    with pytest.MonkeyPatch.context() as patch:  # this process's channels too: the launcher's and the tests'
        patch.setenv(CLIENT_TLS_VARIABLE, CLIENT_TLS_SPIFFE_BRIDGE)
        for name, value in SERVICE_ACCOUNT_SCHEME.items():  # the children inherit it from the launcher
            patch.setenv(name, value)
        issue_deployment(certs, spiffe_only=True)
        services = ServiceSet(certs, tmp_path_factory.mktemp("spiffe-run"), ephemeral_ports=True, extra_env=env)
        services.start()
        yield services
        assert all(code == 0 for code in services.stop().values())


def test_the_certificates_carry_no_dns_or_ip_name(spiffe_set):
    for name in GRPC_SERVICE_NAMES:
        cert = x509.load_pem_x509_certificate(cli_credentials(spiffe_set.cert_dir, name).cert_pem)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert [type(general).__name__ for general in sans] == ["UniformResourceIdentifier"]
        assert sans[0].value == f"spiffe://cluster.local/ns/tessera/sa/{name}"


def test_a_turn_crosses_every_service_on_spiffe_only_certificates(spiffe_set):
    """agent → resources, host, capabilities; host → compiler, resources: each hop authenticated by SPIFFE id."""
    person = assert_actor(load_signing_key(signing_key_path(spiffe_set.cert_dir, "cli")), "spiffe", "acme")
    cli = cli_credentials(spiffe_set.cert_dir)
    with sync_channel(spiffe_set.handles["host"].address, cli, "host") as host:
        session = invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(actor=person, request_id="s1"))
    with sync_channel(spiffe_set.handles["agent"].address, cli, "agent") as agent:
        events = list(invoke_stream(agent, "agent", "StartTurn", agent_pb2.StartTurnRequest(
            actor=person, session_id=session.session_id, question="What is our net revenue by region?",
            request_id="r1"), timeout=120))
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and len(done.revision_ids) == 1


def test_grpcs_own_name_check_cannot_reach_them_and_a_wrong_identity_is_refused(spiffe_set):
    cli = cli_credentials(spiffe_set.cert_dir)
    address = spiffe_set.handles["host"].address
    for native in (direct_sync_channel(address, cli), sync_channel(address, cli, "host", CLIENT_TLS_NATIVE)):
        with native as channel, pytest.raises(grpc.RpcError) as unreachable:  # a DNS name check: nothing to match
            invoke(channel, "host", "GetInfo", timeout=5)
        assert unreachable.value.code() == grpc.StatusCode.UNAVAILABLE
    before = spiffe_channels.failure_counts(address).get(spiffe_channels.SERVER_IDENTITY_MISMATCH, 0)
    with sync_channel(address, cli, "compiler") as channel:  # the host answers where the compiler was expected
        with pytest.raises(grpc.RpcError) as impostor:
            invoke(channel, "compiler", "GetInfo", timeout=5)
    assert impostor.value.code() == grpc.StatusCode.UNAVAILABLE
    assert spiffe_channels.failure_counts(address)[spiffe_channels.SERVER_IDENTITY_MISMATCH] > before


def test_the_operator_cli_certificate_minted_from_the_ca_is_the_cli_and_another_cas_is_refused(spiffe_set, tmp_path):
    """`tessera deploy cli-certificate` as the operator runs it against the trust domain's CA (here the set's own):
    the services take its holder for the CLI; the same certificate from a CA they do not trust gets nowhere."""
    from cli import main as cli_main
    from shared.identity.certs import CA_CERT_FILE, ca_key_path, create_ca, load_credentials

    code = cli_main.main(["deploy", "cli-certificate", "--ca-cert", str(spiffe_set.cert_dir / CA_CERT_FILE),
                          "--ca-key", str(ca_key_path(spiffe_set.cert_dir)), "--keys", str(tmp_path / "keys"),
                          "--hours", "1"])
    assert code == 0
    keys = tmp_path / "keys" / "cli"  # the CLI's own folder of the deployment's keys
    minted = load_credentials("cli", keys / CA_CERT_FILE, keys / "cli.pem", keys / "cli.key")
    with sync_channel(spiffe_set.handles["host"].address, minted, "host") as host:
        assert invoke(host, "host", "GetInfo", timeout=10).HasField("info")
    # The keys folder as `deploy secrets --production` leaves it (the CLI's signing key beside), used as the CLI's
    # TESSERA_CERT_DIR against the addresses the operator names: no `tessera up` state here.
    (keys / "cli-signing.key").write_bytes(signing_key_path(spiffe_set.cert_dir, "cli").read_bytes())
    (keys / "cli-signing.key").chmod(0o600)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TESSERA_CERT_DIR", str(keys))
        patch.setenv("TESSERA_VAR_DIR", str(tmp_path / "no-running-set"))
        patch.setenv("TESSERA_CAPABILITIES_ADDR", spiffe_set.handles["capabilities"].address)
        out = io.StringIO()
        with redirect_stdout(out):
            assert cli_main.main(["approvals", "list", "--json"]) == 0
    assert isinstance(json.loads(out.getvalue()), dict | list)
    other_cert, other_key = create_ca("another deployment")
    (tmp_path / "other-ca.pem").write_bytes(other_cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "other-ca.key").write_bytes(other_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    stranger = tmp_path / "stranger" / "cli"
    assert cli_main.main(["deploy", "cli-certificate", "--ca-cert", str(tmp_path / "other-ca.pem"), "--ca-key",
                          str(tmp_path / "other-ca.key"), "--keys", str(tmp_path / "stranger")]) == 0
    with (stranger / CA_CERT_FILE).open("ab") as bundle:  # it trusts the services; they do not trust it
        bundle.write(minted.ca_pem)
    foreign = load_credentials("cli", stranger / CA_CERT_FILE, stranger / "cli.pem", stranger / "cli.key")
    with sync_channel(spiffe_set.handles["host"].address, foreign, "host") as host, \
            pytest.raises(grpc.RpcError) as refused:
        invoke(host, "host", "GetInfo", timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
