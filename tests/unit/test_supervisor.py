"""The supervisor's rules, on a clock the test moves: backoff, streaks, crash loops, recovery notices."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from cli import supervisor as supervisor_module
from cli.launcher import ProcessHandle
from cli.supervisor import CrashLoop, RestartPolicy, Supervisor, exit_description


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now


class FakeProcess:
    def __init__(self) -> None:
        self.code: int | None = None

    def poll(self) -> int | None:
        return self.code


class FakeSet:
    """The part of ServiceSet the supervisor uses: handles, and restart()."""

    def __init__(self, tmp_path: Path, clock: Clock, names=("compiler", "host")) -> None:
        self.clock = clock
        self.handles = {}
        for index, name in enumerate(names):
            handle = ProcessHandle(name, 9000 + index, tmp_path / f"{name}.log", tmp_path / f"{name}.ready")
            handle.log_path.write_text(f"{name} started\n")
            self._start(handle)
            self.handles[name] = handle

    def _start(self, handle: ProcessHandle) -> None:
        handle.process, handle.started_at = FakeProcess(), self.clock.now
        handle.pid = (handle.pid or 100) + 1
        handle.ready_file.unlink(missing_ok=True)

    def restart(self, name: str) -> ProcessHandle:
        handle = self.handles[name]
        self._start(handle)
        handle.restarts += 1
        return handle


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(supervisor_module, "time", clock)
    return clock


def crash(handle: ProcessHandle, code: int = -signal.SIGKILL, last_line: str = "boom") -> None:
    handle.log_path.write_text(f"{last_line}\n")
    handle.process.code = code


def test_a_crash_is_restarted_after_a_short_delay_and_said(tmp_path, clock):
    services, lines, changes = FakeSet(tmp_path, clock), [], []
    supervisor = Supervisor(services, RestartPolicy(first_delay=0.5), say=lines.append,
                            on_change=lambda: changes.append(1))
    compiler = services.handles["compiler"]
    clock.now += 60
    crash(compiler)
    supervisor.poll()
    assert "compiler exited unexpectedly (killed by SIGKILL after 60.0 s: boom); restarting in 0.5 s" in lines[-1]
    clock.now += 0.4
    supervisor.poll()
    assert compiler.restarts == 0, "not before its delay"
    clock.now += 0.1
    supervisor.poll()
    assert compiler.restarts == 1 and changes == [1] and f"restarted compiler (pid {compiler.pid}" in lines[-1]
    assert services.handles["host"].restarts == 0
    compiler.ready_file.write_text("{}")
    clock.now += 1.0
    supervisor.poll()
    assert lines[-1] == "tessera: compiler is serving again, 1.5 s after it died"


def test_quick_crashes_back_off_and_a_crash_loop_gives_up_with_the_last_line(tmp_path, clock):
    services, lines = FakeSet(tmp_path, clock), []
    policy = RestartPolicy(first_delay=0.1, max_delay=0.3, stable_after=30, crash_limit=4)
    supervisor = Supervisor(services, policy, say=lines.append)
    compiler = services.handles["compiler"]
    delays = []
    for _ in range(3):
        crash(compiler, code=2, last_line="tessera-compiler: error: compiler.pem is missing")
        supervisor.poll()
        delays.append(float(lines[-1].rsplit("restarting in ", 1)[1].split()[0]))
        clock.now += delays[-1]
        supervisor.poll()
    assert delays == [0.1, 0.2, 0.3], "doubling, capped"
    crash(compiler, code=2, last_line="tessera-compiler: error: compiler.pem is missing")
    with pytest.raises(CrashLoop) as refused:
        supervisor.poll()
    assert "compiler died 4 times in a row" in str(refused.value)
    assert "status 2" in str(refused.value) and "compiler.pem is missing" in str(refused.value)


def test_a_process_that_ran_long_enough_starts_a_new_streak(tmp_path, clock):
    services, lines = FakeSet(tmp_path, clock), []
    supervisor = Supervisor(services, RestartPolicy(first_delay=0.1, stable_after=30, crash_limit=2),
                            say=lines.append)
    compiler = services.handles["compiler"]
    for _ in range(5):  # each one after a long healthy run: never a crash loop
        clock.now += 31
        crash(compiler)
        supervisor.poll()
        assert lines[-1].endswith("restarting in 0.1 s")
        clock.now += 0.1
        supervisor.poll()
    assert compiler.restarts == 5


def test_exit_descriptions():
    assert exit_description(-signal.SIGKILL) == "killed by SIGKILL"
    assert exit_description(2) == "status 2"
    assert exit_description(-200) == "killed by signal 200"
