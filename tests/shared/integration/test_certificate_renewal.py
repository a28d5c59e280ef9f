"""A server picks up its renewed certificate, and its issuer's rotated CA bundle, without a restart (how
cert-manager's CSI drivers and SPIRE renew them)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import ssl

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from shared.identity.certs import (
    CA_CERT_FILE,
    Credentials,
    ca_key_path,
    cert_path,
    create_ca,
    issue_leaf,
    key_path,
    load_credentials,
)
from shared.rpc.authz import declared_callers
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import SERVICES, invoke
from shared.rpc.runtime import registration_for, start_server
from tessera.compiler.v1 import compiler_pb2_grpc
from tests.fixtures.waiting import wait_until_async


def _server_serial(port: int, cert_dir, client: str = "host") -> int:
    """The serial of the certificate the server presents to a new connection (a real mTLS handshake)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(cert_dir / CA_CERT_FILE))
    context.check_hostname = False
    context.set_alpn_protocols(["h2"])
    context.load_cert_chain(str(cert_path(cert_dir, client)), str(key_path(cert_dir, client)))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname=None) as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


def _write_atomically(path, data: bytes) -> None:
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)


def test_a_renewed_certificate_is_served_to_new_connections(cert_dir, tmp_path, caplog):
    own = tmp_path / "compiler"
    own.mkdir(mode=0o700)
    for source in (cert_dir / CA_CERT_FILE, cert_path(cert_dir, "compiler"), key_path(cert_dir, "compiler")):
        shutil.copy2(source, own / source.name)
    caplog.set_level(logging.INFO, logger="tessera.renewal")
    credentials = load_credentials("compiler", own / CA_CERT_FILE, cert_path(own, "compiler"),
                                   key_path(own, "compiler"))
    ca_cert = x509.load_pem_x509_certificate((cert_dir / CA_CERT_FILE).read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path(cert_dir).read_bytes(), password=None)

    async def scenario():
        servicer = compiler_pb2_grpc.CompilerServiceServicer()
        running = await start_server(credentials, [registration_for("compiler", servicer)])
        try:
            loop = asyncio.get_running_loop()
            serial = lambda: loop.run_in_executor(None, _server_serial, running.port, cert_dir)  # noqa: E731
            first = await serial()
            assert first == x509.load_pem_x509_certificate(credentials.cert_pem).serial_number

            # A renewal that is only half written (a certificate without its new key) is not used.
            renewed, renewed_key = issue_leaf(ca_cert, ca_key, "compiler")
            _write_atomically(cert_path(own, "compiler"), renewed.public_bytes(serialization.Encoding.PEM))
            assert await serial() == first

            # Once the key follows, new connections get the renewed certificate; no restart.
            _write_atomically(key_path(own, "compiler"), renewed_key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
            async def renewed_serial():
                now = await serial()
                return now if now == renewed.serial_number else None

            now = await wait_until_async(renewed_serial, 60, what="new connections getting the renewed certificate")
            return first, now, renewed.serial_number
        finally:
            await running.stop(0)

    first, now, expected = asyncio.run(scenario())
    assert now == expected != first
    assert "renewed certificate not used; keeping the current one" in caplog.text
    assert "certificate renewed" in caplog.text


def _pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _files(folder, name: str, ca_pem: bytes, cert, key) -> Credentials:
    """A principal's folder as an issuer's volume holds it: the CA bundle, the certificate and the key."""
    folder.mkdir(mode=0o700, exist_ok=True)
    _write_atomically(folder / CA_CERT_FILE, ca_pem)
    _write_atomically(key_path(folder, name), key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    _write_atomically(cert_path(folder, name), _pem(cert))
    return load_credentials(name, folder / CA_CERT_FILE, cert_path(folder, name), key_path(folder, name))


def _call(address: str, credentials: Credentials):
    channel = sync_channel(address, credentials, "compiler")
    try:
        invoke(channel, "compiler", "Compile", timeout=10)
    except grpc.RpcError as exc:
        return exc.code()
    finally:
        channel.close()
    return grpc.StatusCode.OK


def test_a_rotated_ca_bundle_is_followed_without_a_restart(tmp_path, caplog):
    """How SPIRE and cert-manager rotate their CA: the next CA joins the bundle, then certificates come from it.
    The server serves its certificate from the new CA to new connections, accepts callers of either CA in the
    bundle, and still refuses a CA outside it."""
    caller = declared_callers(SERVICES["compiler"][0].methods_by_name["Compile"])[0]
    first_ca, first_key = create_ca("first CA")
    next_ca, next_key = create_ca("next CA")
    foreign_ca, foreign_key = create_ca("foreign CA")
    server = _files(tmp_path / "compiler", "compiler", _pem(first_ca), *issue_leaf(first_ca, first_key, "compiler"))
    caplog.set_level(logging.INFO, logger="tessera.renewal")
    bundle = _pem(first_ca) + _pem(next_ca)
    old_caller = _files(tmp_path / "old", caller, bundle, *issue_leaf(first_ca, first_key, caller))
    new_caller = _files(tmp_path / "new", caller, bundle, *issue_leaf(next_ca, next_key, caller))
    foreign = _files(tmp_path / "foreign", caller, _pem(foreign_ca) + bundle,
                     *issue_leaf(foreign_ca, foreign_key, caller))

    async def scenario():
        servicer = compiler_pb2_grpc.CompilerServiceServicer()
        running = await start_server(server, [registration_for("compiler", servicer)])
        try:
            loop = asyncio.get_running_loop()
            address = f"127.0.0.1:{running.port}"
            call = lambda credentials: loop.run_in_executor(None, _call, address, credentials)  # noqa: E731
            before = await call(new_caller)
            # The next CA joins the bundle, then the server's certificate comes from it.
            renewed, renewed_key = issue_leaf(next_ca, next_key, "compiler")
            _files(tmp_path / "compiler", "compiler", bundle, renewed, renewed_key)

            async def after_rotation():
                outcome = await call(new_caller)
                return outcome if outcome != grpc.StatusCode.UNAVAILABLE else None

            rotated = await wait_until_async(after_rotation, 60, what="the server following the rotated bundle")
            served = await loop.run_in_executor(None, _server_serial, running.port, tmp_path / "new", caller)
            return before, rotated, await call(old_caller), await call(foreign), served == renewed.serial_number
        finally:
            await running.stop(0)

    before, rotated, old, outside, serves_the_renewed = asyncio.run(scenario())
    # Before: the server knew only the first CA, so a caller from the next one failed the handshake.
    assert before == grpc.StatusCode.UNAVAILABLE
    # Past authorization (the bare servicer answers UNIMPLEMENTED) for either CA of the bundle.
    assert rotated == old == grpc.StatusCode.UNIMPLEMENTED
    assert outside == grpc.StatusCode.UNAVAILABLE
    assert "CA bundle renewed" in caplog.text
    assert serves_the_renewed  # what a new connection is shown (a real handshake), not the file the test wrote
