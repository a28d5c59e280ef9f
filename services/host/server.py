"""gRPC servicer of the HostServer (contract: proto/tessera/host/v1/): checks callers, hands work on.

The host alone publishes committed state. Proposals are compiled by the compiler
service against the slice the host froze (offers.py), then committed in one
transaction (commits.py); only then are their A2UI messages appended to the surface
journal that subscribers read (fanout.py). Commands take effect once (commands.py).
"""

from __future__ import annotations

import json

from services.host.fanout import snapshot_required
from services.host.store import Session, TurnEnd, TurnFinished, TurnRecord
from services.host.wiring import HostParts
from shared.rpc.refusals import Conflict, Denied, Invalid, NotFound
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2, host_pb2_grpc

MAX_ENVELOPES_PER_RESPONSE = 64  # a larger max_envelopes counts as this (host.proto)
DEFAULT_TURNS_LISTED = 20  # ListTurns' limit when it names none; its most is the contract's (host.proto)
# A running turn no replica named for this long runs nowhere (its agent went away, or an outside agent's turn,
# which no replica polls for): a stop asked for it is answered at once. Replicas name theirs 4 times a second.
TURN_REPORT_STALE_SECONDS = 5.0


class HostService(host_pb2_grpc.HostServiceServicer):
    def __init__(self, parts: HostParts) -> None:
        self._info = parts.info
        self._actors = parts.actors
        self._db = parts.db
        self._store = parts.db.store
        self._fanout = parts.fanout
        self._offers = parts.offers
        self._commits = parts.commits
        self._commands = parts.commands

    async def _own_session(self, assertion, session_id: str) -> Session:
        actor = self._actors.require(assertion)
        session = await self._db(self._store.session, session_id)
        if session is None:
            raise NotFound("SESSION_UNKNOWN", f"no session {session_id!r}")
        if (session.actor_id, session.tenant_id) != (actor.actor_id, actor.tenant_id):
            raise Denied("SESSION_NOT_YOURS", "the session belongs to another actor")
        return session

    async def _turn(self, turn_id: str):
        turn = await self._db(self._store.turn, turn_id)
        if turn is None:
            raise NotFound("TURN_UNKNOWN", f"no turn {turn_id!r}")
        return turn

    async def _turn_and_session(self, turn_id: str):
        turn = await self._turn(turn_id)
        return turn, await self._db(self._store.session, turn.session_id)

    @staticmethod
    def _same_surface(requested: str, session: Session) -> None:
        if requested and requested != session.surface_id:
            raise Denied("SURFACE_NOT_IN_SESSION", "the surface is not this session's")

    # --- RPCs -------------------------------------------------------------

    async def GetInfo(self, request, context):
        return host_pb2.GetInfoResponse(info=self._info)

    async def OpenSession(self, request, context):
        actor = self._actors.require(request.actor)
        session, _ = await self._db(self._store.open_session, actor.actor_id, actor.tenant_id, request.request_id)
        reply = host_pb2.OpenSessionResponse(session_id=session.session_id, surface_id=session.surface_id)
        reply.opened_at.FromSeconds(int(session.created_at))
        return reply

    async def BeginTurn(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        turn = await self._db(self._store.begin_turn, session.session_id, request.question, request.request_id)
        head = await self._db(self._store.head, session.surface_id)
        earlier = await self._db(self._store.earlier_turns, turn.turn_id)
        return host_pb2.BeginTurnResponse(
            turn_id=turn.turn_id, surface_id=session.surface_id, base_revision_id=head or "",
            earlier_turns=[host_pb2.EarlierTurn(turn_id=t, question=q) for t, q in earlier])

    async def FinishTurn(self, request, context):
        turn = await self._turn(request.turn_id)
        end = TurnEnd(request.outcome, request.answer, tuple(request.suggested_questions), request.follows_turn_id)
        # A follow-up refines one of the turns it was begun after (BeginTurn's earlier_turns), nothing else.
        if end.follows_turn_id and end.follows_turn_id not in {
                t for t, _ in await self._db(self._store.earlier_turns, turn.turn_id)}:
            raise Invalid("FOLLOWS_UNKNOWN", "follows_turn_id: not one of the earlier turns this one was begun with")
        try:
            recorded = await self._db(self._store.finish_turn, turn.turn_id, end)
        except TurnFinished:
            raise Conflict("TURN_FINISHED", "this turn's end was recorded already, differently") from None
        return host_pb2.FinishTurnResponse(recorded=recorded)

    async def RequestTurnCancel(self, request, context):
        actor = self._actors.require(request.actor)
        turn, session = await self._turn_and_session(request.turn_id)
        if (session.actor_id, session.tenant_id) != (actor.actor_id, actor.tenant_id):
            raise Denied("TURN_NOT_YOURS", "the turn belongs to another actor")
        stop = await self._db(self._store.request_cancel, turn.turn_id, TURN_REPORT_STALE_SECONDS)
        return host_pb2.RequestTurnCancelResponse(running=stop.reported, outcome=stop.end.outcome if stop.end else 0)

    async def CancelledTurns(self, request, context):
        found = await self._db(self._store.cancelled_turns, list(dict.fromkeys(request.turn_ids)))
        return host_pb2.CancelledTurnsResponse(turn_ids=found)

    async def ListTurns(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        limit = request.limit or DEFAULT_TURNS_LISTED
        if request.before_turn_id:
            before = await self._db(self._store.turn, request.before_turn_id)
            if before is None or before.session_id != session.session_id:
                raise NotFound("TURN_UNKNOWN", "before_turn_id: no such turn in this session")
        records = await self._db(self._store.list_turns, session.session_id, limit + 1, request.before_turn_id)
        reply = host_pb2.ListTurnsResponse(turns=[turn_record(r) for r in records[:limit]])
        if len(records) > limit:
            reply.next_before_turn_id = records[limit - 1].turn_id
        return reply

    async def FreezeSlice(self, request, context):
        turn, session = await self._turn_and_session(request.turn_id)
        return await self._offers.freeze(request, turn, session)

    async def SubmitProposal(self, request, context):
        return await self._commits.submit(request)

    async def SendCommand(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        return await self._commands.send(request, session, context.time_remaining())

    async def PublishIntentEvent(self, request, context):
        return await self._commands.publish_intent_event(request)

    async def GetRevision(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        self._same_surface(request.surface_id, session)
        revision_id = request.revision_id or await self._db(self._store.head, session.surface_id)
        row = await self._db(self._store.revision, revision_id) if revision_id else None
        if row is None or row.surface_id != session.surface_id:
            raise NotFound("REVISION_UNKNOWN", "no such revision on this surface")
        revision = host_pb2.Revision(revision_id=row.revision_id, surface_id=row.surface_id,
                                     parent_revision_id=row.parent_revision_id or "", turn_id=row.turn_id,
                                     content_hash=row.content_hash, document_json=row.document_json,
                                     diagnostics=[common_pb2.Diagnostic(**d) for d in json.loads(row.diagnostics)],
                                     a2ui_messages_json=json.loads(row.a2ui_messages or "[]"))
        revision.committed_at.FromNanoseconds(int(row.committed_at * 1e9))
        return host_pb2.GetRevisionResponse(revision=revision)

    async def AuthorizeViewer(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        self._same_surface(request.surface_id, session)
        epoch, last = await self._db(self._store.position, session.surface_id)
        return host_pb2.AuthorizeViewerResponse(surface_id=session.surface_id,
                                                head=host_pb2.Cursor(epoch=epoch, sequence=last))

    async def Subscribe(self, request, context):
        session = await self._own_session(request.actor, request.session_id)
        self._same_surface(request.surface_id, session)
        surface_id = session.surface_id
        epoch, position = await self._fanout.watch(surface_id)
        try:
            after = 0
            if request.HasField("resume_after"):
                cursor = request.resume_after
                if cursor.epoch == epoch and cursor.sequence <= position:
                    after = cursor.sequence
                else:  # a compacted epoch, or a cursor this journal never issued: never a silent gap
                    yield snapshot_required(surface_id, epoch, "the cursor is not in the current journal")
            batch = min(request.max_envelopes, MAX_ENVELOPES_PER_RESPONSE)
            async for response in self._fanout.stream(surface_id, epoch, after, batch):
                yield response
        finally:
            self._fanout.unwatch(surface_id)


def turn_record(record: TurnRecord) -> host_pb2.TurnRecord:
    reply = host_pb2.TurnRecord(turn_id=record.turn_id, question=record.question, revision_id=record.revision_id)
    reply.asked_at.FromNanoseconds(int(record.asked_at * 1e9))
    if record.end is not None:
        reply.outcome = record.end.outcome
        reply.answer = record.end.answer
        reply.suggested_questions.extend(record.end.suggested)
        reply.follows_turn_id = record.end.follows_turn_id
    if record.finished_at is not None:
        reply.finished_at.FromNanoseconds(int(record.finished_at * 1e9))
    return reply

