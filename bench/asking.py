"""People asking questions through web at once, for `make bench` (alone: `python -m bench.asking`).

PEOPLE concurrent browsers (each a person of their own, so a conversation and host session of their own) ask
QUESTIONS_EACH questions one after another through web exactly as the browser does (`/api/session`, then
`/api/ask` read to the end of its event stream: tests/fixtures/recovery.py `ask_through_web`), with the embedded
planner. 1 replica of host, agent and web vs 2 of each (the second set reaching the first set's compiler,
resources and broker; both hosts on one PostgreSQL database; people split across the two webs), side by side
in one run. Answers/s = answered questions / wall time of the whole run; time to answer per question.
"""

from __future__ import annotations

import secrets
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from bench.host import percentile
from bench.local import seeded_environment
from bench.replicas import process_stats, side_by_side, skipped
from cli.launcher import ServiceSet
from shared.certs import issue_deployment
from shared.identity import PROCESS_NAMES
from tests.fixtures.recovery import SESSION_SECRET, ask_through_web, signed_in_cookie

PEOPLE = 50
QUESTIONS_EACH = 2
REPLICATED = ("host", "agent", "web")
WEB_SECRET = secrets.token_urlsafe(48)  # every web replica seals cookies with it, as on Kubernetes


def _person(base_url: str, cookie: str) -> list[tuple[str, float]]:
    """One person's questions: (outcome, seconds to the end of the answer's event stream) each."""
    replies = []
    for _ in range(QUESTIONS_EACH):
        started = time.perf_counter()
        reply = ask_through_web(base_url, cookie)
        replies.append((reply.outcome, time.perf_counter() - started))
    return replies


def _environment(work: Path, host_url: str) -> dict[str, str]:
    return {**seeded_environment(work, "asking-", 20_000), "TESSERA_HOST_DATABASE_URL": host_url,
            # Replicas of web share the cookie key, as on Kubernetes.
            SESSION_SECRET: WEB_SECRET}


def _measure(sets: list[ServiceSet]) -> list[dict]:
    webs = [f"http://{s.handles['web'].address}" for s in sets]
    # A person of their own each, signed in at the one broker (good on every web replica): a sign-in is one
    # conversation, and one person's questions follow one another on it.
    cookies = [signed_in_cookie(sets[0], (f"asker-{n}", "local", f"Asker {n}")) for n in range(PEOPLE)]
    for web in webs:  # warm: the first turn on each agent loads the planner
        ask_through_web(web, cookies[0])
    pids = {f"{name}-{number}": handle.pid for number, s in enumerate(sets, 1) for name, handle in s.handles.items()}
    before = {name: process_stats(pid)["cpu_s"] for name, pid in pids.items()}
    started, client_started = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(PEOPLE) as people:
        replies = [r for person in people.map(_person, [webs[i % len(webs)] for i in range(PEOPLE)], cookies)
                   for r in person]
    wall = time.perf_counter() - started
    cpu = {name: round(process_stats(pid)["cpu_s"] - before[name], 1) for name, pid in pids.items()}
    cpu["people_client"] = round(time.process_time() - client_started, 1)
    rss = {name: process_stats(pid)["rss_mb"] for name, pid in pids.items()}
    return [_result(replies, wall, len(sets), cpu, rss)]


def _result(replies: list[tuple[str, float]], wall: float, replicas: int, cpu: dict, rss: dict) -> dict:
    answered = [seconds for outcome, seconds in replies if outcome == "answered"]
    outcomes = [outcome for outcome, _ in replies]
    suffix = f"{replicas}_replica" + ("s" if replicas > 1 else "")
    entry = {"name": f"asking_{PEOPLE}_people_answers_per_second_{suffix}", "unit": "answers/s",
             "value": round(len(answered) / wall, 2), "baseline": None, "ratio": None,
             "p50_s": round(statistics.median(answered), 2) if answered else None,
             "p99_s": round(percentile(answered, 0.99), 2) if answered else None,
             "questions": len(replies), "outcomes": {o: outcomes.count(o) for o in sorted(set(outcomes))},
             "wall_s": round(wall, 1), "cpu_s_during_run": cpu, "rss_mb": rss,
             "note": f"{PEOPLE} people at once, {QUESTIONS_EACH} questions each through web (/api/session, "
                     f"/api/ask to the end of the stream), embedded planner; {replicas} replica(s) of host, agent "
                     "and web; p50_s/p99_s: time to answer of the answered questions"}
    return entry


def run(work: Path, cert_dir: Path) -> list[dict]:
    if not (cert_dir / "ca.pem").exists():
        issue_deployment(cert_dir)
    results = side_by_side(work / "run-asking", cert_dir, PROCESS_NAMES, REPLICATED, partial(_environment, work),
                           _measure, lambda why: skipped(f"asking_{PEOPLE}_people_answers_per_second_2_replicas",
                                                         "answers/s", why))
    if all(r["value"] for r in results):
        one, two = results
        two["baseline"], two["ratio"] = one["value"], round(two["value"] / one["value"], 3)
    return results


if __name__ == "__main__":
    import json
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tessera-asking-") as directory:
        print(json.dumps(run(Path(directory), Path(directory) / "certs"), indent=2))
