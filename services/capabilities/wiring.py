"""How the capability broker is put together (§3, §7, §8): its policies, its database and the one data changes
go to, the tool gate, signatures and the host publisher; server.py serves over them, sweeps.py works beside."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import sqlalchemy as sa

from services.capabilities.broker import Broker
from services.capabilities.changes import ChangeTargetUnavailable, DataChanges, TargetCheckRefused
from services.capabilities.config import CapabilitiesSettings
from services.capabilities.database import BrokerDatabase
from services.capabilities.enrollment import Enrollments
from services.capabilities.mcp_gate import ToolGate
from services.capabilities.metrics import BrokerMetrics
from services.capabilities.model_entities import ModelUnreadable, load_entities, unmodelled_targets
from services.capabilities.passkey_store import PasskeyStore
from services.capabilities.passkeys import RelyingParty
from services.capabilities.policy import ActionPolicy, Approvers, ChangeTarget, PolicyError
from services.capabilities.publisher import HostPublisher
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import MIGRATIONS, BrokerStore, engine_for
from services.capabilities.sweeps import purge_web_sessions, recover, sweep_expired, warm_up
from services.capabilities.tool_policy import ToolPolicy
from services.capabilities.web_session_store import WebSessionStore
from services.capabilities.web_sessions import WebSessions
from services.capabilities.wording import Wording
from shared.config import peer_target
from shared.data.db import prepare_schema, worth_waiting
from shared.identity.actors import ActorVerifier
from shared.identity.certs import CredentialError, load_verify_key, verify_key_path
from shared.rpc import runtime
from shared.rpc.channels import aio_channel
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2_grpc

logger = logging.getLogger("tessera.broker")


@dataclass(frozen=True, kw_only=True)
class CapabilitiesParts:
    info: common_pb2.ServiceInfo
    actors: ActorVerifier
    broker: Broker
    wording: Wording
    enrollments: Enrollments
    web_sessions: WebSessions
    lifecycle: runtime.Lifecycle


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


async def build(context: runtime.ServiceContext) -> CapabilitiesParts:
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
    # Separate tasks on purpose: expiry must never wait behind a tool server that is slow to start, nor
    # behind an effect the restart pass is taking up.
    background = (publisher.run, partial(sweep_expired, broker), partial(recover, broker), partial(warm_up, gate),
                  hold_tool_servers, partial(purge_web_sessions, web_sessions, database))
    return CapabilitiesParts(info=runtime.service_info(context), actors=ActorVerifier.from_cert_dir(settings.cert_dir),
                             broker=broker, wording=Wording(policy, tool_policy),
                             enrollments=Enrollments(people, relying_party), web_sessions=web_sessions,
                             lifecycle=runtime.Lifecycle(readiness=(database_reachable,), background=background,
                                                         on_stop=stop))
