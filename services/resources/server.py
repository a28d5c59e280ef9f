"""gRPC servicer of the Resource Gateway (contract: proto/tessera/resources/v1/)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from functools import partial

from services.resources.capability import Capability
from services.resources.gateway import COLUMN_ROLES, COLUMN_TYPES, Gateway, Window, WindowAsk
from services.resources.wiring import ResourcesParts
from shared.data.analysis_draft import DRAFT_SCHEMA_JSON, DRAFT_SCHEMA_SHA256, DRAFT_SCHEMA_VERSION
from shared.rpc.encoded_replies import EncodedReply, answers_encoded, length_delimited
from shared.rpc.errors import status_of
from shared.rpc.refusals import Exhausted, Refusal
from tessera.common.v1 import common_pb2
from tessera.resources.v1 import resources_pb2, resources_pb2_grpc

logger = logging.getLogger("tessera.resources")
# What one ResolveWindows reply carries at most: a gRPC client receives 4 MiB by default. The windows past it are
# refused as WINDOWS_REPLY_FULL (asked again in another call); the first window always goes, so each call helps.
MAX_WINDOWS_REPLY_BYTES = 3 * 1024 * 1024
_EXPOSURE = {"never-to-model": resources_pb2.FIELD_EXPOSURE_NEVER_TO_MODEL,
             "aggregate-only": resources_pb2.FIELD_EXPOSURE_AGGREGATE_ONLY,
             "bounded-values": resources_pb2.FIELD_EXPOSURE_BOUNDED_VALUES,
             "filter-only": resources_pb2.FIELD_EXPOSURE_FILTER_ONLY}
_KIND = {"many_to_one": resources_pb2.RELATIONSHIP_KIND_MANY_TO_ONE,
         "one_to_many": resources_pb2.RELATIONSHIP_KIND_ONE_TO_MANY,
         "one_to_one": resources_pb2.RELATIONSHIP_KIND_ONE_TO_ONE}
_PROBES = {resources_pb2.PROBE_KIND_VALUE_DOMAIN: "value-domain",
           resources_pb2.PROBE_KIND_FIELD_PROFILE: "field-profile",
           resources_pb2.PROBE_KIND_TIME_BOUNDS: "time-bounds",
           resources_pb2.PROBE_KIND_JOIN_COVERAGE: "join-coverage",
           resources_pb2.PROBE_KIND_VALUE_MATCH: "value-match"}


def _window_reply(window: Window) -> EncodedReply:
    """ResolveWindowResponse in its wire form: the fields before `rows` (5), the encoded rows, then `total_rows`
    (6), in field order as the message itself would serialise; asked as JSON, the message with `rows_json`."""
    result = window.result
    head = resources_pb2.ResolveWindowResponse(
        resource_id=result.resource_id, version_id=result.version_id, offset=window.offset,
        columns=[common_pb2.ColumnDescriptor(column_id=c.id, label=c.label, type=COLUMN_TYPES[c.type],
                                             role=COLUMN_ROLES[c.role], semantic_id=c.semantic_id)
                 for c in window.columns])
    if window.as_json:
        head.total_rows, head.rows_json = len(result.rows), window.encoded_rows
        return EncodedReply(head.SerializeToString())
    tail = resources_pb2.ResolveWindowResponse(total_rows=len(result.rows))
    return EncodedReply(head.SerializeToString() + window.encoded_rows + tail.SerializeToString())


def _outcome_field(outcome: Window | Refusal) -> bytes:
    """One element of ResolveWindowsResponse.windows (field 1) in wire form: the window as ResolveWindow answers it
    (WindowOutcome.window, field 1), or its refusal (WindowOutcome.refused)."""
    if isinstance(outcome, Refusal):
        refused = resources_pb2.WindowOutcome(refused=resources_pb2.WindowRefusal(
            code=status_of(outcome).code.value[0], reason=outcome.reason, message=outcome.message))
        return length_delimited(1, refused.SerializeToString())
    return length_delimited(1, length_delimited(1, _window_reply(outcome).data))


def _asked(gateway: Gateway, request: resources_pb2.ResolveWindowRequest) -> WindowAsk | Refusal:
    """The window a request asks for, under its grant's checked claims; or the grant's refusal."""
    try:
        return WindowAsk(gateway.open_grant(request.grant), request.offset, request.limit, list(request.column_ids),
                         request.rows_as_json)
    except Refusal as refusal:
        return refusal


def windows_reply(replies: list[Window | Refusal], budget: int = MAX_WINDOWS_REPLY_BYTES) -> EncodedReply:
    """ResolveWindowsResponse in wire form: each window or refusal in order, until the reply would pass `budget`
    bytes; from there on each window is refused as WINDOWS_REPLY_FULL (asked again in another call). A first window
    larger than the whole budget is refused as WINDOW_OVER_REPLY_BOUND: no call could carry it."""
    full = _outcome_field(Exhausted("WINDOWS_REPLY_FULL",
                                    "this reply has no room for this window: ask for it in another call"))
    fields: list[bytes] = []
    size = 0
    for reply in replies:
        field = full if fields and fields[-1] is full else _outcome_field(reply)  # after one full, all are
        if field is not full and size + len(field) > budget:
            field = full if fields else _outcome_field(Exhausted(
                "WINDOW_OVER_REPLY_BOUND",
                f"this window is over the {budget:,}-byte bound of a reply: ask for fewer rows or columns"))
        fields.append(field)
        size += len(field)
    return EncodedReply(b"".join(fields))


class ResourceGatewayService(resources_pb2_grpc.ResourceGatewayServiceServicer):
    def __init__(self, parts: ResourcesParts) -> None:
        self._info = parts.info
        self._gateway = parts.gateway
        self._pool = parts.pool

    async def _run(self, function, *args):
        """Warehouse and store work runs on the bounded pool, never on the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(function, *args))

    def _capability(self, token: str, session_id: str) -> Capability:
        return self._gateway.open_capability(token, session_id)

    def _entities(self, found) -> list[resources_pb2.Entity]:
        names = {entity.name for entity, _, _ in found}
        return [resources_pb2.Entity(
            entity_id=entity.id, label=entity.spec.label, description=entity.spec.description,
            synonyms=entity.spec.synonyms,
            fields=[resources_pb2.Field(field_id=f.id, label=f.spec.label, description=f.spec.description,
                                        type=COLUMN_TYPES[f.spec.type], exposure=_EXPOSURE[f.spec.exposure],
                                        synonyms=f.spec.synonyms, sensitivity=f.spec.sensitivity,
                                        event_verbs=f.spec.event_verbs) for f in fields],
            metrics=[resources_pb2.Metric(metric_id=m.id, label=m.spec.label, description=m.spec.description,
                                          type=COLUMN_TYPES[m.spec.type], synonyms=m.spec.synonyms,
                                          better=m.spec.better)
                     for m in metrics],
            relationships=[resources_pb2.Relationship(
                relationship_id=r.id, kind=_KIND[r.spec.kind], label=r.spec.label,
                from_entity_id=self._gateway.catalog.entities[r.spec.from_entity].id,
                to_entity_id=self._gateway.catalog.entities[r.spec.to_entity].id)
                for r in self._gateway.relationships(entity, names)],
        ) for entity, fields, metrics in found]

    async def GetInfo(self, request, context):
        counts = self._gateway.results.counts()
        return resources_pb2.GetInfoResponse(
            info=self._info, catalog_fingerprint=self._gateway.catalog.fingerprint,
            result_cache=resources_pb2.ResultCacheCounts(hits=counts.hits, misses=counts.misses,
                                                         bypassed=counts.bypassed))

    async def Outline(self, request, context):
        return self._gateway.outline()

    async def InspectContext(self, request, context):
        session_id, turn_id = request.turn.session_id, request.turn.turn_id
        gateway = self._gateway
        probes, analyses = await self._run(gateway.remaining, session_id, turn_id)
        session_analyses = await self._run(gateway.budget.session_remaining, session_id)
        settings = gateway.settings
        return resources_pb2.InspectContextResponse(
            dataset_label=gateway.model.dataset.label, catalog_fingerprint=gateway.catalog.fingerprint,
            semantic_model_version=str(gateway.model.version), probes_remaining=probes,
            capability_token=gateway.fresh_token(session_id), draft_schema_json=DRAFT_SCHEMA_JSON,
            draft_schema_version=DRAFT_SCHEMA_VERSION, draft_schema_sha256=DRAFT_SCHEMA_SHA256,
            analyses_remaining=analyses, analyses_per_turn=settings.analyses_per_turn,
            probes_per_turn=settings.probes_per_turn, max_result_rows=settings.row_cap,
            session_analyses_remaining=session_analyses, analyses_per_session=settings.analyses_per_session,
            time_anchor=gateway.model.time_anchor)

    async def InspectCatalog(self, request, context):
        session_id = request.turn.session_id
        capability = self._capability(request.capability_token, session_id)
        found, token = self._gateway.inspect(request.question, capability)
        return resources_pb2.InspectCatalogResponse(catalog_fingerprint=self._gateway.catalog.fingerprint,
                                                    entities=self._entities(found), capability_token=token)

    async def Describe(self, request, context):
        session_id = request.turn.session_id
        capability = self._capability(request.capability_token, session_id)
        found, token = self._gateway.describe(list(request.entity_ids), capability)
        return resources_pb2.DescribeResponse(entities=self._entities(found), capability_token=token)

    async def Probe(self, request, context):
        session_id, turn_id = request.turn.session_id, request.turn.turn_id
        capability = self._capability(request.capability_token, session_id)
        kind = _PROBES[request.kind]  # one of ProbeKind's values: the contract's rule (resources.proto)
        target = request.relationship_id if kind == "join-coverage" else request.field_id
        outcome, remaining = await self._run(self._gateway.probe, session_id, turn_id, kind, target, capability,
                                             request.text)
        reply = resources_pb2.ProbeResponse(kind=request.kind, probes_remaining=remaining)
        if kind == "value-match":
            matches, truncated, token = outcome
            entities = self._gateway.catalog.entities
            reply.value_matches.matches.extend(
                resources_pb2.ValueMatch(field_id=m.field.id, entity_id=entities[m.field.entity].id,
                                         value=m.value, matched_text=m.matched_text,
                                         approximate=m.approximate) for m in matches)
            reply.value_matches.truncated = truncated
            reply.capability_token = token
        elif kind == "value-domain":
            reply.value_domain.values.extend(outcome[0])
            reply.value_domain.truncated = outcome[1]
        elif kind == "field-profile":
            reply.field_profile.row_count, reply.field_profile.null_count, reply.field_profile.distinct_count = outcome
        elif kind == "time-bounds":
            for stamp, value in zip((reply.time_bounds.earliest, reply.time_bounds.latest), outcome, strict=True):
                if value is not None:
                    stamp.FromDatetime(dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC))
        else:
            total, matched = outcome
            reply.join_coverage.from_rows, reply.join_coverage.matched_rows = total, matched
            reply.join_coverage.coverage = matched / total if total else 0.0
        return reply

    async def Analyze(self, request, context):
        session_id, turn_id = request.turn.session_id, request.turn.turn_id
        capability = self._capability(request.capability_token, session_id)
        analysis = await self._run(self._gateway.analyze, session_id, turn_id, request.draft_json, capability)
        return resources_pb2.AnalyzeResponse(descriptor=analysis.descriptor, evidence=analysis.evidence,
                                             offer=analysis.offer, analyses_remaining=analysis.analyses_remaining,
                                             session_analyses_remaining=analysis.session_analyses_remaining)

    @answers_encoded
    async def ResolveWindow(self, request, context):
        """Answered already serialised: the rows are bytes encoded once per result (window_rows.py)."""
        (window,) = await self._read_windows([_asked(self._gateway, request)])
        if isinstance(window, Refusal):
            raise window
        return _window_reply(window)

    @answers_encoded
    async def ResolveWindows(self, request, context):
        """Each window as ResolveWindow answers it, or its refusal, in one reply (read as _read_windows reads)."""
        replies = await self._read_windows([_asked(self._gateway, item) for item in request.windows])
        for index, refusal in enumerate(replies):
            if isinstance(refusal, Refusal):  # what the access line says of a refused ResolveWindow
                logger.warning("window %d of %d refused: %s", index, len(replies), refusal)
        return windows_reply(replies)

    async def _read_windows(self, asked: list[WindowAsk | Refusal]) -> list[Window | Refusal]:
        """Each asked window, or its refusal. Windows whose revocation answer, result and rows this replica holds in
        memory are served on the event loop (their grants' signatures, checked already, are the one cost: going to
        the pool and back took longer than a window itself); the rest go off it together, one revocation query for
        them all."""
        readable = [ask for ask in asked if isinstance(ask, WindowAsk)]
        outcomes = self._gateway.windows(readable, from_memory=True)
        pending = [ask for ask, outcome in zip(readable, outcomes, strict=True) if outcome is None]
        if pending:
            read = iter(await self._run(self._gateway.windows, pending))
            outcomes = [next(read) if outcome is None else outcome for outcome in outcomes]
        answered = iter(outcomes)
        return [next(answered) if isinstance(ask, WindowAsk) else ask for ask in asked]

    async def RevokeGrants(self, request, context):
        return resources_pb2.RevokeGrantsResponse(revoked=await self._run(self._gateway.revoke, list(request.grants)))

