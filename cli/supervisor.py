"""Keep a started ServiceSet running: restart a process that dies, with backoff, until told to stop.

`tessera up` and `tessera demo` run this loop in the foreground. A crash is a
blip: the process is started again on its own port (its peers keep their
address and reconnect by themselves), the restart is said on the terminal, in
the process's own log and in the state file `tessera status` reads. A process
that keeps dying right after it starts is a configuration problem, not a blip:
after a few crashes in a row the supervisor gives up with the last line the
process logged, and the caller stops the set.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cli.launcher import ProcessHandle, ServiceSet, StartupError
from shared.certs import write_private

POLL_SECONDS = 0.1


@dataclass(frozen=True)
class RestartPolicy:
    first_delay: float = 0.1  # a crash is usually one-off: try again almost at once
    max_delay: float = 8.0
    # A process that ran this long before dying starts a new streak; only quick deaths add up.
    stable_after: float = 30.0
    crash_limit: int = 5  # crashes in a row, each within stable_after of starting: a crash loop


class CrashLoop(Exception):
    """A process kept dying right after it started; the message says which and why."""


@dataclass
class _Watch:
    streak: int = 0
    restart_at: float | None = None  # monotonic time of the pending restart
    down_since: float | None = None  # monotonic time the crash was seen, until it serves again


def exit_description(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"status {code}"


class Supervisor:
    def __init__(self, services: ServiceSet, policy: RestartPolicy = RestartPolicy(),
                 say: Callable[[str], None] = print, on_change: Callable[[], None] = lambda: None) -> None:
        self.services = services
        self.policy = policy
        self._say = say
        self._on_change = on_change
        self._watches = {name: _Watch() for name in services.handles}

    def poll(self) -> None:
        """One look at every process: notice deaths, start due restarts, notice recoveries."""
        now = time.monotonic()
        for handle in self.services.handles.values():
            watch = self._watches[handle.name]
            if watch.restart_at is None:
                self._notice_exit(handle, watch, now)
            elif now >= watch.restart_at:
                watch.restart_at = None
                try:
                    self.services.restart(handle.name)
                except StartupError as exc:  # its box did not start: a crash like any other, seen on the next look
                    self._say(f"tessera: {exc}")
                    continue
                self._say(f"tessera: restarted {handle.name} (pid {handle.pid}, restart {handle.restarts})")
                self._on_change()
            if watch.down_since is not None and watch.restart_at is None and handle.ready_file.exists():
                self._say(f"tessera: {handle.name} is serving again, {now - watch.down_since:.1f} s after it died")
                watch.down_since = None

    def _notice_exit(self, handle: ProcessHandle, watch: _Watch, now: float) -> None:
        code = handle.poll()
        if code is None:
            return
        lived = time.time() - (handle.started_at or time.time())
        watch.streak = 1 if lived >= self.policy.stable_after else watch.streak + 1
        why = f"{exit_description(code)} after {lived:.1f} s: {handle.last_log_line() or '(nothing logged)'}"
        if watch.streak >= self.policy.crash_limit:
            raise CrashLoop(f"{handle.name} died {watch.streak} times in a row, each within "
                            f"{self.policy.stable_after:.0f} s of starting; not restarting it. Last: {why}")
        delay = min(self.policy.first_delay * 2 ** (watch.streak - 1), self.policy.max_delay)
        self._say(f"tessera: {handle.name} exited unexpectedly ({why}); restarting in {delay:.1f} s")
        watch.restart_at, watch.down_since = now + delay, now


def run_until_stopped(services: ServiceSet, state_file: Path | None = None,
                      policy: RestartPolicy = RestartPolicy(), say: Callable[[str], None] = print,
                      complain: Callable[[str], None] = print) -> int:
    """Supervise until SIGINT/SIGTERM (0) or a crash loop (1); the state file follows every restart."""
    stopping: list[int] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda number, _frame: stopping.append(number))

    def record() -> None:
        if state_file is not None:
            write_private(state_file, json.dumps(services.state(), indent=2).encode())

    supervisor = Supervisor(services, policy, say, record)
    while not stopping:
        try:
            supervisor.poll()
        except CrashLoop as exc:
            complain(f"tessera: error: {exc}")
            return 1
        time.sleep(POLL_SECONDS)
    return 0
