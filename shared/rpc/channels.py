"""mTLS client channels: a principal's own certificate, the deployment CA, and the peer's identity.

`aio_channel` and `sync_channel` talk only to the service named. By default
(TESSERA_CLIENT_TLS=native) they are gRPC's own TLS: grpc core checks the
server's chain against the deployment CA and its DNS name against the one
derived from the peer's SPIFFE id (`identity.server_name_for`, set as
`grpc.ssl_target_name_override`), so no byte is copied through Python. With
TESSERA_CLIENT_TLS=spiffe-bridge they go through the in-process bridge of
`shared.rpc.spiffe_channels`, which checks the URI SAN itself: for identity
providers that issue certificates with the URI SAN alone.

Either way a renewed client certificate is used without a restart: the
bridge re-reads its files per connection; a native asyncio channel checks
them at most once a second and sends new calls over a channel made with the
renewed pair, closing the old one once its calls ended. A blocking channel
reads them when it is made (the CLI makes one per command).

`direct_sync_channel` is gRPC's TLS against the dialled address itself (a
DNS/IP SAN such as localhost): for tests of the handshake and the bare-hop
benchmark.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from pathlib import Path

import grpc
from google.protobuf.descriptor import MethodDescriptor

from shared.config import CLIENT_TLS_SPIFFE_BRIDGE, client_tls_mode
from shared.identity.certs import Credentials
from shared.identity.principals import server_name_for, spiffe_id_for
from shared.rpc import spiffe_channels
from shared.rpc.contracts import SERVICES
from shared.rpc.renewal import RenewingCredentials

# A peer that restarts is back within a second or two. gRPC's default reconnect backoff
# (1 s growing to 120 s) would keep its callers failing long after that; this keeps
# re-dialling at most half a second apart, which costs nothing while the peer is up.
# Not grpc.min_reconnect_backoff_ms: gRPC core reads it as the minimum *connect timeout* (20 s by default),
# and a short one makes a TLS handshake on a busy machine fail as "timed out".
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
# How often a native asyncio channel looks at its certificate files (three stat calls).
RENEWAL_CHECK_SECONDS = 1.0


def _retryable(method: MethodDescriptor) -> bool:
    return method.GetOptions().idempotency_level in (
        method.GetOptions().NO_SIDE_EFFECTS, method.GetOptions().IDEMPOTENT)


@functools.cache
def peer_options(peer: str) -> tuple[tuple[str, object], ...]:
    """Channel options for calls to process `peer`: prompt reconnects, retried reads, and calls spread over
    every address the peer's name resolves to (on Kubernetes a headless Service: one per ready replica)."""
    config: dict = {"loadBalancingConfig": [{"round_robin": {}}]}
    if peer in SERVICES:
        service = SERVICES[peer][0]
        names = [{"service": service.full_name, "method": m.name} for m in service.methods if _retryable(m)]
        if names:
            config["methodConfig"] = [{"name": names, "retryPolicy": READ_RETRY_POLICY}]
    return (*RECONNECT_OPTIONS, ("grpc.enable_retries", 1), ("grpc.service_config", json.dumps(config)))


def _native_options(peer: str) -> tuple[tuple[str, object], ...]:
    # The name grpc core expects in the server's certificate, whatever address was dialled.
    return (*peer_options(peer), ("grpc.ssl_target_name_override", server_name_for(peer)))


def _files(credentials: Credentials) -> spiffe_channels.CredentialFiles:
    if not (credentials.ca_file and credentials.cert_file and credentials.key_file):
        raise ValueError(f"credentials of {credentials.principal} were not loaded from files (load_credentials)")
    return spiffe_channels.CredentialFiles(credentials.ca_file, credentials.cert_file, credentials.key_file)


_renewing: dict[tuple[str, Path | None, Path, Path | None], RenewingCredentials] = {}
_renewing_lock = threading.Lock()


def _renewing_for(credentials: Credentials) -> RenewingCredentials:
    """One watcher per set of files, shared by every channel made from them (credentials held only in memory
    have no files to watch: a watcher of their own, which never renews)."""
    if credentials.cert_file is None:
        return RenewingCredentials(credentials)
    key = (credentials.principal, credentials.ca_file, credentials.cert_file, credentials.key_file)
    with _renewing_lock:
        watcher = _renewing.get(key)
        if watcher is None:
            watcher = _renewing[key] = RenewingCredentials(credentials)
        return watcher


def aio_channel(target: str, credentials: Credentials, peer: str) -> grpc.aio.Channel:
    """An asyncio channel to `target` that talks only to the service `peer`."""
    if client_tls_mode() == CLIENT_TLS_SPIFFE_BRIDGE:
        return spiffe_channels.aio_channel(target, _files(credentials), spiffe_id_for(peer), peer_options(peer))
    return _RenewingAioChannel(target, _renewing_for(credentials), _native_options(peer))


def sync_channel(target: str, credentials: Credentials, peer: str, client_tls: str | None = None) -> grpc.Channel:
    """A blocking channel to `target` that talks only to the service `peer`; `client_tls` overrides
    TESSERA_CLIENT_TLS (the supervisor's liveness probe needs the bridge's account of a refused handshake)."""
    if (client_tls or client_tls_mode()) == CLIENT_TLS_SPIFFE_BRIDGE:
        return spiffe_channels.sync_channel(target, _files(credentials), spiffe_id_for(peer), peer_options(peer))
    return grpc.secure_channel(target, channel_credentials(_renewing_for(credentials).current),
                               _native_options(peer))


def channel_credentials(credentials: Credentials) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=credentials.ca_pem,
        private_key=credentials.key_pem,
        certificate_chain=credentials.cert_pem,
    )


def direct_sync_channel(target: str, credentials: Credentials) -> grpc.Channel:
    """gRPC's own TLS against the dialled address's name (DNS/IP SAN): tests of the handshake itself."""
    return grpc.secure_channel(target, channel_credentials(credentials))


def direct_aio_channel(target: str, credentials: Credentials) -> grpc.aio.Channel:
    return grpc.aio.secure_channel(target, channel_credentials(credentials))


class _Generation:
    """One grpc channel made with one certificate, and how many calls still run on it."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        self.active = 0
        self.retired = False
        self.multicallables: dict[tuple, object] = {}

    def started(self, call) -> None:
        self.active += 1
        call.add_done_callback(self._ended)

    def _ended(self, _call) -> None:
        self.active -= 1
        self.close_if_idle()

    def close_if_idle(self) -> None:
        if self.retired and self.active == 0:
            asyncio.ensure_future(self.channel.close())


class _RenewingAioChannel(grpc.aio.Channel):
    """gRPC's own TLS whose client certificate follows renewals of its files.

    grpc's channel credentials are fixed bytes, so a renewal means a new channel: calls started after it go
    to a channel made with the renewed pair; calls already running finish on the old one, which is closed
    when the last of them ends (a long stream is never cut by a renewal).
    """

    def __init__(self, target: str, watcher: RenewingCredentials, options) -> None:
        self._target, self._watcher, self._options = target, watcher, options
        self._credentials = watcher.current
        self._current = _Generation(self._open(self._credentials))
        self._retired: list[_Generation] = []
        self._checked = time.monotonic()

    def _open(self, credentials: Credentials) -> grpc.aio.Channel:
        return grpc.aio.secure_channel(self._target, channel_credentials(credentials), self._options)

    def _generation(self) -> _Generation:
        now = time.monotonic()
        if now - self._checked >= RENEWAL_CHECK_SECONDS:
            self._checked = now
            renewed = self._watcher.current
            if renewed is not self._credentials:
                self._credentials = renewed
                old, self._current = self._current, _Generation(self._open(renewed))
                old.retired = True
                self._retired = [g for g in self._retired if g.active] + [old]
                old.close_if_idle()
        return self._current

    def _multicallable(self, kind: str, method: str, request_serializer, response_deserializer,
                       _registered_method: bool = False):
        return _Call(self, kind, (method, request_serializer, response_deserializer, _registered_method))

    def unary_unary(self, method, request_serializer=None, response_deserializer=None, _registered_method=False):
        return self._multicallable("unary_unary", method, request_serializer, response_deserializer,
                                   _registered_method)

    def unary_stream(self, method, request_serializer=None, response_deserializer=None, _registered_method=False):
        return self._multicallable("unary_stream", method, request_serializer, response_deserializer,
                                   _registered_method)

    def stream_unary(self, method, request_serializer=None, response_deserializer=None, _registered_method=False):
        return self._multicallable("stream_unary", method, request_serializer, response_deserializer,
                                   _registered_method)

    def stream_stream(self, method, request_serializer=None, response_deserializer=None,
                      _registered_method=False):
        return self._multicallable("stream_stream", method, request_serializer, response_deserializer,
                                   _registered_method)

    async def close(self, grace: float | None = None) -> None:
        generations = [self._current, *self._retired]
        await asyncio.gather(*(generation.channel.close(grace) for generation in generations))

    async def __aenter__(self):
        return self

    async def __aexit__(self, exc_type, exc_val, exc_tb):
        await self.close()

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return self._generation().channel.get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: grpc.ChannelConnectivity) -> None:
        await self._generation().channel.wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self._generation().channel.channel_ready()


class _Call:
    """A multicallable that starts each call on the channel's current generation."""

    def __init__(self, channel: _RenewingAioChannel, kind: str, arguments: tuple) -> None:
        self._channel, self._kind, self._arguments = channel, kind, arguments

    def __call__(self, *args, **kwargs):
        generation = self._channel._generation()
        multicallable = generation.multicallables.get(self._arguments)
        if multicallable is None:
            method, serializer, deserializer, registered = self._arguments
            multicallable = generation.multicallables[self._arguments] = getattr(generation.channel, self._kind)(
                method, serializer, deserializer, _registered_method=registered)
        call = multicallable(*args, **kwargs)
        generation.started(call)
        return call
