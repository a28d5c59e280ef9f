"""The service runtime every gRPC process runs on.

`start_server` builds a grpc.aio server that tests can drive (port 0 →
returns the bound port): mTLS with client certificates required, the
contract-declared caller check, correlation ids, error mapping, access logs,
health that reports real readiness, and reflection. `serve` is the process
entry point: typed config, credential checks with one-line errors, ready
file, graceful stop on SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn, Protocol

import grpc
from cryptography import x509
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from shared import __version__
from shared.config import CLIENT_TLS_NATIVE, ConfigError, ServiceSettings, client_tls_mode, load_settings
from shared.identity.certs import CredentialError, Credentials, load_credentials, missing_server_name
from shared.logs import log, setup_logging, stop_logging
from shared.rpc.authz import CallerTable, DirectIssuer
from shared.rpc.contracts import SERVICES, contract_hash
from shared.rpc.field_rules import RequestRules
from shared.rpc.interceptor import CallGuard, not_implemented_yet
from shared.rpc.renewal import RenewingCredentials
from tessera.common.v1 import common_pb2

logger = logging.getLogger("tessera.runtime")

# A readiness probe returns None when ready or a short reason when not.
ReadinessProbe = Callable[[], Awaitable[str | None]]
READINESS_INTERVAL_SECONDS = 5.0
NOT_READY_RECHECK_SECONDS = 0.5
# A health service name that is SERVING while the process runs at all, ready or not: Kubernetes'
# liveness probe asks for it, so a service waiting for its database stays alive and not ready.
LIVENESS_SERVICE = "tessera.liveness"


class StartupError(Exception):
    """A service cannot start (bad model file, missing warehouse ...); one line."""


class DependencyUnavailable(StartupError):
    """A service cannot start *yet*: its database does not answer. With
    TESSERA_<NAME>_DEPENDENCY_WAIT_SECONDS set, the process waits for it, not ready."""


# Beside the ready file, until a process serves: "" while it starts, then what it waits for, rewritten every
# WAITING_BEAT_SECONDS, so a launcher can tell starting or waiting (alive, beating) from hung (silent) before
# the service answers health checks. Removed once it serves or stops.
WAITING_FILE = "waiting.json"
WAITING_BEAT_SECONDS = 2.0
# The longest pause between attempts to reach a dependency: an attempt is one connection, cheap for a
# database that is away, and the pause is what a person waits beyond the database's return.
DEPENDENCY_RETRY_SECONDS = 2.0


class HealthPortError(OSError):
    """The health-only port cannot be bound."""


@dataclass(frozen=True, kw_only=True)
class Lifecycle:
    """What a service's parts need around serving: probes for readiness, work beside the server, a last step."""

    # Health is SERVING only while every probe reports None.
    readiness: tuple[ReadinessProbe, ...] = ()
    # Started with the server, cancelled after it stopped serving (so in-flight calls can still hand them work).
    background: tuple[Callable[[], Awaitable[None]], ...] = ()
    # Called once after the server has stopped (close pools, flush stores).
    on_stop: Callable[[], None] | None = None


@dataclass
class Registration:
    """One gRPC service a process serves."""

    descriptor: ServiceDescriptor
    servicer: object
    add_to_server: Callable[[object, grpc.aio.Server], None]
    lifecycle: Lifecycle = field(default_factory=Lifecycle)


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    service_names: list[str]
    readiness: list[ReadinessProbe] = field(default_factory=list)
    _ready_task: asyncio.Task | None = None
    background: list[asyncio.Task] = field(default_factory=list)
    # The plaintext, health-only server for orchestrator probes (None when not asked for).
    health_server: grpc.aio.Server | None = None
    health_port: int | None = None

    async def stop(self, grace: float | None = None) -> None:
        if self._ready_task:
            self._ready_task.cancel()
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        if self.health_server is not None:
            await self.health_server.stop(None)
        for task in self.background:
            task.cancel()
        await asyncio.gather(*self.background, return_exceptions=True)


@dataclass
class HealthOnlyServer:
    """The plaintext server that answers grpc.health.v1 and nothing else."""

    servicer: health.aio.HealthServicer
    server: grpc.aio.Server
    port: int


async def start_health_only(host: str, port: int) -> HealthOnlyServer:
    """Serve health alone, in plaintext (no reflection, no contract RPC): not ready, but alive, until a
    full server takes it over (start_server(health_only=...))."""
    servicer = health.aio.HealthServicer()
    await servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    await servicer.set(LIVENESS_SERVICE, health_pb2.HealthCheckResponse.SERVING)
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    try:
        if port:
            _check_port_free(host, port)
        bound = server.add_insecure_port(f"{host}:{port}")
    except (OSError, RuntimeError) as exc:
        raise HealthPortError(str(exc)) from None
    if not bound:
        raise HealthPortError(f"cannot listen on {host}:{port}: address in use or unavailable")
    await server.start()
    return HealthOnlyServer(servicer, server, bound)


async def start_server(
    credentials: Credentials,
    registrations: Sequence[Registration],
    host: str = "127.0.0.1",
    port: int = 0,
    readiness: Sequence[ReadinessProbe] = (),
    health_only: HealthOnlyServer | None = None,
    max_connection_age: float | None = None,
) -> RunningServer:
    """Build, bind and start a server; raise OSError when the port is taken.

    `max_connection_age` (seconds): a connection reaching it gets GOAWAY, so its client sends new calls over a
    fresh connection (re-resolving, spreading over the replicas there are now) while calls under way finish on
    the old one (ServiceSettings.max_connection_age_seconds).

    `health_only` (start_health_only) answers `grpc.health.v1` alone, in
    plaintext, with this server's statuses from now on: Kubernetes' native
    gRPC probes cannot present a client certificate.
    """
    renewing = RenewingCredentials(credentials)
    # so_reuseport=0: otherwise a second server silently shares a busy port.
    options: list[tuple[str, int]] = [("grpc.so_reuseport", 0)]
    if max_connection_age is not None:
        # gRPC adds +-10% jitter, so replicas' clients do not all re-dial at once. No grace limit: a long
        # stream (a turn, a surface's events) keeps its connection; only new calls move.
        options.append(("grpc.max_connection_age_ms", round(max_connection_age * 1000)))
    server = grpc.aio.server(interceptors=[_call_guard(registrations, renewing)], options=options)
    for registration in registrations:
        registration.add_to_server(registration.servicer, server)
    health_servicer = health_only.servicer if health_only else health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [r.descriptor.full_name for r in registrations]
    reflection.enable_server_reflection(names + [reflection.SERVICE_NAME, "grpc.health.v1.Health"], server)
    address = f"{host}:{port}"
    if port:
        _check_port_free(host, port)
    try:
        bound = server.add_secure_port(address, renewing.server_credentials())
    except RuntimeError as exc:
        raise OSError(f"cannot listen on {address}: {exc}") from None
    if not bound:
        raise OSError(f"cannot listen on {address}: address in use or unavailable")
    for name in ["", *names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    await health_servicer.set(LIVENESS_SERVICE, health_pb2.HealthCheckResponse.SERVING)
    await server.start()
    probes = [certificate_validity_probe(renewing), *readiness,
              *(probe for r in registrations for probe in r.lifecycle.readiness)]
    running = RunningServer(server, bound, health_servicer, names, probes)
    if health_only is not None:
        running.health_server, running.health_port = health_only.server, health_only.port
    await _update_health(running)
    running._ready_task = asyncio.create_task(_watch_readiness(running))
    running.background = [asyncio.create_task(work()) for r in registrations for work in r.lifecycle.background]
    for task in running.background:
        task.add_done_callback(_report_stopped_work)
    return running


def _call_guard(registrations: Sequence[Registration], renewing: RenewingCredentials) -> CallGuard:
    """The interceptor over the contracts' callers and field rules, each read once: a rule that does not fit its
    field stops the server here."""
    descriptors = [r.descriptor for r in registrations]
    return CallGuard(CallerTable(descriptors), RequestRules(descriptors),
                     DirectIssuer(lambda: renewing.loaded.ca_pem))


def _report_stopped_work(task: asyncio.Task) -> None:
    """Background work ends only when the server stops; ending otherwise is an error worth a log line."""
    if not task.cancelled() and task.exception() is not None:
        log(logger, logging.ERROR, "background work stopped", task=task.get_coro().__qualname__,
            error=f"{type(task.exception()).__name__}: {task.exception()}")


def _check_port_free(host: str, port: int) -> None:
    """Fail with the OS's own reason before gRPC core logs its bind error.

    SO_REUSEADDR, as gRPC's own listener has: a port whose last owner crashed a moment
    ago holds TIME-WAIT connections, which must not keep the restarted service off it
    for a minute; a port someone is listening on is still refused."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


async def _update_health(running: RunningServer) -> list[str]:
    problems = []
    for probe in running.readiness:
        try:
            problem = await probe()
        except Exception as exc:  # a failing probe means not ready, not a crash
            problem = f"{getattr(probe, '__name__', 'probe')} failed: {exc}"
        if problem:
            problems.append(problem)
    status = health_pb2.HealthCheckResponse.NOT_SERVING if problems else health_pb2.HealthCheckResponse.SERVING
    for name in ["", *running.service_names]:
        await running.health.set(name, status)
    return problems


async def _watch_readiness(running: RunningServer) -> None:
    last: list[str] | None = None
    while True:
        problems = await _update_health(running)
        if problems != last:
            log(logger, logging.WARNING if problems else logging.INFO,
                "readiness", ready=not problems, problems=problems)
            last = problems
        # Not ready, look again soon: the moment its database answers again is the moment it may serve.
        await asyncio.sleep(NOT_READY_RECHECK_SECONDS if problems else READINESS_INTERVAL_SECONDS)


def certificate_validity_probe(renewing: RenewingCredentials) -> ReadinessProbe:
    """Not ready once our own certificate (the renewed one, if it was renewed) has expired: peers would
    refuse us."""
    async def certificate_valid() -> str | None:
        not_after = x509.load_pem_x509_certificate(renewing.current.cert_pem).not_valid_after_utc
        if dt.datetime.now(dt.UTC) >= not_after:
            return f"certificate expired at {not_after.isoformat()}"
        return None

    return certificate_valid


def write_ready_file(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(json.dumps(payload))
    os.replace(temporary, path)


@dataclass(frozen=True)
class ServiceContext:
    """What a service's registration builder gets to work with."""

    name: str
    settings: ServiceSettings
    credentials: Credentials
    started_at: float


# A service's build: plain, or a coroutine that awaits its blocking preparation (database connect and
# migrations) off the event loop, so health keeps answering while a database hangs.
BuildRegistrations = Callable[[ServiceContext], Sequence[Registration] | Awaitable[Sequence[Registration]]]


def fail_startup(name: str, message: str) -> NoReturn:
    stop_logging()  # pending log lines first: the error must be the last line a launcher reads
    print(f"tessera-{name}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def load_process_credentials(
    name: str, settings_class: type[ServiceSettings] = ServiceSettings
) -> tuple[ServiceSettings, Credentials]:
    """Settings and checked credentials, or a one-line error and exit 2."""
    try:
        settings = load_settings(name, settings_class)
        credentials = load_credentials(name, settings.ca_cert, settings.cert, settings.key)
    except (ConfigError, CredentialError) as exc:
        fail_startup(name, str(exc))
    return settings, credentials


def serve(name: str, build: BuildRegistrations, settings_class: type[ServiceSettings] = ServiceSettings) -> None:
    """Process entry point of a gRPC service (`python -m services.<name>`).

    `build` may raise StartupError (bad model file, missing warehouse ...):
    it becomes the process's one-line error and exit status 2.
    """
    settings, credentials = load_process_credentials(name, settings_class)
    setup_logging(name, settings.log_level)
    context = ServiceContext(name, settings, credentials, time.time())
    try:
        asyncio.run(_serve(context, build))
    except HealthPortError as exc:
        fail_startup(name, f"TESSERA_{name.upper()}_HEALTH_PORT={settings.health_port}: {exc}")
    except OSError as exc:
        fail_startup(name, f"TESSERA_{name.upper()}_PORT={settings.port}: {exc}")
    except StartupError as exc:
        fail_startup(name, str(exc))
    except KeyboardInterrupt:
        pass


async def _build_when_reachable(context: ServiceContext, build: BuildRegistrations,
                                stop: asyncio.Event) -> Sequence[Registration] | None:
    """build(); while it reports DependencyUnavailable and the wait allows, retry (None: stopped meanwhile).

    The wait is said once, in one line, and kept in the waiting file beside the ready file (for `tessera
    status` and the launcher's hang check); the health port meanwhile answers not ready.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + context.settings.dependency_wait_seconds
    delay, said = 0.5, False
    # Beats from the start: a long migration is a process starting, not a hung one.
    waiting = WaitingNotice(context.settings.ready_file, "")
    try:
        while True:
            try:
                registrations = build(context)
                if inspect.isawaitable(registrations):
                    registrations = await _unless_stopped(registrations, stop)
                    if registrations is None:
                        return None
            except DependencyUnavailable as exc:
                if loop.time() + delay > deadline:
                    raise
                if not said:
                    log(logger, logging.WARNING, "waiting for a dependency (not ready until it answers)",
                        problem=str(exc), wait_seconds=context.settings.dependency_wait_seconds)
                    said, waiting.since = True, time.time()
                waiting.problem = str(exc)
                try:
                    await asyncio.wait_for(stop.wait(), delay)
                    return None
                except TimeoutError:
                    delay = min(delay * 2, DEPENDENCY_RETRY_SECONDS)
                continue
            if said:
                log(logger, logging.INFO, "dependency reachable")
            return registrations
    finally:
        waiting.close()


async def _unless_stopped(work: Awaitable, stop: asyncio.Event):
    """`work`'s result, or None as soon as `stop` is set (a stop while a database hangs is obeyed at once)."""
    working, stopping = asyncio.ensure_future(work), asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({working, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if not working.done():
        working.cancel()
        return None
    return working.result()


async def off_loop(function: Callable, *args):
    """`function(*args)` on a daemon thread of its own, for a build's blocking preparation (connect, migrate).
    Not asyncio.to_thread: asyncio.run waits for the default executor's threads at exit, so a process told to
    stop while its database hangs would hang too; a daemon thread is left behind instead."""
    loop = asyncio.get_running_loop()
    result: asyncio.Future = loop.create_future()

    def settle(value, error) -> None:
        if not result.done():
            result.set_exception(error) if error is not None else result.set_result(value)

    def run() -> None:
        try:
            value, error = function(*args), None
        except BaseException as exc:  # handed to the awaiting task, which decides
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop is gone: the process is stopping and nobody waits for this
            pass

    threading.Thread(target=run, daemon=True, name="start-up").start()
    return await result


class WaitingNotice:
    """The waiting file of a process that is not ready yet: "" while it starts, then what it waits for; kept
    fresh by a task of its own (the build's blocking work runs off the loop, so the beat goes on while a
    database hangs or a migration runs)."""

    def __init__(self, ready_file: Path | None, problem: str) -> None:
        self.path = ready_file.with_name(WAITING_FILE) if ready_file else None
        self.problem, self.since = problem, time.time()
        self._task = asyncio.create_task(self._beat()) if self.path else None

    async def _beat(self) -> None:
        while True:
            try:
                write_ready_file(self.path, {"pid": os.getpid(), "problem": self.problem, "since": self.since,
                                             "beat": time.time()})
            except OSError as exc:  # a launcher that cannot read it counts the process as silent; say why
                log(logger, logging.WARNING, "cannot write the waiting file", path=str(self.path), error=str(exc))
            await asyncio.sleep(WAITING_BEAT_SECONDS)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self.path.unlink(missing_ok=True)


async def _serve(context: ServiceContext, build: BuildRegistrations) -> None:
    settings = context.settings
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    early = None
    if settings.health_port is not None:
        early = await start_health_only(settings.listen_host, settings.health_port)
    try:
        registrations = await _build_when_reachable(context, build, stop)
        if registrations is None:
            log(logger, logging.INFO, "stopped before it was ready")
            if early is not None:
                await early.server.stop(None)
            return
        running = await start_server(
            context.credentials,
            registrations,
            host=settings.listen_host,
            port=settings.port,
            health_only=early,
            max_connection_age=settings.max_connection_age_seconds,
        )
    except BaseException:
        if early is not None:
            await early.server.stop(None)
        raise
    address = f"{settings.listen_host}:{running.port}"
    log(logger, logging.INFO, "serving", address=address, identity=context.credentials.identity,
        services=running.service_names, health_port=running.health_port)
    missing = missing_server_name(context.credentials)
    if missing is not None and client_tls_mode() == CLIENT_TLS_NATIVE:
        log(logger, logging.WARNING, f"this certificate carries no DNS name {missing}: clients on gRPC's own TLS "
            f"(TESSERA_CLIENT_TLS=native, the default) cannot reach this service; reissue it with that name, or "
            f"set TESSERA_CLIENT_TLS=spiffe-bridge for every client", file=str(context.credentials.cert_file))
    if settings.ready_file:
        write_ready_file(settings.ready_file, {
            "name": context.name, "pid": os.getpid(), "address": address, "port": running.port,
            "identity": context.credentials.identity, "health_port": running.health_port,
        })
    await stop.wait()
    log(logger, logging.INFO, "stopping", grace_seconds=settings.grace_seconds)
    await running.stop(settings.grace_seconds)
    for registration in registrations:
        if registration.lifecycle.on_stop:
            registration.lifecycle.on_stop()
    log(logger, logging.INFO, "stopped")


def service_info(context: ServiceContext) -> common_pb2.ServiceInfo:
    """The ServiceInfo a process reports through its GetInfo RPC."""
    started = Timestamp()
    started.FromSeconds(int(context.started_at))
    return common_pb2.ServiceInfo(
        name=context.name,
        version=__version__,
        identity=context.credentials.identity,
        services=[SERVICES[context.name][0].full_name],
        started_at=started,
        contract_hash=contract_hash(),
    )


class ServiceParts(Protocol):
    """A service's typed parts (its wiring.py's dataclass): everything its servicer is given, and its lifecycle."""

    lifecycle: Lifecycle


def serving(build: Callable[[ServiceContext], ServiceParts | Awaitable[ServiceParts]],
            servicer: Callable[[ServiceParts], object]) -> BuildRegistrations:
    """The registration of one service from its wiring: `build` makes its parts (a coroutine may prepare them off
    the event loop), `servicer` serves over them; their lifecycle is the registration's."""

    async def registrations(context: ServiceContext) -> list[Registration]:
        parts = build(context)
        if inspect.isawaitable(parts):
            parts = await parts
        return [registration_for(context.name, servicer(parts), parts.lifecycle)]
    return registrations


def registration_for(name: str, servicer: object, lifecycle: Lifecycle | None = None) -> Registration:
    """Register `servicer` as process `name`'s contract service.

    RPCs it does not implement answer UNIMPLEMENTED / NOT_IMPLEMENTED.
    """
    descriptor, grpc_module = SERVICES[name]
    service = descriptor.name
    base = getattr(grpc_module, f"{service}Servicer")
    add = getattr(grpc_module, f"add_{service}Servicer_to_server")
    return Registration(descriptor, not_implemented_yet(servicer, descriptor, base), add, lifecycle or Lifecycle())
