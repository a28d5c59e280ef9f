"""Compiler benchmarks for `make bench`.

- in-process compile of a 32-block proposal, p50 (goal ≤ 1 ms);
- Compile over gRPC (mTLS, host identity): proposals per second, one client;
- prop validation with jsonschema vs fastjsonschema on the same contract
  schemas (both compiled once), to decide which validator to keep.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from services.compiler.compile import Compiler
from shared.ui.contracts import load_catalog
from shared.ui.slice import ActionOffer, ResourceOffer, SliceRequest, StateOffer, freeze_slice, offer_tag
from tessera.common.v1 import common_pb2 as c
from tessera.compiler.v1 import compiler_pb2

OFFER = "ab" * 32


def bench_slice(catalog):
    columns = [("region", c.COLUMN_TYPE_STRING, c.COLUMN_ROLE_DIMENSION),
               ("month", c.COLUMN_TYPE_TIMESTAMP, c.COLUMN_ROLE_TIME),
               ("revenue", c.COLUMN_TYPE_DECIMAL, c.COLUMN_ROLE_MEASURE)]
    descriptor = c.ResourceDescriptor(resource_id="res_1", version_id="v1", content_hash="c" * 64, row_count=60,
                                      columns=[c.ColumnDescriptor(column_id=i, label=i.title(), type=t, role=r)
                                               for i, t, r in columns])
    return freeze_slice(catalog, SliceRequest(
        components=list(catalog.contracts), resources=[ResourceOffer(descriptor, OFFER)],
        evidence=[c.Evidence(evidence_id="ev_1", resource_id="res_1", row_count=60)],
        actions=[ActionOffer("export_csv", {"type": "object", "properties": {"format": {"enum": ["csv"]}}})],
        state=[StateOffer({"type": "string"}, "all")]))


def proposal_32(frozen, resource_ref: str = "resource-000001", offer: str | None = None) -> dict:
    ids = {o.component: o.slice_id for o in frozen.components}
    resource = {"ref": resource_ref, "offer": offer or offer_tag(OFFER)}
    leaves = [
        (ids["Chart"], {"resource": resource, "spec": {"recipe": "line", "x": "month", "y": ["revenue"]}}),
        (ids["DataTable"], {"resource": resource, "columns": ["region", "month", "revenue"], "page_size": 20}),
        (ids["Metric"], {"label": "Revenue", "resource": resource, "column": "revenue"}),
        (ids["Text"], {"text": "Revenue grew in every region over the period."}),
        (ids["EvidenceNote"], {"evidence": "evidence-000001"}),
    ]
    blocks = [{"id": "main", "component": ids["Column"], "data": {}, "children": []}]
    for index in range(15):
        card, leaf = f"card-{index}", f"leaf-{index}"
        blocks[0]["children"].append(card)
        component, data = leaves[index % len(leaves)]
        blocks.append({"id": card, "component": ids["Card"], "data": {"title": f"Section {index}"},
                       "children": [leaf]})
        blocks.append({"id": leaf, "component": component, "data": data})
    blocks[0]["children"].append("end")
    blocks.append({"id": "end", "component": ids["Divider"], "data": {}})
    assert len(blocks) == 32
    return {"version": 1, "id": "bench", "title": "Benchmark answer", "blocks": blocks}


def bench_in_process(catalog, frozen, text: str) -> dict:
    compiler = Compiler(catalog)
    assert compiler.compile(frozen, text).outcome == "compiled"
    samples = []
    for _ in range(1000):
        started = time.perf_counter()
        compiler.compile(frozen, text)
        samples.append(time.perf_counter() - started)
    p50 = statistics.median(samples) * 1000
    return {"name": "compile_32_blocks_p50", "value": round(p50, 3), "unit": "ms", "baseline": 1.0,
            "ratio": round(p50, 3), "goal_ratio": 1.0,
            "description": "in-process compile of a 32-block proposal (bounds, envelope, contracts, bindings, "
                           "canonical document, A2UI messages); baseline is the 1 ms goal"}


def bench_rpc(frozen, text: str, cert_dir: Path, work: Path) -> dict:
    from cli.launcher import ServiceSet, cli_credentials
    from shared.rpc.channels import sync_channel
    from shared.rpc.contracts import invoke

    services = ServiceSet(cert_dir, work / "run-compiler", names=("compiler",), ephemeral_ports=True)
    services.start()
    try:
        address = services.handles["compiler"].address
        with sync_channel(address, cli_credentials(cert_dir, "host"), "compiler") as channel:
            request = compiler_pb2.CompileRequest(slice=frozen, proposal_json=text, surface_id="s")
            for _ in range(50):
                invoke(channel, "compiler", "Compile", request)
            count, started = 0, time.perf_counter()
            while time.perf_counter() - started < 5:
                invoke(channel, "compiler", "Compile", request)
                count += 1
            rate = count / (time.perf_counter() - started)
    finally:
        services.stop()
    return {"name": "compile_32_blocks_rpc_throughput", "value": round(rate, 1), "unit": "proposals/s",
            "baseline": None, "ratio": None,
            "description": "sequential Compile RPCs over mTLS from one client to one compiler process"}


def bench_validators(catalog, frozen) -> dict:
    import fastjsonschema
    import jsonschema

    proposal = proposal_32(frozen)
    names = {o.slice_id: o.component for o in frozen.components}
    pairs = [(names[b["component"]], b["data"]) for b in proposal["blocks"]]
    slow = {n: jsonschema.Draft7Validator(c.props) for n, c in catalog.contracts.items()}
    fast = {n: fastjsonschema.compile(c.props) for n, c in catalog.contracts.items()}

    def run(check) -> float:
        samples = []
        for _ in range(300):
            started = time.perf_counter()
            for name, data in pairs:
                check(name, data)
            samples.append(time.perf_counter() - started)
        return statistics.median(samples) * 1000

    js = run(lambda n, d: slow[n].is_valid(d))
    fj = run(lambda n, d: fast[n](d))
    return {"name": "prop_validation_32_blocks_fastjsonschema_vs_jsonschema", "value": round(fj, 4), "unit": "ms",
            "baseline": round(js, 4), "ratio": round(fj / js, 3),
            "description": "validating the 32 blocks' props: fastjsonschema (value) vs jsonschema (baseline), "
                           "both compiled once"}


def run(work: Path, cert_dir: Path) -> list[dict]:
    catalog = load_catalog()
    frozen = bench_slice(catalog)
    text = json.dumps(proposal_32(frozen))
    return [bench_in_process(catalog, frozen, text), bench_rpc(frozen, text, cert_dir, work),
            bench_validators(catalog, frozen)]
