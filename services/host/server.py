"""gRPC servicer of the HostServer (contract: proto/tessera/host/v1/).

The host alone publishes committed state. Proposals are compiled by the
compiler service against the slice the host froze, then committed in one
transaction (compare-and-swap on the branch head); only then are their A2UI
messages appended to the surface journal that subscribers read.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import secrets
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import grpc
from google.protobuf.json_format import MessageToJson

from services.host.config import HostSettings
from services.host.store import HostStore, RevisionConflict, Session, engine_for, migrate
from shared import tokens
from shared.actors import Actor, ActorVerifier
from shared.bounded_json import BoundedJsonError, Limits, canonical, parse
from shared.certs import CredentialError, load_signing_key, load_verify_key
from shared.channels import aio_channel
from shared.config import peer_target
from shared.db import unreachable
from shared.errors import TesseraError, error_details
from shared.runtime import (
    DependencyUnavailable,
    Registration,
    ServiceContext,
    StartupError,
    registration_for,
    service_info,
)
from shared.schema_check import compile_check
from shared.ui.contracts import ContractError, load_catalog
from shared.ui.slice import (
    MAX_PROPOSAL_BYTES,
    ActionOffer,
    ResourceOffer,
    SliceRequest,
    freeze_slice,
    model_view,
)
from tessera.capabilities.v1 import capabilities_pb2, capabilities_pb2_grpc
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2, compiler_pb2_grpc
from tessera.host.v1 import host_pb2, host_pb2_grpc
from tessera.resources.v1 import resources_pb2, resources_pb2_grpc

logger = logging.getLogger("tessera.host")
OFFER_MAX_LIFETIME = dt.timedelta(hours=1)
GRANT_LIFETIME = dt.timedelta(minutes=5)  # ≤ 15 minutes (§ grants); a window asks for a fresh one
WINDOW_MAX_ROWS = 1_000
TAIL_EVENTS = 1_000
PLACEMENTS = {"main": None}  # placement → allowed component names (None: every offerable component)
MAX_TEXT = 4_000
_A2UI_KINDS = {"createSurface": host_pb2.A2UI_MESSAGE_KIND_CREATE_SURFACE,
               "updateComponents": host_pb2.A2UI_MESSAGE_KIND_UPDATE_COMPONENTS,
               "updateDataModel": host_pb2.A2UI_MESSAGE_KIND_UPDATE_DATA_MODEL,
               "deleteSurface": host_pb2.A2UI_MESSAGE_KIND_DELETE_SURFACE}
_OUTCOMES = {compiler_pb2.COMPILE_OUTCOME_COMPILED: host_pb2.PROPOSAL_OUTCOME_COMMITTED,
             compiler_pb2.COMPILE_OUTCOME_PARTIAL: host_pb2.PROPOSAL_OUTCOME_COMMITTED_PARTIAL}


def _refuse(code: grpc.StatusCode, reason: str, message: str, **metadata: str) -> TesseraError:
    return TesseraError(code, reason, message, metadata)


def _envelope_builder(surface_id: str, payload_field: str, payload, payload_json: str):
    """A journal entry: the envelope is built once its revision and position are known."""
    payload_hash = hashlib.sha256(payload_json.encode()).hexdigest()

    def build(revision_id: str, epoch: int, sequence: int) -> tuple[str, bytes]:
        envelope = host_pb2.SurfaceEnvelope(surface_id=surface_id, epoch=epoch, sequence=sequence,
                                            revision_id=revision_id, payload_hash=payload_hash)
        envelope.published_at.GetCurrentTime()
        getattr(envelope, payload_field).CopyFrom(payload)
        return payload_hash, envelope.SerializeToString()

    return build


class HostService(host_pb2_grpc.HostServiceServicer):
    def __init__(self, context: ServiceContext, store: HostStore, pool: ThreadPoolExecutor) -> None:
        settings: HostSettings = context.settings
        self._info = service_info(context)
        self._store = store
        self._pool = pool
        self._catalog = load_catalog()
        self._actors = ActorVerifier.from_cert_dir(settings.cert_dir)
        self._offer_key = load_verify_key(settings.resources_verify_key)
        self._compiler = compiler_pb2_grpc.CompilerServiceStub(
            aio_channel(peer_target("compiler"), context.credentials, "compiler"))
        self._resources = resources_pb2_grpc.ResourceGatewayServiceStub(
            aio_channel(peer_target("resources"), context.credentials, "resources"))
        self._broker = capabilities_pb2_grpc.CapabilityBrokerServiceStub(
            aio_channel(peer_target("capabilities"), context.credentials, "capabilities"))
        self._grant_key = load_signing_key(settings.signing_key)
        self._retention = settings.journal_retention
        self._changed: dict[str, asyncio.Event] = {}
        # Recent journal entries of surfaces that have subscribers: (epoch, sequence, response).
        self._tails: dict[str, deque] = {}
        self._tail_locks: dict[str, asyncio.Lock] = {}
        self._viewers: dict[str, int] = {}

    async def _db(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(function, *args))

    def _actor(self, assertion: common_pb2.ActorAssertion) -> Actor:
        try:
            return self._actors.verify(assertion)
        except tokens.TokenError as exc:
            raise _refuse(grpc.StatusCode.UNAUTHENTICATED, exc.reason, str(exc)) from None

    async def _own_session(self, assertion, session_id: str) -> Session:
        actor = self._actor(assertion)
        session = await self._db(self._store.session, session_id)
        if session is None:
            raise _refuse(grpc.StatusCode.NOT_FOUND, "SESSION_UNKNOWN", f"no session {session_id!r}")
        if (session.actor_id, session.tenant_id) != (actor.actor_id, actor.tenant_id):
            raise _refuse(grpc.StatusCode.PERMISSION_DENIED, "SESSION_NOT_YOURS",
                          "the session belongs to another actor")
        return session

    async def _notify(self, surface_id: str, epoch: int, last_sequence: int, count: int) -> None:
        """New journal entries: read them once into the surface's tail, then wake its subscribers.

        Subscribers read the tail, not the database, so a surface with many viewers costs one
        read per publish instead of one per viewer. Past the retention limit the journal is
        compacted into a new epoch that starts with a snapshot.
        """
        lock = self._tail_locks.setdefault(surface_id, asyncio.Lock())
        tail = self._tails.get(surface_id)
        async with lock:
            if tail is not None:
                if tail and tail[-1][0] != epoch:
                    tail.clear()
                after = tail[-1][1] if tail else last_sequence - count
                for data in await self._db(self._store.events_after, surface_id, epoch, after):
                    envelope = host_pb2.SurfaceEnvelope.FromString(data)
                    tail.append((envelope.epoch, envelope.sequence, host_pb2.SubscribeResponse(envelope=envelope)))
            if last_sequence >= self._retention:
                await self._db(self._store.compact, surface_id, self._retention)
                if tail is not None:
                    tail.clear()
        event = self._changed.pop(surface_id, None)
        if event is not None:
            event.set()

    # --- RPCs -------------------------------------------------------------

    async def GetInfo(self, request, context):
        return host_pb2.GetInfoResponse(info=self._info)

    async def OpenSession(self, request, context):
        actor = self._actor(request.actor)
        if not 1 <= len(request.request_id) <= 128:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_ID_REQUIRED", "request_id: 1-128 characters")
        session, _ = await self._db(self._store.open_session, actor.actor_id, actor.tenant_id, request.request_id)
        reply = host_pb2.OpenSessionResponse(session_id=session.session_id, surface_id=session.surface_id)
        reply.opened_at.FromSeconds(int(session.created_at))
        return reply

    async def BeginTurn(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        if not 1 <= len(request.request_id) <= 128 or not request.question or len(request.question) > MAX_TEXT:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "TURN_INVALID",
                          f"request_id (1-128) and question (1-{MAX_TEXT} characters) are required")
        turn = await self._db(self._store.begin_turn, session.session_id, request.question, request.request_id)
        head = await self._db(self._store.head, session.surface_id)
        return host_pb2.BeginTurnResponse(turn_id=turn.turn_id, surface_id=session.surface_id,
                                          base_revision_id=head or "")

    async def _turn_and_session(self, turn_id: str):
        turn = await self._db(self._store.turn, turn_id)
        if turn is None:
            raise _refuse(grpc.StatusCode.NOT_FOUND, "TURN_UNKNOWN", f"no turn {turn_id!r}")
        return turn, await self._db(self._store.session, turn.session_id)

    def _accept_offers(self, turn, offers) -> tuple[list[ResourceOffer], list, list[common_pb2.Diagnostic]]:
        accepted, evidence, refused = [], [], []
        for index, token in enumerate(offers):
            try:
                claims = tokens.verify(self._offer_key, tokens.PURPOSE_RESOURCE_OFFER, token,
                                       common_pb2.ResourceOfferClaims)
                tokens.check_binding(claims.binding, "host", OFFER_MAX_LIFETIME)
                if (claims.session_id, claims.turn_id) != (turn.session_id, turn.turn_id):
                    raise tokens.TokenError("TOKEN_OTHER_TURN", "the offer was made for another turn")
            except tokens.TokenError as exc:
                refused.append(common_pb2.Diagnostic(
                    phase="slice", code="slice.offer-refused", severity=common_pb2.SEVERITY_WARNING,
                    recoverable=True, model_correctable=False, location=f"/resource_offers/{index}",
                    message=f"{exc.reason.replace('TOKEN_', '').lower().replace('_', '-')}: {exc}"))
                continue
            offer_hash = hashlib.sha256(token.SerializeToString(deterministic=True)).hexdigest()
            accepted.append(ResourceOffer(claims.descriptor, offer_hash))
            evidence.append(claims.evidence)
        return accepted, evidence, refused

    def _recheck_offers(self, turn, frozen, offers) -> None:
        """At commit, every offer of the slice must still verify (they expire)."""
        _, _, refused = self._accept_offers(turn, offers)
        if refused or len(offers) != len(frozen.resources):
            raise _refuse(grpc.StatusCode.FAILED_PRECONDITION, "OFFER_EXPIRED",
                          "a resource offer of this slice no longer verifies; run the analysis again and "
                          "freeze a new slice")

    async def FreezeSlice(self, request, context):
        turn, session = await self._turn_and_session(request.turn_id)
        placement = request.placement or "main"
        if placement not in PLACEMENTS:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "PLACEMENT_UNKNOWN",
                          f"placement must be one of {', '.join(PLACEMENTS)}")
        resources, evidence, refused = self._accept_offers(turn, request.resource_offers)
        actions, unavailable = await self._offered_actions(session)
        allowed = PLACEMENTS[placement] or list(self._catalog.contracts)
        frozen = freeze_slice(self._catalog, SliceRequest(components=allowed, resources=resources,
                                                          evidence=evidence, actions=actions))
        refused += unavailable
        schema = await _peer("compiler", self._compiler.PresentUiSchema(
            compiler_pb2.PresentUiSchemaRequest(slice=frozen), timeout=30))
        accepted = host_pb2.FreezeSliceRequest(resource_offers=[
            t for t in request.resource_offers
            if hashlib.sha256(t.SerializeToString(deterministic=True)).hexdigest() in
            {r.offer_hash for r in frozen.resources}])
        await self._db(self._store.save_slice, turn.turn_id, frozen.slice_id, frozen.slice_hash,
                       frozen.SerializeToString(deterministic=True), accepted.SerializeToString())
        return host_pb2.FreezeSliceResponse(slice_id=frozen.slice_id, slice_hash=frozen.slice_hash,
                                            model_view_json=canonical(model_view(self._catalog, frozen)),
                                            present_ui_schema_json=schema.input_schema_json, diagnostics=refused)

    async def _offered_actions(self, session: Session) -> tuple[list[ActionOffer], list[common_pb2.Diagnostic]]:
        """The broker's action contracts for this person; without the broker the slice simply offers none."""
        try:
            listed = await self._broker.ListActions(capabilities_pb2.ListActionsRequest(
                actor_id=session.actor_id, tenant_id=session.tenant_id), timeout=5)
        except grpc.aio.AioRpcError as exc:
            return [], [common_pb2.Diagnostic(
                phase="slice", code="slice.actions-unavailable", severity=common_pb2.SEVERITY_WARNING,
                recoverable=True, model_correctable=False,
                message=f"the capability broker did not list its actions ({exc.code().name}); none are offered")]
        return [ActionOffer(a.action_id, json.loads(a.input_schema_json), a.effect) for a in listed.actions], []

    async def SubmitProposal(self, request, context):
        if len(request.proposal_json.encode("utf-8", "surrogatepass")) > MAX_PROPOSAL_BYTES:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "PROPOSAL_TOO_LARGE",
                          f"a proposal is at most {MAX_PROPOSAL_BYTES} bytes")
        if not 1 <= len(request.proposal_id) <= 128:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "PROPOSAL_ID_REQUIRED", "proposal_id: 1-128 characters")
        turn, session = await self._turn_and_session(request.turn_id)
        stored = await self._db(self._store.load_slice, turn.turn_id, request.slice_hash)
        if stored is None:
            raise _refuse(grpc.StatusCode.FAILED_PRECONDITION, "SLICE_UNKNOWN",
                          "no slice with this hash was frozen for this turn")
        request_hash = hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()
        replay = await self._replay(turn.turn_id, request.proposal_id, request_hash, session)
        if replay is not None:
            return replay
        frozen = compiler_pb2.CatalogSlice.FromString(stored[0])
        self._recheck_offers(turn, frozen, host_pb2.FreezeSliceRequest.FromString(stored[1]).resource_offers)
        base_id = request.expected_base_revision_id or ""
        base = await self._db(self._store.revision, base_id) if base_id else None
        if base_id and (base is None or base.surface_id != session.surface_id):
            raise _refuse(grpc.StatusCode.FAILED_PRECONDITION, "BASE_REVISION_UNKNOWN",
                          f"no revision {base_id!r} on this surface")
        compiled = await _peer("compiler", self._compiler.Compile(compiler_pb2.CompileRequest(
            slice=frozen, proposal_json=request.proposal_json, base_revision_id=base_id,
            base_document_json=base.document_json if base is not None else "", surface_id=session.surface_id),
            timeout=60))
        diagnostics = list(compiled.diagnostics)
        if compiled.outcome == compiler_pb2.COMPILE_OUTCOME_REJECTED:
            rejected = host_pb2.Rejected(proposal_id=request.proposal_id, reason="proposal rejected",
                                         diagnostics=diagnostics)
            build = _envelope_builder(session.surface_id, "rejected", rejected,
                                      canonical({"rejected": request.proposal_id}))
            epoch, last = await self._db(self._store.append_events, session.surface_id, [build])
            await self._notify(session.surface_id, epoch, last, 1)
            return host_pb2.SubmitProposalResponse(outcome=host_pb2.PROPOSAL_OUTCOME_REJECTED,
                                                   surface_id=session.surface_id, diagnostics=diagnostics)
        events = []
        for message_json in compiled.a2ui_messages_json:
            kind = next(k for k in json.loads(message_json) if k != "version")
            events.append(_envelope_builder(session.surface_id, "a2ui", host_pb2.A2uiMessage(
                kind=_A2UI_KINDS[kind], message_json=message_json), message_json))
        diagnostics_json = json.dumps([json.loads(_diagnostic_json(d)) for d in diagnostics]).encode()
        bindings = _resolved_bindings(frozen, compiled.bindings)
        try:
            revision_id, epoch, last = await self._db(partial(
                self._store.commit, surface_id=session.surface_id, expected_base=base_id or None,
                turn_id=turn.turn_id, proposal_id=request.proposal_id, content_hash=compiled.content_hash,
                document_json=compiled.document_json, diagnostics=diagnostics_json, events=events,
                slice_hash=frozen.slice_hash, bindings=json.dumps(bindings), request_hash=request_hash))
        except RevisionConflict as conflict:
            replay = await self._replay(turn.turn_id, request.proposal_id, request_hash, session)
            if replay is not None:  # the same proposal, committed by a concurrent retry
                return replay
            raise _refuse(grpc.StatusCode.ABORTED, "REVISION_CONFLICT",
                          f"the surface moved on: {conflict}; rebase on the current revision",
                          current_revision_id=conflict.head or "") from None
        # Committed: publishing and revocation must finish even if the caller goes away now.
        await asyncio.shield(self._after_commit(session.surface_id, epoch, last, len(events), bindings))
        reply = host_pb2.SubmitProposalResponse(outcome=_OUTCOMES[compiled.outcome], surface_id=session.surface_id,
                                                revision_id=revision_id, content_hash=compiled.content_hash,
                                                diagnostics=diagnostics)
        return reply

    async def _revoke_dropped(self, surface_id: str, bindings: list[dict]) -> None:
        """A new revision that drops a binding revokes its grants, here and at the gateway."""
        keep = {(b["node"], b["resource_id"]) for b in bindings if b["kind"] == "resource"}
        dropped = await self._db(self._store.revoke_grants_outside, surface_id, keep)
        if dropped:
            try:
                await self._resources.RevokeGrants(resources_pb2.RevokeGrantsRequest(
                    grants=[common_pb2.SignedToken.FromString(t) for t in dropped]), timeout=10)
            except grpc.aio.AioRpcError as exc:  # the grants expire within minutes anyway
                logger.warning("could not revoke %d grants at resources: %s", len(dropped), exc.code().name)

    # --- commands ---------------------------------------------------------

    async def SendCommand(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        if request.surface_id != session.surface_id:
            raise _refuse(grpc.StatusCode.PERMISSION_DENIED, "SURFACE_NOT_IN_SESSION",
                          "the surface is not this session's")
        if not 1 <= len(request.command_id) <= 128 or request.command_id.startswith("event:"):
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "COMMAND_ID_REQUIRED",
                          "command_id: 1-128 characters, not starting with 'event:' (the broker's events)")
        unsigned = host_pb2.SendCommandRequest()
        unsigned.CopyFrom(request)
        unsigned.ClearField("actor")  # a fresh assertion on a retry is still the same command
        payload_hash = hashlib.sha256(unsigned.SerializeToString(deterministic=True)).hexdigest()
        earlier = await self._db(self._store.command, session.session_id, request.command_id)
        if earlier is not None:
            if earlier.payload_hash != payload_hash:
                raise _refuse(grpc.StatusCode.ALREADY_EXISTS, "COMMAND_ID_REUSED",
                              "this command id was used for a different command")
            reply = host_pb2.SendCommandResponse.FromString(earlier.response)
            reply.replayed = True
            return reply
        kind = request.WhichOneof("command")
        if kind is None:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "COMMAND_MISSING", "one command is required")
        head = await self._db(self._store.head, session.surface_id)
        # A decision is bound to the approval's arguments hash, not to what the surface shows now.
        if kind not in ("ack", "approval_decision") and (not head or request.revision_id != head):
            raise _refuse(grpc.StatusCode.FAILED_PRECONDITION, "STALE_REVISION",
                          "the command names a revision that is no longer on screen",
                          current_revision_id=head or "")
        reply = host_pb2.SendCommandResponse(command_id=request.command_id)
        if kind == "ack":
            reply.cursor.CopyFrom(request.ack.cursor)
        elif kind == "approval_decision":
            await self._approval_decision(request, reply)
        else:
            row = await self._db(self._store.revision, head)
            bindings = json.loads(row.bindings)
            handler = {"resource_window": self._window, "state_write": self._state_write,
                       "action_trigger": self._action_trigger}[kind]
            await handler(request, session, head, bindings, reply)
        if not await self._db(self._store.record_command, request.command_id, session.session_id, payload_hash,
                              reply.SerializeToString()):
            raise _refuse(grpc.StatusCode.ABORTED, "COMMAND_RACE", "the same command id arrived twice at once")
        return reply

    def _binding(self, bindings: list[dict], node_id: str, kind: str) -> dict:
        found = next((b for b in bindings if b["node"] == node_id and b["kind"] == kind), None)
        if found is None:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "NODE_NOT_BOUND",
                          f"block {node_id!r} of the current revision has no {kind} binding")
        return found

    async def _publish(self, session: Session, revision_id: str, message: dict) -> tuple[int, int]:
        message_json = canonical(message)
        build = _envelope_builder(session.surface_id, "a2ui", host_pb2.A2uiMessage(
            kind=host_pb2.A2UI_MESSAGE_KIND_UPDATE_DATA_MODEL, message_json=message_json), message_json)
        epoch, sequence = await self._db(self._store.append_events, session.surface_id, [build])
        await self._notify(session.surface_id, epoch, sequence, 1)
        return epoch, sequence

    async def _window(self, request, session, head, bindings, reply) -> None:
        command = request.resource_window
        binding = self._binding(bindings, command.node_id, "resource")
        if command.limit < 1 or command.limit > WINDOW_MAX_ROWS:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "WINDOW_TOO_LARGE", f"limit is 1-{WINDOW_MAX_ROWS}")
        projection = list(command.column_ids) or binding["columns"]
        missing = [c for c in projection if c not in binding["columns"]]
        if missing:
            raise _refuse(grpc.StatusCode.PERMISSION_DENIED, "COLUMN_NOT_BOUND",
                          f"column {missing[0]!r} is not shown by block {command.node_id!r}")
        now = dt.datetime.now(dt.UTC)
        grant_id = f"grt_{secrets.token_hex(10)}"
        claims = common_pb2.WindowGrantClaims(
            binding=common_pb2.TokenBinding(subject=session.actor_id, audience="resources",
                                            nonce=secrets.token_hex(12)),
            grant_id=grant_id, surface_id=session.surface_id, node_id=command.node_id,
            resource_id=binding["resource_id"], version_id=binding["version_id"],
            content_hash=binding["content_hash"], column_ids=binding["columns"], max_window_rows=WINDOW_MAX_ROWS)
        claims.binding.issued_at.FromDatetime(now)
        claims.binding.expires_at.FromDatetime(now + GRANT_LIFETIME)
        grant = tokens.sign(self._grant_key, tokens.PURPOSE_WINDOW_GRANT, claims)
        await self._db(partial(self._store.save_grant, grant_id=grant_id, surface_id=session.surface_id,
                               node_id=command.node_id, revision_id=head, resource_id=binding["resource_id"],
                               token=grant.SerializeToString(), expires_at=(now + GRANT_LIFETIME).timestamp()))
        window = await _peer("resources", self._resources.ResolveWindow(resources_pb2.ResolveWindowRequest(
            grant=grant, offset=command.offset, limit=command.limit, column_ids=projection), timeout=30))
        # Rows go to this surface's stream only: never into revisions, documents, slices or logs.
        epoch, sequence = await self._publish(session, head, {"version": "v0.9", "updateDataModel": {
            "surfaceId": session.surface_id, "path": f"/resources/{binding['resource_id']}/window",
            "value": {"node": command.node_id, "offset": window.offset, "totalRows": window.total_rows,
                      "columns": [c.column_id for c in window.columns],
                      "rows": [[_cell_json(c) for c in row.cells] for row in window.rows]}}})
        reply.cursor.epoch, reply.cursor.sequence = epoch, sequence

    async def _state_write(self, request, session, head, bindings, reply) -> None:
        command = request.state_write
        binding = next((b for b in bindings if b["kind"] == "state" and b["state"] == command.state_slice_id), None)
        if binding is None:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "STATE_NOT_BOUND",
                          f"{command.state_slice_id!r} is not state of the current revision")
        try:
            value = parse(command.value_json, Limits(max_raw_bytes=16_384, max_values=500))
        except BoundedJsonError as exc:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "STATE_VALUE_INVALID", str(exc)) from None
        problem = compile_check(json.loads(binding["value_schema"]))(value)
        if problem is not None:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "STATE_VALUE_INVALID", problem[1])
        epoch, sequence = await self._publish(session, head, {"version": "v0.9", "updateDataModel": {
            "surfaceId": session.surface_id, "path": f"/state/{command.state_slice_id}", "value": value}})
        reply.cursor.epoch, reply.cursor.sequence = epoch, sequence

    async def _action_trigger(self, request, session, head, bindings, reply) -> None:
        command = request.action_trigger
        binding = self._binding(bindings, command.node_id, "action")
        try:
            receipt = await self._broker.SubmitIntent(capabilities_pb2.SubmitIntentRequest(
                actor=request.actor, session_id=session.session_id, action_id=binding["action_id"],
                input_json=command.input_json, idempotency_key=request.command_id,
                surface=capabilities_pb2.SurfaceRef(surface_id=session.surface_id, revision_id=head,
                                                    node_id=command.node_id, command_id=request.command_id)),
                timeout=30)
        except grpc.aio.AioRpcError as exc:
            raise _broker_refusal(exc, "the capability broker did not accept the intent") from None
        reply.receipt.CopyFrom(receipt.receipt)

    async def _approval_decision(self, request, reply) -> None:
        """Relay a person's decision: the broker checks their assertion, the hash and the expiry itself."""
        command = request.approval_decision
        decision = capabilities_pb2.DECISION_APPROVE if command.approve else capabilities_pb2.DECISION_REJECT
        entries = [capabilities_pb2.EntryDecision(entry_id=e, decision=capabilities_pb2.DECISION_APPROVE)
                   for e in command.approved_entry_ids]
        try:
            decided = await self._broker.Decide(capabilities_pb2.DecideRequest(
                actor=request.actor, approval_id=command.approval_id, decision=decision, reason=command.reason,
                arguments_sha256=command.arguments_sha256, entries=entries,
                # The command's own id makes the relay retry-safe: the same command sent again (say,
                # after this process died mid-call) gets the decision's first outcome, not a refusal.
                decision_id="host-" + hashlib.sha256(
                    f"{request.session_id}/{request.command_id}".encode()).hexdigest()[:40]), timeout=60)
        except grpc.aio.AioRpcError as exc:
            raise _broker_refusal(exc, "the capability broker refused the decision") from None
        reply.receipt.CopyFrom(decided.receipt)

    async def PublishIntentEvent(self, request, context):
        """The broker's approval requests and receipts, as host events on the surface they came from."""
        session = await self._db(self._store.session, request.session_id)
        if session is None or request.surface_id != session.surface_id:
            raise _refuse(grpc.StatusCode.NOT_FOUND, "SURFACE_UNKNOWN", "no such surface in that session")
        if not 1 <= len(request.event_id) <= 128:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "EVENT_ID_REQUIRED", "event_id: 1-128 characters")
        # The broker re-sends until acknowledged: a repeated event id answers with the first cursor.
        event_key = f"event:{request.event_id}"
        earlier = await self._db(self._store.command, session.session_id, event_key)
        if earlier is not None:
            return host_pb2.PublishIntentEventResponse.FromString(earlier.response)
        kind = request.WhichOneof("event")
        if kind == "approval_requested":
            field, payload = "approval_requested", request.approval_requested
        elif kind == "receipt":
            terminal = request.receipt.status in (
                common_pb2.INTENT_STATUS_SUCCEEDED, common_pb2.INTENT_STATUS_FAILED,
                common_pb2.INTENT_STATUS_REJECTED, common_pb2.INTENT_STATUS_EXPIRED,
                common_pb2.INTENT_STATUS_CANCELLED)
            if terminal:
                field, payload = "effect_receipt", host_pb2.EffectReceipt(receipt=request.receipt,
                                                                          node_id=request.node_id)
            else:
                field, payload = "action_status", host_pb2.ActionStatus(
                    intent_id=request.receipt.intent_id, command_id=request.command_id, node_id=request.node_id,
                    status=request.receipt.status)
        else:
            raise _refuse(grpc.StatusCode.INVALID_ARGUMENT, "EVENT_MISSING", "approval_requested or receipt")
        payload_json = MessageToJson(payload, preserving_proto_field_name=True, indent=None, sort_keys=True)
        build = _envelope_builder(session.surface_id, field, payload, payload_json)
        epoch, sequence = await self._db(self._store.append_events, session.surface_id, [build])
        await self._notify(session.surface_id, epoch, sequence, 1)
        reply = host_pb2.PublishIntentEventResponse(cursor=host_pb2.Cursor(epoch=epoch, sequence=sequence))
        payload_hash = hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()
        await self._db(self._store.record_command, event_key, session.session_id, payload_hash,
                       reply.SerializeToString())
        return reply

    async def _after_commit(self, surface_id: str, epoch: int, last: int, count: int, bindings: list[dict]) -> None:
        await self._notify(surface_id, epoch, last, count)
        await self._revoke_dropped(surface_id, bindings)

    async def _replay(self, turn_id: str, proposal_id: str, request_hash: str, session: Session):
        """The earlier answer to the same proposal id, or None; a different proposal under it is refused."""
        earlier = await self._db(self._store.revision_for_proposal, turn_id, proposal_id)
        if earlier is None:
            return None
        if earlier.request_hash and earlier.request_hash != request_hash:
            raise _refuse(grpc.StatusCode.ALREADY_EXISTS, "PROPOSAL_ID_REUSED",
                          "this proposal id was used for a different proposal")
        return self._submitted(session, earlier.revision_id, earlier.content_hash, json.loads(earlier.diagnostics))

    def _submitted(self, session: Session, revision_id: str, content_hash: str, diagnostics: list[dict]):
        parsed = [common_pb2.Diagnostic(**d) for d in diagnostics]
        outcome = host_pb2.PROPOSAL_OUTCOME_COMMITTED_PARTIAL if parsed else host_pb2.PROPOSAL_OUTCOME_COMMITTED
        return host_pb2.SubmitProposalResponse(outcome=outcome, surface_id=session.surface_id,
                                               revision_id=revision_id, content_hash=content_hash,
                                               diagnostics=parsed)

    async def GetRevision(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        if request.surface_id and request.surface_id != session.surface_id:
            raise _refuse(grpc.StatusCode.PERMISSION_DENIED, "SURFACE_NOT_IN_SESSION",
                          "the surface is not this session's")
        revision_id = request.revision_id or await self._db(self._store.head, session.surface_id)
        row = await self._db(self._store.revision, revision_id) if revision_id else None
        if row is None or row.surface_id != session.surface_id:
            raise _refuse(grpc.StatusCode.NOT_FOUND, "REVISION_UNKNOWN", "no such revision on this surface")
        revision = host_pb2.Revision(revision_id=row.revision_id, surface_id=row.surface_id,
                                     parent_revision_id=row.parent_revision_id or "", turn_id=row.turn_id,
                                     content_hash=row.content_hash, document_json=row.document_json,
                                     diagnostics=[common_pb2.Diagnostic(**d) for d in json.loads(row.diagnostics)])
        revision.committed_at.FromNanoseconds(int(row.committed_at * 1e9))
        return host_pb2.GetRevisionResponse(revision=revision)

    async def Subscribe(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        surface_id = session.surface_id
        if request.surface_id and request.surface_id != surface_id:
            raise _refuse(grpc.StatusCode.PERMISSION_DENIED, "SURFACE_NOT_IN_SESSION",
                          "the surface is not this session's")
        epoch, position = await self._db(self._store.position, surface_id)
        after = 0
        if request.HasField("resume_after"):
            cursor = request.resume_after
            if cursor.epoch == epoch and cursor.sequence <= position:
                after = cursor.sequence
            else:  # a compacted epoch, or a cursor this journal never issued: never a silent gap
                yield _snapshot_required(surface_id, epoch, "the cursor is not in the current journal")
        self._viewers[surface_id] = self._viewers.get(surface_id, 0) + 1
        tail = self._tails.setdefault(surface_id, deque(maxlen=TAIL_EVENTS))
        from_journal = False
        try:
            while True:
                changed = self._changed.setdefault(surface_id, asyncio.Event())
                if not from_journal and tail and tail[0][0] == epoch and tail[0][1] <= after + 1:
                    batch = [response for _, sequence, response in tail if sequence > after]
                else:  # behind the tail, a quiet surface, or a periodic check: read the journal
                    batch = [host_pb2.SubscribeResponse(envelope=host_pb2.SurfaceEnvelope.FromString(data))
                             for data in await self._db(self._store.events_after, surface_id, epoch, after)]
                from_journal = False
                for response in batch:
                    after = response.envelope.sequence
                    yield response
                if batch:
                    continue
                if tail:
                    current = tail[-1][0]
                else:
                    current, _ = await self._db(self._store.position, surface_id)
                if current != epoch:  # the journal was compacted under us
                    yield _snapshot_required(surface_id, current, "the journal moved to a new epoch")
                    epoch, after = current, 0
                    continue
                try:
                    await asyncio.wait_for(changed.wait(), timeout=1.0)
                except TimeoutError:
                    # No wake-up: check the journal itself, in case a commit was never announced.
                    from_journal = True
        finally:
            self._viewers[surface_id] -= 1
            if not self._viewers[surface_id]:  # the last viewer left: forget the surface's cache
                for cache in (self._viewers, self._tails, self._tail_locks, self._changed):
                    cache.pop(surface_id, None)




async def _peer(name: str, call):
    """Await a call to another service; its failure becomes a precise status here, never INTERNAL."""
    try:
        return await call
    except grpc.aio.AioRpcError as exc:
        details = error_details(exc)
        unavailable = exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        if unavailable and not details.reason:  # nobody answered: say so, not gRPC's socket-level text
            reason = f"{name.upper()}_UNAVAILABLE"
            message = f"the {name} service is not answering (it may be restarting)"
        else:
            reason, message = details.reason or f"{name.upper()}_FAILED", f"{name}: {details.message}"
        raise TesseraError(grpc.StatusCode.UNAVAILABLE if unavailable else grpc.StatusCode.FAILED_PRECONDITION,
                           reason, message, {"peer": name, "peer_code": exc.code().name}) from None


def _snapshot_required(surface_id: str, epoch: int, reason: str) -> host_pb2.SubscribeResponse:
    """Tells the client to drop its state: a full snapshot of `epoch` follows."""
    return host_pb2.SubscribeResponse(envelope=host_pb2.SurfaceEnvelope(
        surface_id=surface_id, epoch=epoch, sequence=0,
        snapshot_required=host_pb2.SnapshotRequired(reason=reason, epoch=epoch)))


def _resolved_bindings(frozen: compiler_pb2.CatalogSlice, compiled_bindings) -> list[dict]:
    """A revision's bindings in slice-independent terms: what grants and commands need later."""
    resources = {r.slice_id: r.descriptor for r in frozen.resources}
    actions = {a.slice_id: a for a in frozen.actions}
    states = {st.slice_id: st for st in frozen.state}
    out = []
    for binding in compiled_bindings:
        entry = {"node": binding.block_id, "prop": binding.prop}
        if binding.kind == compiler_pb2.BINDING_KIND_RESOURCE:
            d = resources[binding.slice_id]
            entry.update(kind="resource", resource_id=d.resource_id, version_id=d.version_id,
                         content_hash=d.content_hash, columns=list(binding.column_ids))
        elif binding.kind == compiler_pb2.BINDING_KIND_ACTION:
            entry.update(kind="action", action_id=actions[binding.slice_id].action_id,
                         input_schema=actions[binding.slice_id].input_schema_json)
        elif binding.kind == compiler_pb2.BINDING_KIND_STATE:
            entry.update(kind="state", state=binding.slice_id,
                         value_schema=states[binding.slice_id].value_schema_json)
        else:
            entry.update(kind="evidence")
        out.append(entry)
    return out


def _cell_json(cell):
    kind = cell.WhichOneof("value")
    if kind in (None, "null_value"):
        return None
    if kind == "timestamp_value":
        return cell.timestamp_value.ToDatetime().isoformat(timespec="seconds")
    return getattr(cell, kind)


def _broker_refusal(exc: grpc.aio.AioRpcError, what: str) -> TesseraError:
    """The broker's own status and reason, so a person sees e.g. APPROVAL_EXPIRED, not a generic failure."""
    details = error_details(exc)
    return _refuse(exc.code(), details.reason or "BROKER_REFUSED", f"{what}: {details.message or exc.code().name}")


def _diagnostic_json(diagnostic: common_pb2.Diagnostic) -> str:
    return MessageToJson(diagnostic, preserving_proto_field_name=True, indent=None)


def build(context: ServiceContext) -> list[Registration]:
    settings: HostSettings = context.settings
    try:
        load_signing_key(settings.signing_key)
        load_verify_key(settings.resources_verify_key)
        engine = engine_for(settings.database_url)
        migrate(engine)
        load_catalog()
    except (CredentialError, ContractError) as exc:
        raise StartupError(str(exc)) from None
    except Exception as exc:  # a database that cannot be reached or migrated
        failure = DependencyUnavailable if unreachable(exc) else StartupError
        raise failure(f"TESSERA_HOST_DATABASE_URL: cannot prepare the host database: "
                      f"{str(exc).splitlines()[0][:200]}") from None
    store = HostStore(engine)
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="host-db")

    async def database_reachable() -> str | None:
        return await asyncio.get_running_loop().run_in_executor(pool, store.ping)

    def stop() -> None:
        pool.shutdown(wait=True)
        engine.dispose()

    return [registration_for("host", HostService(context, store, pool), readiness=[database_reachable],
                             on_stop=stop)]
