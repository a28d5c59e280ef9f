"""gRPC servicer of the capability broker (contract: proto/tessera/capabilities/v1/)."""

from __future__ import annotations

import asyncio
import json
import logging

from services.capabilities.cards import card, summary
from services.capabilities.database import database_away
from services.capabilities.mcp_gate import ToolState
from services.capabilities.messages import receipt
from services.capabilities.tool_policy import digest
from services.capabilities.tool_review import screen_server_text, write_signals
from services.capabilities.wiring import CapabilitiesParts
from shared.data.bounded_json import canonical
from shared.identity.actors import Actor
from shared.identity.principals import principal_for_spiffe
from shared.rpc.authz import caller_identity
from shared.rpc.refusals import Denied, Invalid, NotFound, Refusal
from tessera.capabilities.v1 import capabilities_pb2, capabilities_pb2_grpc
from tessera.common.v1 import common_pb2

logger = logging.getLogger("tessera.broker")


class CapabilityBrokerService(capabilities_pb2_grpc.CapabilityBrokerServiceServicer):
    def __init__(self, parts: CapabilitiesParts) -> None:
        self._info, self._actors, self._broker = parts.info, parts.actors, parts.broker
        self._wording, self._enrollments, self._web_sessions = parts.wording, parts.enrollments, parts.web_sessions

    async def GetInfo(self, request, context):
        return capabilities_pb2.GetInfoResponse(info=self._info, dry_run=self._broker.dry_run,
                                                policy_hash=self._broker.policy.digest,
                                                tool_servers=self._broker.gate.isolation())

    async def ListActions(self, request, context):
        # Every tenant gets the same reviewed contracts today; authorization happens per intent.
        return capabilities_pb2.ListActionsResponse(policy_hash=self._broker.policy.digest, actions=[
            capabilities_pb2.ActionContract(
                action_id=a.action_id, title=a.spec.title, description=a.spec.description,
                input_schema_json=json.dumps(a.spec.input_schema, sort_keys=True), effect=a.effect,
                requires_approval=a.spec.approval == "required")
            for a in self._broker.policy.offered()])

    async def SubmitIntent(self, request, context):
        actor = self._actors.require(request.actor)
        if request.HasField("surface") and _caller(context) != "host":
            # Only the host knows which surface a person is looking at; anyone else naming one
            # could put approval cards on somebody else's screen.
            raise Denied("SURFACE_FROM_HOST_ONLY", "only the host submits intents for a surface")
        intent, replayed = await self._broker.submit(actor, request)
        return capabilities_pb2.SubmitIntentResponse(receipt=receipt(intent), replayed=replayed)

    async def ListApprovals(self, request, context):
        actor = self._actors.require(request.actor)
        try:
            offset = int(request.page_token or 0)
        except ValueError:
            offset = -1
        if not 0 <= offset <= 1_000_000_000:
            raise Invalid("PAGE_TOKEN_INVALID", "not a page token")
        limit = request.page_size or 20
        statuses = list(request.statuses) or [common_pb2.INTENT_STATUS_AWAITING_APPROVAL]
        await self._broker.expire()  # what is listed as awaiting is still decidable
        found = await self._broker.db(self._broker.store.approvals_of, actor.tenant_id, actor.actor_id, statuses,
                                      offset, limit + 1)
        reply = capabilities_pb2.ListApprovalsResponse(approvals=[summary(a, i, self._wording)
                                                                       for a, i in found[:limit]])
        if len(found) > limit:
            reply.next_page_token = str(offset + limit)
        return reply

    async def GetApproval(self, request, context):
        actor = self._actors.require(request.actor)
        await self._broker.expire()
        approval, intent = await self._broker.approval_of(actor, request.approval_id)
        reads = await self._broker.run_reads(intent.session_id)
        gate = self._broker.gate
        return capabilities_pb2.GetApprovalResponse(card=card(
            approval, intent, self._broker.dry_run, reads, self._wording, gate.offers,
            gate.drifted_beside(intent.action_id)))

    async def ListTools(self, request, context):
        self._actors.require(request.actor)
        states = await self._broker.list_tools(request.session_id)
        tools = [capabilities_pb2.Tool(
            tool_id=tool_id, description=state.rule.description, risk=_RISKS[state.rule.risk],
            availability=state.availability, reason=state.reason,
            input_schema_json=json.dumps(state.contract.input_schema, sort_keys=True) if state.contract else "")
            for tool_id, state in sorted(states.items())]
        return capabilities_pb2.ListToolsResponse(tools=tools, degraded=any(not s.available for s in states.values()))

    async def CallTool(self, request, context):
        actor = self._actors.require(request.actor)
        field, value, intent = await self._broker.call_tool(actor, request)
        tainted, flagged = await self._broker.run_taint(request.session_id)
        reply = capabilities_pb2.CallToolResponse(tainted=tainted, flagged=flagged, **{field: value})
        if intent is not None:
            reply.receipt.CopyFrom(receipt(intent))
        return reply

    async def CancelIntents(self, request, context):
        actor = self._actors.require(request.actor)
        cancelled = await self._broker.cancel_turn(actor, request)
        return capabilities_pb2.CancelIntentsResponse(receipts=[receipt(i) for i in cancelled])

    async def RecordReads(self, request, context):
        actor = self._actors.require(request.actor)
        screened = await self._broker.record_reads(actor, request)
        tainted, flagged = await self._broker.run_taint(request.session_id)
        return capabilities_pb2.RecordReadsResponse(screened=screened, tainted=tainted, flagged=flagged)

    async def ReviewTools(self, request, context):
        self._actors.require(request.actor)
        states, unlisted = await self._broker.gate.survey()
        offers = _within_budget(self._broker.gate.unlisted_offers(unlisted))
        # Screening every server text is CPU work of its own: off the event loop, which keeps serving.
        loop = asyncio.get_running_loop()
        reviews = await loop.run_in_executor(self._broker.pool, lambda: (
            [_review(state) for _, state in sorted(states.items())], [_review(state) for state in offers]))
        return capabilities_pb2.ReviewToolsResponse(tools=reviews[0], unlisted_tool_ids=unlisted,
                                                    unlisted=reviews[1])

    async def Decide(self, request, context):
        actor = self._actors.require(request.actor)
        intent, replayed = await self._broker.decide(actor, request)
        return capabilities_pb2.DecideResponse(receipt=receipt(intent), replayed=replayed)

    async def BeginDecision(self, request, context):
        actor = self._actors.require(request.actor)
        return await self._broker.begin_decision(actor, request.approval_id)

    def _operator(self, assertion) -> Actor:
        operator = self._actors.require(assertion)
        if operator.asserted_by != "cli":  # the caller table says CLI too; the assertion must agree
            raise Denied("OPERATOR_FROM_CLI_ONLY",
                         "only an operator the CLI asserts manages people's sign-in links and passkeys")
        return operator

    async def ListPasskeys(self, request, context):
        self._operator(request.actor)
        return await self._broker.db(self._enrollments.passkeys, request.person)

    async def RevokePasskey(self, request, context):
        operator = self._operator(request.actor)
        # The person's web sessions end with the passkey, in its transaction: a browser signed in by whoever
        # held the revoked key does not stay signed in.
        reply = await self._broker.db(self._enrollments.revoke, request.person, request.credential_id)
        await self._broker.db(self._broker.store.audit, request.person.tenant_id, "passkey-revoked",
                              operator.actor_id, person=request.person.actor_id,
                              credential_id=request.credential_id[:1400], sessions_ended=reply.sessions_ended)
        await self._signed_out(operator, request.person, reply.sessions_ended, "passkey-revoked")
        return reply

    async def _signed_out(self, operator: Actor, person: capabilities_pb2.Person, ended: int, cause: str) -> None:
        """On the record like `tessera persons sign-out`: a person's web sessions that a passkey change ended."""
        await self._broker.db(self._broker.store.audit, person.tenant_id, "person-signed-out", operator.actor_id,
                              person=person.actor_id, sessions_ended=ended, cause=cause)

    async def CreateEnrollment(self, request, context):
        operator = self._operator(request.actor)
        reply, revoked = await self._broker.db(self._enrollments.create_link, operator, request.person,
                                               request.replace)
        if request.replace:  # every old passkey revoked and the person's sessions ended: on the record, each key by id
            await self._broker.db(self._broker.store.audit, request.person.tenant_id, "passkeys-replaced",
                                  operator.actor_id, person=request.person.actor_id, revoked=revoked,
                                  sessions_ended=reply.sessions_ended)
            await self._signed_out(operator, request.person, reply.sessions_ended, "passkeys-replaced")
        await self._broker.db(self._broker.store.audit, request.person.tenant_id, "enrollment-link-created",
                              operator.actor_id, person=request.person.actor_id, replace=request.replace)
        return reply

    async def RedeemEnrollment(self, request, context):
        # No actor yet: the link's token is the authority, and web learns from it who the person is.
        try:
            reply = await self._broker.db(self._enrollments.redeem, request.token)
        except Refusal as exc:
            if not database_away(exc):  # a database away refused nothing
                await self._broker.db(self._broker.store.audit, "", "enrollment-link-refused", reason=exc.reason)
            raise
        await self._broker.db(self._broker.store.audit, reply.person.tenant_id, "enrollment-link-redeemed",
                              reply.person.actor_id)
        return reply

    async def RegisterPasskey(self, request, context):
        actor = self._actors.require(request.actor)
        try:
            reply, signed_by = await self._broker.db(
                self._enrollments.register, actor, request.enrollment_id, request.credential_json,
                request.existing_passkey if request.HasField("existing_passkey") else None)
        except Refusal as exc:
            if not database_away(exc):  # a database away refused nothing
                await self._broker.db(self._broker.store.audit, actor.tenant_id, "passkey-refused", actor.actor_id,
                                      reason=exc.reason)
            raise
        await self._broker.db(self._broker.store.audit, actor.tenant_id, "passkey-registered", actor.actor_id,
                              credential_id=reply.credential_id, signed_by=signed_by)
        return reply

    async def OpenWebSession(self, request, context):
        person = self._actors.require(request.actor)
        reply = await self._broker.db(self._web_sessions.open, person, request.signed_in_with)
        await self._broker.db(self._broker.store.audit, person.tenant_id, "web-session-opened", person.actor_id,
                              session_id=reply.session.session_id,
                              signed_in_with=capabilities_pb2.SignInMethod.Name(request.signed_in_with))
        return reply

    async def CheckWebSession(self, request, context):
        # Web asks on every request (a few seconds' memo aside): a read on the pool, nothing to publish.
        return await self._broker.database(self._web_sessions.check, request.secret)

    async def EndWebSession(self, request, context):
        reply, ended = await self._broker.db(self._web_sessions.end, request.secret)
        if ended is not None:
            await self._broker.db(self._broker.store.audit, ended.tenant_id, "web-session-ended", ended.actor_id,
                                  session_id=ended.session_id)
        return reply

    async def SignOutPerson(self, request, context):
        operator = self._operator(request.actor)
        reply = await self._broker.db(self._web_sessions.sign_out, request.person)
        await self._broker.db(self._broker.store.audit, request.person.tenant_id, "person-signed-out",
                              operator.actor_id, person=request.person.actor_id, sessions_ended=reply.ended)
        return reply

    async def GetReceipt(self, request, context):
        actor = self._actors.require(request.actor)
        intent = await self._broker.db(self._broker.store.intent, request.intent_id)
        if intent is None or (intent.tenant_id, intent.actor_id) != (actor.tenant_id, actor.actor_id):
            raise NotFound("INTENT_UNKNOWN", "no such intent")
        return capabilities_pb2.GetReceiptResponse(receipt=receipt(intent))

    async def ExportAudit(self, request, context):
        actor = self._actors.require(request.actor)
        after = request.after_sequence
        while True:
            rows = await self._broker.db(self._broker.store.audit_after, actor.tenant_id, after)
            if not rows:
                return
            for row in rows:
                record = {"sequence": row.sequence, "at": row.at, "kind": row.kind, "intent_id": row.intent_id,
                          "approval_id": row.approval_id, "actor_id": row.actor_id, "tenant_id": row.tenant_id,
                          "detail": json.loads(row.detail_json)}
                yield capabilities_pb2.ExportAuditResponse(sequence=row.sequence,
                                                           record_json=json.dumps(record, sort_keys=True))
                after = row.sequence


_RISKS = {"read": capabilities_pb2.TOOL_RISK_READ, "mutate": capabilities_pb2.TOOL_RISK_MUTATE}


# A review names every unlisted tool, and shows this many in full, in at most this many bytes of their
# descriptions and schemas (below gRPC's 4 MiB message limit, with room for the listed tools).
MAX_UNLISTED_IN_FULL = 200
MAX_UNLISTED_BYTES = 2 << 20


def _within_budget(offers: list[ToolState]) -> list[ToolState]:
    """Unlisted tools to show in full, in order, while they fit the budget (the rest are named only)."""
    shown, size = [], 0
    for state in offers[:MAX_UNLISTED_IN_FULL]:
        size += len(state.description.encode()) + len(canonical(state.input_schema).encode())
        if size > MAX_UNLISTED_BYTES:
            break
        shown.append(state)
    return shown


def _snapshot(description: str, input_schema: dict) -> capabilities_pb2.ToolSnapshot:
    return capabilities_pb2.ToolSnapshot(description=description, input_schema_json=canonical(input_schema),
                                         description_sha256=digest(description),
                                         input_schema_sha256=digest(input_schema))


def _review(state: ToolState) -> capabilities_pb2.ToolReview:
    """One tool as a reviewer must see it: ours (if listed), pinned, offered now, and what the server's own
    words and shape give away; an unlisted tool (no rule) has no risk, no description of ours and no pin."""
    rule, pin = state.rule, state.rule.pin if state.rule else None
    offered = bool(state.description or state.input_schema)
    name = state.tool_id.partition(".")[2]
    review = capabilities_pb2.ToolReview(
        tool_id=state.tool_id, risk=_RISKS[rule.risk] if rule else capabilities_pb2.TOOL_RISK_UNSPECIFIED,
        availability=state.availability, reason=state.reason, our_description=rule.description if rule else "",
        annotations_json=json.dumps(state.annotations, sort_keys=True),
        current=_snapshot(state.description, state.input_schema) if offered else None,
        server_text_matches=[capabilities_pb2.ScreenMatch(rule=m.rule, snippet=m.snippet, source=state.tool_id,
                                                          ref=m.ref) for m in
                             screen_server_text(state.tool_id, state.description, state.input_schema)],
        write_signals=write_signals(name, state.description, state.input_schema) if offered else [])
    if pin is not None:
        review.pinned.CopyFrom(_snapshot(pin.description, pin.input_schema))
        review.pinned.reviewed_by = pin.reviewed_by
        review.pinned.reviewed_at.FromDatetime(pin.reviewed_at)
    return review


def _caller(context) -> str | None:
    identity = caller_identity(context)
    return principal_for_spiffe(identity) if identity else None
