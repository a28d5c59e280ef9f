"""HostServer benchmarks for `make bench`.

- commit + publish of a 32-block proposal across processes: SubmitProposal
  (agent → host → compiler → host database → journal) p50/p99, with the
  compile share measured separately by calling the compiler directly;
- stream fan-out: 200 subscribers on one surface while events are
  published at 50/s; delivery latency = arrival − the host's published_at.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import threading
import time
from pathlib import Path

from bench.compiler import proposal_32
from cli.launcher import ServiceSet, cli_credentials
from cli.seed import seed
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import aio_channel, sync_channel
from shared.rpc.contracts import invoke
from tessera.compiler.v1 import compiler_pb2
from tessera.host.v1 import host_pb2
from tessera.resources.v1 import resources_pb2

SUBSCRIBERS = 200
EVENTS_PER_SECOND = 50
FANOUT_SECONDS = 5


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _setup(services: ServiceSet, cert_dir: Path):
    actor = assert_actor(load_signing_key(signing_key_path(cert_dir, "web")), "bench", "bench")
    host_address = services.handles["host"].address
    with sync_channel(host_address, cli_credentials(cert_dir, "web"), "host") as web, \
            sync_channel(host_address, cli_credentials(cert_dir, "agent"), "host") as agent, \
            sync_channel(services.handles["resources"].address, cli_credentials(cert_dir, "agent"),
                         "resources") as data:
        session = invoke(web, "host", "OpenSession", host_pb2.OpenSessionRequest(actor=actor, request_id="bench"))
        turn = invoke(agent, "host", "BeginTurn", host_pb2.BeginTurnRequest(
            actor=actor, session_id=session.session_id, question="bench", request_id="bench"))
        ref = resources_pb2.TurnRef(session_id=session.session_id, turn_id=turn.turn_id)
        context = invoke(data, "resources", "InspectContext", resources_pb2.InspectContextRequest(turn=ref))
        catalog = invoke(data, "resources", "InspectCatalog", resources_pb2.InspectCatalogRequest(
            turn=ref, question="net revenue by month and region", capability_token=context.capability_token))
        labels = {i.label: (i.field_id if hasattr(i, "field_id") and i.field_id else i.metric_id)
                  for e in catalog.entities for i in [*e.fields, *e.metrics]}
        draft = {"mode": "aggregate", "measures": [{"id": "revenue", "metric": labels["Net revenue"]}],
                 "dimensions": [{"id": "region", "field": labels["Region name"]},
                                {"id": "month", "field": labels["Order time"], "grain": "month"}]}
        analysis = invoke(data, "resources", "Analyze", resources_pb2.AnalyzeRequest(
            turn=ref, draft_json=json.dumps(draft), capability_token=catalog.capability_token))
        frozen = invoke(agent, "host", "FreezeSlice", host_pb2.FreezeSliceRequest(
            turn_id=turn.turn_id, resource_offers=[analysis.offer]))
    return actor, session, turn, frozen


def _proposal(frozen_view: dict, index: int) -> str:
    slice_like = compiler_pb2.CatalogSlice()
    for component in frozen_view["components"]:
        slice_like.components.add(slice_id=component["id"], component=component["name"])
    proposal = proposal_32(slice_like, resource_ref=frozen_view["resources"][0]["id"],
                           offer=frozen_view["resources"][0]["offer"])
    proposal["title"] = f"Benchmark answer {index}"
    return json.dumps(proposal)


def bench_commit(services: ServiceSet, cert_dir: Path, actor, turn, frozen) -> list[dict]:
    view = json.loads(frozen.model_view_json)
    stored_slice = None
    submit_ms, compile_ms = [], []
    base = ""
    with sync_channel(services.handles["host"].address, cli_credentials(cert_dir, "agent"), "host") as agent, \
            sync_channel(services.handles["compiler"].address, cli_credentials(cert_dir, "host"),
                         "compiler") as compiler:
        for index in range(120):
            text = _proposal(view, index)
            started = time.perf_counter()
            reply = invoke(agent, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
                turn_id=turn.turn_id, slice_hash=frozen.slice_hash, expected_base_revision_id=base,
                proposal_json=text, proposal_id=f"bench-{index}"))
            elapsed = (time.perf_counter() - started) * 1000
            assert reply.outcome == host_pb2.PROPOSAL_OUTCOME_COMMITTED, reply.diagnostics
            base = reply.revision_id
            if stored_slice is None:
                stored_slice = _slice_for(services, cert_dir, frozen)
            started = time.perf_counter()
            invoke(compiler, "compiler", "Compile", compiler_pb2.CompileRequest(slice=stored_slice,
                                                                               proposal_json=text))
            if index >= 20:  # warm-up excluded
                submit_ms.append(elapsed)
                compile_ms.append((time.perf_counter() - started) * 1000)
    compile_p50 = statistics.median(compile_ms)
    p50, p99 = statistics.median(submit_ms), percentile(submit_ms, 0.99)
    return [
        {"name": "host_commit_publish_32_blocks_p50", "value": round(p50, 2), "unit": "ms",
         "baseline": round(compile_p50, 2), "ratio": round(p50 / compile_p50, 3),
         "description": "SubmitProposal round trip (agent → host → compiler → CAS commit → journal); baseline is "
                        "the Compile RPC alone for the same proposal"},
        {"name": "host_commit_publish_32_blocks_p99", "value": round(p99, 2), "unit": "ms", "baseline": None,
         "ratio": None, "description": "as above, 99th percentile"},
        {"name": "host_commit_publish_excluding_compile_p50", "value": round(p50 - compile_p50, 2), "unit": "ms",
         "baseline": 10.0, "ratio": round((p50 - compile_p50) / 10.0, 3), "goal_ratio": 1.0,
         "description": "p50 of SubmitProposal minus p50 of the Compile RPC; baseline is the 10 ms goal"},
    ]


def _slice_for(services: ServiceSet, cert_dir: Path, frozen) -> compiler_pb2.CatalogSlice:
    """The slice the host stored for this hash (read back from its database)."""
    import sqlalchemy as sa

    engine = sa.create_engine(services.extra_env["TESSERA_HOST_DATABASE_URL"])
    with engine.connect() as connection:
        data = connection.execute(sa.text("SELECT slice_proto FROM frozen_slices WHERE slice_hash = :h"),
                                  {"h": frozen.slice_hash}).scalar()
    engine.dispose()
    return compiler_pb2.CatalogSlice.FromString(data)


def bench_fanout(services: ServiceSet, cert_dir: Path, actor, session, turn, frozen) -> dict:
    latencies: list[float] = []
    total = EVENTS_PER_SECOND * FANOUT_SECONDS
    ready = threading.Event()

    async def subscribers() -> None:
        channel = aio_channel(services.handles["host"].address, cli_credentials(cert_dir, "web"), "host")
        stub = channel.unary_stream("/tessera.host.v1.HostService/Subscribe",
                                    request_serializer=host_pb2.SubscribeRequest.SerializeToString,
                                    response_deserializer=host_pb2.SubscribeResponse.FromString)
        head = None

        async def one() -> None:
            nonlocal head
            seen = 0
            call = stub(host_pb2.SubscribeRequest(actor=actor, session_id=session.session_id,
                                                  resume_after=host_pb2.Cursor(epoch=1, sequence=start)))
            async for response in call:
                arrived = time.time()
                envelope = response.envelope
                if envelope.WhichOneof("payload") == "rejected":
                    latencies.append((arrived - envelope.published_at.ToNanoseconds() / 1e9) * 1000)
                    seen += 1
                    if seen == total:
                        call.cancel()
                        return

        start = _journal_length(services, session)
        tasks = [asyncio.create_task(one()) for _ in range(SUBSCRIBERS)]
        await asyncio.sleep(2)  # let every stream open
        ready.set()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=FANOUT_SECONDS * 12)
        await channel.close()

    def publisher() -> None:
        ready.wait()
        with sync_channel(services.handles["host"].address, cli_credentials(cert_dir, "agent"), "host") as agent:
            started = time.perf_counter()
            for index in range(total):
                invoke(agent, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
                    turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json="{ not json",
                    proposal_id=f"fan-{index}"))
                pause = started + (index + 1) / EVENTS_PER_SECOND - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)

    thread = threading.Thread(target=publisher)
    thread.start()
    try:
        asyncio.run(subscribers())
    finally:
        thread.join()
    p99 = percentile(latencies, 0.99)
    return {"name": "host_stream_fanout_p99_delivery", "value": round(p99, 1), "unit": "ms",
            "baseline": round(statistics.median(latencies), 1), "ratio": None,
            "deliveries": len(latencies),
            "description": f"{SUBSCRIBERS} subscribers on one surface, {EVENTS_PER_SECOND} events/s for "
                           f"{FANOUT_SECONDS} s; value p99, baseline p50 of arrival − published_at"}


def _journal_length(services: ServiceSet, session) -> int:
    import sqlalchemy as sa

    engine = sa.create_engine(services.extra_env["TESSERA_HOST_DATABASE_URL"])
    with engine.connect() as connection:
        length = connection.execute(sa.text("SELECT coalesce(max(sequence), 0) FROM surface_events WHERE "
                                            "surface_id = :s"), {"s": session.surface_id}).scalar()
    engine.dispose()
    return int(length)


def run(work: Path, cert_dir: Path) -> list[dict]:
    warehouse = f"sqlite:///{work / 'host-bench-warehouse.sqlite'}"
    seed(warehouse, 20_000, progress=False)
    env = {"TESSERA_RESOURCES_WAREHOUSE_URL": warehouse,
           "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{work / 'host-bench-results.sqlite'}",
           "TESSERA_HOST_DATABASE_URL": f"sqlite:///{work / 'host-bench.sqlite'}",
           "TESSERA_LOG_LEVEL": "WARNING"}
    services = ServiceSet(cert_dir, work / "run-host", names=("compiler", "resources", "host"),
                          ephemeral_ports=True, extra_env=env)
    services.start()
    try:
        actor, session, turn, frozen = _setup(services, cert_dir)
        results = bench_commit(services, cert_dir, actor, turn, frozen)
        results.append(bench_fanout(services, cert_dir, actor, session, turn, frozen))
    finally:
        services.stop()
    return results



