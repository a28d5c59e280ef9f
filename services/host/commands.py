"""Commands from a person's surface (§6) and the broker's intent events: each takes effect once.

A command id is reserved in the database before its handler runs (signing a grant,
submitting an intent, relaying a decision), so concurrent retries, on this replica or
another, cannot both take effect: the loser waits for the winner's stored reply, or is
told precisely that the command is still running. A refused command frees its id.
"""

from __future__ import annotations

import asyncio
import hashlib
import json

import grpc
from google.protobuf.json_format import MessageToJson

from services.host import bindings as binding_store
from services.host.bindings import Binding
from services.host.database import AsyncStore
from services.host.envelopes import data_model_update, journal_entry
from services.host.event_batches import EventBatches
from services.host.fanout import SurfaceFanout
from services.host.peers import Peers, broker_refusal
from services.host.store import CommandClaim, Session
from services.host.windows import Windows
from shared.data.bounded_json import BoundedJsonError, Limits, parse
from shared.data.schema_check import compile_check
from shared.rpc.next_steps import metadata
from shared.rpc.refusals import AlreadyExists, Conflict, Contended, Denied, Invalid, NotFound
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2

# A claim older than this belongs to a replica that died mid-command (handlers time out within 60 s).
COMMAND_LEASE_SECONDS = 120.0
# Stored as "event:<id>" among the session's command ids (at most 128 characters, scoped_keys migration).
EVENT_ID_MAX = 128 - len("event:")
COMMAND_WAIT_SECONDS = 30.0  # how long a concurrent retry waits for the first one's reply
_TERMINAL = (common_pb2.INTENT_STATUS_SUCCEEDED, common_pb2.INTENT_STATUS_FAILED, common_pb2.INTENT_STATUS_REJECTED,
             common_pb2.INTENT_STATUS_EXPIRED, common_pb2.INTENT_STATUS_CANCELLED)



class Commands:
    def __init__(self, db: AsyncStore, fanout: SurfaceFanout, peers: Peers, windows: Windows) -> None:
        self._db = db
        self._fanout = fanout
        self._peers = peers
        self._windows = windows
        self._events = EventBatches(db, fanout)

    # --- SendCommand -------------------------------------------------------------

    async def send(self, request, session: Session, time_remaining: float | None) -> host_pb2.SendCommandResponse:
        if request.surface_id != session.surface_id:
            raise Denied("SURFACE_NOT_IN_SESSION", "the surface is not this session's")
        if request.command_id.startswith("event:"):  # its bounds and the one command are the contract's (host.proto)
            raise Invalid("COMMAND_ID_RESERVED", "command_id: not starting with 'event:' (the broker's events)",
                          metadata("/command_id"))
        unsigned = host_pb2.SendCommandRequest()
        unsigned.CopyFrom(request)
        unsigned.ClearField("actor")  # a fresh assertion on a retry is still the same command
        payload_hash = hashlib.sha256(unsigned.SerializeToString(deterministic=True)).hexdigest()
        claim = await self._claim(session.session_id, request.command_id, payload_hash, time_remaining)
        if claim.status == "done":
            reply = host_pb2.SendCommandResponse.FromString(claim.response)
            reply.replayed = True
            return reply
        # Once claimed, the command runs to its end even if the caller goes away: a retry reads its reply.
        return await asyncio.shield(asyncio.ensure_future(self._run_claimed(request, session)))

    async def _claim(self, session_id: str, command_id: str, payload_hash: str,
                     time_remaining: float | None) -> CommandClaim:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(COMMAND_WAIT_SECONDS, max((time_remaining or COMMAND_WAIT_SECONDS) - 1, 0.5))
        pause = 0.02
        while True:
            claim = await self._db(self._db.store.claim_command, session_id, command_id, payload_hash,
                                   COMMAND_LEASE_SECONDS)
            if claim.status == "reused":
                raise AlreadyExists("COMMAND_ID_REUSED", "this command id was used for a different command")
            if claim.status in ("claimed", "done"):
                return claim
            if loop.time() >= deadline:
                raise Contended("COMMAND_IN_PROGRESS",
                                "the same command is still running; send it again to read its result")
            if claim.status == "pending":  # the first sender is still at work: wait for its reply
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.5)

    async def _run_claimed(self, request, session: Session) -> host_pb2.SendCommandResponse:
        try:
            reply = await self._run(request, session)
        except BaseException:
            await self._db(self._db.store.release_command, session.session_id, request.command_id)
            raise
        await self._db(self._db.store.finish_command, session.session_id, request.command_id,
                       reply.SerializeToString())
        return reply

    async def _run(self, request, session: Session) -> host_pb2.SendCommandResponse:
        kind = request.WhichOneof("command")
        reply = host_pb2.SendCommandResponse(command_id=request.command_id)
        if kind == "ack":
            reply.cursor.CopyFrom(request.ack.cursor)
        elif kind == "approval_decision":  # bound to the approval's arguments hash, not to what is shown
            await self._approval_decision(request, reply)
        else:
            row = await self._shown(request, session, read_only=kind == "resource_window")
            bound = binding_store.loads(row.bindings)
            handler = {"resource_window": self._window, "state_write": self._state_write,
                       "action_trigger": self._action_trigger}[kind]
            await handler(request, session, row.revision_id, bound, reply)
        return reply

    async def _shown(self, request, session: Session, read_only: bool):
        """The revision a command acts on: the surface's head; for a read (a window), also an earlier revision
        of the same surface, an earlier answer of the conversation. Nothing is run or written on one."""
        head = await self._db(self._db.store.head, session.surface_id)
        if head and request.revision_id == head:
            return await self._db(self._db.store.revision, head)
        if read_only and request.revision_id:
            row = await self._db(self._db.store.revision, request.revision_id)
            if row is not None and row.surface_id == session.surface_id:
                return row
        raise Conflict("STALE_REVISION",
                       "the command names a revision that is no longer on screen"
                       + ("" if read_only else " (an earlier answer is read-only: ask again to act on it)"),
                       {"current_revision_id": head or ""})

    @staticmethod
    def _binding(bound: list[Binding], node_id: str, kind: str, prop: str = "") -> Binding:
        found = [b for b in bound if b.node == node_id and b.kind == kind and (not prop or b.prop == prop)]
        if not found:
            what = f"binding {prop!r}" if prop else f"{kind} binding"
            raise Invalid("NODE_NOT_BOUND", f"block {node_id!r} of the current revision has no {what}")
        if len(found) > 1:  # several figures: the command must say which one
            raise Invalid("BINDING_AMBIGUOUS",
                          f"block {node_id!r} binds {len(found)} results; name one with prop "
                          f"({', '.join(b.prop for b in found[:4])})")
        return found[0]

    async def _publish(self, session: Session, message: dict) -> tuple[int, int]:
        appended = await self._db(self._db.store.append_events, session.surface_id,
                                  [data_model_update(session.surface_id, message)])
        await self._fanout.published(session.surface_id, appended)
        return appended.epoch, appended.last

    async def _window(self, request, session, head, bound, reply) -> None:
        command = request.resource_window
        binding = self._binding(bound, command.node_id, "resource", command.prop)
        if binding.row >= 0 and (command.offset != binding.row or command.limit != 1):
            raise Denied("WINDOW_OUTSIDE_BINDING",
                         f"{binding.prop} of block {command.node_id!r} shows row {binding.row} only",
                         {"row": str(binding.row)})
        projection = list(command.column_ids) or list(binding.columns)
        missing = [c for c in projection if c not in binding.columns]
        if missing:
            raise Denied("COLUMN_NOT_BOUND", f"column {missing[0]!r} is not shown by block {command.node_id!r}")
        reply.cursor.epoch, reply.cursor.sequence = await self._windows.send(
            session, head, binding, command.offset, command.limit, projection)

    async def _state_write(self, request, session, head, bound, reply) -> None:
        command = request.state_write
        binding = next((b for b in bound if b.kind == "state" and b.state == command.state_slice_id), None)
        if binding is None:
            raise Invalid("STATE_NOT_BOUND", f"{command.state_slice_id!r} is not state of the current revision")
        try:
            value = parse(command.value_json, Limits(max_raw_bytes=16_384, max_values=500))
        except BoundedJsonError as exc:
            raise Invalid("STATE_VALUE_INVALID", str(exc)) from None
        problem = compile_check(json.loads(binding.value_schema))(value)
        if problem is not None:
            raise Invalid("STATE_VALUE_INVALID", problem[1])
        epoch, sequence = await self._publish(session, {"version": "v0.9", "updateDataModel": {
            "surfaceId": session.surface_id, "path": f"/state/{command.state_slice_id}", "value": value}})
        reply.cursor.epoch, reply.cursor.sequence = epoch, sequence

    async def _action_trigger(self, request, session, head, bound, reply) -> None:
        command = request.action_trigger
        binding = self._binding(bound, command.node_id, "action")
        try:
            receipt = await self._peers.broker.SubmitIntent(capabilities_pb2.SubmitIntentRequest(
                actor=request.actor, session_id=session.session_id, action_id=binding.action_id,
                input_json=command.input_json, idempotency_key=request.command_id,
                surface=capabilities_pb2.SurfaceRef(surface_id=session.surface_id, revision_id=head,
                                                    node_id=command.node_id, command_id=request.command_id)),
                timeout=30)
        except grpc.aio.AioRpcError as exc:
            raise broker_refusal(exc, "the capability broker did not accept the intent") from None
        reply.receipt.CopyFrom(receipt.receipt)

    async def _approval_decision(self, request, reply) -> None:
        """Relay a person's decision: the broker checks their assertion, their passkey's signature over the
        decision, the hash and the expiry itself."""
        command = request.approval_decision
        decision = capabilities_pb2.DECISION_APPROVE if command.approve else capabilities_pb2.DECISION_REJECT
        entries = [capabilities_pb2.EntryDecision(entry_id=e, decision=capabilities_pb2.DECISION_APPROVE)
                   for e in command.approved_entry_ids]
        try:
            decided = await self._peers.broker.Decide(capabilities_pb2.DecideRequest(
                actor=request.actor, approval_id=command.approval_id, decision=decision, reason=command.reason,
                arguments_sha256=command.arguments_sha256, entries=entries, nonce=command.nonce,
                passkey=command.passkey if command.HasField("passkey") else None,
                # The command's own id makes the relay retry-safe: the same command sent again (say,
                # after this process died mid-call) gets the decision's first outcome, not a refusal.
                decision_id="host-" + hashlib.sha256(
                    f"{request.session_id}/{request.command_id}".encode()).hexdigest()[:40]), timeout=60)
        except grpc.aio.AioRpcError as exc:
            raise broker_refusal(exc, "the capability broker refused the decision") from None
        reply.receipt.CopyFrom(decided.receipt)

    # --- PublishIntentEvent --------------------------------------------------------

    async def publish_intent_event(self, request) -> host_pb2.PublishIntentEventResponse:
        """The broker's approval requests and receipts, as host events on the surface they came from.

        The broker re-sends until acknowledged: the event and its id are stored in one
        transaction, so a repeated (or concurrent) send answers with the first cursor.
        """
        session = await self._db(self._db.store.session, request.session_id)
        if session is None or request.surface_id != session.surface_id:
            raise NotFound("SURFACE_UNKNOWN", "no such surface in that session")
        if not 1 <= len(request.event_id) <= EVENT_ID_MAX:
            raise Invalid("EVENT_ID_REQUIRED", f"event_id: 1-{EVENT_ID_MAX} characters")
        field, payload = _intent_event(request)
        payload_json = MessageToJson(payload, preserving_proto_field_name=True, indent=None, sort_keys=True)
        entry = journal_entry(session.surface_id, field, payload, payload_json)
        request_hash = hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()
        place = await self._events.publish(session.session_id, session.surface_id, f"event:{request.event_id}",
                                           request_hash, entry)
        return host_pb2.PublishIntentEventResponse(cursor=host_pb2.Cursor(epoch=place.epoch, sequence=place.sequence))


def _intent_event(request):
    kind = request.WhichOneof("event")
    if kind == "approval_requested":
        return "approval_requested", request.approval_requested
    if kind == "receipt":
        if request.receipt.status in _TERMINAL:
            return "effect_receipt", host_pb2.EffectReceipt(receipt=request.receipt, node_id=request.node_id)
        return "action_status", host_pb2.ActionStatus(
            intent_id=request.receipt.intent_id, command_id=request.command_id, node_id=request.node_id,
            status=request.receipt.status)
    raise Invalid("EVENT_MISSING", "approval_requested or receipt")
