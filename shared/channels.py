"""mTLS client channels: a principal's own certificate, the deployment CA, and the peer's SPIFFE id.

`aio_channel` and `sync_channel` authenticate the server by the SPIFFE id of
the service named (`spiffe://tessera.local/svc/<peer>`), never by its DNS name,
so the same code reaches servers whose certificates carry only that URI SAN
(cert-manager, SPIRE) and those `tessera certs` issues. They go through the
in-process bridge of `shared.spiffe_channels` and re-read renewed client
certificates from their files.

`direct_sync_channel` is gRPC's own TLS, which checks a DNS/IP SAN instead: for
tests that exercise gRPC's handshake itself against `tessera certs`'
loopback names.
"""

from __future__ import annotations

import grpc

from shared import spiffe_channels
from shared.certs import Credentials
from shared.identity import spiffe_id_for


def _files(credentials: Credentials) -> spiffe_channels.CredentialFiles:
    if not (credentials.ca_file and credentials.cert_file and credentials.key_file):
        raise ValueError(f"credentials of {credentials.principal} were not loaded from files (load_credentials)")
    return spiffe_channels.CredentialFiles(credentials.ca_file, credentials.cert_file, credentials.key_file)


def aio_channel(target: str, credentials: Credentials, peer: str) -> grpc.aio.Channel:
    """An asyncio channel to `target` that talks only to the service `peer`."""
    return spiffe_channels.aio_channel(target, _files(credentials), spiffe_id_for(peer))


def sync_channel(target: str, credentials: Credentials, peer: str) -> grpc.Channel:
    """A blocking channel to `target` that talks only to the service `peer`."""
    return spiffe_channels.sync_channel(target, _files(credentials), spiffe_id_for(peer))


def channel_credentials(credentials: Credentials) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=credentials.ca_pem,
        private_key=credentials.key_pem,
        certificate_chain=credentials.cert_pem,
    )


def direct_sync_channel(target: str, credentials: Credentials) -> grpc.Channel:
    """gRPC's own TLS (DNS/IP SAN check): tests of the handshake itself."""
    return grpc.secure_channel(target, channel_credentials(credentials))


def direct_aio_channel(target: str, credentials: Credentials) -> grpc.aio.Channel:
    return grpc.aio.secure_channel(target, channel_credentials(credentials))
