"""A deployment under a configured identity scheme (a Kubernetes ServiceAccount path, another trust domain):
`tessera certs` issues those ids, every declared caller gets through a real mTLS server and every other is
denied, and a certificate from the same CA naming the local scheme's id is no principal at all."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from shared.identity.certs import (
    CA_CERT_FILE,
    Credentials,
    ca_key_path,
    cert_path,
    issue_deployment,
    issue_leaf,
    key_path,
    load_credentials,
    uri_sans,
)
from shared.identity.principals import PRINCIPAL_NAMES
from shared.rpc.authz import declared_callers
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import SERVICES, invoke
from shared.rpc.errors import error_details
from shared.rpc.runtime import registration_for, start_server
from tessera.compiler.v1 import compiler_pb2_grpc

SCHEME = {"TESSERA_TRUST_DOMAIN": "example.org", "TESSERA_SPIFFE_PATH": "/ns/tessera/sa/{principal}",
          "TESSERA_CLI_SPIFFE_PATH": "/ns/tessera/operator/cli"}
METHOD = "Compile"


@pytest.fixture
def scheme(monkeypatch):
    for name, value in SCHEME.items():
        monkeypatch.setenv(name, value)


def _outcome(address: str, credentials: Credentials):
    channel = sync_channel(address, credentials, "compiler")
    try:
        invoke(channel, "compiler", METHOD, timeout=10)
        return None
    except grpc.RpcError as exc:
        return error_details(exc)
    finally:
        channel.close()


def test_declared_callers_pass_and_the_rest_are_denied_under_a_configured_scheme(scheme, tmp_path):
    issue_deployment(tmp_path)
    own = {name: load_credentials(name, tmp_path / CA_CERT_FILE, cert_path(tmp_path, name), key_path(tmp_path, name))
           for name in PRINCIPAL_NAMES}
    assert own["agent"].identity == "spiffe://example.org/ns/tessera/sa/agent"
    assert own["cli"].identity == "spiffe://example.org/ns/tessera/operator/cli"
    declared = set(declared_callers(SERVICES["compiler"][0].methods_by_name[METHOD]))
    assert declared and declared != set(PRINCIPAL_NAMES)

    # The same CA issues a certificate naming a declared caller's id under the local scheme.
    ca = x509.load_pem_x509_certificate((tmp_path / CA_CERT_FILE).read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path(tmp_path).read_bytes(), password=None)
    caller = sorted(declared)[0]
    with pytest.MonkeyPatch.context() as local:
        for name in SCHEME:
            local.delenv(name)
        cert, key = issue_leaf(ca, ca_key, caller)
    forged_dir = tmp_path / "forged"
    forged_dir.mkdir(mode=0o700)
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    (forged_dir / "ca.pem").write_bytes((tmp_path / CA_CERT_FILE).read_bytes())
    (forged_dir / "c.pem").write_bytes(cert_pem)
    (forged_dir / "c.key").write_bytes(key_pem)
    (forged_dir / "c.key").chmod(0o600)
    assert uri_sans(cert) == [f"spiffe://tessera.local/svc/{caller}"]
    forged = Credentials(caller, uri_sans(cert)[0], own[caller].ca_pem, cert_pem, key_pem,
                         forged_dir / "ca.pem", forged_dir / "c.pem", forged_dir / "c.key")

    async def serve_and_call():
        running = await start_server(own["compiler"],
                                     [registration_for("compiler", compiler_pb2_grpc.CompilerServiceServicer())])
        try:
            address = f"127.0.0.1:{running.port}"
            loop = asyncio.get_running_loop()
            outcomes = {name: await loop.run_in_executor(None, _outcome, address, own[name])
                        for name in PRINCIPAL_NAMES}
            return outcomes, await loop.run_in_executor(None, _outcome, address, forged)
        finally:
            await running.stop(0)

    outcomes, forged_outcome = asyncio.run(serve_and_call())
    for name, outcome in outcomes.items():
        if name in declared:  # past authorization: the bare servicer answers UNIMPLEMENTED
            assert outcome is not None and outcome.code == grpc.StatusCode.UNIMPLEMENTED, (name, outcome)
        else:
            assert outcome is not None and outcome.reason == "CALLER_NOT_ALLOWED", (name, outcome)
            assert outcome.metadata["caller"] == own[name].identity
    assert forged_outcome is not None and forged_outcome.reason == "CALLER_NOT_ALLOWED", forged_outcome
    assert forged_outcome.metadata["caller"] == f"spiffe://tessera.local/svc/{caller}"
