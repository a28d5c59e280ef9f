"""Crash recovery for `make bench`: from kill -9 of one service to the first good answer, per service.

The same loop the integration test asserts (tests/fixtures/recovery.py): a full
set under the supervisor `tessera up` runs, a question asked through web over
and over, each service killed in turn. Goal: <= 3 s for every service.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from bench.local import seeded_environment
from cli.launcher import ServiceSet
from shared.identity.certs import issue_deployment
from shared.identity.principals import PROCESS_NAMES
from tests.fixtures.recovery import SESSION_SECRET, SupervisorThread, ask_through_web, kill_and_time, signed_in_cookie

GOAL_SECONDS = 3.0


OFF_THE_QUESTION_PATH = {"mcp"}


def run(work: Path, cert_dir: Path) -> list[dict]:
    if not (cert_dir / "ca.pem").exists():
        issue_deployment(cert_dir)
    env = {**seeded_environment(work, "recovery-", 20_000), SESSION_SECRET: secrets.token_urlsafe(32)}
    services = ServiceSet(cert_dir, work / "recovery-run", ephemeral_ports=True, extra_env=env)
    services.start(timeout=120)
    results = []
    try:
        # Warm: the first turn loads the planner.
        ask_through_web(f"http://{services.handles['web'].address}", signed_in_cookie(services))
        with SupervisorThread(services):
            # The question loop goes through web, so only what it passes through is timed: the MCP front is not
            # on that path, and a figure for it would answer nothing.
            for name in (n for n in PROCESS_NAMES if n not in OFF_THE_QUESTION_PATH):
                recovery = kill_and_time(services, name)
                outcomes = [r.outcome for r in recovery.replies]
                seconds = recovery.seconds_to_first_answer
                results.append({
                    "name": f"recovery_kill9_{name}_to_first_answer", "value": round(seconds, 2), "unit": "s",
                    "baseline": GOAL_SECONDS, "ratio": round(seconds / GOAL_SECONDS, 2), "goal_ratio": 1.0,
                    "questions_during_outage": {o: outcomes.count(o) for o in sorted(set(outcomes))},
                    "note": "kill -9 under a question loop through web; the supervisor restarts the process; "
                            "counts until an answer with nothing degraded",
                })
                data_seconds = recovery.seconds_to_first_data_answer
                results.append({
                    "name": f"recovery_kill9_{name}_to_first_data_answer", "value": round(data_seconds, 2),
                    "unit": "s", "baseline": GOAL_SECONDS, "ratio": round(data_seconds / GOAL_SECONDS, 2),
                    "goal_ratio": 1.0,
                    "note": "the same kill: until the first answer that showed the data, perhaps with a notice "
                            "that a tool was unavailable",
                })
                _wait_serving(services, name)
    finally:
        services.stop()
    return results


def _wait_serving(services: ServiceSet, name: str, timeout: float = 60.0) -> None:
    """The next kill starts from a whole set: the last one restarted and serving."""
    handle, deadline = services.handles[name], time.monotonic() + timeout
    while not (handle.restarts and handle.ready_file.exists()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not come back within {timeout:.0f} s")
        time.sleep(0.05)


if __name__ == "__main__":  # the recovery figures alone: python -m bench.recovery
    import json
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tessera-recovery-") as directory:
        print(json.dumps(run(Path(directory), Path(directory) / "certs"), indent=2))
