"""Proposals become revisions (§6): compile against the frozen slice, then one CAS commit.

The compare-and-swap on the branch head lives in the database, so replicas racing on
the same base commit exactly once; the loser gets REVISION_CONFLICT. A retried
proposal id answers with its first revision (replay). A revision that drops a
binding revokes its grants here and at the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging

import grpc
from google.protobuf.json_format import MessageToJson

from services.host import bindings as binding_store
from services.host.database import AsyncStore
from services.host.envelopes import a2ui_message, data_model_update, journal_entry
from services.host.fanout import SurfaceFanout
from services.host.offers import Offers
from services.host.peers import Peers, peer
from services.host.store import Committed, RevisionConflict, Session
from services.host.windows import Windows, first_windows, first_windows_message
from shared.data.bounded_json import canonical
from shared.rpc.refusals import AlreadyExists, Conflict, Contended, NotFound
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2
from tessera.host.v1 import host_pb2
from tessera.resources.v1 import resources_pb2

logger = logging.getLogger("tessera.host")
_A2UI_KINDS = {"createSurface": host_pb2.A2UI_MESSAGE_KIND_CREATE_SURFACE,
               "updateComponents": host_pb2.A2UI_MESSAGE_KIND_UPDATE_COMPONENTS,
               "updateDataModel": host_pb2.A2UI_MESSAGE_KIND_UPDATE_DATA_MODEL,
               "deleteSurface": host_pb2.A2UI_MESSAGE_KIND_DELETE_SURFACE}
_OUTCOMES = {compiler_pb2.COMPILE_OUTCOME_COMPILED: host_pb2.PROPOSAL_OUTCOME_COMMITTED,
             compiler_pb2.COMPILE_OUTCOME_PARTIAL: host_pb2.PROPOSAL_OUTCOME_COMMITTED_PARTIAL}


class Commits:
    def __init__(self, db: AsyncStore, fanout: SurfaceFanout, peers: Peers, offers: Offers,
                 windows: Windows) -> None:
        self._db = db
        self._fanout = fanout
        self._peers = peers
        self._offers = offers
        self._windows = windows
        self._sending: dict[str, asyncio.Task] = {}  # surface → its first windows on their way
        self._revoking: set[asyncio.Task] = set()  # grants dropped by a commit, on their way to the gateway

    async def submit(self, request) -> host_pb2.SubmitProposalResponse:
        base_id = request.expected_base_revision_id or ""
        context = await self._db(self._db.store.proposal_context, request.turn_id, request.slice_hash,
                                 request.proposal_id, base_id)
        turn, session, base = context.turn, context.session, context.base
        if turn is None or session is None:
            raise NotFound("TURN_UNKNOWN", f"no turn {request.turn_id!r}")
        if context.frozen_slice is None:
            raise Conflict("SLICE_UNKNOWN", "no slice with this hash was frozen for this turn")
        request_hash = hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()
        if context.earlier is not None:
            return self._replay(context.earlier, request_hash, session)
        frozen = compiler_pb2.CatalogSlice.FromString(context.frozen_slice[0])
        self._offers.recheck(turn, frozen,
                             host_pb2.FreezeSliceRequest.FromString(context.frozen_slice[1]).resource_offers)
        if base_id and (base is None or base.surface_id != session.surface_id):
            raise Conflict("BASE_REVISION_UNKNOWN", f"no revision {base_id!r} on this surface")
        compiled = await peer("compiler", self._peers.compiler.Compile(compiler_pb2.CompileRequest(
            slice=frozen, proposal_json=request.proposal_json, base_revision_id=base_id,
            base_document_json=base.document_json if base is not None else "", surface_id=session.surface_id),
            timeout=60))
        if compiled.outcome == compiler_pb2.COMPILE_OUTCOME_REJECTED:
            return await self._rejected(request, session, list(compiled.diagnostics))
        return await self._commit(request, turn, session, frozen, compiled, request_hash)

    async def _rejected(self, request, session: Session, diagnostics) -> host_pb2.SubmitProposalResponse:
        """A rejected proposal commits nothing; its diagnostics are a host event on the surface."""
        rejected = host_pb2.Rejected(proposal_id=request.proposal_id, reason="proposal rejected",
                                     diagnostics=diagnostics)
        entry = journal_entry(session.surface_id, "rejected", rejected, canonical({"rejected": request.proposal_id}))
        appended = await self._db(self._db.store.append_events, session.surface_id, [entry])
        await asyncio.shield(self._fanout.published(session.surface_id, appended))
        return host_pb2.SubmitProposalResponse(outcome=host_pb2.PROPOSAL_OUTCOME_REJECTED,
                                               surface_id=session.surface_id, diagnostics=diagnostics)

    async def _commit(self, request, turn, session, frozen, compiled, request_hash):
        diagnostics = list(compiled.diagnostics)
        bound = binding_store.resolved(frozen, compiled.bindings)
        # The host sends the first windows itself only to a surface someone watches here (a screen that
        # subscribed to another replica, or later, is told nothing and asks for its windows as before).
        sending = bound if self._fanout.watched(session.surface_id) else []
        events = []
        for message_json in compiled.a2ui_messages_json:
            message = json.loads(message_json)
            kind = next(k for k in message if k != "version")
            if kind == "updateComponents":  # before the blocks: which first windows the host sends itself
                coming = first_windows_message(session.surface_id, sending)
                if coming is not None:
                    events.append(data_model_update(session.surface_id, coming))
            events.append(a2ui_message(session.surface_id, _A2UI_KINDS[kind], message, message_json))
        diagnostics_json = json.dumps([json.loads(_diagnostic_json(d)) for d in diagnostics]).encode()
        try:
            # A revision that drops a binding revokes its grants in the same transaction.
            committed = await self._db(
                self._db.store.commit, surface_id=session.surface_id,
                expected_base=request.expected_base_revision_id or None, turn_id=turn.turn_id,
                proposal_id=request.proposal_id, content_hash=compiled.content_hash,
                document_json=compiled.document_json, diagnostics=diagnostics_json, events=events,
                slice_hash=frozen.slice_hash, bindings=binding_store.dumps(bound),
                a2ui_messages=json.dumps(list(compiled.a2ui_messages_json)), request_hash=request_hash,
                keep_grants={(b.node, b.resource_id) for b in bound if b.kind == "resource"})
        except RevisionConflict as conflict:
            earlier = await self._db(self._db.store.revision_for_proposal, turn.turn_id, request.proposal_id)
            if earlier is not None:  # the same proposal, committed by a concurrent retry
                return self._replay(earlier, request_hash, session)
            raise Contended("REVISION_CONFLICT",
                            f"the surface moved on: {conflict}; rebase on the current revision",
                            {"current_revision_id": conflict.head or ""}) from None
        # Committed: publishing and revocation must finish even if the caller goes away now.
        await asyncio.shield(self._after_commit(session.surface_id, committed))
        self._send_first_windows(session, committed.revision_id, sending)
        return host_pb2.SubmitProposalResponse(outcome=_OUTCOMES[compiled.outcome], surface_id=session.surface_id,
                                               revision_id=committed.revision_id, content_hash=compiled.content_hash,
                                               diagnostics=diagnostics)

    async def _after_commit(self, surface_id: str, committed: Committed) -> None:
        await self._fanout.published(surface_id, committed)
        if committed.dropped_grants:
            # Revoked in this host's database already, in the commit's transaction. The gateway is told behind the
            # answer: only hosts hold grants and none uses a revoked one, so the person's answer need not wait for
            # the second refusal (a round trip and a signature check per grant).
            task = asyncio.ensure_future(self._revoke_at_gateway(committed.dropped_grants))
            self._revoking.add(task)
            task.add_done_callback(self._revoking.discard)

    async def _revoke_at_gateway(self, dropped: list[bytes]) -> None:
        try:
            await self._peers.resources.RevokeGrants(resources_pb2.RevokeGrantsRequest(
                grants=[common_pb2.SignedToken.FromString(t) for t in dropped]), timeout=10)
        except grpc.aio.AioRpcError as exc:  # the grants expire within minutes anyway
            logger.warning("could not revoke %d grants at resources: %s", len(dropped), exc.code().name)

    def _send_first_windows(self, session: Session, revision_id: str, bound) -> None:
        """The first rows of every bound block, sent after the commit without holding up its answer."""
        async def send() -> None:
            try:
                await self._windows.send_first(session, revision_id, bound)
            except Exception as exc:  # the screen asks for the windows itself
                logger.warning("first windows of %s were not sent: %s", revision_id, exc)
                with contextlib.suppress(Exception):
                    await self._windows.none_coming(session, revision_id)

        earlier = self._sending.pop(session.surface_id, None)
        if earlier is not None:  # a newer revision of the surface: the earlier one's windows would be dropped
            earlier.cancel()
        if first_windows(bound):
            task = asyncio.ensure_future(send())
            self._sending[session.surface_id] = task

            def forget(done: asyncio.Task) -> None:
                if self._sending.get(session.surface_id) is done:  # not a newer revision's task
                    del self._sending[session.surface_id]

            task.add_done_callback(forget)

    @staticmethod
    def _replay(earlier, request_hash: str, session: Session) -> host_pb2.SubmitProposalResponse:
        """The earlier answer to the same proposal id; a different proposal under it is refused."""
        if earlier.request_hash and earlier.request_hash != request_hash:
            raise AlreadyExists("PROPOSAL_ID_REUSED", "this proposal id was used for a different proposal")
        parsed = [common_pb2.Diagnostic(**d) for d in json.loads(earlier.diagnostics)]
        outcome = host_pb2.PROPOSAL_OUTCOME_COMMITTED_PARTIAL if parsed else host_pb2.PROPOSAL_OUTCOME_COMMITTED
        return host_pb2.SubmitProposalResponse(outcome=outcome, surface_id=session.surface_id,
                                               revision_id=earlier.revision_id, content_hash=earlier.content_hash,
                                               diagnostics=parsed)


def _diagnostic_json(diagnostic: common_pb2.Diagnostic) -> str:
    return MessageToJson(diagnostic, preserving_proto_field_name=True, indent=None)
