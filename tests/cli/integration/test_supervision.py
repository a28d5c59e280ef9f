"""A crash is a blip, not an outage: kill -9 each service in turn under a question loop.

The supervisor `tessera up` runs restarts the dead process on its port; the
others keep running and their reconnecting channels find it again; questions
asked meanwhile get a clear unavailable or degraded answer (never a 5xx, never
a hang); the first good answer follows within seconds; no revision the host
acknowledged is lost. bench/recovery.py records the per-service figures.
"""

from __future__ import annotations

import secrets
import threading
import time

import pytest

from cli.launcher import STOP_TIMEOUT_SECONDS, ServiceSet
from shared.identity.principals import PROCESS_NAMES
from tests.fixtures.recovery import (
    SESSION_SECRET,
    SupervisorThread,
    ask_through_web,
    committed_revisions,
    kill_and_time,
    signed_in_cookie,
)
from tests.fixtures.waiting import wait_until

# Generous for a loaded CI machine; the goal (3 s) is measured by `make bench` on a quiet one.
RECOVERY_BOUND_SECONDS = 20.0


@pytest.fixture
def own_set(cert_dir, tmp_path, service_env):
    """A set of its own (its own databases): this test kills processes the session's set must keep."""
    env = {**service_env,
           "TESSERA_VAR_DIR": str(tmp_path / "var"),
           "TESSERA_HOST_DATABASE_URL": f"sqlite:///{tmp_path / 'host.sqlite'}",
           "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{tmp_path / 'results.sqlite'}",
           "TESSERA_CAPABILITIES_DATABASE_URL": f"sqlite:///{tmp_path / 'broker.sqlite'}",
           SESSION_SECRET: secrets.token_urlsafe(32)}  # a signed-in person stays signed in across restarts
    services = ServiceSet(cert_dir, tmp_path / "run", ephemeral_ports=True, extra_env=env)
    services.start()
    try:
        yield services, env
    finally:
        services.stop()


def _wait_restarted(services: ServiceSet, name: str, old_pid: int, timeout: float = 60.0) -> None:
    handle = services.handles[name]
    wait_until(lambda: handle.pid != old_pid and handle.ready_file.exists(), timeout,
               what=f"{name} restarted and ready")


def test_each_service_killed_in_turn_is_a_blip(own_set):
    services, env = own_set
    base_url = f"http://{services.handles['web'].address}"
    cookie = signed_in_cookie(services)
    assert ask_through_web(base_url, cookie).outcome == "answered"
    acknowledged: list[str] = []
    with SupervisorThread(services) as supervisor:
        for name in PROCESS_NAMES:
            pids = {n: h.pid for n, h in services.handles.items()}
            recovery = kill_and_time(services, name)
            _wait_restarted(services, name, pids[name])
            assert {n: h.pid for n, h in services.handles.items() if n != name} == {
                n: p for n, p in pids.items() if n != name}, f"killing {name} took others down"
            # Every reply says what happened in words: never a 5xx, never gRPC's socket-level text.
            broken = [r for r in recovery.replies if r.outcome == "broken" or not r.detail
                      or "unix:" in r.detail or "failed to connect" in r.detail]
            assert not broken, f"while {name} was down: {[(r.outcome, r.detail) for r in broken]}"
            assert recovery.seconds_to_first_answer <= RECOVERY_BOUND_SECONDS, (name, recovery)
            acknowledged += [rid for r in recovery.replies for rid in r.revision_ids]
            assert services.handles[name].restarts == 1
        assert supervisor.error is None
        # Every restart is announced as such once the process serves (the thread may say it a poll later).
        wait_until(lambda: all(any(f"{name} is serving again" in line for line in supervisor.lines)
                               for name in PROCESS_NAMES), 60,
                   what="every restart announced", detail=lambda: supervisor.lines)
        final = ask_through_web(base_url, cookie)
    assert final.outcome == "answered", final
    acknowledged += final.revision_ids
    missing = set(acknowledged) - committed_revisions(env["TESSERA_HOST_DATABASE_URL"])
    assert acknowledged and not missing, f"acknowledged revisions lost: {missing}"


def test_every_service_stops_within_its_grace_with_questions_in_flight(own_set):
    """SIGTERM while people are asking: every process exits by itself (status 0), none is SIGKILLed."""
    services, _ = own_set
    base_url = f"http://{services.handles['web'].address}"
    asking, replies, cookie = threading.Event(), [], signed_in_cookie(services)

    def keep_asking() -> None:
        while not asking.is_set():
            replies.append(ask_through_web(base_url, cookie))

    askers = [threading.Thread(target=keep_asking, daemon=True) for _ in range(3)]
    for asker in askers:
        asker.start()
    wait_until(lambda: any(r.outcome == "answered" for r in replies), 60,  # load first, then stop under it
               what="a first answer under load", detail=lambda: [(r.outcome, r.detail) for r in replies])
    started = time.monotonic()
    codes = services.stop()
    elapsed = time.monotonic() - started
    asking.set()
    for asker in askers:
        asker.join(timeout=60)
    assert codes == dict.fromkeys(PROCESS_NAMES, 0), f"not a clean stop: {codes}"
    assert elapsed < STOP_TIMEOUT_SECONDS, elapsed
    assert not [r for r in replies if r.outcome == "broken"], "the stop showed nobody a 5xx or a hang"
