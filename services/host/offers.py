"""What a turn may show (§6): resource offers checked, the broker's actions listed, the slice frozen."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import grpc

from services.host.database import AsyncStore
from services.host.peers import Peers, peer
from services.host.store import Session, Turn
from shared.data.bounded_json import canonical
from shared.identity import tokens
from shared.rpc.errors import error_details
from shared.rpc.next_steps import NEXT_STEPS
from shared.rpc.refusals import Conflict, Invalid
from shared.ui.slice import ActionOffer, ResourceOffer, SliceRequest, freeze_slice, model_view
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2
from tessera.host.v1 import host_pb2

OFFER_MAX_LIFETIME = dt.timedelta(hours=1)
PLACEMENTS = {"main": None}  # placement → allowed component names (None: every offerable component)


def offer_hash(token: common_pb2.SignedToken) -> str:
    return hashlib.sha256(token.SerializeToString(deterministic=True)).hexdigest()


class Offers:
    def __init__(self, db: AsyncStore, peers: Peers, catalog, offer_key) -> None:
        self._db = db
        self._peers = peers
        self._catalog = catalog
        self._offer_key = offer_key

    def accept(self, turn: Turn, offers) -> tuple[list[ResourceOffer], list, list[common_pb2.Diagnostic]]:
        """The offers that verify and were made for this turn; a diagnostic for each other one."""
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
                    message=f"{exc.reason.replace('TOKEN_', '').lower().replace('_', '-')}: {exc}",
                    hint=NEXT_STEPS["slice.offer-refused"]))
                continue
            accepted.append(ResourceOffer(claims.descriptor, offer_hash(token), interpretation=claims.interpretation))
            evidence.append(claims.evidence)
        return accepted, evidence, refused

    def recheck(self, turn: Turn, frozen: compiler_pb2.CatalogSlice, offers) -> None:
        """At commit, every offer of the slice must still verify (they expire)."""
        _, _, refused = self.accept(turn, offers)
        if refused or len(offers) != len(frozen.resources):
            raise Conflict("OFFER_EXPIRED",
                           "a resource offer of this slice no longer verifies; run the analysis again and "
                           "freeze a new slice")

    async def freeze(self, request, turn: Turn, session: Session) -> host_pb2.FreezeSliceResponse:
        placement = request.placement or "main"
        if placement not in PLACEMENTS:
            raise Invalid("PLACEMENT_UNKNOWN", f"placement must be one of {', '.join(PLACEMENTS)}")
        resources, evidence, refused = self.accept(turn, request.resource_offers)
        actions, unavailable = await self._actions(session)
        allowed = PLACEMENTS[placement] or list(self._catalog.contracts)
        frozen = freeze_slice(self._catalog, SliceRequest(components=allowed, resources=resources,
                                                          evidence=evidence, actions=actions))
        schema = await peer("compiler", self._peers.compiler.PresentUiSchema(
            compiler_pb2.PresentUiSchemaRequest(slice=frozen), timeout=30))
        kept = {r.offer_hash for r in frozen.resources}
        accepted = host_pb2.FreezeSliceRequest(resource_offers=[
            t for t in request.resource_offers if offer_hash(t) in kept])
        await self._db(self._db.store.save_slice, turn.turn_id, frozen.slice_id, frozen.slice_hash,
                       frozen.SerializeToString(deterministic=True), accepted.SerializeToString())
        return host_pb2.FreezeSliceResponse(slice_id=frozen.slice_id, slice_hash=frozen.slice_hash,
                                            model_view_json=canonical(model_view(self._catalog, frozen)),
                                            present_ui_schema_json=schema.input_schema_json,
                                            diagnostics=refused + unavailable)

    async def _actions(self, session: Session) -> tuple[list[ActionOffer], list[common_pb2.Diagnostic]]:
        """The broker's action contracts for this person; without the broker the slice simply offers none."""
        try:
            listed = await self._peers.broker.ListActions(capabilities_pb2.ListActionsRequest(
                actor_id=session.actor_id, tenant_id=session.tenant_id), timeout=5)
        except grpc.aio.AioRpcError as exc:
            return [], [common_pb2.Diagnostic(
                phase="slice", code="slice.actions-unavailable", severity=common_pb2.SEVERITY_WARNING,
                recoverable=True, model_correctable=False,
                message=f"no actions are offered: {error_details(exc, 'capabilities').message}")]
        return [ActionOffer(a.action_id, json.loads(a.input_schema_json), a.effect) for a in listed.actions], []
