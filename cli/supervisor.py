"""Keep a started ServiceSet running: restart a process that dies or hangs, with backoff, until told to stop.

`tessera up` and `tessera demo` run this loop in the foreground. A crash is a
blip: the process is started again on its own port (its peers keep their
address and reconnect by themselves), and the restart is said on the terminal
and in the state file `tessera status` reads. A process that keeps dying right
after it starts has a cause that a restart does not fix (a bad setting, a
missing file): after a few quick deaths in a row it is shown as failed, with
that process's last log line, said once, and then retried every
RestartPolicy.max_delay seconds, so it comes back by itself once the cause
goes. The others keep serving throughout; only SIGINT/SIGTERM ends the loop.

A process that hangs does not die, so the supervisor also asks each one the
question Kubernetes' liveness probe asks (check_liveness: gRPC health for
shared.rpc.runtime.LIVENESS_SERVICE, or /healthz answering at all), every few
seconds, on worker threads so the loop never waits for an answer. A process
that is not ready yet counts as alive while its waiting file beats
(shared.rpc.runtime.WaitingNotice) and during the start-up grace otherwise. One
unresponsive for longer than RestartPolicy.hang_seconds is SIGKILLed and,
once its exit is seen, restarted like any other.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import signal
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from cli.launcher import (
    NO_ANSWER_REASONS,
    STARTUP_TIMEOUT_SECONDS,
    ProcessHandle,
    ServiceSet,
    StartupError,
    check_liveness,
    cli_credentials,
)
from shared.identity.certs import CredentialError, Credentials, write_private

POLL_SECONDS = 0.1
HANG_SECONDS_VARIABLE = "TESSERA_HANG_SECONDS"
CREDENTIALS_RELOAD_SECONDS = 60.0  # the CLI certificate the liveness checks present is read again this often

# None when the process answered its liveness check, else why not. Called on a worker thread; it must
# return within about RestartPolicy.liveness_deadline.
LivenessCheck = Callable[[ProcessHandle], str | None]


@dataclass(frozen=True)
class RestartPolicy:
    first_delay: float = 0.1  # a crash is usually one-off: try again almost at once
    max_delay: float = 30.0  # the backoff's cap, and how often a failed process is tried again
    # A process that ran this long before dying starts a new streak; only quick deaths add up.
    stable_after: float = 30.0
    crash_limit: int = 5  # quick deaths in a row before the process is shown as failed
    hang_seconds: float = 20.0  # unresponsive this long, without a break: hung, ended and restarted
    liveness_every: float = 2.0
    liveness_deadline: float = 2.0
    # A process that is not ready and does not say what it waits for is given this long to start.
    startup_grace: float = STARTUP_TIMEOUT_SECONDS


def hang_seconds_from(environ: Mapping[str, str], default: float = RestartPolicy.hang_seconds) -> float:
    """The hang bound the operator set in TESSERA_HANG_SECONDS, or `default`; ValueError saying what is
    wrong with a value that is not a positive number of seconds."""
    text = environ.get(HANG_SECONDS_VARIABLE, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    # Shorter than one check and its deadline, a single slow answer would count as a hang.
    shortest = RestartPolicy.liveness_every + RestartPolicy.liveness_deadline
    if not math.isfinite(value) or value < shortest:
        raise ValueError(f"{HANG_SECONDS_VARIABLE} must be a number of seconds, at least {shortest:g} (how long a "
                         f"service may leave its liveness check unanswered before it is restarted), not {text!r}")
    return value


@dataclass
class _Watch:
    streak: int = 0
    restart_at: float | None = None  # monotonic time of the pending restart
    down_since: float | None = None  # monotonic time of the first death of this outage, until it serves again
    failed: bool = False  # kept failing; said once, cleared when it serves again
    hung: str = ""  # why it was SIGKILLed as hung, until it is restarted
    served: bool = False  # the current process has been ready
    started: float = 0.0  # monotonic time the current process was started (or first watched)
    check: Future | None = None  # the liveness check in flight
    check_started: float = 0.0
    next_check: float = 0.0
    silent_since: float | None = None  # start of the current unbroken run of unanswered checks
    silent_why: str = ""


def exit_description(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"status {code}"


class Supervisor:
    """`liveness` and `executor` are there for tests: by default the liveness check is check_liveness with the
    CLI's credentials (loaded on first use), run on a thread pool."""

    def __init__(self, services: ServiceSet, policy: RestartPolicy = RestartPolicy(),
                 say: Callable[[str], None] = print, on_change: Callable[[], None] = lambda: None,
                 liveness: LivenessCheck | None = None, executor: Executor | None = None) -> None:
        self.services = services
        self.policy = policy
        self._say = say
        self._on_change = on_change
        self._liveness = liveness
        self._executor = executor or ThreadPoolExecutor(max(1, len(services.handles)),
                                                        thread_name_prefix="liveness")
        self._check_errors_said = False
        now = time.monotonic()
        self._watches = {name: _Watch(started=now, next_check=now) for name in services.handles}
        self._last_poll = now

    def close(self) -> None:
        """Stop taking liveness checks; those in flight end on their own deadline."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def poll(self) -> None:
        """One look at every process: notice deaths and hangs, start due restarts, notice recoveries."""
        now, wall = time.monotonic(), time.time()
        self._discount_pause(now)
        changed = False
        for handle in self.services.handles.values():
            watch = self._watches[handle.name]
            before = (handle.state, handle.reason, handle.pid)
            if watch.restart_at is not None:
                if now >= watch.restart_at:
                    self._restart(handle, watch, now)
            elif not self._notice_exit(handle, watch, now, wall) and not watch.hung:
                self._follow(handle, watch, now, wall)
            changed |= (handle.state, handle.reason, handle.pid) != before
        if changed:
            self._on_change()

    def _discount_pause(self, now: float) -> None:
        """Time the supervisor itself did not run (its process stopped, a slow machine) counts against no
        process: its checks could not be asked or gathered then, so silence, grace and checks in flight are
        all moved on by the gap."""
        gap, self._last_poll = now - self._last_poll, now
        if gap <= self.policy.liveness_every:
            return
        for watch in self._watches.values():
            watch.started += gap
            watch.check_started += gap
            if watch.silent_since is not None:
                watch.silent_since += gap

    def _restart(self, handle: ProcessHandle, watch: _Watch, now: float) -> None:
        watch.restart_at = None
        try:
            self.services.restart(handle.name)
        except (StartupError, OSError) as exc:
            # Its box did not start, or no process could be made: nothing of it runs, and the next look sees
            # the (old or boxed) process ended, a crash like any other.
            if not watch.failed:
                self._say(f"tessera: cannot start {handle.name}: {exc}")
            return
        watch.started, watch.next_check, watch.hung, watch.served = now, now, "", False
        watch.check, watch.silent_since = None, None
        if not watch.failed:  # a failed one stays shown as failed until it serves
            handle.state, handle.reason = "starting", ""
            self._say(f"tessera: restarted {handle.name} (pid {handle.pid}, restart {handle.restarts})")

    def _notice_exit(self, handle: ProcessHandle, watch: _Watch, now: float, wall: float) -> bool:
        code = handle.poll()
        if code is None:
            return False
        watch.check, watch.silent_since = None, None
        lived = wall - (handle.started_at or wall)
        # A process that hung before it ever served never got going, however long that took: its start failed.
        quick = lived < self.policy.stable_after or (watch.hung and not watch.served)
        watch.streak = watch.streak + 1 if quick else 1
        why = f"{exit_description(code)} after {lived:.1f} s: {handle.last_log_line() or '(nothing logged)'}"
        if watch.down_since is None:
            watch.down_since = now
        if watch.failed or watch.streak >= self.policy.crash_limit:
            delay = self.policy.max_delay
            cause = f"{watch.hung}; {why}" if watch.hung else why
            if not watch.failed:
                self._say(f"tessera: {handle.name} keeps failing ({cause}); retrying every "
                          f"{self.policy.max_delay:g} s, the others keep serving")
                watch.failed = True
            handle.state, handle.reason = "failed", cause
        else:
            delay = min(self.policy.first_delay * 2 ** (watch.streak - 1), self.policy.max_delay)
            if watch.hung:
                self._say(f"tessera: {handle.name} ended ({why}); restarting in {delay:.1f} s")
                handle.state, handle.reason = "hung", watch.hung
            else:
                self._say(f"tessera: {handle.name} exited unexpectedly ({why}); restarting in {delay:.1f} s")
                handle.state, handle.reason = "restarting", why
        watch.restart_at = now + delay
        return True

    def _follow(self, handle: ProcessHandle, watch: _Watch, now: float, wall: float) -> None:
        """A running process: is it serving (again), waiting, or silent for too long?"""
        ready = handle.ready_file.exists()
        if ready:
            if watch.down_since is not None:
                self._say(f"tessera: {handle.name} is serving again, {now - watch.down_since:.1f} s after it died")
                watch.down_since = None
            elif handle.state == "waiting":  # `up` said it would serve once its database answers
                self._say(f"tessera: {handle.name} is serving now: what it waited for answers")
            watch.failed, watch.served = False, True
            handle.state, handle.reason = "serving", ""
        self._gather(handle, watch, now)
        if watch.hung:  # just ended: its exit comes next, nothing more to ask it
            return
        if watch.check is None and now >= watch.next_check:
            watch.next_check = now + self.policy.liveness_every
            if ready:
                watch.check, watch.check_started = self._executor.submit(self._check(), handle), now
            else:
                self._starting(handle, watch, now, wall)

    def _starting(self, handle: ProcessHandle, watch: _Watch, now: float, wall: float) -> None:
        """A process that is not ready: alive while its waiting file beats (starting, or saying what it waits
        for), or within its start-up grace."""
        waiting = handle.waiting(wall)
        if not watch.failed:
            handle.state, handle.reason = ("waiting", waiting.problem) if waiting and waiting.problem \
                else ("starting", "")
        if waiting is not None or now - watch.started < self.policy.startup_grace:
            self._heard(handle, watch, now, now, None)
        else:
            self._heard(handle, watch, now, now, f"not ready {now - watch.started:.0f} s after it started, "
                                                 "and not saying it is starting or what it waits for")

    def _gather(self, handle: ProcessHandle, watch: _Watch, now: float) -> None:
        check = watch.check
        if check is None:
            return
        if check.done():
            watch.check = None
            try:
                why = check.result()
            except Exception as exc:  # a check that cannot run is no evidence either way
                if not self._check_errors_said:
                    self._say(f"tessera: warning: cannot check {handle.name}'s liveness: {exc}")
                    self._check_errors_said = True
                return
            self._heard(handle, watch, watch.check_started, now, why)
        elif now - watch.check_started > self.policy.liveness_deadline + self.policy.liveness_every:
            # The check itself is stuck past its deadline: no answer so far. Taken again when it returns.
            self._heard(handle, watch, watch.check_started, now, "its liveness check did not return")

    def _heard(self, handle: ProcessHandle, watch: _Watch, asked: float, now: float, why: str | None) -> None:
        """The outcome of a check asked at `asked`: None, it answered; else it stays silent since it first
        did not, and once that run is longer than the hang bound it is ended."""
        if why is None:
            watch.silent_since = None
            return
        if watch.silent_since is None:
            watch.silent_since = asked
        watch.silent_why = why
        silent = now - watch.silent_since
        if silent <= self.policy.hang_seconds:
            return
        watch.hung = f"no answer to its liveness check for {silent:.0f} s ({why})"
        if not watch.failed:  # a failed one's every try is not said again, and it stays shown as failed
            self._say(f"tessera: {handle.name} has not answered its liveness check for {silent:.0f} s; "
                      "ending it (SIGKILL) and starting it again")
            handle.state, handle.reason = "hung", watch.hung
        watch.check, watch.silent_since = None, None
        handle.send(signal.SIGKILL)  # the service itself, boxed or not; its exit is seen on a later poll

    def _check(self) -> LivenessCheck:
        if self._liveness is None:
            deadline, credentials = self.policy.liveness_deadline, CheckingCredentials(self.services.cert_dir,
                                                                                       self._say)
            self._liveness = lambda handle: check_liveness(handle, credentials.current(), deadline)
        return self._liveness


class CheckingCredentials:
    """The CLI's credentials the liveness checks present, read again every CREDENTIALS_RELOAD_SECONDS: a
    certificate renewed or put back is used from then on. While there is none, or it has expired (a service
    refusing it would look alive), gRPC hang checks are off; both are said once, and so is their return.
    Called from the checks' worker threads."""

    def __init__(self, cert_dir: Path, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self._cert_dir, self._say, self._clock, self._wall = cert_dir, say, clock, wall
        self._lock = threading.Lock()
        self._loaded_at: float | None = None
        self._credentials: Credentials | None = None
        self._problem = ""  # the one said last ("" when usable)

    def current(self) -> Credentials | None:
        with self._lock:
            now = self._clock()
            if self._loaded_at is None or now - self._loaded_at >= CREDENTIALS_RELOAD_SECONDS:
                self._loaded_at = now
                self._load()
            return self._credentials

    def _load(self) -> None:
        try:
            credentials, problem = cli_credentials(self._cert_dir), ""
            expires = x509.load_pem_x509_certificate(credentials.cert_pem).not_valid_after_utc
            if expires <= self._wall():
                problem = f"the CLI's certificate expired at {expires:%Y-%m-%d %H:%M} UTC; `tessera certs` renews it"
        except (CredentialError, OSError, ValueError) as exc:
            credentials, problem = None, str(exc)
        self._credentials = None if problem else credentials
        if problem and problem != self._problem:
            self._say(f"tessera: warning: cannot check the gRPC services' liveness ({problem}); a hung one will "
                      "not be restarted until it can")
        elif not problem and self._problem:
            self._say("tessera: the CLI's certificate is usable again; the gRPC services' liveness is checked again")
        self._problem = problem


class _OncePerTarget(logging.Filter):
    """The channel bridge's warnings while the liveness checks run: nothing answering (a process that died or
    hangs) is the supervisor's to say, in its own words; any other refusal (a certificate refused) once per
    target and reason, not at every check."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[object, object]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        fields = getattr(record, "fields", None)
        if not isinstance(fields, dict) or "target" not in fields:
            return True
        key = (fields.get("target"), fields.get("reason"))
        if key[1] in NO_ANSWER_REASONS or key in self._seen:
            return False
        self._seen.add(key)
        return True


def run_until_stopped(services: ServiceSet, state_file: Path | None = None,
                      policy: RestartPolicy = RestartPolicy(), say: Callable[[str], None] = print,
                      liveness: LivenessCheck | None = None, executor: Executor | None = None) -> None:
    """Supervise until SIGINT/SIGTERM; the state file follows every restart and change of state.
    (`liveness`, `executor`: as Supervisor's.)"""
    stopping: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda number, _frame: stopping.append(number))

    def record() -> None:
        if state_file is not None:
            write_private(state_file, json.dumps(services.state(), indent=2).encode())

    channels, once = logging.getLogger("tessera.channels"), _OncePerTarget()
    channels.addFilter(once)
    supervisor = Supervisor(services, policy, say, record, liveness, executor)
    try:
        while not stopping:
            supervisor.poll()
            time.sleep(POLL_SECONDS)
    finally:
        supervisor.close()
        channels.removeFilter(once)
