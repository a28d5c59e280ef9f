"""People asking questions through web at once, for `make bench` (alone: `python -m bench.asking`).

PEOPLE concurrent browsers (each a person of their own, so a conversation and host session of their own) ask
QUESTIONS_EACH questions one after another through web exactly as the browser does (`/api/session`, then
`/api/ask` read to the end of its event stream: tests/fixtures/recovery.py `ask_through_web`), with the embedded
planner, on the demo warehouse at SCALE order items (issue 42: 25 people, 10 questions each, 1M rows). Everyone
asks the same ten questions, each person starting at another one, so people ask alike as they do, and the
Resource Gateway's result cache answers a question read before (docs/semantic-model.md, "Reused results"); its
hit rate is the gateway's own count (GetInfo) over the run. 1 replica of host, agent and web vs 2 of each (the
second set reaching the first set's compiler, resources and broker; both hosts on one PostgreSQL database; people
split across the two webs), side by side in one run; each run starts with no reusable result in the store (the
one resources process still remembers the probes and fields' values the first run read). Answers/s = answered
questions / wall time of the whole run; time to answer per question.
"""

from __future__ import annotations

import secrets
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import sqlalchemy as sa

from bench.host import percentile
from bench.local import seeded_environment
from bench.replicas import process_stats, side_by_side, skipped
from cli.launcher import ServiceSet, cli_credentials
from shared.identity.certs import issue_deployment
from shared.identity.principals import PROCESS_NAMES
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.resources.v1 import resources_pb2
from tests.fixtures.recovery import SESSION_SECRET, ask_through_web, signed_in_cookie

PEOPLE = 25
QUESTIONS_EACH = 10
SCALE = 1_000_000  # order items in the demo warehouse (`tessera seed`'s default)
QUESTIONS = ("What is our net revenue by region?", "Show units sold by month", "Net revenue by sales channel",
             "Units sold by product category", "Number of orders by month", "Net revenue by product category",
             "Units sold by region", "Number of customers by region", "Return rate by product category",
             "Net revenue by month")
WARM_UP = "How many orders were there?"  # loads each agent's planner; none of the questions measured
REPLICATED = ("host", "agent", "web")
WEB_SECRET = secrets.token_urlsafe(48)  # every web replica seals cookies with it, as on Kubernetes


def _person(base_url: str, cookie: str, first: int) -> list[tuple[str, float]]:
    """One person's questions, from QUESTIONS[first] on: (outcome, seconds to the end of the answer's event
    stream) each."""
    replies = []
    for number in range(QUESTIONS_EACH):
        started = time.perf_counter()
        reply = ask_through_web(base_url, cookie, QUESTIONS[(first + number) % len(QUESTIONS)])
        replies.append((reply.outcome, time.perf_counter() - started))
    return replies


def _cache_counts(services: ServiceSet) -> resources_pb2.ResultCacheCounts:
    """What the Resource Gateway's result cache did so far, as it counts it."""
    with sync_channel(services.handles["resources"].address, cli_credentials(services.cert_dir),
                      "resources") as channel:
        return invoke(channel, "resources", "GetInfo", resources_pb2.GetInfoRequest()).result_cache


def _forget_reusable_results(services: ServiceSet) -> None:
    """Empty the result cache's index (what an operator does to force reads), so each run starts cold."""
    engine = sa.create_engine(services.extra_env["TESSERA_RESOURCES_STORE_URL"])
    with engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM result_cache"))
    engine.dispose()


def _environment(work: Path, host_url: str) -> dict[str, str]:
    return {**seeded_environment(work, "asking-", SCALE), "TESSERA_HOST_DATABASE_URL": host_url,
            # Replicas of web share the cookie key, as on Kubernetes.
            SESSION_SECRET: WEB_SECRET}


def _measure(sets: list[ServiceSet]) -> list[dict]:
    webs = [f"http://{s.handles['web'].address}" for s in sets]
    # A person of their own each, signed in at the one broker (good on every web replica): a sign-in is one
    # conversation, and one person's questions follow one another on it.
    cookies = [signed_in_cookie(sets[0], (f"asker-{n}", "local", f"Asker {n}")) for n in range(PEOPLE)]
    for web in webs:  # warm: the first turn on each agent loads the planner
        ask_through_web(web, cookies[0], WARM_UP)
    _forget_reusable_results(sets[0])
    pids = {f"{name}-{number}": handle.pid for number, s in enumerate(sets, 1) for name, handle in s.handles.items()}
    before = {name: process_stats(pid)["cpu_s"] for name, pid in pids.items()}
    counted = _cache_counts(sets[0])
    started, client_started = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(PEOPLE) as people:
        replies = [r for person in people.map(_person, [webs[i % len(webs)] for i in range(PEOPLE)], cookies,
                                              range(PEOPLE)) for r in person]
    wall = time.perf_counter() - started
    cpu = {name: round(process_stats(pid)["cpu_s"] - before[name], 1) for name, pid in pids.items()}
    cpu["people_client"] = round(time.process_time() - client_started, 1)
    rss = {name: process_stats(pid)["rss_mb"] for name, pid in pids.items()}
    now = _cache_counts(sets[0])
    cache = {kind: getattr(now, kind) - getattr(counted, kind) for kind in ("hits", "misses", "bypassed")}
    return [_result(replies, wall, len(sets), cpu, rss, cache)]


def _result(replies: list[tuple[str, float]], wall: float, replicas: int, cpu: dict, rss: dict,
            cache: dict) -> dict:
    answered = [seconds for outcome, seconds in replies if outcome == "answered"]
    outcomes = [outcome for outcome, _ in replies]
    suffix = f"{replicas}_replica" + ("s" if replicas > 1 else "")
    analyses = sum(cache.values())
    entry = {"name": f"asking_{PEOPLE}_people_answers_per_second_{suffix}", "unit": "answers/s",
             "value": round(len(answered) / wall, 2), "baseline": None, "ratio": None,
             "p50_s": round(statistics.median(answered), 2) if answered else None,
             "p99_s": round(percentile(answered, 0.99), 2) if answered else None,
             "questions": len(replies), "outcomes": {o: outcomes.count(o) for o in sorted(set(outcomes))},
             "wall_s": round(wall, 1), "cpu_s_during_run": cpu, "rss_mb": rss,
             "result_cache": {**cache, "hit_rate": round(cache["hits"] / analyses, 3) if analyses else None},
             "note": f"{PEOPLE} people at once, {QUESTIONS_EACH} questions each (the same {len(QUESTIONS)}, each "
                     f"person from another) through web (/api/session, /api/ask to the end of the stream), embedded "
                     f"planner, {SCALE:,}-row demo warehouse, no reusable result at the start; {replicas} replica(s) "
                     "of host, agent and web; p50_s/p99_s: time to answer of the answered questions; result_cache: "
                     "the Resource Gateway's counts over the run (GetInfo), hit_rate = hits / analyses"}
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
