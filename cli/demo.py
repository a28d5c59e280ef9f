"""`tessera demo`: the main job at this stage, against a running service set.

A person (the CLI, signing an actor assertion) opens a session at the host.
The agent — played here with the agent's certificate — begins a turn,
inspects the catalog and runs an analysis, getting back only a descriptor;
asks the host to freeze a catalog slice around the result and submits a
proposal (with one bad block, which fails alone). The host compiles it,
commits it and publishes the A2UI stream; the person's client reads the
stream and asks for a window of rows, which the host fetches under a grant
and publishes to that surface only. Then calls the contracts forbid.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc

from cli.launcher import ServiceSet, cli_credentials
from cli.output import table
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from shared.rpc.errors import error_details
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2
from tessera.host.v1 import host_pb2
from tessera.resources.v1 import resources_pb2

QUESTION = "What is our net revenue by region?"


def outcome(call) -> str:
    try:
        call()
    except grpc.RpcError as exc:
        details = error_details(exc)
        return f"{details.code.name} reason={details.reason}"
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


def _proposal(view: dict) -> dict:
    """What a model might send: a heading, a chart, a table, evidence — and one block with markup."""
    ids = {c["name"]: c["id"] for c in view["components"]}
    resource = {"ref": view["resources"][0]["id"], "offer": view["resources"][0]["offer"]}
    return {"version": 1, "id": "answer", "title": QUESTION, "blocks": [
        {"id": "main", "component": ids["Column"], "data": {}, "children": ["title", "chart", "table", "ev", "oops"]},
        {"id": "title", "component": ids["Heading"], "data": {"text": "Net revenue by region"}},
        {"id": "chart", "component": ids["Chart"], "data": {"resource": resource, "spec": {
            "recipe": "bar", "x": "region", "y": "revenue"}}},
        {"id": "table", "component": ids["DataTable"], "data": {"resource": resource,
                                                               "columns": ["region", "revenue"]}},
        {"id": "ev", "component": ids["EvidenceNote"], "data": {"evidence": view["evidence"][0]["id"]}},
        {"id": "oops", "component": ids["Text"], "data": {"text": "<img src=x onerror=alert(1)>"}},
    ]}


@dataclass(frozen=True)
class _Links:
    """The demo's channels: the person's to the host, and the agent's (its certificate) to every service."""

    person_to_host: grpc.Channel
    agent_to_host: grpc.Channel
    agent_to_data: grpc.Channel
    agent_to_broker: grpc.Channel
    agent_to_compiler: grpc.Channel


@contextlib.contextmanager
def _links(services: ServiceSet, cert_dir: Path) -> Iterator[_Links]:
    address = {name: handle.address for name, handle in services.handles.items()}
    person, agent = cli_credentials(cert_dir, "cli"), cli_credentials(cert_dir, "agent")
    with sync_channel(address["host"], person, "host") as person_to_host, \
            sync_channel(address["host"], agent, "host") as agent_to_host, \
            sync_channel(address["resources"], agent, "resources") as agent_to_data, \
            sync_channel(address["capabilities"], agent, "capabilities") as agent_to_broker, \
            sync_channel(address["compiler"], agent, "compiler") as agent_to_compiler:
        yield _Links(person_to_host, agent_to_host, agent_to_data, agent_to_broker, agent_to_compiler)


def walk(services: ServiceSet, cert_dir: Path) -> bool:
    """The main job, step by step, printed as it goes; True if every step came out as the design says. A step a
    service refused (or that nobody answered) is said in words, never as gRPC's text, and fails the walk."""
    try:
        return _walk(services, cert_dir)
    except grpc.RpcError as exc:
        details = error_details(exc)
        print(f"demo: a step failed: {details.reason}: {details.message}")
        return False


def _walk(services: ServiceSet, cert_dir: Path) -> bool:
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "demo-user", "demo-tenant",
                          "Demo User")
    with _links(services, cert_dir) as links:
        session = invoke(links.person_to_host, "host", "OpenSession", host_pb2.OpenSessionRequest(
            actor=person, request_id=secrets.token_hex(4)))
        print(f"\nperson: opened {session.session_id} (surface {session.surface_id})")
        print(f"the question: {QUESTION}")
        turn = invoke(links.agent_to_host, "host", "BeginTurn", host_pb2.BeginTurnRequest(
            actor=person, session_id=session.session_id, question=QUESTION, request_id="turn-1"))
        analysis = _analyse(links, resources_pb2.TurnRef(session_id=session.session_id, turn_id=turn.turn_id))
        submitted = _present(links, turn.turn_id, analysis)
        rows = _read_window(links, person, session, submitted.revision_id)
        forbidden = _forbidden_calls(links, person, session.session_id)
    composed = submitted.outcome == host_pb2.PROPOSAL_OUTCOME_COMMITTED_PARTIAL and [
        d.code for d in submitted.diagnostics] == ["component.prop-invalid"]
    return composed and len(rows) == analysis.descriptor.row_count > 0 and all(
        row[2] == "PERMISSION_DENIED reason=CALLER_NOT_ALLOWED" for row in forbidden)


def _analyse(links: _Links, ref: resources_pb2.TurnRef) -> resources_pb2.AnalyzeResponse:
    """The agent inspects the catalog and runs one analysis; it gets back a descriptor, never values."""
    context = invoke(links.agent_to_data, "resources", "InspectContext", resources_pb2.InspectContextRequest(turn=ref))
    catalog = invoke(links.agent_to_data, "resources", "InspectCatalog", resources_pb2.InspectCatalogRequest(
        turn=ref, question=QUESTION, capability_token=context.capability_token))
    print(f"agent: inspect_catalog → {len(catalog.entities)} entities: "
          + ", ".join(f"{e.label} ({e.entity_id})" for e in catalog.entities))
    draft = {"mode": "aggregate", "output": "ranking",
             "measures": [{"id": "revenue", "metric": _find(catalog.entities, "Net revenue")}],
             "dimensions": [{"id": "region", "field": _find(catalog.entities, "Region name")}],
             "order_by": [{"output": "revenue", "direction": "desc"}]}
    print(f"agent: run_analysis with the draft {json.dumps(draft)}")
    analysis = invoke(links.agent_to_data, "resources", "Analyze", resources_pb2.AnalyzeRequest(
        turn=ref, draft_json=json.dumps(draft), capability_token=catalog.capability_token), timeout=60)
    descriptor = analysis.descriptor
    columns = ", ".join(f"{c.column_id}: {c.label}" for c in descriptor.columns)
    print(f"agent sees only a descriptor: {descriptor.resource_id}, {descriptor.row_count} rows [{columns}] "
          "— no values")
    return analysis


def _present(links: _Links, turn_id: str,
             analysis: resources_pb2.AnalyzeResponse) -> host_pb2.SubmitProposalResponse:
    """The host freezes a slice around the result; the agent proposes a UI in it (one block bad on purpose)."""
    frozen = invoke(links.agent_to_host, "host", "FreezeSlice", host_pb2.FreezeSliceRequest(
        turn_id=turn_id, resource_offers=[analysis.offer]))
    view = json.loads(frozen.model_view_json)
    print(f"host: froze {frozen.slice_id}: {len(view['components'])} components, "
          f"{len(view['resources'])} resource, {len(view['evidence'])} evidence")
    submitted = invoke(links.agent_to_host, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn_id, slice_hash=frozen.slice_hash, proposal_json=json.dumps(_proposal(view)),
        proposal_id="proposal-1"), timeout=60)
    outcome_name = host_pb2.ProposalOutcome.Name(submitted.outcome).removeprefix("PROPOSAL_OUTCOME_")
    print(f"agent: present_ui → {outcome_name} {submitted.revision_id}, "
          f"content hash {submitted.content_hash[:12]}…")
    for diagnostic in submitted.diagnostics:
        print(f"  diagnostic {diagnostic.code} at {diagnostic.location}: {diagnostic.message}")
    return submitted


def _read_window(links: _Links, person: common_pb2.ActorAssertion, session: host_pb2.OpenSessionResponse,
                 revision_id: str) -> list:
    """The person's client reads the surface stream and asks for a window of the table's rows."""
    subscribe = links.person_to_host.unary_stream(
        "/tessera.host.v1.HostService/Subscribe", request_serializer=host_pb2.SubscribeRequest.SerializeToString,
        response_deserializer=host_pb2.SubscribeResponse.FromString)
    stream = subscribe(host_pb2.SubscribeRequest(actor=person, session_id=session.session_id), timeout=30)
    window = invoke(links.person_to_host, "host", "SendCommand", host_pb2.SendCommandRequest(
        actor=person, command_id="window-1", session_id=session.session_id, surface_id=session.surface_id,
        revision_id=revision_id, resource_window=host_pb2.ResourceWindowCommand(
            node_id="table", offset=0, limit=20)))
    print("\nthe person's stream:")
    rows = []
    for response in stream:
        envelope = response.envelope
        message = json.loads(envelope.a2ui.message_json)
        kind = next(k for k in message if k != "version")
        detail = message[kind].get("path", "")
        print(f"  #{envelope.sequence} {kind} {detail}")
        if envelope.sequence == window.cursor.sequence:
            rows = message[kind]["value"]["rows"]
            stream.cancel()
            break
    print("\nwhat the person sees in the table (a grant-bound window, on this surface only):")
    print(table([[str(v) for v in row] for row in rows], ["Region name", "Net revenue"]))
    return rows


def _forbidden_calls(links: _Links, person: common_pb2.ActorAssertion, session_id: str) -> list[list[str]]:
    """Calls the contracts forbid, each tried and refused; the table's rows (call, why, outcome)."""
    print("\ncalls the contracts forbid:")
    agent_subscribe = links.agent_to_host.unary_stream(
        "/tessera.host.v1.HostService/Subscribe", request_serializer=host_pb2.SubscribeRequest.SerializeToString)
    forbidden = [
        ["agent -> resources.ResolveWindow", "the agent never reads rows", outcome(lambda: invoke(
            links.agent_to_data, "resources", "ResolveWindow", resources_pb2.ResolveWindowRequest(limit=20)))],
        ["agent -> capabilities.Decide", "only people approve effects", outcome(lambda: invoke(
            links.agent_to_broker, "capabilities", "Decide"))],
        ["agent -> compiler.Compile", "proposals go through the host", outcome(lambda: invoke(
            links.agent_to_compiler, "compiler", "Compile", compiler_pb2.CompileRequest()))],
        ["agent -> host.Subscribe", "the surface stream is the person's", outcome(lambda: next(iter(
            agent_subscribe(host_pb2.SubscribeRequest(actor=person, session_id=session_id), timeout=5))))],
    ]
    print(table(forbidden, ["call", "why", "outcome"]))
    return forbidden
