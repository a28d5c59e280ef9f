"""Each process holds only its own secrets, and only certificates the CA issued itself are callers.

Read the way an attacker on the machine would: every running process's
environment (/proc/<pid>/environ) and the certificate folder it was handed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import stat
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from shared.identity.certs import CA_CERT_FILE, ca_key_path, is_private_file
from shared.identity.principals import PROCESS_NAMES, spiffe_id_for
from shared.rpc.errors import error_details
from shared.rpc.runtime import registration_for, start_server
from tessera.compiler.v1 import compiler_pb2, compiler_pb2_grpc
from tests.fixtures.isolation import foreign_variables

COMPILE = "/tessera.compiler.v1.CompilerService/Compile"


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def _private_contents(cert_dir: Path) -> dict[bytes, str]:
    """Every key and secret of the deployment → the file it came from."""
    found = {ca_key_path(cert_dir).read_bytes(): "ca.key"}
    for path in cert_dir.iterdir():
        if path.is_file() and is_private_file(path):
            found[path.read_bytes()] = path.name
    return found


@pytest.mark.parametrize("name", PROCESS_NAMES)
def test_a_process_environment_holds_only_its_own_variables(running_set, name):
    env = _environ(running_set.handles[name].pid)
    assert foreign_variables(env, name) == []
    # The operator's shell secrets (the session fixture sets one) reach no service.
    assert "OPERATOR_SHELL_TOKEN" not in env
    # The model API key is the agent's alone.
    assert ("TESSERA_AGENT_MODEL_API_KEY" in env) == (name == "agent")


@pytest.mark.parametrize("name", PROCESS_NAMES)
def test_a_process_certificate_folder_holds_only_its_own_keys(running_set, cert_dir, name):
    folder = Path(_environ(running_set.handles[name].pid)["TESSERA_CERT_DIR"])
    assert folder != cert_dir and stat.S_IMODE(folder.stat().st_mode) == 0o700
    secrets_of_the_deployment = _private_contents(cert_dir)
    held = sorted(path.name for path in folder.iterdir())
    assert CA_CERT_FILE in held and f"{name}.pem" in held and f"{name}.key" in held
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        if is_private_file(path):
            # A private file must be one of the principal's own, byte for byte.
            origin = secrets_of_the_deployment.get(path.read_bytes())
            assert origin is not None and origin.startswith(f"{name}"), (path.name, origin)
    # No other principal's private bytes hide under another name either (the CA key included).
    contents = {path.read_bytes() for path in folder.iterdir()}
    leaked = [origin for data, origin in secrets_of_the_deployment.items()
              if data in contents and not origin.startswith(name)]
    assert leaked == []


def test_the_ca_key_lives_apart_and_no_process_is_handed_it(running_set, cert_dir):
    key = ca_key_path(cert_dir)
    assert key.parent != cert_dir and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    for name in PROCESS_NAMES:
        env = _environ(running_set.handles[name].pid)
        assert Path(env["TESSERA_CERT_DIR"]).resolve() not in (cert_dir.resolve(), key.parent.resolve())


def test_run_state_is_private(running_set):
    for folder in (running_set.run_dir, running_set.run_dir / "logs", running_set.run_dir / "ready"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for handle in running_set.handles.values():
        assert stat.S_IMODE(handle.log_path.stat().st_mode) == 0o600
        assert stat.S_IMODE(handle.ready_file.stat().st_mode) == 0o600


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _rogue_host_chain(cert_dir: Path) -> tuple[bytes, bytes]:
    """A certificate for the host's SPIFFE id, issued by an intermediate that the real CA signed
    (which the CA's pathlen:0 forbids): the chain verifies in gRPC core, yet must not be a caller."""
    ca_cert = x509.load_pem_x509_certificate((cert_dir / CA_CERT_FILE).read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path(cert_dir).read_bytes(), password=None)
    now = dt.datetime.now(dt.UTC)

    def build(subject: str, issuer: x509.Name, public_key, is_ca: bool):
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(issuer).public_key(public_key).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True))
        if not is_ca:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.UniformResourceIdentifier(spiffe_id_for("host"))]), critical=False).add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        return builder

    middle_key = ec.generate_private_key(ec.SECP256R1())
    middle = build("rogue intermediate", ca_cert.subject, middle_key.public_key(), True).sign(ca_key, hashes.SHA256())
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = build("tessera-host", middle.subject, leaf_key.public_key(), False).sign(middle_key, hashes.SHA256())
    return _pem(leaf) + _pem(middle), _key_pem(leaf_key)


class _Compiler(compiler_pb2_grpc.CompilerServiceServicer):
    async def Compile(self, request, context):
        return compiler_pb2.CompileResponse()


def test_a_caller_certificate_through_an_intermediate_is_refused(cert_dir, credentials):
    chain, key = _rogue_host_chain(cert_dir)
    real_host = credentials("host")

    async def scenario():
        running = await start_server(credentials("compiler"), [registration_for("compiler", _Compiler())])
        outcomes = {}
        try:
            for label, (cert_pem, key_pem) in {"direct": (real_host.cert_pem, real_host.key_pem),
                                                 "intermediate": (chain, key)}.items():
                creds = grpc.ssl_channel_credentials(real_host.ca_pem, key_pem, cert_pem)
                async with grpc.aio.secure_channel(f"localhost:{running.port}", creds) as channel:
                    try:
                        await channel.unary_unary(COMPILE)(b"", timeout=5)
                        outcomes[label] = "OK"
                    except grpc.aio.AioRpcError as exc:
                        outcomes[label] = (exc.code(), error_details(exc).reason)
        finally:
            await running.stop(None)
        return outcomes

    outcomes = asyncio.run(scenario())
    assert outcomes["direct"] == "OK"
    assert outcomes["intermediate"] == (grpc.StatusCode.PERMISSION_DENIED, "CALLER_NOT_ISSUED_BY_CA")
