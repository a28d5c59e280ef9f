"""The supervisor's rules, on a clock the test moves: backoff, streaks, failing services, recovery notices,
hangs (with a fake liveness check run inline), and the loop `tessera up` runs."""

from __future__ import annotations

import json
import logging
import re
import signal
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path

import pytest

from cli import supervisor as supervisor_module
from cli.launcher import ProcessHandle, ServiceSet
from cli.supervisor import RestartPolicy, Supervisor, exit_description, run_until_stopped
from shared.logs import log as log_line


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


class FakeHandle(ProcessHandle):
    """Signals are recorded and SIGKILL ends the fake process: no real pid is ever signalled."""

    def send(self, signum: int) -> None:
        self.sent.append(signum)
        if signum == signal.SIGKILL and self.process.code is None:
            self.process.code = -signal.SIGKILL


class FakeSet:
    """The part of ServiceSet the supervisor uses: handles, restart() and state()."""

    state = ServiceSet.state

    def __init__(self, tmp_path: Path, clock: Clock, names=("compiler", "host")) -> None:
        self.clock, self.cert_dir = clock, tmp_path / "no-certs"
        self.handles = {}
        self.dies_at_start: set[str] = set()  # these exit with status 2 as soon as they are started
        for index, name in enumerate(names):
            # Each in a folder of its own, as the launcher lays them out: its waiting file sits beside.
            (tmp_path / name).mkdir()
            handle = FakeHandle(name, 9000 + index, tmp_path / f"{name}.log", tmp_path / name / "ready.json")
            handle.sent = []
            handle.log_path.write_text("")
            self._start(handle)
            handle.log_path.write_text(f"{name} started\n")
            serve(handle)  # as ServiceSet.start() leaves them
            handle.state = "serving"
            self.handles[name] = handle

    def _start(self, handle: ProcessHandle) -> None:
        handle.process, handle.started_at = FakeProcess(), self.clock.now
        handle.pid = (handle.pid or 100) + 1
        handle.ready_file.unlink(missing_ok=True)
        handle.log_offset = handle.log_path.stat().st_size  # as ServiceSet._spawn: the log is appended
        if handle.name in self.dies_at_start:
            log(handle, "tessera-compiler: error: compiler.pem is missing")
            handle.process.code = 2

    def restart(self, name: str) -> ProcessHandle:
        handle = self.handles[name]
        self._start(handle)
        handle.restarts += 1
        return handle


class InlineExecutor(Executor):
    """Runs a liveness check at once; the supervisor still gathers its result on a later poll."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


class FakeLiveness:
    """What each process answers (None: alive; else why not), and when each was asked."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.silent: dict[str, str] = {}
        self.asked: list[tuple[str, float]] = []

    def __call__(self, handle: ProcessHandle) -> str | None:
        self.asked.append((handle.name, self.clock.now))
        return self.silent.get(handle.name)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(supervisor_module, "time", clock)
    return clock


def supervise(services: FakeSet, policy: RestartPolicy | None = None, **kwargs):
    lines: list[str] = []
    liveness = FakeLiveness(services.clock)
    kwargs.setdefault("executor", InlineExecutor())
    supervisor = Supervisor(services, policy or RestartPolicy(), say=lines.append, liveness=liveness, **kwargs)
    return supervisor, lines, liveness


def log(handle: ProcessHandle, line: str) -> None:
    with open(handle.log_path, "a") as log_file:
        log_file.write(f"{line}\n")


def crash(handle: ProcessHandle, code: int = -signal.SIGKILL, last_line: str = "boom") -> None:
    log(handle, last_line)
    handle.process.code = code


def serve(handle: ProcessHandle) -> None:
    handle.ready_file.write_text("{}")


def run_for(supervisor: Supervisor, clock: Clock, seconds: float, step: float = 0.5) -> None:
    end = clock.now + seconds
    while clock.now < end:
        clock.now += step
        supervisor.poll()


def test_a_crash_is_restarted_after_a_short_delay_and_said(tmp_path, clock):
    services, changes = FakeSet(tmp_path, clock), []
    supervisor, lines, _ = supervise(services, RestartPolicy(first_delay=0.5), on_change=lambda: changes.append(1))
    compiler = services.handles["compiler"]
    clock.now += 60
    crash(compiler)
    supervisor.poll()
    assert "compiler exited unexpectedly (killed by SIGKILL after 60.0 s: boom); restarting in 0.5 s" in lines[-1]
    assert (compiler.state, changes) == ("restarting", [1]), "the state file says so while it is down"
    clock.now += 0.4
    supervisor.poll()
    assert compiler.restarts == 0, "not before its delay"
    clock.now += 0.1
    supervisor.poll()
    assert compiler.restarts == 1 and f"restarted compiler (pid {compiler.pid}" in lines[-1]
    assert compiler.state == "starting" and changes == [1, 1], "the new pid is recorded"
    assert services.handles["host"].restarts == 0
    serve(compiler)
    clock.now += 1.0
    supervisor.poll()
    assert lines[-1] == "tessera: compiler is serving again, 1.5 s after it died"
    assert compiler.state == "serving" and compiler.reason == ""


def test_quick_crashes_back_off_doubling_up_to_the_cap(tmp_path, clock):
    services = FakeSet(tmp_path, clock)
    supervisor, lines, _ = supervise(services, RestartPolicy(first_delay=0.1, max_delay=0.5, crash_limit=10))
    compiler, delays = services.handles["compiler"], []
    for _ in range(5):
        crash(compiler, code=2)
        supervisor.poll()
        delays.append(float(lines[-1].rsplit("restarting in ", 1)[1].split()[0]))
        clock.now += delays[-1]
        supervisor.poll()
    assert delays == [0.1, 0.2, 0.4, 0.5, 0.5], "doubling, capped"


# What is said once of a compiler that keeps dying at start (its lifetime: until the poll that saw it end).
FAILING = re.compile(r"tessera: compiler keeps failing \(status 2 after \d+\.\d s: tessera-compiler: error: "
                     r"compiler.pem is missing\); retrying every 30 s, the others keep serving")


def test_a_service_that_keeps_failing_is_shown_failed_retried_at_the_cap_and_the_others_keep_serving(tmp_path,
                                                                                                     clock):
    services = FakeSet(tmp_path, clock)
    policy = RestartPolicy(first_delay=0.1, max_delay=30, stable_after=30, crash_limit=4)
    supervisor, lines, _ = supervise(services, policy)
    compiler, host = services.handles["compiler"], services.handles["host"]
    services.dies_at_start.add("compiler")
    crash(compiler, code=2, last_line="tessera-compiler: error: compiler.pem is missing")
    run_for(supervisor, clock, 2.0, step=0.1)  # three quick deaths, at 0.1, 0.2 and 0.4 s
    failing = [line for line in lines if "keeps failing" in line]
    assert len(failing) == 1 and FAILING.fullmatch(failing[0]), failing
    assert compiler.state == "failed"
    assert re.fullmatch(r"status 2 after \d+\.\d s: tessera-compiler: error: compiler.pem is missing", compiler.reason)
    assert compiler.restarts == 3
    said = len(lines)
    run_for(supervisor, clock, 28.0)
    assert compiler.restarts == 3, "the next try waits for the cap"
    run_for(supervisor, clock, 50.0)
    assert compiler.restarts == 5, "retried every 30 s"
    assert len(lines) == said, "said once, not at every try"
    assert compiler.state == "failed" and "compiler.pem is missing" in compiler.reason
    assert host.restarts == 0 and host.state == "serving" and host.sent == []
    services.dies_at_start.clear()  # the operator put the file back
    run_for(supervisor, clock, 30.0)
    assert compiler.restarts == 6 and compiler.state == "failed", "shown failed until it serves"
    serve(compiler)
    supervisor.poll()
    assert lines[-1].startswith("tessera: compiler is serving again, ") and lines[-1].endswith(" s after it died")
    assert compiler.state == "serving" and compiler.reason == ""


def test_the_reason_quoted_is_the_last_line_of_the_process_that_died(tmp_path, clock):
    services = FakeSet(tmp_path, clock)
    supervisor, lines, _ = supervise(services, RestartPolicy(first_delay=0.1))
    compiler = services.handles["compiler"]
    crash(compiler, last_line="first process: out of memory")
    supervisor.poll()
    clock.now += 0.1
    supervisor.poll()
    compiler.process.code = -signal.SIGKILL  # killed again before it logged a word
    supervisor.poll()
    assert "(killed by SIGKILL after 0.0 s: (nothing logged))" in lines[-1]
    assert "out of memory" not in compiler.reason


def test_a_process_that_ran_long_enough_starts_a_new_streak(tmp_path, clock):
    services = FakeSet(tmp_path, clock)
    supervisor, lines, _ = supervise(services, RestartPolicy(first_delay=0.1, stable_after=30, crash_limit=2))
    compiler = services.handles["compiler"]
    for _ in range(5):  # each one after a long healthy run: never failing
        clock.now += 31
        crash(compiler)
        supervisor.poll()
        assert lines[-1].endswith("restarting in 0.1 s")
        clock.now += 0.1
        supervisor.poll()
    assert compiler.restarts == 5 and compiler.state == "starting"


def hung_policy() -> RestartPolicy:
    return RestartPolicy(hang_seconds=20, liveness_every=2, liveness_deadline=2, startup_grace=30)


def kills(handle: FakeHandle) -> int:
    return handle.sent.count(signal.SIGKILL)


def test_a_hung_process_is_killed_after_the_bound_not_before_and_restarted(tmp_path, clock):
    services = FakeSet(tmp_path, clock)
    supervisor, lines, liveness = supervise(services, hung_policy())
    compiler, host = services.handles["compiler"], services.handles["host"]
    run_for(supervisor, clock, 10)
    assert compiler.state == "serving" and ("compiler", 1000.5) in liveness.asked, "checked as soon as it serves"
    liveness.silent["compiler"] = "DEADLINE_EXCEEDED"
    while not kills(compiler):
        clock.now += 0.5
        supervisor.poll()
        assert clock.now < 1100, "never ended"
    first_unanswered = next(at for name, at in liveness.asked if name == "compiler" and at > 1010)
    assert 20 < clock.now - first_unanswered <= 20 + 2 + 0.5, "just past the bound: not before, not much after"
    assert lines[-1] == (f"tessera: compiler has not answered its liveness check for "
                         f"{clock.now - first_unanswered:.0f} s; ending it (SIGKILL) and starting it again")
    assert compiler.state == "hung" and "(DEADLINE_EXCEEDED)" in compiler.reason
    old_pid = compiler.pid
    liveness.silent.clear()
    clock.now += 0.1
    supervisor.poll()  # its exit: the normal path
    assert "compiler ended (killed by SIGKILL after " in lines[-1] and lines[-1].endswith("restarting in 0.1 s")
    assert compiler.state == "hung", "shown hung while it is being restarted"
    clock.now += 0.1
    supervisor.poll()
    assert compiler.pid != old_pid and compiler.state == "starting" and kills(compiler) == 1
    assert kills(host) == 0 and host.restarts == 0


def test_a_process_that_hangs_at_every_start_is_shown_failed_and_then_ended_quietly(tmp_path, clock):
    services = FakeSet(tmp_path, clock)
    supervisor, lines, _ = supervise(services, RestartPolicy(hang_seconds=20, startup_grace=30, crash_limit=3,
                                                             max_delay=30))
    compiler = services.handles["compiler"]
    compiler.ready_file.unlink()  # it never gets ready, and never says what it waits for
    run_for(supervisor, clock, 300)
    ended = [line for line in lines if "has not answered its liveness check" in line]
    failing = [line for line in lines if "keeps failing" in line]
    assert len(ended) == 3 and len(failing) == 1, lines
    assert failing[0].startswith("tessera: compiler keeps failing (no answer to its liveness check for ")
    assert "not saying it is starting or what it waits for); killed by SIGKILL after " in failing[0]
    assert kills(compiler) >= 4 and compiler.state == "failed"
    assert kills(services.handles["host"]) == 0


def test_a_process_that_answers_again_within_the_bound_is_left_alone(tmp_path, clock):
    services = FakeSet(tmp_path, clock)
    supervisor, lines, liveness = supervise(services, hung_policy())
    compiler = services.handles["compiler"]
    for _ in range(3):  # silent for 18 s, then an answer, again and again: never 20 s without a break
        liveness.silent["compiler"] = "UNAVAILABLE"
        run_for(supervisor, clock, 18)
        liveness.silent.clear()
        run_for(supervisor, clock, 3)
    assert kills(compiler) == 0 and compiler.restarts == 0 and compiler.state == "serving"
    assert not [line for line in lines if "liveness" in line]


class HeldExecutor(InlineExecutor):
    """Checks that return only when the test releases them (a check in flight while time passes); inline
    after that."""

    def __init__(self) -> None:
        self.held: list[tuple[Future, Callable[[], object]]] = []
        self.holding = True

    def submit(self, fn, /, *args, **kwargs) -> Future:
        if not self.holding:
            return super().submit(fn, *args, **kwargs)
        future: Future = Future()
        self.held.append((future, lambda: fn(*args, **kwargs)))
        return future

    def release(self) -> None:
        self.holding = False
        for future, call in self.held:
            future.set_result(call())


def test_a_check_that_does_not_return_counts_as_silence(tmp_path, clock):
    services, executor = FakeSet(tmp_path, clock, names=("compiler",)), HeldExecutor()
    supervisor, lines, _ = supervise(services, hung_policy(), executor=executor)
    compiler = services.handles["compiler"]
    supervisor.poll()
    asked = clock.now
    assert len(executor.held) == 1
    while not kills(compiler):  # the check never returns (its deadline did not hold): no answer
        clock.now += 0.5
        supervisor.poll()
        assert clock.now < asked + 60, "never ended"
    assert 20 < clock.now - asked <= 21 and len(executor.held) == 1, "no second check while one is in flight"
    assert "(its liveness check did not return)" in compiler.reason


def test_time_the_supervisor_itself_was_stopped_counts_against_no_process(tmp_path, clock):
    services, executor = FakeSet(tmp_path, clock, names=("compiler",)), HeldExecutor()
    supervisor, lines, _ = supervise(services, hung_policy(), executor=executor)
    compiler = services.handles["compiler"]
    supervisor.poll()
    clock.now += 120  # `up` was stopped (SIGSTOP) with a check in flight
    supervisor.poll()
    executor.release()  # the check's thread runs again and gets its answer
    run_for(supervisor, clock, 60)
    assert kills(compiler) == 0 and lines == []


def beat(handle: ProcessHandle, clock: Clock, pid: int | None = None, problem: str = "connection refused") -> None:
    handle.waiting_file.write_text(json.dumps({"pid": pid or handle.pid, "problem": problem,
                                               "since": 1000.0, "beat": clock.now}))


def test_a_process_still_starting_that_beats_is_starting_not_hung(tmp_path, clock):
    """A long migration: the build's work runs off the loop, which beats with no problem to say."""
    services = FakeSet(tmp_path, clock)
    supervisor, _, _ = supervise(services, hung_policy())
    compiler = services.handles["compiler"]
    compiler.ready_file.unlink()
    for _ in range(60):  # two minutes: far past the start-up grace and the hang bound
        beat(compiler, clock, problem="")
        run_for(supervisor, clock, 2)
    assert kills(compiler) == 0
    assert (compiler.state, compiler.reason) == ("starting", "")


def test_a_waiting_process_whose_file_beats_is_alive_and_one_whose_beats_stop_is_hung(tmp_path, clock):
    services = FakeSet(tmp_path, clock)
    supervisor, lines, _ = supervise(services, hung_policy())
    compiler = services.handles["compiler"]
    compiler.ready_file.unlink()
    for _ in range(60):  # two minutes of waiting: far past the start-up grace and the hang bound
        beat(compiler, clock)
        run_for(supervisor, clock, 2)
    assert kills(compiler) == 0
    assert (compiler.state, compiler.reason) == ("waiting", "connection refused")
    stopped = clock.now
    while not kills(compiler):  # its beat stops: stale after three beats, then the hang bound
        clock.now += 0.5
        supervisor.poll()
        assert clock.now < stopped + 60, "never ended"
    assert 26 < clock.now - stopped <= 30
    assert compiler.state == "hung" and "not saying it is starting or what it waits for" in compiler.reason


def test_a_waiting_file_of_another_process_does_not_keep_it_alive(tmp_path, clock):
    services = FakeSet(tmp_path, clock)
    supervisor, _, _ = supervise(services, hung_policy())
    compiler = services.handles["compiler"]
    compiler.ready_file.unlink()
    while not kills(compiler):  # a beat with another pid (the process before it): the grace, then the bound
        beat(compiler, clock, pid=compiler.pid + 1000)
        clock.now += 0.5
        supervisor.poll()
        assert clock.now < 1100, "never ended"
    assert 1050 < clock.now <= 1053 and compiler.state == "hung"


def test_a_process_that_becomes_ready_after_waiting_is_announced(tmp_path, clock):
    services = FakeSet(tmp_path, clock)
    supervisor, lines, _ = supervise(services, hung_policy())
    compiler = services.handles["compiler"]
    compiler.ready_file.unlink()
    beat(compiler, clock)
    run_for(supervisor, clock, 1)
    assert compiler.state == "waiting"
    compiler.waiting_file.unlink()
    serve(compiler)
    supervisor.poll()
    assert lines == ["tessera: compiler is serving now: what it waited for answers"]
    assert compiler.state == "serving"


def test_a_liveness_check_that_cannot_run_is_said_once_and_counts_for_nothing(tmp_path, clock):
    services = FakeSet(tmp_path, clock)

    def broken(handle: ProcessHandle) -> str | None:
        raise RuntimeError("the SPIFFE bridge is closing")

    lines: list[str] = []
    supervisor = Supervisor(services, hung_policy(), say=lines.append, liveness=broken, executor=InlineExecutor())
    run_for(supervisor, clock, 60)
    assert lines == ["tessera: warning: cannot check compiler's liveness: the SPIFFE bridge is closing"]
    assert [kills(handle) for handle in services.handles.values()] == [0, 0]


def bridge_warning(reason: str) -> None:
    """What the channel bridge logs when it refuses a connection (shared.rpc.spiffe_channels)."""
    log_line(logging.getLogger("tessera.channels"), logging.WARNING, f"refused upstream 127.0.0.1:9000: {reason}",
        reason=reason, target="127.0.0.1:9000")


def test_run_until_stopped_keeps_serving_through_a_failing_service_until_a_signal(tmp_path, clock, monkeypatch,
                                                                                  caplog):
    """The loop `tessera up` runs: a service that cannot start never ends it; SIGTERM does. The default
    liveness check (run inline: the fake clock outruns any thread), with no certificates here: the gRPC
    checks are skipped, said once."""
    services, state_file, lines = FakeSet(tmp_path, clock), tmp_path / "services.json", []
    compiler, host = services.handles["compiler"], services.handles["host"]
    services.dies_at_start.add("compiler")
    crash(compiler, code=2, last_line="tessera-compiler: error: compiler.pem is missing")
    sleeps = []

    def sleep(seconds: float) -> None:
        if not sleeps:  # the bridge's words while checks run: no answer is the supervisor's to say
            for reason in ("TARGET_UNREACHABLE", "TLS_HANDSHAKE_FAILED", "CLIENT_CERT_REJECTED",
                           "CLIENT_CERT_REJECTED"):
                bridge_warning(reason)
        sleeps.append(seconds)
        clock.now += seconds
        if clock.now > 1120:  # two minutes in: the operator presses Ctrl-C
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)

    monkeypatch.setattr(clock, "sleep", sleep, raising=False)
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert run_until_stopped(services, state_file, RestartPolicy(max_delay=30), say=lines.append,
                                 executor=InlineExecutor()) is None
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert len(sleeps) > 1000, "it ran until the signal"
    failing = [line for line in lines if "keeps failing" in line]
    assert len(failing) == 1 and FAILING.fullmatch(failing[0]), failing
    assert sum("cannot check the gRPC services' liveness" in line for line in lines) == 1
    recorded = {entry["name"]: entry for entry in json.loads(state_file.read_text())["processes"]}
    assert recorded["compiler"]["state"] == "failed" and "compiler.pem is missing" in recorded["compiler"]["reason"]
    assert recorded["host"]["state"] == "serving" and host.restarts == 0, lines
    assert compiler.restarts >= 6, "still being retried at the cap"
    assert [r.fields["reason"] for r in caplog.records if r.name == "tessera.channels"] == ["CLIENT_CERT_REJECTED"]
    bridge_warning("TARGET_UNREACHABLE")
    assert caplog.records[-1].fields["reason"] == "TARGET_UNREACHABLE", "as before once the loop ended"


def test_exit_descriptions():
    assert exit_description(-signal.SIGKILL) == "killed by SIGKILL"
    assert exit_description(2) == "status 2"
    assert exit_description(-200) == "killed by signal 200"
