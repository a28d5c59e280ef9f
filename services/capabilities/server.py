"""gRPC servicer of the capability broker (contract: proto/tessera/capabilities/v1/)."""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import sqlalchemy as sa

from services.capabilities.broker import Broker
from services.capabilities.cards import card, summary
from services.capabilities.changes import ChangeTargetUnavailable, DataChanges, TargetCheckRefused
from services.capabilities.config import CapabilitiesSettings
from services.capabilities.database import BrokerDatabase, database_away
from services.capabilities.enrollment import Enrollments
from services.capabilities.mcp_gate import ToolGate, ToolState
from services.capabilities.messages import receipt
from services.capabilities.metrics import BrokerMetrics
from services.capabilities.model_entities import ModelUnreadable, load_entities, unmodelled_targets
from services.capabilities.passkey_store import PasskeyStore
from services.capabilities.passkeys import RelyingParty
from services.capabilities.policy import ActionPolicy, Approvers, ChangeTarget, PolicyError
from services.capabilities.publisher import HostPublisher
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import MIGRATIONS, BrokerStore, engine_for
from services.capabilities.tool_policy import ToolPolicy, digest
from services.capabilities.tool_review import screen_server_text, write_signals
from services.capabilities.web_session_store import WebSessionStore
from services.capabilities.web_sessions import WebSessions
from services.capabilities.wording import Wording
from shared import runtime
from shared.actors import Actor, ActorVerifier
from shared.authz import caller_identity
from shared.bounded_json import canonical
from shared.certs import CredentialError, load_verify_key, verify_key_path
from shared.channels import aio_channel
from shared.config import peer_target
from shared.db import prepare_schema, worth_waiting
from shared.identity import principal_for_spiffe
from shared.refusals import Denied, Invalid, NotFound, Refusal
from tessera.capabilities.v1 import capabilities_pb2, capabilities_pb2_grpc
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2_grpc

logger = logging.getLogger("tessera.broker")
EXPIRY_SWEEP_SECONDS = 1.0
WEB_SESSION_PURGE_SECONDS = 300.0  # ended and expired web sessions leave the table within this of their time


class CapabilityBrokerService(capabilities_pb2_grpc.CapabilityBrokerServiceServicer):
    def __init__(self, context: runtime.ServiceContext, broker: Broker, wording: Wording,
                 enrollments: Enrollments, web_sessions: WebSessions) -> None:
        self._info = runtime.service_info(context)
        self._actors = ActorVerifier.from_cert_dir(context.settings.cert_dir)
        self._broker = broker
        self._wording = wording
        self._enrollments = enrollments
        self._web_sessions = web_sessions

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


def _databases(settings: CapabilitiesSettings) -> tuple[sa.Engine, sa.Engine]:
    """The broker's own database (its schema this release's) and the write credential for data changes
    (blocking)."""
    try:
        engine = engine_for(settings.database_url)
        prepare_schema(engine, MIGRATIONS, settings.migrations)
    except Exception as exc:  # a database that cannot be reached or migrated
        failure = runtime.DependencyUnavailable if worth_waiting(exc) else runtime.StartupError
        raise failure(f"TESSERA_CAPABILITIES_DATABASE_URL: cannot prepare the broker database: "
                      f"{str(exc).splitlines()[0][:200]}") from None
    try:
        changes_engine = sa.create_engine(settings.changes_url.get_secret_value(), connect_args=(
            {"timeout": 30} if settings.changes_url.get_secret_value().startswith("sqlite") else {}))
    except Exception as exc:  # never echo the credential itself
        raise runtime.StartupError(f"TESSERA_CAPABILITIES_CHANGES_URL: not a usable database URL "
                           f"({type(exc).__name__})") from None
    return engine, changes_engine


def _offerable(policy: ActionPolicy, changes_engine: sa.Engine,
               model_path: Path) -> tuple[ActionPolicy, dict[str, ChangeTarget]]:
    """The policy with the actions whose data change targets the semantic model does not hold, or the database
    lacks, withheld (blocking): one that would fail when pressed, or changes records of another model, is never
    offered, and each is said once, naming it. With the targets left: a change to another is refused as
    undeclared, never tried."""
    targets = policy.policy.data_changes
    try:
        unmodelled = unmodelled_targets(targets, load_entities(model_path), f"the semantic model {model_path.name}") \
            if targets else {}
    except ModelUnreadable as exc:
        raise runtime.StartupError(f"TESSERA_CAPABILITIES_SEMANTIC_MODEL: {exc}") from None
    changes = DataChanges(changes_engine, {name: t for name, t in targets.items() if name not in unmodelled})
    try:
        absent = {**changes.absent_targets(), **unmodelled}
    except ChangeTargetUnavailable:
        raise runtime.DependencyUnavailable("TESSERA_CAPABILITIES_CHANGES_URL: the database data changes go to "
                                            "does not answer") from None
    except TargetCheckRefused as exc:
        raise runtime.StartupError(f"TESSERA_CAPABILITIES_CHANGES_URL: {exc}") from None
    offered, withheld = policy.withholding(absent)
    for line in withheld:
        logger.error("%s", line)
    return offered, {name: target for name, target in policy.policy.data_changes.items() if name not in absent}


def _operator_key(settings: CapabilitiesSettings):
    """The operator CLI's public key: it signs the CLI's actor assertions and its decisions."""
    try:
        return load_verify_key(verify_key_path(settings.cert_dir, "cli"))
    except CredentialError as exc:
        raise runtime.StartupError(str(exc)) from None


def approvers_of(policy: ActionPolicy, tool_policy: ToolPolicy, action_id: str) -> Approvers:
    """Who may sign the approval of an intent: its action contract's or its tool rule's approvers."""
    action = policy.actions.get(action_id)
    if action is not None:
        return action.spec
    found = tool_policy.rule(action_id)
    return found[3] if found else Approvers()  # a tool no longer listed: the default, the person's passkey only


def _tool_gate(settings: CapabilitiesSettings, tool_policy: ToolPolicy, store: BrokerStore,
               database: BrokerDatabase, metrics: BrokerMetrics) -> ToolGate:
    """The MCP tool gate, its drift and unboxed-server alerts going to the log, the metrics and the audit;
    servers that cannot be boxed here are named once, before any runs."""
    def alert(kind: str, subject: str, **detail) -> None:
        """An audit record of the system's own (off the event loop); a failure to write it is logged."""
        written = database.pool.submit(database.guarded, store.audit, "system", kind, **detail)
        written.add_done_callback(lambda done: done.exception() and logger.error(
            "the %s alert for %s was not written to the audit trail: %s", kind, subject, done.exception()))

    def drifted(tool_id: str, what: str) -> None:
        """A pinned tool changed: it is denied from now on; say so loudly (log, metric, audit)."""
        logger.warning("tool drift: %s changed its %s since review; denied until re-pinned", tool_id, what)
        metrics.drift.labels(tool_id).inc()
        alert("tool-drift", tool_id, tool_id=tool_id, changed=what)

    def unboxed(server: str) -> None:
        """A server its policy runs unconfined (`sandbox: none`) is starting: on the record, every time."""
        logger.warning("tool server %s starts unboxed (its policy says sandbox: none): it can read whatever "
                       "the broker's user can", server)
        alert("tool-server-unboxed", server, server=server)

    gate = ToolGate(tool_policy, settings.mcp_log_dir, on_drift=drifted, on_unboxed=unboxed)
    for server in gate.isolation():  # checked once at start (a real, empty box): said before any server runs
        if server.isolation == capabilities_pb2.TOOL_SERVER_ISOLATION_NOT_STARTED:
            logger.error("tool server %s will not be started: it must run boxed and %s", server.name,
                         server.detail)
    return gate


async def build(context: runtime.ServiceContext) -> list[runtime.Registration]:
    settings: CapabilitiesSettings = context.settings
    try:
        policy = ActionPolicy.load(settings.actions_file)
        tool_policy = ToolPolicy.load(settings.tools_file)
    except PolicyError as exc:
        raise runtime.StartupError(str(exc)) from None
    engine, changes_engine = await runtime.off_loop(_databases, settings)  # health keeps answering meanwhile
    policy, targets = await runtime.off_loop(_offerable, policy, changes_engine, settings.semantic_model)
    store = BrokerStore(engine, lease_seconds=settings.lease_seconds)
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="broker-db")
    database = BrokerDatabase(pool)  # every path to the broker's database: one outage, said once
    lease_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="broker-lease")
    metrics = BrokerMetrics()
    host = host_pb2_grpc.HostServiceStub(aio_channel(peer_target("host"), context.credentials, "host"))
    publisher = HostPublisher(store, database, host)

    gate = _tool_gate(settings, tool_policy, store, database, metrics)
    people = PasskeyStore(engine)
    relying_party = RelyingParty(settings.webauthn_rp_id, tuple(settings.webauthn_origins))
    signatures = DecisionSignatures(people, relying_party, _operator_key(settings),
                                    partial(approvers_of, policy, tool_policy))
    broker = Broker(policy=policy, store=store, changes=DataChanges(changes_engine, targets), pool=pool,
                    approval_ttl=settings.approval_ttl_seconds, dry_run=settings.dry_run, metrics=metrics, gate=gate,
                    signatures=signatures, on_event=publisher.wake.set, lease_pool=lease_pool, database=database)
    metrics_server = metrics.serve(settings.listen_host, settings.metrics_port) if settings.metrics_port else None

    async def database_reachable() -> str | None:
        return await asyncio.get_running_loop().run_in_executor(pool, store.ping)

    async def hold_tool_servers() -> None:
        """Owns the MCP server connections: they close (all at once) when the broker stops."""
        try:
            await asyncio.Event().wait()
        finally:
            await broker.journal.close()  # the reads already answered reach the database first
            await gate.close()

    def stop() -> None:
        if metrics_server:
            metrics_server[0].shutdown()
        pool.shutdown(wait=True)
        lease_pool.shutdown(wait=True)
        engine.dispose()
        changes_engine.dispose()

    web_sessions = WebSessions(WebSessionStore(engine), settings.web_session_seconds, people)
    service = CapabilityBrokerService(context, broker, Wording(policy, tool_policy),
                                      Enrollments(people, relying_party), web_sessions)
    # Separate tasks on purpose: expiry must never wait behind a tool server that is slow to start, nor
    # behind an effect the restart pass is taking up.
    return [runtime.registration_for("capabilities", service,
                             readiness=[database_reachable], on_stop=stop,
                             background=[publisher.run, partial(sweep_expired, broker), partial(recover, broker),
                                         partial(warm_up, gate), hold_tool_servers,
                                         partial(purge_web_sessions, web_sessions, database)])]


# The background loops below go on through an outage of the broker's database and resume by themselves: the
# outage is said by the database's Outage (once, now and then, once when it ends), so they add no line of
# their own for it; anything else fails one round, with its traceback.


async def sweep_expired(broker: Broker) -> None:
    """Expire due approvals every EXPIRY_SWEEP_SECONDS, from the moment the broker serves."""
    while True:
        try:
            await broker.expire()
        except Exception as exc:  # keep sweeping; the next round retries
            if not database_away(exc):
                logger.exception("expiring approvals failed")
        await asyncio.sleep(EXPIRY_SWEEP_SECONDS)


async def purge_web_sessions(web_sessions: WebSessions, database: BrokerDatabase) -> None:
    """Keep the session table bounded: every WEB_SESSION_PURGE_SECONDS, drop expired and long-ended sessions."""
    while True:
        try:
            purged = await database(web_sessions.purge)
            if purged:
                logger.info("purged %d ended or expired web session(s)", purged)
        except Exception as exc:  # the database hiccuped: the next round retries
            if not database_away(exc):
                logger.exception("purging web sessions failed")
        await asyncio.sleep(WEB_SESSION_PURGE_SECONDS)


async def recover(broker: Broker) -> None:
    """Take up approved intents nobody is running: at start (what a previous process left; each round until
    the database answers for it), then every third of a lease (what a replica that died left, or an effect
    whose database did not answer), so a surviving replica takes over."""
    resumed = False
    while True:
        try:
            if not resumed:
                taken = await broker.resume()
                resumed = True
                if taken:
                    logger.info("took up %d approved intent(s) left running by a previous process", taken)
            elif taken := await broker.take_up():
                logger.info("took up %d approved intent(s) whose replica stopped answering for them", taken)
        except Exception as exc:  # the database hiccuped: the next round retries
            if not database_away(exc):
                logger.exception("taking up orphaned intents failed")
        await asyncio.sleep(min(10.0, broker.store.lease_seconds / 3))


async def warm_up(gate: ToolGate) -> None:
    """Open the tool servers now, so the first session does not wait for them to start."""
    try:
        await gate.survey()
    except Exception:  # a server that cannot start is reported per session; it must not stop us
        logger.exception("warming up the tool servers failed")
