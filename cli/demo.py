"""`tessera demo`: the main job at this stage, against a running service set.

It walks the data plane the way the agent and the host will: the agent
inspects the catalog and asks for an analysis (and gets only a descriptor,
never rows); the host — stood in for here with the host's signing key from
the deployment directory — resolves a grant-bound window, which is what the
person sees. Then it shows two calls the contracts forbid.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
from pathlib import Path

import grpc

from cli.launcher import ServiceSet, cli_credentials
from cli.output import table
from shared import tokens
from shared.certs import load_signing_key, signing_key_path
from shared.channels import sync_channel
from shared.contracts import invoke
from shared.errors import error_details
from shared.ui.contracts import load_catalog
from shared.ui.slice import ResourceOffer, SliceRequest, freeze_slice, offer_tag
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2
from tessera.resources.v1 import resources_pb2

QUESTION = "What is our net revenue by region?"


def outcome(call) -> str:
    try:
        call()
    except grpc.RpcError as exc:
        details = error_details(exc)
        reason = f" reason={details.reason}" if details.reason else ""
        return f"{details.code.name}{reason}"
    return "OK"


def _find(entities, label: str) -> str:
    for entity in entities:
        for item in entity.fields:
            if item.label == label:
                return item.field_id
        for item in entity.metrics:
            if item.label == label:
                return item.metric_id
    raise LookupError(f"{label!r} is not in the catalog slice")


def _cell(cell) -> str:
    kind = cell.WhichOneof("value")
    return "" if kind in (None, "null_value") else str(getattr(cell, kind))


def _grant(cert_dir: Path, descriptor) -> common_pb2.SignedToken:
    now = dt.datetime.now(dt.UTC)
    binding = common_pb2.TokenBinding(subject="demo-surface/revenue-table", audience="resources",
                                      nonce=secrets.token_hex(8))
    binding.issued_at.FromDatetime(now)
    binding.expires_at.FromDatetime(now + dt.timedelta(minutes=5))
    claims = common_pb2.WindowGrantClaims(
        binding=binding, grant_id=f"demo-{secrets.token_hex(4)}", surface_id="demo-surface", node_id="revenue-table",
        resource_id=descriptor.resource_id, version_id=descriptor.version_id, content_hash=descriptor.content_hash,
        column_ids=[c.column_id for c in descriptor.columns], max_window_rows=100)
    return tokens.sign(load_signing_key(signing_key_path(cert_dir, "host")), tokens.PURPOSE_WINDOW_GRANT, claims)


def _compose(host_to_compiler, analysis) -> tuple[bool, str]:
    """The host's part of present_ui: freeze a slice around this turn's offer, compile a proposal.

    The proposal is what a model might send: a heading, a chart and a table
    bound by slice id, evidence — and one block with markup, which fails
    alone (a placeholder) while the rest compiles.
    """
    catalog = load_catalog()
    offer_hash = hashlib.sha256(analysis.offer.SerializeToString(deterministic=True)).hexdigest()
    frozen = freeze_slice(catalog, SliceRequest(components=list(catalog.contracts),
                                                resources=[ResourceOffer(analysis.descriptor, offer_hash)],
                                                evidence=[analysis.evidence]))
    ids = {c.component: c.slice_id for c in frozen.components}
    resource = {"ref": frozen.resources[0].slice_id, "offer": offer_tag(offer_hash)}
    proposal = {"version": 1, "id": "answer", "title": QUESTION, "blocks": [
        {"id": "main", "component": ids["Column"], "data": {}, "children": ["title", "chart", "table", "ev", "oops"]},
        {"id": "title", "component": ids["Heading"], "data": {"text": "Net revenue by region"}},
        {"id": "chart", "component": ids["Chart"], "data": {"resource": resource, "spec": {
            "recipe": "bar", "x": "region", "y": "revenue"}}},
        {"id": "table", "component": ids["DataTable"], "data": {"resource": resource,
                                                               "columns": ["region", "revenue"]}},
        {"id": "ev", "component": ids["EvidenceNote"], "data": {"evidence": frozen.evidence[0].slice_id}},
        {"id": "oops", "component": ids["Text"], "data": {"text": "<img src=x onerror=alert(1)>"}},
    ]}
    reply = invoke(host_to_compiler, "compiler", "Compile", compiler_pb2.CompileRequest(
        slice=frozen, proposal_json=json.dumps(proposal), surface_id="demo-surface"))
    kinds = [next(k for k in json.loads(m) if k != "version") for m in reply.a2ui_messages_json]
    print(f"\nhost: froze {frozen.slice_id} ({len(frozen.components)} components, 1 resource, 1 evidence); "
          f"compiler: {compiler_pb2.CompileOutcome.Name(reply.outcome).removeprefix('COMPILE_OUTCOME_').lower()}, "
          f"content hash {reply.content_hash[:12]}…, A2UI: {', '.join(kinds)}")
    for diagnostic in reply.diagnostics:
        print(f"  diagnostic {diagnostic.code} at {diagnostic.location}: {diagnostic.message}")
    ok = reply.outcome == compiler_pb2.COMPILE_OUTCOME_PARTIAL and [d.code for d in reply.diagnostics] == [
        "component.prop-invalid"]
    return ok, frozen


def walk(services: ServiceSet, cert_dir: Path) -> bool:
    resources = services.handles["resources"].address
    broker = services.handles["capabilities"].address
    compiler_address = services.handles["compiler"].address
    turn = resources_pb2.TurnRef(session_id=f"demo-{secrets.token_hex(4)}", turn_id="turn-1")
    with sync_channel(resources, cli_credentials(cert_dir, "agent")) as agent, \
            sync_channel(resources, cli_credentials(cert_dir, "host")) as host, \
            sync_channel(broker, cli_credentials(cert_dir, "agent")) as agent_to_broker, \
            sync_channel(compiler_address, cli_credentials(cert_dir, "host")) as host_to_compiler, \
            sync_channel(compiler_address, cli_credentials(cert_dir, "agent")) as agent_to_compiler:
        print(f"\nthe question: {QUESTION}")
        context = invoke(agent, "resources", "InspectContext", resources_pb2.InspectContextRequest(turn=turn))
        catalog = invoke(agent, "resources", "InspectCatalog", resources_pb2.InspectCatalogRequest(
            turn=turn, question=QUESTION, capability_token=context.capability_token))
        print(f"agent: inspect_catalog → {len(catalog.entities)} entities: "
              + ", ".join(f"{e.label} ({e.entity_id})" for e in catalog.entities))
        draft = {"mode": "aggregate", "output": "ranking",
                 "measures": [{"id": "revenue", "metric": _find(catalog.entities, "Net revenue")}],
                 "dimensions": [{"id": "region", "field": _find(catalog.entities, "Region name")}],
                 "order_by": [{"output": "revenue", "direction": "desc"}]}
        print(f"agent: run_analysis with the draft {json.dumps(draft)}")
        analysis = invoke(agent, "resources", "Analyze", resources_pb2.AnalyzeRequest(
            turn=turn, draft_json=json.dumps(draft), capability_token=catalog.capability_token), timeout=60)
        descriptor = analysis.descriptor
        columns = ", ".join(f"{c.column_id}: {c.label}" for c in descriptor.columns)
        print(f"agent sees only a descriptor: {descriptor.resource_id}, {descriptor.row_count} rows "
              f"[{columns}], evidence {analysis.evidence.query_fingerprint[:12]}… — no values")

        window = invoke(host, "resources", "ResolveWindow", resources_pb2.ResolveWindowRequest(
            grant=_grant(cert_dir, descriptor), offset=0, limit=20))
        print("\nwhat the person sees (host resolves a grant-bound window):")
        print(table([[_cell(c) for c in row.cells] for row in window.rows],
                    [c.label for c in window.columns]))
        composed, frozen = _compose(host_to_compiler, analysis)

        print("\ncalls the contracts forbid:")
        forbidden = [
            ["agent -> resources.ResolveWindow", "the agent never reads rows", outcome(lambda: invoke(
                agent, "resources", "ResolveWindow", resources_pb2.ResolveWindowRequest(
                    grant=_grant(cert_dir, descriptor), limit=20)))],
            ["agent -> capabilities.Decide", "only people approve effects", outcome(lambda: invoke(
                agent_to_broker, "capabilities", "Decide"))],
            ["agent -> compiler.Compile", "proposals go through the host", outcome(lambda: invoke(
                agent_to_compiler, "compiler", "Compile", compiler_pb2.CompileRequest(slice=frozen)))],
        ]
        print(table(forbidden, ["call", "why", "outcome"]))
    return composed and len(window.rows) == descriptor.row_count > 0 and all(
        row[2] == "PERMISSION_DENIED reason=CALLER_NOT_ALLOWED" for row in forbidden)
