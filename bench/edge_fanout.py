"""Fan-out at the edge (issue 42 part 4), for `make bench` (alone: `python -m bench.edge_fanout`).

Browsers watch one surface through web's `/api/surface/stream` while the broker's path (`PublishIntentEvent`)
commits EVENTS_PER_SECOND events for SECONDS. Viewers are lightweight socket readers (HTTP/1.0, a regular
expression over the bytes, no JSON) in their own processes; their CPU is reported so a figure they limited shows.
Phases, one run:

- FEW_VIEWERS through web, then VIEWERS through web: the host's CPU per committed event in each (the host serves
  one stream per surface per web replica, so the ratio should stay near 1);
- VIEWERS through a bare asyncio broadcaster (bench/bare_sse_broadcaster.py) that watches web as one viewer and
  writes each chunk it reads to every socket: web's CPU per delivered event against the bare one's, the two
  taken by turns, ROUNDS times each;
- commit → viewer latency (arrival − start of the commit call) at VIEWERS, with missed deliveries as infinitely
  late.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import re
import subprocess
import sys
import time
from array import array
from pathlib import Path
from types import SimpleNamespace

import httpx

from bench.fanout import _publish
from bench.host import percentile
from bench.local import seeded_environment
from bench.replicas import process_stats
from cli.launcher import ServiceSet
from shared.identity.certs import issue_deployment
from shared.paths import REPO_ROOT
from tests.fixtures.recovery import SESSION_SECRET, signed_in_cookie
from tests.fixtures.web_cookie import session_cookie_name

VIEWERS = 1000
FEW_VIEWERS = 10
EVENTS_PER_SECOND = 20
SECONDS = 10
CLIENT_PROCESSES = 2
CONNECT_AT_ONCE = 50  # viewers connecting together (web's listen backlog is 128)
QUIET_SECONDS = 3.0  # after the last commit, this long without an arrival ends the wait
DRAIN_SECONDS = 20.0
READY_TIMEOUT_SECONDS = 120.0
ROUNDS = 2  # phases of VIEWERS through web, and through the bare broadcaster, taken by turns
GOAL_HOST_RATIO = 1.2
GOAL_WEB_RATIO = 2.0
TOKEN_CARRY = 64  # bytes of the previous read kept, so an intent id split across two reads is still seen


# --- viewers (in client processes) -----------------------------------------------------------------


async def _viewers(conn, ready, spec: dict) -> None:
    total, prefix = spec["total"], spec["prefix"].encode()
    timed = re.compile(rb'"intent_id":"' + prefix + rb'-(\d+)"')
    warm = re.compile(rb'"intent_id":"' + prefix + rb'warm')
    arrivals = [array("d", bytes(8 * total)) for _ in range(spec["viewers"])]
    received = [0] * spec["viewers"]
    state = {"last": time.monotonic()}
    host, port = spec["address"].rsplit(":", 1)
    request = (f"GET /api/surface/stream HTTP/1.0\r\nHost: {spec['address']}\r\nCookie: {spec['cookie']}\r\n"
               f"Last-Event-ID: {spec['cursor']}\r\n\r\n").encode()

    async def watch(number: int) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(request)
        await reader.readuntil(b"\r\n\r\n")
        mine, carry, waiting = arrivals[number], b"", True
        while data := await reader.read(1 << 16):
            now, window = time.time(), carry + data
            carry = window[-TOKEN_CARRY:]
            if waiting and warm.search(window):
                waiting = False
                with ready.get_lock():
                    ready.value += 1
            for match in timed.finditer(window):
                index = int(match[1])
                if not mine[index]:
                    mine[index], received[number] = now, received[number] + 1
                    state["last"] = time.monotonic()
            if received[number] == total:
                break
        writer.close()

    tasks = []
    for start in range(0, spec["viewers"], CONNECT_AT_ONCE):
        tasks += [asyncio.create_task(watch(number))
                  for number in range(start, min(start + CONNECT_AT_ONCE, spec["viewers"]))]
        await asyncio.sleep(0.05)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, conn.recv)  # the timed phase starts
    cpu_started, wall_started = time.process_time(), time.monotonic()
    deadline, pending = await loop.run_in_executor(None, conn.recv), set(tasks)
    while pending and time.time() < deadline and time.monotonic() - state["last"] < QUIET_SECONDS:
        _, pending = await asyncio.wait(pending, timeout=0.25)
    cpu_s, wall_s = time.process_time() - cpu_started, time.monotonic() - wall_started
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    conn.send({"arrivals": [a.tobytes() for a in arrivals], "cpu_s": cpu_s, "wall_s": wall_s})


def _viewer_process(conn, ready, spec: dict) -> None:
    asyncio.run(_viewers(conn, ready, spec))


# --- one phase -------------------------------------------------------------------------------------


def _phase(services: ServiceSet, session, address: str, cookie: str, viewers: int, prefix: str,
           measured_pids: dict[str, int]) -> dict:
    """`viewers` readers of `address`'s stream while the timed events commit; CPU of `measured_pids` over it."""
    host = services.handles["host"].address
    head = asyncio.run(_head(host, services.cert_dir, session, prefix))
    context = multiprocessing.get_context("spawn")
    ready, clients = context.Value("i", 0), []
    processes = CLIENT_PROCESSES if viewers > FEW_VIEWERS else 1
    for number in range(processes):
        ours, theirs = context.Pipe()
        spec = {"address": address, "cookie": cookie, "cursor": head, "prefix": prefix,
                "viewers": viewers // processes + (number < viewers % processes),
                "total": EVENTS_PER_SECOND * SECONDS}
        process = context.Process(target=_viewer_process, args=(theirs, ready, spec), daemon=True)
        process.start()
        clients.append((process, ours))
    try:
        started, attempt = time.monotonic(), 0
        while ready.value < viewers and time.monotonic() - started < READY_TIMEOUT_SECONDS:
            # A new event id each time: the same one again would be the same event (PublishIntentEvent is
            # idempotent), and the bare broadcaster replays nothing to a socket that connects after it.
            asyncio.run(_publish(host, services.cert_dir, session, f"{prefix}warm{attempt}", 1, 1.0, {}))
            attempt += 1
            time.sleep(0.5)
        before = {name: process_stats(pid)["cpu_s"] for name, pid in measured_pids.items()}
        for _, conn in clients:
            conn.send("go")
        sent: dict[int, float] = {}
        failures = asyncio.run(_publish(host, services.cert_dir, session, prefix, EVENTS_PER_SECOND * SECONDS,
                                        EVENTS_PER_SECOND, sent))
        for _, conn in clients:
            conn.send(time.time() + DRAIN_SECONDS)
        replies = [conn.recv() for _, conn in clients]
        cpu = {name: process_stats(pid)["cpu_s"] - before[name] for name, pid in measured_pids.items()}
    finally:
        for process, _ in clients:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
    latencies, missed = [], 0
    for reply in replies:
        for raw in reply["arrivals"]:
            arrived = array("d")
            arrived.frombytes(raw)
            for index, moment in enumerate(arrived):
                if moment:
                    latencies.append((moment - sent[index]) * 1000)
                else:
                    missed += 1
    return {"viewers": viewers, "viewers_ready": ready.value, "events": len(sent), "failed_commits": dict(failures),
            "delivered": len(latencies), "missed": missed, "latencies": latencies, "cpu_s": cpu,
            "viewer_client_cpu_share_of_a_core": [round(r["cpu_s"] / r["wall_s"], 2) for r in replies]}


async def _head(host: str, cert_dir: Path, session, prefix: str) -> str:
    """The surface's journal position after one more event: where this phase's viewers start."""
    from cli.launcher import cli_credentials
    from shared.rpc.channels import direct_aio_channel
    from tessera.common.v1 import common_pb2
    from tessera.host.v1 import host_pb2, host_pb2_grpc

    async with direct_aio_channel(host, cli_credentials(cert_dir, "capabilities")) as channel:
        reply = await host_pb2_grpc.HostServiceStub(channel).PublishIntentEvent(host_pb2.PublishIntentEventRequest(
            session_id=session.session_id, surface_id=session.surface_id, event_id=f"{prefix}start",
            receipt=common_pb2.Receipt(intent_id=f"{prefix}start", action_id="bench.fanout",
                                       status=common_pb2.INTENT_STATUS_RUNNING)), timeout=10)
    return f"{reply.cursor.epoch}:{reply.cursor.sequence}"


# --- the run ---------------------------------------------------------------------------------------


def _together(phases: list[dict]) -> dict:
    """Phases of one kind as one: their events, deliveries, misses, latencies and CPU added up."""
    joined = {"viewers": phases[0]["viewers"], "rounds": len(phases),
              "viewers_ready": min(p["viewers_ready"] for p in phases),
              "failed_commits": [p["failed_commits"] for p in phases],
              "viewer_client_cpu_share_of_a_core": [p["viewer_client_cpu_share_of_a_core"] for p in phases],
              "latencies": [value for p in phases for value in p["latencies"]],
              "cpu_s": {name: sum(p["cpu_s"][name] for p in phases) for name in phases[0]["cpu_s"]}}
    for key in ("events", "delivered", "missed"):
        joined[key] = sum(p[key] for p in phases)
    return joined


def _results(few: dict, many: dict, bare: dict) -> list[dict]:
    host_few, host_many = (phase["cpu_s"]["host"] / phase["events"] * 1000 for phase in (few, many))
    web_per = many["cpu_s"]["web"] / max(many["delivered"], 1) * 1e6
    bare_per = bare["cpu_s"]["bare"] / max(bare["delivered"], 1) * 1e6
    samples = many["latencies"] + [math.inf] * many["missed"]
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    detail = {key: {k: v for k, v in phase.items() if k != "latencies"} for key, phase in
              (("few", few), ("many", many), ("bare", bare))}
    rate = f"{EVENTS_PER_SECOND} PublishIntentEvent commits/s for {SECONDS} s"
    return [
        {"name": "edge_fanout_host_cpu_per_event_1000_vs_10_viewers", "value": round(host_many, 3), "unit": "ms",
         "baseline": round(host_few, 3), "ratio": round(host_many / host_few, 3), "goal_ratio": GOAL_HOST_RATIO,
         "phases": detail,
         "description": f"host CPU per committed event with {VIEWERS} browsers watching one surface through web vs "
                        f"{FEW_VIEWERS}; {rate}"},
        {"name": "edge_fanout_web_cpu_per_delivered_event", "value": round(web_per, 2), "unit": "us",
         "baseline": round(bare_per, 2), "ratio": round(web_per / bare_per, 3), "goal_ratio": GOAL_WEB_RATIO,
         "description": f"web's CPU per event delivered to one of {VIEWERS} SSE viewers vs a bare asyncio "
                        "broadcaster writing the same bytes (what it reads from web as one viewer) to as many "
                        f"sockets; {rate}"},
        {"name": "edge_fanout_1000_viewers_commit_to_viewer_p99", "unit": "ms",
         "value": None if math.isinf(p99) else round(p99, 1), "baseline": None, "ratio": None,
         "p50_ms": None if math.isinf(p50) else round(p50, 1), "missed_deliveries": many["missed"],
         "viewer_client_cpu_share_of_a_core": many["viewer_client_cpu_share_of_a_core"],
         "description": f"start of the commit call → arrival at a browser socket, {VIEWERS} viewers through one "
                        f"web replica, {rate}; a missed delivery counts as infinitely late"},
    ]


def run(work: Path, cert_dir: Path) -> list[dict]:
    if not (cert_dir / "ca.pem").exists():
        issue_deployment(cert_dir)
    env = {**seeded_environment(work, "edge-", 1_000), SESSION_SECRET: "bench-edge-" + "x" * 40}
    services = ServiceSet(cert_dir, work / "run-edge", names=("capabilities", "host", "web"), ephemeral_ports=True,
                          extra_env=env)
    services.start(timeout=120)
    bare = None
    try:
        web = services.handles["web"].address
        cookie = f"{session_cookie_name(f'http://{web}')}={signed_in_cookie(services)}"
        opened = httpx.get(f"http://{web}/api/session", headers={"Cookie": cookie}, timeout=30).json()
        session = SimpleNamespace(session_id=opened["session_id"], surface_id=opened["surface_id"])
        pids = {"host": services.handles["host"].pid, "web": services.handles["web"].pid}
        few = _phase(services, session, web, cookie, FEW_VIEWERS, "edgeA", pids)
        bare = subprocess.Popen([sys.executable, str(REPO_ROOT / "bench" / "bare_sse_broadcaster.py"), web, cookie],
                                stdout=subprocess.PIPE, text=True)
        bare_address = f"127.0.0.1:{int(bare.stdout.readline())}"
        # Web and the bare broadcaster by turns, twice each: a drift in the machine's load touches both alike.
        many, baseline = [], []
        for turn in range(ROUNDS):
            many.append(_phase(services, session, web, cookie, VIEWERS, f"edgeB{turn}", pids))
            baseline.append(_phase(services, session, bare_address, cookie, VIEWERS, f"edgeC{turn}",
                                   {"bare": bare.pid}))
    finally:
        if bare is not None:
            bare.terminate()
            bare.wait(10)
        services.stop()
    return _results(few, _together(many), _together(baseline))


if __name__ == "__main__":
    import json
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tessera-edge-") as directory:
        print(json.dumps(run(Path(directory), Path(directory) / "certs"), indent=2))
