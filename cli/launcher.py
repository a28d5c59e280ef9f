"""Start, watch and stop a set of Tessera processes on this machine.

`tessera up`, `tessera demo` and the integration tests all use this, so the
tests exercise the same start-up path a person does. Each child is a real
`python -m services.<name>` process with its own certificate; it announces
readiness by writing a ready file, and is then checked over its own health
endpoint (gRPC health over mTLS, or HTTP for web). Run as root with
`separate_users`, each child runs as a user of its own in a box of its own
(cli/process_users.py, cli/service_box.py); the launcher itself stays root to
supervise them.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from cli.process_users import ServiceUser, allocate_ids, database_file, settle, warehouse_note
from cli.service_box import Grant, boxed_command, exit_status, tools
from shared.config import CLIENT_TLS_SPIFFE_BRIDGE, DEFAULT_PORTS
from shared.identity.certs import (
    CA_CERT_FILE,
    Credentials,
    cert_path,
    export_identity,
    key_path,
    load_credentials,
    private_dir,
)
from shared.identity.principals import HTTP_PROCESS_NAMES, IDENTITY_VARIABLES, PROCESS_NAMES
from shared.identity.public_url import PUBLIC_URL_VARIABLE
from shared.paths import DEMO_SEMANTIC_MODEL, NO_ACTIONS, REPO_ROOT, cli_dir, var_dir
from shared.rpc import spiffe_channels
from shared.rpc.channels import sync_channel
from shared.rpc.runtime import LIVENESS_SERVICE, WAITING_BEAT_SECONDS, WAITING_FILE

STARTUP_TIMEOUT_SECONDS = 30.0
# Health checks go straight to the loopback address: an operator's http_proxy must not answer for a service.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
STOP_TIMEOUT_SECONDS = 10.0
BOX_SETUP_SECONDS = 10.0  # bubblewrap says the boxed process's pid once its mounts are made
# How long a service waits, not ready, for a database that does not answer yet, unless the operator says
# (TESSERA_<NAME>_DEPENDENCY_WAIT_SECONDS): a database that comes up late is not a reason to stop the set.
DEFAULT_DEPENDENCY_WAIT_SECONDS = 600
# A waiting file whose last beat is older than this is a silent process's, not a waiting one's: a few
# beats may be late on a loaded machine, not more.
WAITING_STALE_SECONDS = 3 * WAITING_BEAT_SECONDS
LOG_TAIL_BYTES = 64 * 1024  # enough for a last line, however long the process has been logging
# How the channel bridge fails when nothing answers at all (nothing listens, no handshake, the peer went away
# mid-way); any other refusal is an answer: a live process that refuses our certificate or shows another.
NO_ANSWER_REASONS = frozenset({spiffe_channels.TARGET_UNREACHABLE, spiffe_channels.TLS_HANDSHAKE_FAILED})

# What a child inherits from the operator's environment besides its own TESSERA_<NAME>_*
# variables: what a Python process needs to run, and the deployment-wide settings that are
# not secret. Nothing else: the operator's shell may hold a model API key, cloud tokens ...
INHERITED_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH")
SHARED_VARIABLES = ("TESSERA_VAR_DIR", "TESSERA_LOG_LEVEL", "TESSERA_CLIENT_TLS", PUBLIC_URL_VARIABLE,
                    *IDENTITY_VARIABLES)
PEER_ADDRESS_VARIABLES = tuple(f"TESSERA_{name.upper()}_ADDR" for name in PROCESS_NAMES)



class StartupError(Exception):
    """A process that did not come up; the message carries its own error line."""


@dataclass(frozen=True)
class Waiting:
    """What a process that is not ready yet says it waits for (its waiting file, shared.rpc.runtime.WaitingNotice):
    a `problem`, or "" while it is still starting (its build's blocking work runs, and it beats meanwhile)."""

    problem: str
    since: float  # wall-clock time it began waiting
    beat: float  # wall-clock time of its latest beat


@dataclass
class ProcessHandle:
    name: str
    port: int
    log_path: Path
    ready_file: Path
    process: subprocess.Popen | None = None
    pid: int | None = None
    started_at: float | None = None  # wall-clock time of the current process's start
    restarts: int = 0
    uid: int | None = None  # its own user, when it runs boxed; else the launcher's
    home: Path | None = None  # its HOME and TMPDIR, when it runs boxed
    log_offset: int = 0  # the log's size when the current process started: what it logged begins there
    # What the supervisor (or start()) last saw: starting, serving, waiting, restarting, failed or hung, and
    # why (what it waits for, how it died); the state file carries both to `tessera status`.
    state: str = "starting"
    reason: str = ""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def boxed(self) -> bool:
        return self.uid is not None

    def poll(self) -> int | None:
        """The exit status once the process ended (-N: ended by signal N, boxed or not), else None."""
        code = self.process.poll() if self.process is not None else None
        return exit_status(code) if code is not None and self.boxed else code

    def send(self, signum: int) -> None:
        """Signal the service itself: boxed, that is bubblewrap's child (bubblewrap passes no signal on)."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    @property
    def waiting_file(self) -> Path:
        return self.ready_file.with_name(WAITING_FILE)

    def last_log_line(self) -> str:
        """The last line the current process logged: the log is appended across restarts, and an earlier
        process's last words are not this one's."""
        try:
            with open(self.log_path, "rb") as log_file:
                size = os.fstat(log_file.fileno()).st_size
                start = self.log_offset if self.log_offset <= size else 0  # truncated since: all of it is new
                log_file.seek(max(start, size - LOG_TAIL_BYTES))
                text = log_file.read().decode(errors="replace")
        except OSError:
            return ""
        lines = [line for line in text.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def waiting(self, now: float | None = None) -> Waiting | None:
        """What the current process waits for, if it says so and its waiting file still beats (`now`: wall
        clock); None when there is no such file, it cannot be read, its last beat is stale, or it is another
        process's. The pid compares directly, boxed or not: the box shares the launcher's pid namespace
        (cli/service_box.py unshares none), and bubblewrap reports its child's pid, which setpriv execs into
        the service."""
        try:
            found = json.loads(self.waiting_file.read_bytes())
            waiting = Waiting(str(found["problem"]), float(found["since"]), float(found["beat"]))
            pid = int(found["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        now = time.time() if now is None else now
        if pid != self.pid or now - waiting.beat > WAITING_STALE_SECONDS:
            return None
        return waiting


def free_ports(count: int) -> list[int]:
    """Ports the OS considers free right now (held together so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def cli_credentials(cert_dir: Path, principal: str = "cli") -> Credentials:
    return load_credentials(principal, cert_dir / CA_CERT_FILE, cert_path(cert_dir, principal),
                            key_path(cert_dir, principal))


def web_url(address: str) -> str:
    """Web's address as a person opens it, and the one every printed link uses: `localhost` rather than
    127.0.0.1, because the session cookie belongs to the host name the browser used (a link to 127.0.0.1 would
    find no sign-in made on localhost) and a passkey to a domain name (WebAuthn refuses IP addresses)."""
    host, _, port = address.rpartition(":")
    if host in ("127.0.0.1", "[::1]", "0.0.0.0", ""):
        host = "localhost"
    return f"http://{host}:{port}"


def check_health(handle: ProcessHandle, credentials: Credentials, timeout: float = 2.0, service: str = "",
                 client_tls: str | None = None) -> str:
    """SERVING / NOT_SERVING / UNREACHABLE (<why>) for one process: its readiness, or the status of health
    service `service` (gRPC processes only; HTTP ones have /healthz alone); `client_tls`: see sync_channel."""
    if handle.name in HTTP_PROCESS_NAMES:
        try:
            with _DIRECT.open(f"http://{handle.address}/healthz", timeout=timeout) as reply:
                return json.loads(reply.read())["status"]
        except (OSError, ValueError, KeyError) as exc:
            return f"UNREACHABLE ({exc})"
    with sync_channel(handle.address, credentials, handle.name, client_tls) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                              timeout=timeout)
        except grpc.RpcError as exc:
            return f"UNREACHABLE ({exc.code().name})"
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def check_liveness(handle: ProcessHandle, credentials: Credentials | None, timeout: float = 2.0) -> str | None:
    """None when the process answers the check Kubernetes' liveness probe makes, else why not. gRPC processes:
    health service shared.rpc.runtime.LIVENESS_SERVICE SERVING, over mTLS (with no credentials, or with a handshake
    the process refused, there is nothing to tell: None). HTTP ones: /healthz answering at all (a 503 is a live
    process that is not ready)."""
    if handle.name in HTTP_PROCESS_NAMES:
        try:
            with _DIRECT.open(f"http://{handle.address}/healthz", timeout=timeout):
                return None
        except urllib.error.HTTPError:
            return None
        except (OSError, ValueError) as exc:
            return str(exc) or type(exc).__name__
    if credentials is None:
        return None
    before = spiffe_channels.failure_counts(handle.address)
    # Through the bridge, which tells a refused handshake from an absent process (grpc core: both UNAVAILABLE).
    status = check_health(handle, credentials, timeout, LIVENESS_SERVICE, CLIENT_TLS_SPIFFE_BRIDGE)
    if status == "SERVING":
        return None
    # A refused certificate (say, the CLI's expired) is no hang: ending the process would not help, and every
    # service would be ended in turn. The bridge counts the refusal before the call sees it fail.
    refusals = {reason for reason, count in spiffe_channels.failure_counts(handle.address).items()
                if count > before.get(reason, 0)} - NO_ANSWER_REASONS
    return None if refusals else status


def service_environment(name: str, source: dict[str, str]) -> dict[str, str]:
    """The variables process `name` is given: its own TESSERA_<NAME>_* ones, the shared
    non-secret settings, where its peers listen, and what Python needs to run."""
    own = f"TESSERA_{name.upper()}_"
    return {
        variable: value for variable, value in source.items()
        if variable.startswith(own) or variable in INHERITED_VARIABLES or variable in SHARED_VARIABLES
        or variable in PEER_ADDRESS_VARIABLES
    }


def _demo_actions_with_the_demo_model(env: dict[str, str], source: dict[str, str]) -> None:
    """The demo's actions change the demo's orders: they go with the demo's semantic model only. A set whose
    resources read another model gets no actions (deploy/policy/no-actions.yaml) unless its operator names an
    actions file of their own (docs/semantic-model.md). The broker checks the actions it offers against the
    model the gateway reads."""
    model = source.get("TESSERA_RESOURCES_SEMANTIC_MODEL")
    if model:
        env.setdefault("TESSERA_CAPABILITIES_SEMANTIC_MODEL", model)
    if model and Path(model).resolve() != DEMO_SEMANTIC_MODEL.resolve():
        env.setdefault("TESSERA_CAPABILITIES_ACTIONS_FILE", str(NO_ACTIONS))


@dataclass
class ServiceSet:
    """The processes of one deployment on loopback."""

    cert_dir: Path
    run_dir: Path
    names: tuple[str, ...] = PROCESS_NAMES
    ephemeral_ports: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)
    # Each process as a user of its own, in a box of its own (needs root and bubblewrap): `tessera up` and
    # `tessera demo` run as root turn it on.
    separate_users: bool = False
    handles: dict[str, ProcessHandle] = field(default_factory=dict)
    users: dict[str, ServiceUser] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the operator should know about how the set runs

    def __post_init__(self) -> None:
        ports = free_ports(len(self.names)) if self.ephemeral_ports else [DEFAULT_PORTS[n] for n in self.names]
        for name, port in zip(self.names, ports, strict=True):
            # A folder of its own for the ready file: a boxed process may write there and nowhere near another's.
            self.handles[name] = ProcessHandle(
                name, port, self.run_dir / "logs" / f"{name}.log", self.run_dir / "ready" / name / "ready.json"
            )

    def identity_dir(self, name: str) -> Path:
        """The folder `name` is handed: its own key and certificate, the CA certificate, nothing else secret."""
        return self.run_dir / "identity" / name

    def home_dir(self, name: str) -> Path:
        """A boxed process's HOME."""
        return self.run_dir / "home" / name

    def _env(self, handle: ProcessHandle) -> dict[str, str]:
        env = service_environment(handle.name, self._source_env())
        env["TESSERA_CERT_DIR"] = str(self.identity_dir(handle.name))
        if handle.home is not None:
            # Its own home, never the operator's (root's); its box's own /tmp, where unix socket paths stay short.
            env["HOME"], env["TMPDIR"] = str(handle.home), "/tmp"
        env["PYTHONUNBUFFERED"] = "1"
        prefix = f"TESSERA_{handle.name.upper()}_"
        env[prefix + "PORT"] = str(handle.port)
        env[prefix + "READY_FILE"] = str(handle.ready_file)
        # Waiting for a database is the default here; the operator's own setting (0: fail at once) wins.
        env.setdefault(prefix + "DEPENDENCY_WAIT_SECONDS", str(DEFAULT_DEPENDENCY_WAIT_SECONDS))
        # Every process learns where its peers listen.
        for peer in self.handles.values():
            env[f"TESSERA_{peer.name.upper()}_ADDR"] = peer.address
        if handle.name == "mcp" and "web" in self.handles:  # the link it gives an outside agent's person
            env.setdefault("TESSERA_MCP_WEB_URL", web_url(self.handles["web"].address))
        if handle.name == "capabilities":
            _demo_actions_with_the_demo_model(env, self._source_env())
        return env

    def _source_env(self) -> dict[str, str]:
        return {**os.environ, **self.extra_env}

    def start(self, timeout: float = STARTUP_TIMEOUT_SECONDS, allow_waiting: bool = False) -> None:
        """Start every process and wait until each is healthy; on failure stop all. With `allow_waiting`, a
        process that waits for its database (its waiting file beats) counts as started too: its state says
        "waiting" and why, and it serves once the database answers."""
        credentials = cli_credentials(self.cert_dir)
        for folder in (self.run_dir, self.run_dir / "identity", self.run_dir / "home", self.run_dir / "ready"):
            private_dir(folder)  # the launcher's: a boxed process reaches only its own folders within
        for handle in self.handles.values():
            private_dir(handle.log_path.parent)
            private_dir(handle.ready_file.parent)
            export_identity(self.cert_dir, handle.name, self.identity_dir(handle.name))
        if self.separate_users:
            self._settle_users()
        try:
            for handle in self.handles.values():
                self._spawn(handle, truncate_log=True)
            self._wait_ready(credentials, time.monotonic() + timeout, allow_waiting)
        except BaseException:
            self.stop()
            raise

    def _settle_users(self) -> None:
        """Give each process a user of its own and its files (as root), and say what its box shows."""
        tools()  # fail before anything is handed over if bubblewrap or setpriv is missing
        from cli.seed import default_url  # the demo warehouse, which two services hold

        source = self._source_env()
        state = private_dir(Path(source.get("TESSERA_VAR_DIR") or var_dir()))  # root's; each service enters its own
        ids = allocate_ids(self.names, state)
        private = {name: [Grant(self.identity_dir(name)), Grant(self.handles[name].ready_file.parent, True),
                          Grant(self.home_dir(name), True)]
                   for name in self.names}
        envs = {name: service_environment(name, source) for name in self.names}
        # Where the demo warehouse is by default, within this set's var folder.
        warehouse = state / database_file(default_url()).relative_to(var_dir().resolve())
        self.users = settle(ids, private, envs, state, [self.cert_dir, cli_dir()], f"sqlite:///{warehouse}")
        self.notes += filter(None, [warehouse_note(envs, f"sqlite:///{warehouse}")])
        self.notes += [f"{name}: left {path} as it was, not handed to its user (a symbolic link, a hard-linked file "
                       "or no plain file or folder): a service has no reason to leave one there"
                       for name, user in self.users.items() for path in user.passed_over]
        for name, user in self.users.items():
            self.handles[name].uid, self.handles[name].home = user.uid, self.home_dir(name)

    def _spawn(self, handle: ProcessHandle, truncate_log: bool) -> None:
        handle.ready_file.unlink(missing_ok=True)
        handle.waiting_file.unlink(missing_ok=True)  # a killed process leaves its own behind
        handle.started_at = time.time()  # also when it fails to start: the supervisor counts such a start as a crash
        # A restarted process appends to its log, so the crash that caused the restart stays readable.
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate_log else os.O_APPEND)
        program = [sys.executable, "-m", f"services.{handle.name}"]
        with open(os.open(handle.log_path, flags, 0o600), "wb") as log_file:
            handle.log_offset = os.fstat(log_file.fileno()).st_size
            if not handle.boxed:
                # umask 077: whatever the service creates (databases, logs, ready files) is its owner's only.
                handle.process = subprocess.Popen(
                    program, cwd=REPO_ROOT, env=self._env(handle), stdout=log_file, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True, umask=0o077,
                )
                handle.pid = handle.process.pid
            else:
                os.fchown(log_file.fileno(), handle.uid, handle.uid)
                self._spawn_boxed(handle, program, log_file)

    def _spawn_boxed(self, handle: ProcessHandle, program: list[str], log_file) -> None:
        user = self.users[handle.name]
        info_read, info_write = os.pipe()
        try:
            handle.process = subprocess.Popen(
                boxed_command(user.uid, program, list(user.grants), list(user.hidden), REPO_ROOT, info_write),
                cwd=REPO_ROOT, env=self._env(handle), stdout=log_file, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, umask=0o077, pass_fds=(info_write,),
            )
        finally:
            os.close(info_write)
        with open(info_read, "rb") as info:
            pid, closed = _boxed_pid(info)
        if pid is None:
            raise StartupError(f"{handle.name} did not start: {_end_box(handle.process, handle, closed)}")
        handle.pid = pid

    def restart(self, name: str) -> ProcessHandle:
        """Start `name` again on the same port (its peers know it there); its old process must be gone.
        StartupError if its box did not start (then nothing of it runs)."""
        handle = self.handles[name]
        if handle.process is not None and handle.process.poll() is None:
            raise RuntimeError(f"{name} is still running (pid {handle.pid})")
        self._spawn(handle, truncate_log=False)
        handle.restarts += 1
        return handle

    def _wait_ready(self, credentials: Credentials, deadline: float, allow_waiting: bool) -> None:
        pending = dict(self.handles)
        while pending:
            for name, handle in list(pending.items()):
                code = handle.poll()
                if code is not None:
                    raise StartupError(f"{name} exited with status {code}: {handle.last_log_line()}")
                if handle.ready_file.exists() and check_health(handle, credentials) == "SERVING":
                    handle.state, handle.reason = "serving", ""
                    del pending[name]
                elif (waiting := handle.waiting()) is not None and waiting.problem:  # not only starting
                    handle.state, handle.reason = "waiting", waiting.problem
                    if allow_waiting:
                        del pending[name]
            if pending and time.monotonic() > deadline:
                late = [f"{name} (waiting: {h.reason})" if h.state == "waiting" else name
                        for name, h in pending.items()]
                raise StartupError(f"not healthy after the start-up timeout: {', '.join(late)}")
            if pending:
                time.sleep(0.05)

    def exited(self) -> list[ProcessHandle]:
        return [h for h in self.handles.values() if h.process and h.process.poll() is not None]

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> dict[str, int | None]:
        """SIGTERM every process, wait, SIGKILL stragglers; return exit codes."""
        return stop_together([self], timeout)[0]

    def _terminate(self) -> list[ProcessHandle]:
        """SIGTERM to every running process; those it was sent to."""
        running = [h for h in self.handles.values() if h.process and h.process.poll() is None]
        for handle in running:
            handle.send(signal.SIGTERM)
        return running

    def _exit_codes(self) -> dict[str, int | None]:
        return {h.name: h.poll() for h in self.handles.values()}

    def state(self) -> dict:
        return {
            "cert_dir": str(self.cert_dir),
            "processes": [
                {"name": h.name, "pid": h.pid, "address": h.address, "log": str(h.log_path),
                 "started_at": h.started_at, "restarts": h.restarts, "uid": h.uid, "state": h.state,
                 "reason": h.reason}
                for h in self.handles.values()
            ],
        }


def stop_together(sets: list[ServiceSet], timeout: float = STOP_TIMEOUT_SECONDS) -> list[dict[str, int | None]]:
    """Stop several sets at once (replicas): every process gets SIGTERM before any is waited for, so their
    graceful stops overlap instead of adding up; SIGKILL for stragglers. Each set's exit codes."""
    running = [handle for services in sets for handle in services._terminate()]
    deadline = time.monotonic() + timeout
    for handle in running:
        try:
            handle.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            handle.send(signal.SIGKILL)
            handle.process.kill()
            handle.process.wait()
    return [services._exit_codes() for services in sets]


def _boxed_pid(info) -> tuple[int | None, bool]:
    """The boxed process's own pid, from what bubblewrap writes once the box is made (it closes the pipe then),
    and whether the pipe was closed; None if bubblewrap closed it without (it failed first) or said nothing
    within BOX_SETUP_SECONDS."""
    deadline = time.monotonic() + BOX_SETUP_SECONDS
    text, closed = b"", False
    while time.monotonic() < deadline and not closed:
        if select.select([info], [], [], 0.1)[0]:
            chunk = os.read(info.fileno(), 4096)
            text += chunk
            closed = not chunk
    try:
        return int(json.loads(text)["child-pid"]), closed
    except (ValueError, KeyError, TypeError):
        return None, closed


def _exited(box: subprocess.Popen, within: float) -> bool:
    """Whether bubblewrap ended (waiting up to `within` seconds), without reaping it."""
    deadline = time.monotonic() + within
    while box.returncode is None:
        if os.waitid(os.P_PID, box.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _end_box(box: subprocess.Popen, handle: ProcessHandle, closed: bool) -> str:
    """End a box whose process's pid is unknown, and say why it failed. bubblewrap passes no signal on, so its
    whole process group goes (bubblewrap leads it, started in a session of its own, and whatever it started is
    in it): a service left running there would hold its port with no one to stop it."""
    exited = _exited(box, 1.0 if closed else 0.0)  # a closed pipe: it is exiting
    if box.returncode is None:  # not reaped yet, so the group's id cannot have been taken by another meanwhile
        try:
            os.killpg(box.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    code = box.wait()
    if not exited:
        return (f"bubblewrap did not report the boxed process's pid within {BOX_SETUP_SECONDS:.0f} s; its box was "
                f"ended. {handle.last_log_line()}").strip()
    return f"its box failed (bubblewrap exited with status {code}): {handle.last_log_line() or '(nothing logged)'}"
