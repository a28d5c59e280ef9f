"""The six model tools' handlers (§1, §9), which reach resources and the host (contracts.py: what they promise).

The model sees only what each tool's output schema allows: semantic ids,
labels, descriptors, counts — never SQL, physical names, rows, tokens or
offers. The turn keeps the capability token and the resource offers itself.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc

from services.agent.contracts import CONTRACTS, LIMITS, MAX_REFUSALS, MAX_REPAIRS, PROBE_KINDS, TOOL_NAMES, TURN_ORDER
from services.agent.tool_bridge import Tool
from shared.data.analysis_draft import DRAFT_SCHEMA_SHA256, DRAFT_SCHEMA_VERSION
from shared.rpc.errors import SERVICE_NAMES, error_details
from shared.rpc.field_rules import stated
from shared.rpc.next_steps import NEXT_STEPS, metadata
from shared.rpc.refusals import Exhausted, Invalid
from shared.safety.screen import screen
from shared.tools.tool_results import ToolResult
from shared.ui.slice import MAX_PROPOSAL_BYTES
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tessera.resources.v1 import resources_pb2

MAX_RECORDED_READS = stated(capabilities_pb2.RecordReadsRequest, "reads", "max_items")  # the broker's bound

_TYPES = {v: k.removeprefix("COLUMN_TYPE_").lower() for k, v in common_pb2.ColumnType.items()}
_ROLES = {v: k.removeprefix("COLUMN_ROLE_").lower() for k, v in common_pb2.ColumnRole.items()}
_EXPOSURES = {v: k.removeprefix("FIELD_EXPOSURE_").lower().replace("_", "-")
              for k, v in resources_pb2.FieldExposure.items()}
# The probe kinds the contract names, as the gateway's enum spells them ("value-match" → PROBE_KIND_VALUE_MATCH).
_PROBES = {kind: resources_pb2.ProbeKind.Value(f"PROBE_KIND_{kind.upper().replace('-', '_')}") for kind in PROBE_KINDS}
# Which peer each tool needs; a peer that is not serving makes its tools unavailable for the turn.
TOOL_PEERS = {"inspect_catalog": "resources", "describe_data": "resources", "probe_data": "resources",
              "run_analysis": "resources", "present_ui": "host"}
# The service each tool's handler calls: named to the model when it does not answer.
_CALLS = {**TOOL_PEERS, "inspect_current_context": "resources"}
PeerReadiness = Callable[[], Awaitable[dict[str, str]]]


@dataclass
class TurnState:
    """What the agent keeps for one turn and never shows the model."""

    actor: common_pb2.ActorAssertion
    session_id: str
    turn_id: str
    surface_id: str
    base_revision_id: str
    capability_token: str = ""
    offers: list = field(default_factory=list)
    slice_hash: str = ""
    proposals: int = 0
    revisions: list[str] = field(default_factory=list)
    commit_events: list = field(default_factory=list)
    needs_repair: bool = False  # the last proposal had diagnostics the model can correct
    repairs: int = 0
    gave_up: bool = False
    degraded: dict[str, str] = field(default_factory=dict)  # tool → why it is unavailable
    new_notices: list[tuple[str, str]] = field(default_factory=list)  # not yet streamed
    external_tools: list[str] = field(default_factory=list)  # broker tools offered this turn (server.tool)
    tainted: bool = False  # an external read reached the model
    flagged: bool = False  # ... and it held instruction-like text
    awaiting_approval: list[str] = field(default_factory=list)  # approval ids of mutations asked for
    refusals: int = 0  # calls refused this turn: at MAX_REFUSALS the turn ends
    last_refusal: str = ""  # the latest, in words, for the person

    def mark_unavailable(self, tool: str, reason: str) -> None:
        if tool not in self.degraded:
            self.degraded[tool] = reason
            self.new_notices.append((tool, reason))

    @property
    def turn_ref(self) -> resources_pb2.TurnRef:
        return resources_pb2.TurnRef(session_id=self.session_id, turn_id=self.turn_id)


def _field(f) -> dict:
    shown = {"id": f.field_id, "label": f.label, "description": f.description, "type": _TYPES[f.type],
             "exposure": _EXPOSURES[f.exposure], "synonyms": list(f.synonyms)}
    return shown | ({"event_verbs": list(f.event_verbs)} if f.event_verbs else {})


def _entities(entities) -> list[dict]:
    return [{
        "id": e.entity_id, "label": e.label, "description": e.description, "synonyms": list(e.synonyms),
        "fields": [_field(f) for f in e.fields],
        "metrics": [{"id": m.metric_id, "label": m.label, "description": m.description, "type": _TYPES[m.type],
                     "synonyms": list(m.synonyms), **({"better": "lower"} if m.better == "lower" else {})}
                    for m in e.metrics],
        "relationships": [{"id": r.relationship_id, "label": r.label,
                           "kind": resources_pb2.RelationshipKind.Name(r.kind).removeprefix(
                               "RELATIONSHIP_KIND_").lower(), "from": r.from_entity_id, "to": r.to_entity_id}
                          for r in e.relationships],
    } for e in entities]


def model_message(result: ToolResult) -> str:
    """A tool result exactly as any model receives it."""
    return json.dumps(result.content if result.ok else result.refusal())


def _diagnostics(diagnostics) -> list[dict]:
    """Findings on a proposal as a model reads them: pointers into its arguments, and what to do next."""
    return [{"code": d.code, "pointer": f"/proposal{d.location}", "message": d.message, "next_step": d.hint,
             "model_correctable": d.model_correctable} for d in diagnostics]


class TurnTools:
    """The six tools' handlers for one turn, bound to its state and to the resources/host/capabilities stubs."""

    def __init__(self, state: TurnState, resources, host, peers_ready: PeerReadiness, capabilities=None) -> None:
        self.state, self.resources, self.host = state, resources, host
        self.peers_ready, self.capabilities = peers_ready, capabilities

    async def record_reads(self, reads: list[tuple[str, str, str]]) -> None:
        """Probe values go on the run's record at the broker, so an approval card shows them too."""
        if self.capabilities is None:
            return
        try:
            await self.capabilities.RecordReads(capabilities_pb2.RecordReadsRequest(
                actor=self.state.actor, session_id=self.state.session_id, turn_id=self.state.turn_id,
                reads=[capabilities_pb2.ExternalRead(source=s, ref=r, text=t)
                       for s, r, t in reads[:MAX_RECORDED_READS]]), timeout=10)
        except grpc.aio.AioRpcError as exc:  # the answer goes on; the gap is reported, not hidden
            self.state.mark_unavailable("run record", "probe values were not recorded at the broker: "
                                                      + error_details(exc, "capabilities").message)

    async def screened_values(self, values: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
        """Warehouse text (value, field id) as the model may see it: screened, recorded at the broker, the
        run tainted (and flagged on a match). The screened texts and the rules that matched."""
        screened = [screen(value, "probe_data", f"{field_id} value {i + 1}")
                    for i, (value, field_id) in enumerate(values)]
        flags = sorted({hit.rule for item in screened for hit in item.matches})
        self.state.tainted = True
        self.state.flagged |= bool(flags)
        if values:
            await self.record_reads([(item.source, item.ref, value)
                                     for item, (value, _) in zip(screened, values, strict=True)])
        return [item.text for item in screened], flags

    async def inspect_current_context(self, arguments: dict) -> dict:
        readiness = await self.peers_ready()
        for tool, peer in TOOL_PEERS.items():
            if readiness.get(peer) != "SERVING":
                self.state.mark_unavailable(tool, peer_not_ready(peer, readiness.get(peer, "UNKNOWN")))
        state = self.state
        context = {"dataset": "", "limits": dict(LIMITS), "budgets": {
            "repairs_per_turn": MAX_REPAIRS, "refusals_per_turn": MAX_REFUSALS,
            "refusals_remaining": max(0, MAX_REFUSALS - state.refusals)}}
        if readiness.get("resources") == "SERVING":
            reply = await self.resources.InspectContext(resources_pb2.InspectContextRequest(turn=state.turn_ref),
                                                        timeout=30)
            state.capability_token = reply.capability_token
            if reply.draft_schema_sha256 != DRAFT_SCHEMA_SHA256:  # a gateway of another version: drafts would fail
                # (the version can match while the text differs: the hash says which schema exactly)
                state.mark_unavailable("run_analysis", f"the gateway enforces draft schema "
                                                       f"v{reply.draft_schema_version} "
                                                       f"(sha256 {reply.draft_schema_sha256[:12]}…), not the one "
                                                       f"advertised here (v{DRAFT_SCHEMA_VERSION}, sha256 "
                                                       f"{DRAFT_SCHEMA_SHA256[:12]}…): the agent and the gateway "
                                                       "are of different versions")
            context["dataset"], context["catalog_fingerprint"] = reply.dataset_label, reply.catalog_fingerprint
            context["time_anchor"] = reply.time_anchor
            context["draft_schema"] = {"version": reply.draft_schema_version, "sha256": reply.draft_schema_sha256}
            context["limits"]["max_result_rows"] = reply.max_result_rows
            context["budgets"].update(probes_per_turn=reply.probes_per_turn, probes_remaining=reply.probes_remaining,
                                      analyses_per_turn=reply.analyses_per_turn,
                                      analyses_remaining=reply.analyses_remaining,
                                      analyses_per_session=reply.analyses_per_session,
                                      session_analyses_remaining=reply.session_analyses_remaining)
        return {**context, "tools": [t for t in (*TOOL_NAMES, *state.external_tools) if t not in state.degraded],
                "unavailable": [{"tool": t, "reason": r} for t, r in state.degraded.items()], "turn_order": TURN_ORDER}

    async def inspect_catalog(self, arguments: dict) -> dict:
        reply = await self.resources.InspectCatalog(resources_pb2.InspectCatalogRequest(
            turn=self.state.turn_ref, question=arguments["question"], capability_token=self.state.capability_token),
            timeout=30)
        return self._catalog_slice(reply)

    async def describe_data(self, arguments: dict) -> dict:
        reply = await self.resources.Describe(resources_pb2.DescribeRequest(
            turn=self.state.turn_ref, entity_ids=arguments["entity_ids"], capability_token=self.state.capability_token),
            timeout=30)
        return self._catalog_slice(reply)

    def _catalog_slice(self, reply) -> dict:
        """What the model sees of a catalog reply (the token it carries goes on to the next call)."""
        self.state.capability_token = reply.capability_token
        return {"entities": _entities(reply.entities)}

    async def probe_data(self, arguments: dict) -> dict:
        reply = await self.resources.Probe(resources_pb2.ProbeRequest(
            turn=self.state.turn_ref, kind=_PROBES[arguments["kind"]], field_id=arguments.get("field_id", ""),
            relationship_id=arguments.get("relationship_id", ""), capability_token=self.state.capability_token,
            text=arguments.get("text", "")), timeout=30)
        result = {"kind": arguments["kind"], "probes_remaining": reply.probes_remaining}
        which = reply.WhichOneof("result")
        if which == "value_matches":  # values named by the text, and the scope to filter on them
            self.state.capability_token = reply.capability_token or self.state.capability_token
            matches = list(reply.value_matches.matches)
            texts, flags = await self.screened_values([(m.value, m.field_id) for m in matches])
            result.update(matches=[{"field_id": m.field_id, "entity_id": m.entity_id, "untrusted_value": text,
                                    "matched_text": m.matched_text, "approximate": m.approximate}
                                   for text, m in zip(texts, matches, strict=True)],
                          truncated=reply.value_matches.truncated, flags=flags)
        elif which == "value_domain":  # warehouse text is external text: screened, then untrusted data (§8)
            texts, flags = await self.screened_values([(v, arguments.get("field_id", "")) for v in
                                                  reply.value_domain.values])
            result.update(untrusted_values=texts, truncated=reply.value_domain.truncated, flags=flags)
        elif which == "field_profile":
            p = reply.field_profile
            result.update(row_count=p.row_count, null_count=p.null_count, distinct_count=p.distinct_count)
        elif which == "time_bounds":
            result.update(earliest=reply.time_bounds.earliest.ToJsonString(),
                          latest=reply.time_bounds.latest.ToJsonString())
        elif which == "join_coverage":
            result.update(coverage=round(reply.join_coverage.coverage, 4))
        return result

    async def run_analysis(self, arguments: dict) -> dict:
        reply = await self.resources.Analyze(resources_pb2.AnalyzeRequest(
            turn=self.state.turn_ref, draft_json=json.dumps(arguments["draft"]),
            capability_token=self.state.capability_token), timeout=120)
        self.state.offers.append(reply.offer)
        d = reply.descriptor
        return {"resource": {"rows": d.row_count, "truncated": d.truncated,
                             "columns": [{"id": c.column_id, "label": c.label, "type": _TYPES[c.type],
                                          "role": _ROLES[c.role]} for c in d.columns]},
                "number": len(self.state.offers), "analyses_remaining": reply.analyses_remaining}

    async def present_ui(self, arguments: dict) -> dict:
        if "proposal" not in arguments:
            frozen = await self.host.FreezeSlice(host_pb2.FreezeSliceRequest(turn_id=self.state.turn_id,
                                                                        resource_offers=self.state.offers), timeout=30)
            self.state.slice_hash = frozen.slice_hash
            return {"slice": json.loads(frozen.model_view_json), "schema": json.loads(frozen.present_ui_schema_json)}
        if not self.state.slice_hash:
            return {"outcome": "rejected", "diagnostics": _diagnostics([common_pb2.Diagnostic(
                code="slice.not-frozen", message="call present_ui without a proposal first", model_correctable=True,
                hint=NEXT_STEPS["slice.not-frozen"])])}
        proposal_json = json.dumps(arguments["proposal"])  # ASCII: its length is its size in bytes
        if len(proposal_json) > MAX_PROPOSAL_BYTES:  # the host's bound, told as the proposal's own, before any work
            raise Invalid("PROPOSAL_TOO_LARGE", f"the proposal is {len(proposal_json)} bytes as JSON, over the "
                          f"{MAX_PROPOSAL_BYTES} a proposal may have", metadata("", bound=MAX_PROPOSAL_BYTES))
        if self.state.needs_repair:
            if self.state.repairs >= MAX_REPAIRS:  # refused before any work: the last good surface stays
                self.state.gave_up = True
                raise Exhausted("REPAIR_LIMIT_REACHED",
                                f"the proposal was repaired {MAX_REPAIRS} times; no more proposals this turn",
                                metadata("", bound=MAX_REPAIRS))
            self.state.repairs += 1
        self.state.proposals += 1
        state = self.state
        reply = await self.host.SubmitProposal(host_pb2.SubmitProposalRequest(
            turn_id=state.turn_id, slice_hash=state.slice_hash, proposal_json=proposal_json,
            expected_base_revision_id=(state.revisions[-1] if state.revisions else state.base_revision_id),
            proposal_id=f"{state.turn_id}-{state.proposals}"), timeout=60)
        if reply.revision_id:
            self.state.revisions.append(reply.revision_id)
            self.state.commit_events.append(reply)
        self.state.needs_repair = not reply.revision_id or any(
            d.model_correctable and d.severity == common_pb2.SEVERITY_ERROR for d in reply.diagnostics)
        if self.state.needs_repair and self.state.repairs >= MAX_REPAIRS:
            self.state.gave_up = True  # visible now, whether or not the model tries again
        result = {"outcome": host_pb2.ProposalOutcome.Name(reply.outcome).removeprefix("PROPOSAL_OUTCOME_").lower(),
                  "revision": reply.revision_id, "diagnostics": _diagnostics(reply.diagnostics)}
        if self.state.needs_repair:
            result["repairs_left"] = MAX_REPAIRS - self.state.repairs
        return result


def build_tools(state: TurnState, resources, host, peers_ready: PeerReadiness, capabilities=None) -> list[Tool]:
    """The six tools of one turn: each contract with its handler."""
    handlers = TurnTools(state, resources, host, peers_ready, capabilities)
    return [Tool(contract, getattr(handlers, name), _CALLS.get(name, "")) for name, contract in CONTRACTS.items()]


def peer_not_ready(peer: str, status: str) -> str:
    """Why a tool is unavailable this turn, in words a person may read (its health status is for the log)."""
    who = SERVICE_NAMES.get(peer, f"Tessera's {peer} service")
    if status == "NOT_SERVING":
        return f"{who} is not ready right now (it may be starting, or waiting for its database)"
    return f"{who} is not answering right now (it may be restarting)"
