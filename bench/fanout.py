"""Host scale-out benchmarks of issue #14, for `make bench` (alone: `python -m bench.fanout`).

- Surface fan-out through the real path: VIEWERS concurrent host `Subscribe` streams on one surface while the
  broker's path (`PublishIntentEvent`, capabilities credentials) commits EVENTS_PER_SECOND events for
  FANOUT_SECONDS. Latency = arrival at a viewer − the start of the call that committed the event. 1 host replica
  vs 2 (two processes on one PostgreSQL database, viewers split across them, commits through the first), side by
  side in one run. Missed events (committed, but not received when deliveries stopped) and duplicates are
  counted per viewer, so a replica that never hears the other's commits shows up as misses, not as a hang.
- `SubmitProposal` end to end (compile + CAS commit + journal + wake-up), 32 blocks, on SQLite and PostgreSQL.

Viewers live in CLIENT_PROCESSES processes with many streams per grpc.aio channel; the CPU seconds they used are
reported next to each replica's, so a figure the client limited is visible as such.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import statistics
import threading
import time
from array import array
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import sqlalchemy as sa

from bench.host import percentile
from bench.replicas import process_stats, side_by_side, skipped
from cli.launcher import ServiceSet, cli_credentials
from shared.identity.actors import assert_actor
from shared.identity.certs import issue_deployment, load_signing_key, signing_key_path
from shared.rpc.channels import channel_credentials, direct_aio_channel, sync_channel
from shared.rpc.contracts import invoke
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2, host_pb2_grpc
from tests.fixtures.postgres import throwaway_database
from tests.fixtures.race import query

VIEWERS = 1000
EVENTS_PER_SECOND = 100
FANOUT_SECONDS = 10
# After the last commit call, viewers wait while deliveries still flow: QUIET_SECONDS without any arrival (or
# DRAIN_SECONDS in all) ends the wait, and a committed event a viewer has not received by then is missed.
QUIET_SECONDS = 3.0
DRAIN_SECONDS = 20.0
COMMIT_TIMEOUT_SECONDS = 10.0  # a commit call slower than this counts as failed (and its event is not followed)
READY_TIMEOUT_SECONDS = 90.0
CLIENT_PROCESSES = 2
STREAMS_PER_CHANNEL = 125
# Viewers ask for up to this many envelopes per reply, as web does (services/web/api.py SSE_BATCH); with two
# replicas the run is repeated with one reply per envelope (what a client that does not ask gets), side by side.
MAX_ENVELOPES = 16
WEB_FEED_BATCH = 64  # what web's surface feed asks of the host (services/web/surface_feeds.py UPSTREAM_BATCH)
GOAL_P99_MS = 100.0
GOAL_SUBMIT_P50_MS = 10.0


# --- viewers (in client processes) -----------------------------------------------------------------


class _Viewers:
    """One client process's share of viewers: what each received, when.

    While deliveries flow a viewer keeps each reply's bytes and arrival time and marks which timed events
    it has (to know when it has them all): the client processes share the 2 cores with the hosts, so the
    rest of the analysis (order, duplicates, first arrivals) waits until the timed phase is over."""

    def __init__(self, spec: dict, ready) -> None:
        self.spec, self.ready, self.total = spec, ready, spec["total"]
        self.received: list[list] = [[] for _ in range(spec["viewers"])]  # per viewer: (arrival, reply bytes)
        self.errors = 0
        self.calls: list = []
        self.last_arrival = time.monotonic()
        self.replicas: list[int] = []  # per viewer: the host replica (0-based) it watches

    async def watch(self, subscribe, number: int, request) -> None:
        received, seen, unique, waiting = self.received[number], bytearray(self.total), 0, True
        call = subscribe(request)
        self.calls.append(call)
        try:
            async for data in call:
                received.append((time.time(), data))
                if waiting:  # the first reply: it is registered on the server and delivers
                    waiting = False
                    with self.ready.get_lock():
                        self.ready.value += 1
                response = host_pb2.SubscribeResponse.FromString(data)
                for envelope in (response.envelope, *response.following):
                    intent = envelope.action_status.intent_id
                    if intent.startswith("fan-") and not seen[index := int(intent[4:])]:
                        seen[index], unique = 1, unique + 1
                        self.last_arrival = time.monotonic()
                if unique == self.total:
                    return
        except grpc.aio.AioRpcError as exc:
            self.errors += exc.code() != grpc.StatusCode.CANCELLED

    def report(self) -> dict:
        """What arrived (first arrivals: event index and wall time) and how often, per viewer."""
        counts = [bytearray(self.total) for _ in self.received]
        indexes, arrivals, viewers = array("i"), array("d"), array("i")  # one per first arrival
        out_of_order = snapshots = 0
        for number, received in enumerate(self.received):
            mine, last = counts[number], 0
            for arrived, data in received:
                response = host_pb2.SubscribeResponse.FromString(data)
                for envelope in (response.envelope, *response.following):
                    if envelope.WhichOneof("payload") == "snapshot_required":
                        snapshots += 1
                        continue
                    out_of_order += envelope.sequence <= last
                    last = envelope.sequence
                    intent = envelope.action_status.intent_id
                    if intent.startswith("fan-"):
                        index = int(intent[4:])
                        if not mine[index]:  # a duplicate is counted, not timed
                            indexes.append(index)
                            arrivals.append(arrived)
                            viewers.append(number)
                        mine[index] += 1
        return {"indexes": indexes.tobytes(), "arrivals": arrivals.tobytes(), "counts": counts,
                "viewers": viewers.tobytes(), "replicas": self.replicas,
                "out_of_order": out_of_order, "errors": self.errors, "snapshots": snapshots}


async def _run_viewers(conn, ready, spec: dict) -> None:
    credentials = channel_credentials(cli_credentials(Path(spec["cert_dir"]), "web"))
    request = host_pb2.SubscribeRequest(actor=common_pb2.ActorAssertion.FromString(spec["actor"]),
                                        session_id=spec["session_id"], max_envelopes=spec["max_envelopes"],
                                        resume_after=host_pb2.Cursor(epoch=1, sequence=0))
    viewers, channels, tasks = _Viewers(spec, ready), [], []
    for number in range(spec["viewers"]):
        if number % STREAMS_PER_CHANNEL == 0:  # own connections: gRPC would otherwise share one per target
            replica = (spec["first_replica"] + number // STREAMS_PER_CHANNEL) % len(spec["targets"])
            target = spec["targets"][replica]
            channels.append(grpc.aio.secure_channel(target, credentials, options=[
                ("grpc.use_local_subchannel_pool", 1), ("tessera.bench.channel", len(channels))]))
            # Replies as bytes: parsed after the timed phase (_Viewers.report).
            subscribe = channels[-1].unary_stream("/tessera.host.v1.HostService/Subscribe",
                                                  request_serializer=host_pb2.SubscribeRequest.SerializeToString)
        tasks.append(asyncio.create_task(viewers.watch(subscribe, number, request)))
        viewers.replicas.append(replica)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, conn.recv)  # the timed phase starts
    cpu_started, wall_started = time.process_time(), time.monotonic()
    deadline, pending = await loop.run_in_executor(None, conn.recv), set(tasks)
    while pending and time.time() < deadline and time.monotonic() - viewers.last_arrival < QUIET_SECONDS:
        _, pending = await asyncio.wait(pending, timeout=0.25)
    # Why the wait ended: at the cap, deliveries were still flowing, so what is missing may only be late.
    ended = "all delivered" if not pending else "quiet" if time.time() < deadline else "cap, still delivering"
    cpu_s, wall_s = time.process_time() - cpu_started, time.monotonic() - wall_started
    for call in viewers.calls:
        call.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    conn.send({**viewers.report(), "cpu_s": cpu_s, "wall_s": wall_s, "ended": ended})
    for channel in channels:
        await channel.close()


def _viewer_process(conn, ready, spec: dict) -> None:
    asyncio.run(_run_viewers(conn, ready, spec))


# --- the fan-out run -------------------------------------------------------------------------------


async def _publish(address: str, cert_dir: Path, session, prefix: str, count: int, rate: float,
                   sent: dict[int, float], took: dict[int, float] | None = None) -> Counter:
    """Commit `count` broker events at `rate`/s, each on its own schedule (a slow call does not delay the next).

    Fills `sent` (index → wall time the call started) and `took` (index → duration of an acknowledged call, ms);
    returns the failed calls by status code (their events may still have been committed)."""
    failures: Counter = Counter()
    async with direct_aio_channel(address, cli_credentials(cert_dir, "capabilities")) as channel:
        stub = host_pb2_grpc.HostServiceStub(channel)

        async def one(index: int) -> None:
            request = host_pb2.PublishIntentEventRequest(
                session_id=session.session_id, surface_id=session.surface_id, event_id=f"{prefix}-{index}",
                receipt=common_pb2.Receipt(intent_id=f"{prefix}-{index}", action_id="bench.fanout",
                                           status=common_pb2.INTENT_STATUS_RUNNING))
            sent[index], clock = time.time(), time.perf_counter()
            try:
                await stub.PublishIntentEvent(request, timeout=COMMIT_TIMEOUT_SECONDS)
            except grpc.aio.AioRpcError as exc:
                failures[exc.code().name] += 1
                return
            if took is not None:
                took[index] = (time.perf_counter() - clock) * 1000

        began, tasks = time.monotonic(), []
        for index in range(count):
            await asyncio.sleep(max(0.0, began + index / rate - time.monotonic()))
            tasks.append(asyncio.create_task(one(index)))
        await asyncio.gather(*tasks)
    return failures


def _warm_up(address: str, cert_dir: Path, session, ready) -> float:
    """Commit a warm-up event now and then until every viewer has received one (its stream is live)."""
    started = time.monotonic()
    batch = 0
    while ready.value < VIEWERS and time.monotonic() - started < READY_TIMEOUT_SECONDS:
        asyncio.run(_publish(address, cert_dir, session, f"warm{batch}", 1, 1.0, {}))
        batch += 1
        pause_until = time.monotonic() + 0.5
        while ready.value < VIEWERS and time.monotonic() < pause_until:
            time.sleep(0.02)
    return time.monotonic() - started


def _start_viewers(sets: list[ServiceSet], cert_dir: Path, actor, session, max_envelopes: int):
    context = multiprocessing.get_context("spawn")  # no gRPC state inherited through fork
    ready = context.Value("i", 0)
    targets = [s.handles["host"].address for s in sets]
    clients = []
    for number in range(CLIENT_PROCESSES):
        mine = VIEWERS // CLIENT_PROCESSES + (number < VIEWERS % CLIENT_PROCESSES)
        ours, theirs = context.Pipe()
        spec = {"cert_dir": str(cert_dir), "actor": actor.SerializeToString(), "session_id": session.session_id,
                "viewers": mine, "total": EVENTS_PER_SECOND * FANOUT_SECONDS,
                "targets": targets, "first_replica": number % len(targets), "max_envelopes": max_envelopes}
        process = context.Process(target=_viewer_process, args=(theirs, ready, spec), daemon=True)
        process.start()
        clients.append((process, ours))
    return clients, ready


def _measure(sets: list[ServiceSet], cert_dir: Path, actor, session, max_envelopes: int) -> dict:
    clients, ready = _start_viewers(sets, cert_dir, actor, session, max_envelopes)
    try:
        publisher = sets[0].handles["host"].address
        ready_seconds = _warm_up(publisher, cert_dir, session, ready)
        viewers_ready = ready.value
        pids = [s.handles["host"].pid for s in sets]
        before = [process_stats(pid) for pid in pids]
        for _, conn in clients:
            conn.send("go")
        sent: dict[int, float] = {}
        took: dict[int, float] = {}
        failures = asyncio.run(_publish(publisher, cert_dir, session, "fan", EVENTS_PER_SECOND * FANOUT_SECONDS,
                                        EVENTS_PER_SECOND, sent, took))
        deadline = time.time() + DRAIN_SECONDS
        for _, conn in clients:
            conn.send(deadline)
        replies = [conn.recv() for _, conn in clients]
        # Over the same span as the viewer clients' CPU: the commits and every delivery after them.
        hosts = [process_stats(pid) for pid in pids]
        for stats, earlier in zip(hosts, before, strict=True):
            stats["cpu_s"] = round(stats["cpu_s"] - earlier["cpu_s"], 2)
        committed = _committed_events(sets[0].extra_env["TESSERA_HOST_DATABASE_URL"], session.surface_id)
    finally:
        for process, _ in clients:
            process.join(timeout=5)  # they have answered, or something failed and they wait for nothing
            if process.is_alive():
                process.kill()
    return {**_tally(replies, sent, took, committed), "hosts": hosts, "commit_call_failures": dict(failures),
            "commit_call_ms": _spread(list(took.values())),
            "viewers_ready": viewers_ready, "ready_seconds": round(ready_seconds, 1),
            "viewer_client_wait_ended": [r["ended"] for r in replies],
            "viewer_client_cpu_s": [round(r["cpu_s"], 2) for r in replies],
            "viewer_client_cpu_share_of_a_core": [round(r["cpu_s"] / r["wall_s"], 2) for r in replies]}


def _committed_events(url: str, surface_id: str) -> set[int]:
    """Indexes of the timed events the surface's journal holds: committed, whether or not the call that
    committed it was answered in time."""
    rows = query(url, "SELECT envelope FROM surface_events WHERE surface_id = :s", s=surface_id)
    intents = [host_pb2.SurfaceEnvelope.FromString(row.envelope).action_status.intent_id for row in rows]
    return {int(intent[4:]) for intent in intents if intent.startswith("fan-")}


def _tally(replies: list[dict], sent: dict[int, float], acknowledged: dict[int, float], committed: set[int]) -> dict:
    """Latency of every first arrival, and what each viewer missed of the events the journal holds."""
    latencies: dict[int, array] = {}  # host replica → latencies of its viewers
    delivered: set[int] = set()  # events some viewer received
    for reply in replies:
        indexes, arrivals, viewers = array("i"), array("d"), array("i")
        for part, key in ((indexes, "indexes"), (arrivals, "arrivals"), (viewers, "viewers")):
            part.frombytes(reply[key])
        delivered.update(indexes)
        for index, arrived, viewer in zip(indexes, arrivals, viewers, strict=True):
            latencies.setdefault(reply["replicas"][viewer], array("f")).append((arrived - sent[index]) * 1000)
    assert delivered <= committed, "a viewer received an event the journal does not hold"
    missed, watching = Counter(), Counter()
    for reply in replies:
        for viewer, counts in enumerate(reply["counts"]):
            replica = reply["replicas"][viewer]
            watching[replica] += 1
            missed[replica] += sum(1 for index in committed if not counts[index])
    per_replica = [{"replica": replica + 1, "viewers": watching[replica], "missed_events": missed[replica],
                    **_spread(latencies.get(replica, []))} for replica in sorted(watching)]
    return {"latencies": array("f", (value for part in latencies.values() for value in part)),
            "events_committed": len(committed), "events_acknowledged": len(acknowledged),
            "missed_events": sum(missed.values()),
            "duplicates": sum(count - 1 for reply in replies for viewer in reply["counts"] for count in viewer
                              if count > 1),
            "out_of_order": sum(r["out_of_order"] for r in replies),
            "stream_errors": sum(r["errors"] for r in replies),
            "snapshot_required": sum(r["snapshots"] for r in replies), "viewers_by_replica": per_replica}


def _spread(samples) -> dict:
    if not samples:
        return {"p50_ms": None, "p99_ms": None}
    return {"p50_ms": round(statistics.median(samples), 1), "p99_ms": round(percentile(samples, 0.99), 1)}


def _open_session(address: str, cert_dir: Path, request_id: str):
    actor = assert_actor(load_signing_key(signing_key_path(cert_dir, "web")), "viewer", "bench")
    with sync_channel(address, cli_credentials(cert_dir, "web"), "host") as web:
        session = invoke(web, "host", "OpenSession", host_pb2.OpenSessionRequest(actor=actor, request_id=request_id))
    return actor, session


def bench_fanout(run_dir: Path, cert_dir: Path) -> list[dict]:
    def measure(sets: list[ServiceSet]) -> list[dict]:
        backend = sa.make_url(sets[0].extra_env["TESSERA_HOST_DATABASE_URL"]).get_backend_name()
        results = []
        for max_envelopes in (MAX_ENVELOPES, 1) if len(sets) > 1 else (MAX_ENVELOPES,):
            # A surface of its own per run: the viewers replay its journal from the start.
            actor, session = _open_session(sets[0].handles["host"].address, cert_dir,
                                           f"fanout-{len(sets)}-{max_envelopes}")
            results += _fanout_results(_measure(sets, cert_dir, actor, session, max_envelopes), len(sets),
                                       backend, max_envelopes)
        return results

    return side_by_side(run_dir, cert_dir, ("host",), ("host",),
                        lambda url: {"TESSERA_HOST_DATABASE_URL": url, "TESSERA_LOG_LEVEL": "WARNING"}, measure,
                        lambda why: skipped(f"fanout_{VIEWERS}_viewers_p99_delivery_2_replicas", "ms", why))


def _fanout_results(measured: dict, replicas: int, backend: str, max_envelopes: int) -> list[dict]:
    latencies, missed = measured.pop("latencies"), measured["missed_events"]
    detail = {"replicas": replicas, "database": backend, "viewers": VIEWERS, "max_envelopes_per_reply": max_envelopes,
              "deliveries": len(latencies),
              **{key: value for key, value in measured.items() if key not in ("hosts", "ready_seconds")},
              "seconds_until_every_stream_was_live": measured["ready_seconds"], "host_replicas": measured["hosts"]}
    suffix = f"{replicas}_replica" + ("s" if replicas > 1 else "") + (
        "_one_envelope_per_reply" if max_envelopes == 1 else "")
    note = (f"{VIEWERS} host Subscribe streams on one surface, split over {replicas} host process(es) on one "
            f"{backend} database; {EVENTS_PER_SECOND} PublishIntentEvent commits/s (the broker's path) through the "
            f"first for {FANOUT_SECONDS} s; a viewer that is behind gets up to {max_envelopes} envelope(s) per reply "
            "(max_envelopes; web asks for 16); latency = arrival at a viewer − start of the commit call; an event "
            "is committed when the surface's journal holds it (its call may have timed out), and missed by a viewer "
            f"that had not received it when deliveries stopped ({QUIET_SECONDS:.0f} s without an arrival, at most "
            f"{DRAIN_SECONDS:.0f} s after the last commit call); a commit call has {COMMIT_TIMEOUT_SECONDS:.0f} s. "
            "cpu_s: CPU used by each host and each viewer client process from the first commit until the viewers "
            f"stopped waiting ({os.cpu_count()} cores in all)")
    if not latencies:
        return [{**skipped(f"fanout_{VIEWERS}_viewers_p99_delivery_{suffix}", "ms", "no event was delivered"),
                 **detail, "note": note}]
    # A missed delivery counts as infinitely late: a p99 among the arrivals alone would flatter a run that
    # dropped its slowest deliveries.
    p50 = percentile(list(latencies) + [math.inf] * missed, 0.5)
    p99 = percentile(list(latencies) + [math.inf] * missed, 0.99)
    if math.isinf(p99):
        late = (f"{missed} of {len(latencies) + missed} deliveries had not arrived when the viewers stopped "
                f"waiting: the p99 is later than the last arrival, {max(latencies) / 1000:.1f} s")
        p99_entry = {**skipped(f"fanout_{VIEWERS}_viewers_p99_delivery_{suffix}", "ms", late), "goal_ratio": 1.0,
                     "p50_ms": None if math.isinf(p50) else round(p50, 1)}
    else:
        p99_entry = {"name": f"fanout_{VIEWERS}_viewers_p99_delivery_{suffix}", "value": round(p99, 1), "unit": "ms",
                     "baseline": GOAL_P99_MS, "ratio": round(p99 / GOAL_P99_MS, 3), "goal_ratio": 1.0,
                     "p50_ms": None if math.isinf(p50) else round(p50, 1)}
    return [
        {**p99_entry, **detail, "note": note + "; baseline is the 100 ms goal; a missed delivery counts as "
                                                "infinitely late"},
        {"name": f"fanout_{VIEWERS}_viewers_missed_events_{suffix}", "value": missed, "unit": "deliveries",
         "baseline": None, "ratio": None,
         "note": "viewer × committed event pairs not delivered when the viewers stopped waiting (goal 0); when "
                 "viewer_client_wait_ended in the p99 entry says cap, deliveries were still flowing and these "
                 "include late ones; duplicates and order are in the p99 entry"},
    ]


# --- SubmitProposal end to end ---------------------------------------------------------------------


def bench_submit(work: Path, cert_dir: Path, url: str, warehouse: str) -> list[dict]:
    """bench/host.py's commit loop (120 proposals of 32 blocks, CAS on the head each time) on `url`."""
    from bench import host

    backend = sa.make_url(url).get_backend_name()
    env = {"TESSERA_RESOURCES_WAREHOUSE_URL": warehouse, "TESSERA_HOST_DATABASE_URL": url,
           "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{work / f'submit-{backend}-results.sqlite'}",
           "TESSERA_LOG_LEVEL": "WARNING"}
    services = ServiceSet(cert_dir, work / f"run-submit-{backend}", names=("compiler", "resources", "host"),
                          ephemeral_ports=True, extra_env=env)
    services.start(timeout=120)
    try:
        actor, session, turn, frozen = host._setup(services, cert_dir)
        with _watching(services.handles["host"].address, cert_dir, actor, session) as received:
            measured = {r["name"]: r for r in host.bench_commit(services, cert_dir, actor, turn, frozen)}
    finally:
        services.stop()
    p50 = measured["host_commit_publish_32_blocks_p50"]
    return [{"name": f"submit_proposal_32_blocks_p50_{backend}", "value": p50["value"], "unit": "ms",
             "baseline": GOAL_SUBMIT_P50_MS, "ratio": round(p50["value"] / GOAL_SUBMIT_P50_MS, 3), "goal_ratio": 1.0,
             "p99_ms": measured["host_commit_publish_32_blocks_p99"]["value"],
             "compile_rpc_p50_ms": p50["baseline"], "events_the_viewer_received": len(received),
             "note": f"SubmitProposal round trip (agent → host → compiler → CAS commit on {backend} → journal → "
                     "wake-up of one live Subscribe viewer), 100 timed after 20 warm-up; baseline is the 10 ms "
                     "goal, compile included"}]


@contextmanager
def _watching(address: str, cert_dir: Path, actor, session) -> Iterator[list[int]]:
    """One live viewer of the surface while proposals commit, so that each commit wakes a subscriber. It subscribes
    as web's surface feed does (the host's one subscriber per surface in the product): up to 64 envelopes a reply."""
    received: list[int] = []
    channel = sync_channel(address, cli_credentials(cert_dir, "web"), "host")
    call = host_pb2_grpc.HostServiceStub(channel).Subscribe(host_pb2.SubscribeRequest(
        actor=actor, session_id=session.session_id, resume_after=host_pb2.Cursor(epoch=1, sequence=0),
        max_envelopes=WEB_FEED_BATCH))

    def drain() -> None:
        try:
            for response in call:
                received.extend(e.sequence for e in (response.envelope, *response.following))
        except grpc.RpcError:  # cancelled at the end
            pass

    thread = threading.Thread(target=drain, name="viewer", daemon=True)
    thread.start()
    try:
        yield received
    finally:
        call.cancel()
        thread.join(timeout=10)
        channel.close()


# --- entry points ----------------------------------------------------------------------------------


def run(work: Path, cert_dir: Path) -> list[dict]:
    from cli.seed import seed

    if not (cert_dir / "ca.pem").exists():
        issue_deployment(cert_dir)
    warehouse = f"sqlite:///{work / 'fanout-warehouse.sqlite'}"
    seed(warehouse, 20_000, progress=False)
    results = bench_submit(work, cert_dir, f"sqlite:///{work / 'submit-host.sqlite'}", warehouse)
    with throwaway_database("tessera_bench_submit") as (url, why):
        results += bench_submit(work, cert_dir, url, warehouse) if url else [
            skipped("submit_proposal_32_blocks_p50_postgresql", "ms", why)]
    return results + bench_fanout(work / "run-fanout", cert_dir)


if __name__ == "__main__":
    import json
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tessera-fanout-") as directory:
        print(json.dumps(run(Path(directory), Path(directory) / "certs"), indent=2))
