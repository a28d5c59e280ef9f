"""Client channels that authenticate the server by its SPIFFE id, not its DNS name.

Certificates from cert-manager csi-driver-spiffe or SPIRE carry only a URI SAN
(`spiffe://tessera.local/svc/<name>`). grpc core's client only verifies DNS/IP
SANs (or the CN), and Python exposes no custom verifier, so a stock channel
cannot reach such a server. This module bridges the gap inside the process:

    gRPC channel --plaintext, unix socket--> bridge --mTLS, TCP--> server

One daemon thread runs an asyncio loop (started lazily, one per process). Per
(target, expected SPIFFE id, credential files) it listens on unix sockets in a
private 0700 temp directory: one for an IP address, SLOTS_PER_NAME for a name,
which may stand for several servers (a Kubernetes headless Service: one address
per ready replica). The channel balances its calls over the sockets
(round_robin), and each connection through one dials the target's address with
the fewest of this target's open connections, so the replicas share the calls;
a server's max_connection_age makes clients re-dial now and then, and a replica
added since gets its share. For each local connection it dials the target,
does the TLS handshake with Python's `ssl` (the deployment CA as the only trust
root, the client's own certificate, ALPN h2, TLS >= 1.2), then checks the
server's leaf BEFORE forwarding a byte: issued directly by the CA, valid now,
exactly one URI SAN, equal to the expected id, ALPN h2. Any failure closes both
sides (the RPC fails UNAVAILABLE), logs one warning on "tessera.channels" whose
`fields["reason"]` is one of the reason constants below (the same refusal again
only after REFUSAL_REPEAT_SECONDS), and is counted in `failure_counts()`. A
server that hangs up right after the handshake without sending a byte (how a
grpc server refuses our certificate under TLS 1.3) is reported the same way.

The client certificate and key are read from their files; a new connection
re-reads them when a file's inode, size or mtime changed, so a renewed
certificate is used without a restart (existing connections keep theirs). If
the new files cannot be loaded (say, the certificate is renewed but the key not
yet), the last good pair is kept and the files are tried again next time.

Wiring, in place of `shared.rpc.channels.aio_channel(target, credentials)`:

    files = CredentialFiles(settings.ca_cert, settings.cert, settings.key)
    # or CredentialFiles.for_principal(cert_dir, "agent") for the `tessera certs` layout
    channel = aio_channel(peer_target("host"), files, spiffe_id_for("host"))

Security note: the local hop is plaintext; the socket sits in a directory only
this user can enter, and connecting to it yields a connection authenticated as
this process's identity, exactly like reading its key file would.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import datetime as dt
import ipaddress
import json
import logging
import os
import random
import shutil
import socket
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from cryptography import x509

from shared.identity.certs import CA_CERT_FILE, cert_path, issued_directly, key_path
from shared.logs import log
from shared.rpc.renewal import file_stamp

logger = logging.getLogger("tessera.channels")

CONNECT_TIMEOUT_SECONDS = 5.0
# With several addresses, each gets this long: a replica whose node is gone (no answer at all) must not use up
# the whole connect budget before the live ones are tried.
ADDRESS_CONNECT_SECONDS = 2.0
# An address that failed is tried after the others for this long.
FAILED_ADDRESS_SECONDS = 10.0
# Local sockets (so connections) per channel to a name: at least the most replicas a service runs (the
# autoscalers' maxReplicas, cli/deploy_manifests.py), so each can get calls from every client.
SLOTS_PER_NAME = 8
# A refusal repeats (every socket re-dials a peer that is down): it is logged once per target and reason this
# often, and counted every time (failure_counts).
REFUSAL_REPEAT_SECONDS = 30.0
HANDSHAKE_TIMEOUT_SECONDS = 5.0
CLOSE_TIMEOUT_SECONDS = 5.0
_CHUNK = 256 * 1024

# Why a connection was refused (the `reason` field of the warning, the keys of failure_counts()).
TARGET_UNREACHABLE = "TARGET_UNREACHABLE"
TLS_HANDSHAKE_FAILED = "TLS_HANDSHAKE_FAILED"
SERVER_NOT_ISSUED_BY_CA = "SERVER_NOT_ISSUED_BY_CA"
SERVER_CERT_NOT_VALID_NOW = "SERVER_CERT_NOT_VALID_NOW"
SERVER_IDENTITY_INVALID = "SERVER_IDENTITY_INVALID"  # not exactly one URI SAN
SERVER_IDENTITY_MISMATCH = "SERVER_IDENTITY_MISMATCH"
ALPN_NOT_H2 = "ALPN_NOT_H2"
CLIENT_CREDENTIALS_INVALID = "CLIENT_CREDENTIALS_INVALID"  # our own files cannot be loaded
CLIENT_CERT_REJECTED = "CLIENT_CERT_REJECTED"  # the server sent a certificate alert about our certificate
SERVER_CLOSED_AFTER_HANDSHAKE = "SERVER_CLOSED_AFTER_HANDSHAKE"  # ... or just hung up (grpc servers do)

# OpenSSL verify codes (x509_vfy.h) that mean "not a leaf of our CA" or "not valid now".
_NOT_VALID_NOW_CODES = {9, 10}  # CERT_NOT_YET_VALID, CERT_HAS_EXPIRED
_NOT_OUR_CA_CODES = {2, 7, 18, 19, 20, 21, 24, 25}  # no issuer, bad signature, self-signed, invalid CA, path length


@dataclass(frozen=True)
class CredentialFiles:
    """Where one principal's trust root, certificate and key live (re-read on change)."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    @classmethod
    def for_principal(cls, directory: Path, principal: str) -> CredentialFiles:
        """The layout `tessera certs` writes: ca.pem, <principal>.pem, <principal>.key."""
        return cls(directory / CA_CERT_FILE, cert_path(directory, principal), key_path(directory, principal))


def aio_channel(
    target: str, credentials_files: CredentialFiles, expected_identity: str, options=()
) -> grpc.aio.Channel:
    """An asyncio channel to `target` ("host:port") that only talks to `expected_identity`."""
    paths, authority = _bridge().listen(target, credentials_files, expected_identity)
    return grpc.aio.insecure_channel(_unix_target(paths), options=_channel_options(authority, options))


def sync_channel(target: str, credentials_files: CredentialFiles, expected_identity: str, options=()) -> grpc.Channel:
    """A blocking channel to `target` ("host:port") that only talks to `expected_identity`."""
    paths, authority = _bridge().listen(target, credentials_files, expected_identity)
    return grpc.insecure_channel(_unix_target(paths), options=_channel_options(authority, options))


def failure_counts(target: str | None = None) -> dict[str, int]:
    """Refused connections by reason since the bridge started, for one target or all."""
    bridge = _current
    if bridge is None:
        return {}
    with bridge.lock:
        counts: collections.Counter[str] = collections.Counter()
        for (failed_target, reason), count in bridge.failures.items():
            if target is None or failed_target == target:
                counts[reason] += count
    return dict(counts)


def close_bridge() -> None:
    """Stop the bridge: close listeners and every bridged connection, remove the socket directory.

    Channels made before stay broken (UNAVAILABLE); a later aio_channel/sync_channel starts a new bridge.
    """
    global _current
    with _current_lock:
        bridge, _current = _current, None
    if bridge is not None:
        bridge.close()


def _unix_target(paths: list[Path]) -> str:
    return "unix:" + ",".join(str(path) for path in paths)  # grpc's unix resolver takes a comma-separated list


def _channel_options(authority: str, options) -> list[tuple[str, object]]:
    options = list(options)
    names = {name for name, _ in options}
    if "grpc.default_authority" not in names:
        # The :authority the server would have seen had we dialed it directly.
        options.insert(0, ("grpc.default_authority", authority))
    if "grpc.service_config" not in names:
        # Calls over every socket; a caller's own service config chooses for itself (peer_options: round_robin).
        options.append(("grpc.service_config", json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})))
    return options


def _slots(host: str) -> int:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return SLOTS_PER_NAME
    return 1


def _split_target(target: str) -> tuple[str, int]:
    """"host:port" or "[v6]:port" -> (host, port); anything else is a caller error."""
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = target.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or (":" in host and not target.startswith("[")):
        raise ValueError(f"target {target!r} must be host:port (or [ipv6]:port)")
    return host, int(port)


class _Refused(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


class _TlsMaterial:
    """An SSLContext for one set of credential files, rebuilt when a file changes.

    Only used on the bridge loop; files are tiny, so reading them there is fine.
    """

    def __init__(self, files: CredentialFiles) -> None:
        self.files = files
        self._signature: tuple | None = None
        self._context: ssl.SSLContext | None = None
        self._cas: list[x509.Certificate] = []

    def _stat(self) -> tuple | None:
        return file_stamp((self.files.ca_file, self.files.cert_file, self.files.key_file))

    def current(self) -> tuple[ssl.SSLContext, list[x509.Certificate]]:
        signature = self._stat()
        if self._context is not None and signature is not None and signature == self._signature:
            return self._context, self._cas
        try:
            context, cas = self._load()
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            detail = f"cannot load {self.files.cert_file} / {self.files.key_file} / {self.files.ca_file}: {exc}"
            if self._context is None:
                raise _Refused(CLIENT_CREDENTIALS_INVALID, detail) from None
            # Mid-rotation (new certificate, old key) or a bad write: keep the last good pair, retry next time.
            log(logger, logging.WARNING, f"keeping previous client credentials: {detail}",
                reason=CLIENT_CREDENTIALS_INVALID)
            return self._context, self._cas
        self._context, self._cas = context, cas
        # Only remember the signature if nothing changed while we read; otherwise re-read next time.
        self._signature = signature if signature == self._stat() else None
        return context, cas

    def _load(self) -> tuple[ssl.SSLContext, list[x509.Certificate]]:
        ca_pem = self.files.ca_file.read_bytes()
        cas = x509.load_pem_x509_certificates(ca_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False  # the identity is checked against the URI SAN after the handshake
        context.verify_mode = ssl.CERT_REQUIRED
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_verify_locations(cadata=ca_pem.decode("ascii"))
        context.load_cert_chain(self.files.cert_file, self.files.key_file)  # checks the key matches
        context.set_alpn_protocols(["h2"])
        return context, cas


def _check_server_certificate(
    der: bytes | None, alpn: str | None, cas: list[x509.Certificate], expected_identity: str
) -> None:
    """Raise _Refused unless the leaf is the expected identity's, issued directly by one of `cas`."""
    if not der:
        raise _Refused(TLS_HANDSHAKE_FAILED, "server presented no certificate")
    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError as exc:
        raise _Refused(TLS_HANDSHAKE_FAILED, f"unparseable server certificate: {exc}") from None
    if not issued_directly(cert, cas):
        raise _Refused(SERVER_NOT_ISSUED_BY_CA, f"server certificate issuer {cert.issuer.rfc4514_string()!r}")
    now = dt.datetime.now(dt.UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise _Refused(SERVER_CERT_NOT_VALID_NOW, f"valid {cert.not_valid_before_utc} to {cert.not_valid_after_utc}")
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        uris = sans.get_values_for_type(x509.UniformResourceIdentifier)
    except x509.ExtensionNotFound:
        uris = []
    if len(uris) != 1:
        raise _Refused(SERVER_IDENTITY_INVALID, f"server certificate has URI SANs {uris}, expected exactly one")
    if uris[0] != expected_identity:
        raise _Refused(SERVER_IDENTITY_MISMATCH, f"server is {uris[0]}, expected {expected_identity}")
    if alpn != "h2":
        raise _Refused(ALPN_NOT_H2, f"server negotiated ALPN {alpn!r}")


def _handshake_failure(exc: BaseException) -> _Refused:
    if isinstance(exc, ssl.SSLCertVerificationError):
        code, message = exc.verify_code, exc.verify_message
        if code in _NOT_VALID_NOW_CODES:
            return _Refused(SERVER_CERT_NOT_VALID_NOW, message)
        if code in _NOT_OUR_CA_CODES:
            return _Refused(SERVER_NOT_ISSUED_BY_CA, message)
        return _Refused(TLS_HANDSHAKE_FAILED, f"certificate verify failed: {message}")
    if isinstance(exc, ssl.SSLError) and _is_certificate_alert(exc):
        return _Refused(CLIENT_CERT_REJECTED, f"server sent {exc.reason}")
    if isinstance(exc, TimeoutError):
        return _Refused(TLS_HANDSHAKE_FAILED, f"no handshake within {HANDSHAKE_TIMEOUT_SECONDS}s")
    return _Refused(TLS_HANDSHAKE_FAILED, str(exc) or type(exc).__name__)


@dataclass
class _Listener:
    target: str
    host: str
    port: int
    identity: str
    material: _TlsMaterial
    paths: list[Path]
    socks: list[socket.socket]
    started: concurrent.futures.Future | None = None
    servers: list[asyncio.AbstractServer] = field(default_factory=list)
    # Connections per server address, counted from the moment the address is chosen (so dials under way count),
    # when each address last failed, and where ties start: used on the bridge loop only.
    open: collections.Counter[str] = field(default_factory=collections.Counter)
    failed: dict[str, float] = field(default_factory=dict)
    turn: int = field(default_factory=lambda: random.randrange(1 << 16))

    def uncount(self, server: str) -> None:
        self.open[server] -= 1
        if not self.open[server]:
            del self.open[server]


class _Bridge:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.failures: collections.Counter[tuple[str, str]] = collections.Counter()
        self._said: dict[tuple[str, str], float] = {}  # when each (target, reason) was last logged
        self._directory = Path(tempfile.mkdtemp(prefix="tessera-spiffe-"))  # created 0700
        self._listeners: dict[tuple[str, str, CredentialFiles], _Listener] = {}
        self._materials: dict[CredentialFiles, _TlsMaterial] = {}
        self._connections: set[asyncio.Task] = set()
        self._closing = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tessera-spiffe-bridge", daemon=True)
        self._thread.start()

    def listen(self, target: str, files: CredentialFiles, identity: str) -> tuple[list[Path], str]:
        """The unix sockets bridging to (target, identity, files), and the authority; created on first use."""
        if not identity.startswith("spiffe://"):
            raise ValueError(f"expected identity {identity!r} is not a spiffe:// id")
        host, port = _split_target(target)
        files = CredentialFiles(*(Path(p).absolute() for p in (files.ca_file, files.cert_file, files.key_file)))
        key = (target, identity, files)
        with self.lock:
            if self._closing:
                raise RuntimeError("the SPIFFE bridge is closing")
            listener = self._listeners.get(key)
            if listener is None:
                material = self._materials.setdefault(files, _TlsMaterial(files))
                paths = [self._directory / f"{len(self._listeners)}.{slot}.sock" for slot in range(_slots(host))]
                socks = []
                for path in paths:
                    # Bound and listening before we return: a channel dialing early waits in the backlog.
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    sock.bind(str(path))
                    sock.listen(128)
                    socks.append(sock)
                listener = _Listener(target, host, port, identity, material, paths, socks)
                self._listeners[key] = listener
                listener.started = asyncio.run_coroutine_threadsafe(self._serve(listener), self._loop)
        return listener.paths, target

    async def _serve(self, listener: _Listener) -> None:
        for sock in listener.socks:
            try:
                listener.servers.append(await asyncio.start_unix_server(
                    lambda r, w: self._accept(listener, r, w), sock=sock, limit=_CHUNK))
            except Exception:
                logger.exception("SPIFFE bridge cannot listen on %s", sock.getsockname())

    def _accept(self, listener: _Listener, local_reader, local_writer) -> None:
        # Our own task (not a coroutine handed back to asyncio), so close() can cancel it cleanly.
        if self._closing:
            local_writer.transport.abort()
            return
        task = asyncio.get_running_loop().create_task(self._connection(listener, local_reader, local_writer))
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def _connection(self, listener: _Listener, local_reader, local_writer) -> None:
        remote_writer = server = None
        try:
            try:
                remote_reader, remote_writer, server = await self._dial(listener)
            except _Refused as refused:
                self._refuse(listener, refused)
                return
            up = _Pump(local_reader, remote_writer)

            def server_ended(error: OSError | None) -> None:  # before our client sees the end
                refused = _server_refusal(error, up, down)
                if refused is not None:
                    self._refuse(listener, refused)

            down = _Pump(remote_reader, local_writer, on_end=server_ended)
            await _pump_both(up, down)
            # Orderly end: flush, send close_notify, wait (bounded) for the TLS shutdown.
            for writer in (local_writer, remote_writer):
                if not writer.is_closing():  # a second close() of a TLS transport would disable abort()
                    writer.close()
            await _wait_closed(local_writer, remote_writer)
        except (OSError, TimeoutError):
            pass
        except Exception:
            logger.exception("SPIFFE bridge connection to %s failed", listener.target)
        finally:
            # Refused, failed, cancelled or timed out: drop both sockets now (a no-op once closed).
            local_writer.transport.abort()
            if remote_writer is not None:
                remote_writer.transport.abort()
            if server is not None:
                listener.uncount(server)

    async def _dial(self, listener: _Listener):
        """(reader, writer, the server address dialled) of a checked TLS connection to the listener's target; the
        address stays counted in `listener.open` until the caller uncounts it."""
        context, cas = listener.material.current()
        try:
            sock, server = await _connect_tcp(listener)
        except (OSError, TimeoutError) as exc:
            raise _Refused(TARGET_UNREACHABLE, str(exc) or f"no connection within {CONNECT_TIMEOUT_SECONDS}s") from None
        try:
            return await self._secure(listener, sock, context, cas) + (server,)
        except BaseException:
            listener.uncount(server)
            raise

    async def _secure(self, listener: _Listener, sock: socket.socket, context: ssl.SSLContext,
                      cas: list[x509.Certificate]):
        """(reader, writer) of the TLS connection over `sock`, the server's certificate checked."""
        try:
            # server_hostname is only SNI here (check_hostname is off); Python sends none for an IP address.
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    sock=sock, ssl=context, server_hostname=listener.host,
                    ssl_handshake_timeout=HANDSHAKE_TIMEOUT_SECONDS, ssl_shutdown_timeout=CLOSE_TIMEOUT_SECONDS,
                    limit=_CHUNK,
                ),
                HANDSHAKE_TIMEOUT_SECONDS + 1,
            )
        except (OSError, TimeoutError, EOFError) as exc:
            sock.close()
            raise _handshake_failure(exc) from None
        except BaseException:
            sock.close()
            raise
        try:
            tls = writer.get_extra_info("ssl_object")
            _check_server_certificate(
                tls.getpeercert(binary_form=True), tls.selected_alpn_protocol(), cas, listener.identity
            )
        except BaseException:
            writer.transport.abort()  # refused: no close_notify, no lingering TLS shutdown
            raise
        return reader, writer

    def _refuse(self, listener: _Listener, refused: _Refused) -> None:
        key, now = (listener.target, refused.reason), time.monotonic()
        with self.lock:
            self.failures[key] += 1
            said = self._said.get(key)
            if said is not None and now - said < REFUSAL_REPEAT_SECONDS:
                return
            self._said[key] = now
        log(logger, logging.WARNING, f"refused upstream {listener.target}: {refused.reason}: {refused.detail}",
            reason=refused.reason, target=listener.target, expected_identity=listener.identity,
            refused_so_far=self.failures[key])

    def close(self) -> None:
        with self.lock:
            self._closing = True
        if threading.current_thread() is self._thread:
            raise RuntimeError("close_bridge() cannot run on the bridge thread")
        if not self._loop.is_closed():
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=5)
            except Exception:
                logger.exception("SPIFFE bridge did not shut down cleanly")
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self._loop.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    async def _shutdown(self) -> None:
        listeners = list(self._listeners.values())
        await asyncio.gather(*(asyncio.wrap_future(x.started) for x in listeners), return_exceptions=True)
        for listener in listeners:
            for server in listener.servers:
                server.close()
            for sock in listener.socks:
                sock.close()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _resolve(host: str, port: int) -> list[tuple]:
    """getaddrinfo's (family, type, proto, canonname, sockaddr) for the target, resolved anew per connection:
    the replicas behind a name come and go."""
    return await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)


async def _connect_tcp(listener: _Listener) -> tuple[socket.socket, str]:
    """A connected non-blocking TCP socket and the address it reached, counted in `listener.open`. The resolved
    addresses are tried from those that did not fail lately, then the fewest of this listener's connections
    (ties in turn), each for a bounded time, until one answers."""
    loop = asyncio.get_running_loop()
    resolved = list({info[4]: info for info in await asyncio.wait_for(
        _resolve(listener.host, listener.port), CONNECT_TIMEOUT_SECONDS)}.values())  # each address once
    if not resolved:
        raise OSError(f"{listener.host} resolves to no address")
    listener.turn += 1
    start = listener.turn % len(resolved)
    now = time.monotonic()

    def rank(info: tuple) -> tuple[bool, int]:
        server = str(info[4][0])
        return now - listener.failed.get(server, -FAILED_ADDRESS_SECONDS) < FAILED_ADDRESS_SECONDS, \
            listener.open[server]

    bound = CONNECT_TIMEOUT_SECONDS if len(resolved) == 1 else ADDRESS_CONNECT_SECONDS
    last: OSError | TimeoutError = OSError(f"{listener.host}: no address answered")
    for family, kind, proto, _, address in sorted(resolved[start:] + resolved[:start], key=rank):
        server = str(address[0])
        listener.open[server] += 1  # counted from the choice: a dial made meanwhile sees it
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, address), bound)
            return sock, server
        except (OSError, TimeoutError) as exc:
            sock.close()
            listener.uncount(server)
            listener.failed[server] = time.monotonic()
            last = exc if str(exc) else TimeoutError(f"{server} did not answer within {bound:g}s")
        except BaseException:
            sock.close()
            listener.uncount(server)
            raise
    raise last


class _Pump:
    """One direction of a bridged connection; `on_end(error)` runs before the end is passed on."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, on_end=None) -> None:
        self.reader, self.writer, self.on_end = reader, writer, on_end
        self.copied = 0
        self.reader_eof = False
        self.error: OSError | None = None

    async def run(self) -> None:
        """Copy until EOF, then pass the EOF on; remember the error if either side failed."""
        try:
            while data := await self.reader.read(_CHUNK):
                self.writer.write(data)
                self.copied += len(data)
                await self.writer.drain()  # backpressure: wait while the other side's buffer is full
            self.reader_eof = True
            self._ended()
            if self.writer.can_write_eof():
                self.writer.write_eof()
            elif not self.writer.is_closing():
                # asyncio cannot half-close TLS: close it (close_notify). HTTP/2 peers never half-close anyway.
                self.writer.close()
        except OSError as exc:  # resets, broken pipes, TLS alerts
            self.error = exc
            self._ended()

    def _ended(self) -> None:
        if self.on_end is not None:
            self.on_end, on_end = None, self.on_end
            on_end(self.error)


async def _pump_both(up: _Pump, down: _Pump) -> None:
    """Pump both ways until both directions ended or one failed."""
    up_task, down_task = asyncio.create_task(up.run()), asyncio.create_task(down.run())
    try:
        pending = {up_task, down_task}
        while pending:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if up.error or down.error:
                break
    finally:
        for task in (up_task, down_task):
            task.cancel()
        await asyncio.gather(up_task, down_task, return_exceptions=True)


async def _wait_closed(*writers: asyncio.StreamWriter) -> None:
    """Wait (bounded) until the writers' transports are closed; their errors do not matter any more."""
    waiters = [asyncio.ensure_future(writer.wait_closed()) for writer in writers]
    try:
        await asyncio.wait(waiters, timeout=CLOSE_TIMEOUT_SECONDS)
    finally:
        for waiter in waiters:
            if waiter.done() and not waiter.cancelled():
                waiter.exception()  # retrieved: no "exception was never retrieved" noise
            else:
                waiter.cancel()


def _server_refusal(error: OSError | None, up: _Pump, down: _Pump) -> _Refused | None:
    """Why the server ended the connection, if that looks like a refusal of our certificate.

    With TLS 1.3 the server checks our certificate after our side of the handshake is done; it
    then sends an alert, or (grpc core) just hangs up. An HTTP/2 server that accepted us sends
    its SETTINGS at once, so ending before sending a byte, unless our client left first, is a refusal.
    """
    if isinstance(error, ssl.SSLError) and _is_certificate_alert(error):
        return _Refused(CLIENT_CERT_REJECTED, f"server sent {error.reason}")
    if down.copied == 0 and not up.reader_eof:
        return _Refused(SERVER_CLOSED_AFTER_HANDSHAKE,
                        "server hung up before sending anything; did it reject this client's certificate?")
    return None


def _is_certificate_alert(exc: ssl.SSLError) -> bool:
    reason = exc.reason or ""
    return "ALERT" in reason and ("CERTIFICATE" in reason or "UNKNOWN_CA" in reason or "ACCESS_DENIED" in reason)


_current: _Bridge | None = None
_current_lock = threading.Lock()
_atexit_registered = False


def _bridge() -> _Bridge:
    global _current, _atexit_registered
    with _current_lock:
        if _current is None or _current.pid != os.getpid():
            # After a fork the parent's thread does not exist here: start afresh, leave its directory alone.
            _current = _Bridge()
            if not _atexit_registered:
                atexit.register(close_bridge)
                _atexit_registered = True
        return _current
