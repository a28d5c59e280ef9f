"""A server picks up its renewed certificate without a restart (how cert-manager's CSI driver renews it)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from shared.certs import CA_CERT_FILE, ca_key_path, cert_path, issue_leaf, key_path, load_credentials
from shared.runtime import registration_for, start_server
from tessera.compiler.v1 import compiler_pb2_grpc
from tests.fixtures.waiting import wait_until_async


def _server_serial(port: int, cert_dir) -> int:
    """The serial of the certificate the server presents to a new connection (a real mTLS handshake)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(cert_dir / CA_CERT_FILE))
    context.check_hostname = False
    context.set_alpn_protocols(["h2"])
    context.load_cert_chain(str(cert_path(cert_dir, "host")), str(key_path(cert_dir, "host")))
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
