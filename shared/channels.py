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

import functools
import json

import grpc
from google.protobuf.descriptor import MethodDescriptor

from shared import spiffe_channels
from shared.certs import Credentials
from shared.contracts import SERVICES
from shared.identity import spiffe_id_for

# A peer that restarts is back within a second or two. gRPC's default reconnect backoff
# (1 s growing to 120 s) would keep its callers failing long after that; this keeps
# re-dialling at most half a second apart, which costs nothing while the peer is up.
# Not grpc.min_reconnect_backoff_ms: gRPC core reads it as the minimum *connect timeout* (20 s by default),
# and a short one makes a TLS handshake through the bridge on a busy machine fail as "timed out".
RECONNECT_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
)
# Reads the contracts declare side-effect free are retried on UNAVAILABLE for about
# 2.5 s (0.2 + 0.4 + 0.8 + 1.0 s between five attempts): a peer restarting under a
# call is a pause, not an error. Anything else fails fast and its caller decides.
READ_RETRY_POLICY = {
    "maxAttempts": 5,
    "initialBackoff": "0.2s",
    "maxBackoff": "1s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}


def _retryable(method: MethodDescriptor) -> bool:
    return method.GetOptions().idempotency_level in (
        method.GetOptions().NO_SIDE_EFFECTS, method.GetOptions().IDEMPOTENT)


@functools.cache
def peer_options(peer: str) -> tuple[tuple[str, object], ...]:
    """Channel options for calls to process `peer`: prompt reconnects, retried reads."""
    options = [*RECONNECT_OPTIONS, ("grpc.enable_retries", 1)]
    if peer in SERVICES:
        service = SERVICES[peer][0]
        names = [{"service": service.full_name, "method": m.name} for m in service.methods if _retryable(m)]
        if names:
            config = {"methodConfig": [{"name": names, "retryPolicy": READ_RETRY_POLICY}]}
            options.append(("grpc.service_config", json.dumps(config)))
    return tuple(options)


def _files(credentials: Credentials) -> spiffe_channels.CredentialFiles:
    if not (credentials.ca_file and credentials.cert_file and credentials.key_file):
        raise ValueError(f"credentials of {credentials.principal} were not loaded from files (load_credentials)")
    return spiffe_channels.CredentialFiles(credentials.ca_file, credentials.cert_file, credentials.key_file)


def aio_channel(target: str, credentials: Credentials, peer: str) -> grpc.aio.Channel:
    """An asyncio channel to `target` that talks only to the service `peer`."""
    return spiffe_channels.aio_channel(target, _files(credentials), spiffe_id_for(peer), peer_options(peer))


def sync_channel(target: str, credentials: Credentials, peer: str) -> grpc.Channel:
    """A blocking channel to `target` that talks only to the service `peer`."""
    return spiffe_channels.sync_channel(target, _files(credentials), spiffe_id_for(peer), peer_options(peer))


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
