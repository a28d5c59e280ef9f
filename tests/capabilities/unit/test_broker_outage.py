"""The broker when a database stops answering, in process through its servicer (issue 39).

Its own database away: every call web and the CLI make (the approvals list, the card, the passkey challenge,
the flag press, the decision, the session check) is UNAVAILABLE / DATABASE_UNAVAILABLE with one sentence and
no driver words or file path; the background loops say the outage once when it starts and once when it
ends, with no traceback; and everything answers again when the database does, without a restart. The data
changes' target away: the flag press is CHANGE_TARGET_UNAVAILABLE, and an approved change is neither lost
nor applied twice (it stays running and is taken up again, reconciled against the record versions).

A SQLite database goes away by having its folder replaced with a file (root ignores permissions, but nobody
opens a file inside a file) and its engine's idle connections closed, as a database that goes away ends
them; PostgreSQL (skipped visibly without a server) through a relay the test closes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import sqlite3
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest
import sqlalchemy as sa

from cli.launcher import free_ports
from services.capabilities import publisher as publisher_module
from services.capabilities import sweeps
from services.capabilities.broker import Broker
from services.capabilities.changes import DataChanges
from services.capabilities.database import BrokerDatabase
from services.capabilities.enrollment import Enrollments
from services.capabilities.mcp_gate import ToolGate
from services.capabilities.metrics import BrokerMetrics
from services.capabilities.passkey_store import PasskeyStore
from services.capabilities.passkeys import RelyingParty
from services.capabilities.policy import ActionPolicy
from services.capabilities.publisher import HostPublisher
from services.capabilities.server import CapabilityBrokerService
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import BrokerStore, engine_for, migrate
from services.capabilities.tool_policy import ToolPolicy
from services.capabilities.web_session_store import WebSessionStore
from services.capabilities.web_sessions import WebSessions
from services.capabilities.wiring import CapabilitiesParts, approvers_of
from services.capabilities.wording import Wording
from shared.data.db import unavailable
from shared.identity.actors import ActorVerifier, assert_actor
from shared.identity.certs import load_signing_key, load_verify_key, signing_key_path, verify_key_path
from shared.identity.decisions import signed_by_operator
from shared.rpc.errors import TesseraError, status_of
from shared.rpc.refusals import Refusal
from shared.rpc.runtime import Lifecycle
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tests.fixtures.approvers import operator_key_named
from tests.fixtures.forwarder import TcpForwarder
from tests.fixtures.postgres import postgres_database
from tests.fixtures.servicer_context import CallerContext
from tests.fixtures.signing import verified_signature
from tests.fixtures.waiting import wait_until_async

AWAY = unavailable("broker database")  # what a caller is told, the same whatever the driver said
DRIVER_WORDS = ("sqlite", "psycopg", "operational", "unable to open", "connection refused", "/")


class SqliteFolder:
    """A SQLite database in a folder of its own, which the test takes away and brings back."""

    def __init__(self, folder: Path, name: str) -> None:
        folder.mkdir()
        self.folder, self.moved, self.path = folder, folder.with_name(folder.name + "-away"), folder / name
        self.url = f"sqlite:///{self.path}"
        self.engines: list[sa.Engine] = []

    def cut(self) -> None:
        self.folder.rename(self.moved)
        self.folder.write_text("")
        for engine in self.engines:  # a database that goes away ends the connections open to it
            engine.dispose()

    def back(self) -> None:
        if self.moved.exists():
            self.folder.unlink()
            self.moved.rename(self.folder)


class PostgresRelay:
    """A throwaway PostgreSQL database reached through a relay the test closes (cutting its connections)
    and opens again on the same port."""

    def __init__(self, request) -> None:
        direct = sa.make_url(postgres_database(request, "tessera_broker_outage"))
        self.target, self.port = (direct.host or "127.0.0.1", direct.port or 5432), free_ports(1)[0]
        self.relay = TcpForwarder(self.port, self.target)
        self.url = direct.set(host="127.0.0.1", port=self.port).render_as_string(hide_password=False)
        self.engines: list[sa.Engine] = []
        request.addfinalizer(lambda: self.relay and self.relay.close(connections=True))

    def cut(self) -> None:
        self.relay.close(connections=True)
        self.relay = None

    def back(self) -> None:
        if self.relay is None:
            self.relay = TcpForwarder(self.port, self.target)


class _Host:
    """The host as the publisher reaches it: takes every event."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def PublishIntentEvent(self, request, timeout):  # noqa: N802  (the gRPC method name)
        self.sent.append(request.event_id)


class World:
    """The broker's servicer and its parts, wired as build() wires them, over databases the test controls."""

    def __init__(self, request, directory: Path, cert_dir: Path, warehouse_url: str, backend: str) -> None:
        self.database_place = SqliteFolder(directory / "broker", "broker.sqlite") if backend == "sqlite" \
            else PostgresRelay(request)
        self.warehouse = SqliteFolder(directory / "warehouse", "warehouse.sqlite")
        shutil.copy(warehouse_url.removeprefix("sqlite:///"), self.warehouse.path)
        self.engine = engine_for(self.database_place.url)
        migrate(self.engine)
        self.changes_engine = engine_for(self.warehouse.url)
        self.database_place.engines.append(self.engine)
        self.warehouse.engines.append(self.changes_engine)
        tools = directory / "tools.yaml"
        tools.write_text(json.dumps({"version": 1, "servers": {}}))
        policy = ActionPolicy.load(operator_key_named(directory / "actions.yaml", ("acme",)))
        tool_policy = ToolPolicy.load(tools)
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="outage-broker")
        self.database = BrokerDatabase(self.pool)
        self.store = BrokerStore(self.engine)
        people, relying_party = PasskeyStore(self.engine), RelyingParty("localhost")
        signatures = DecisionSignatures(people, relying_party, load_verify_key(verify_key_path(cert_dir, "cli")),
                                        partial(approvers_of, policy, tool_policy))
        self.host = _Host()
        self.publisher = HostPublisher(self.store, self.database, self.host)
        self.broker = Broker(policy=policy, store=self.store,
                             changes=DataChanges(self.changes_engine, policy.policy.data_changes), pool=self.pool,
                             approval_ttl=600, dry_run=False, metrics=BrokerMetrics(),
                             gate=ToolGate(tool_policy, directory), signatures=signatures,
                             on_event=self.publisher.wake.set, database=self.database)
        self.web_sessions = WebSessions(WebSessionStore(self.engine), 3600, people)
        self.servicer = CapabilityBrokerService(CapabilitiesParts(
            info=common_pb2.ServiceInfo(name="capabilities"), actors=ActorVerifier.from_cert_dir(cert_dir),
            broker=self.broker, wording=Wording(policy, tool_policy), enrollments=Enrollments(people, relying_party),
            web_sessions=self.web_sessions, lifecycle=Lifecycle()))
        self.operator_key = load_signing_key(signing_key_path(cert_dir, "cli"))
        self.alice = assert_actor(self.operator_key, "alice", "acme")
        self.alice_on_web = assert_actor(load_signing_key(signing_key_path(cert_dir, "web")), "alice", "acme")

    async def call(self, method: str, request, principal: str = "agent"):
        """The servicer's answer, or its refusal as the interceptor sends it."""
        try:
            return await getattr(self.servicer, method)(request, CallerContext(principal))
        except Refusal as domain:
            return status_of(domain)

    async def flag(self, record_id: int, command: str = "", principal: str = "agent"):
        """The flag press (through the host, on a surface) or the agent's request for the same."""
        surface = cap.SurfaceRef(surface_id="srf_outage", node_id="n1", command_id=command) if command else None
        return await self.call("SubmitIntent", cap.SubmitIntentRequest(
            actor=self.alice, session_id="ses_outage", action_id="orders.flag_for_review",
            input_json=json.dumps({"record_id": record_id, "reason": "odd"}),
            idempotency_key=command or uuid.uuid4().hex, surface=surface), principal)

    async def signed_decision(self, receipt) -> cap.DecideRequest:
        """An approval as the operator's CLI signs it, over a nonce the broker gives out."""
        begun = await self.call("BeginDecision", cap.BeginDecisionRequest(actor=self.alice,
                                                                          approval_id=receipt.approval_id), "cli")
        assert not isinstance(begun, TesseraError), begun
        return signed_by_operator(cap.DecideRequest(
            actor=self.alice, approval_id=receipt.approval_id, decision=cap.DECISION_APPROVE, reason="checked",
            arguments_sha256=receipt.arguments_sha256, decision_id=uuid.uuid4().hex), begun.nonce,
            self.operator_key)

    def version(self, record_id: int) -> int:
        with sqlite3.connect(self.warehouse.path) as connection:
            return connection.execute("SELECT version FROM orders WHERE order_id = ?", (record_id,)).fetchone()[0]

    def close(self) -> None:
        self.database_place.back()
        self.warehouse.back()
        self.pool.shutdown(wait=True)
        self.broker.execution.lease_pool.shutdown(wait=True)
        self.engine.dispose()
        self.changes_engine.dispose()


def _world(request, tmp_path, cert_dir, warehouse_url, backend: str):
    world = World(request, tmp_path, cert_dir, warehouse_url, backend)
    request.addfinalizer(world.close)
    return world


@pytest.fixture
def world(request, tmp_path, cert_dir, warehouse_url):
    return _world(request, tmp_path, cert_dir, warehouse_url, "sqlite")


def _said(caplog, logger: str = "tessera.db") -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


def _no_tracebacks(caplog) -> None:
    loud = [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not loud, loud


def _told_away(reply, where: str) -> None:
    assert isinstance(reply, TesseraError), (where, reply)
    assert (reply.code.name, reply.reason, reply.message) == ("UNAVAILABLE", AWAY.reason, AWAY.message), where
    assert not any(word in reply.message.lower() for word in DRIVER_WORDS), (where, reply.message)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_each_call_web_and_the_cli_make_is_unavailable_while_the_database_is_away_then_answers_again(
        request, tmp_path, cert_dir, warehouse_url, backend, caplog):
    world = _world(request, tmp_path, cert_dir, warehouse_url, backend)

    async def scenario():
        pending = (await world.flag(1_001, command="cmd-before", principal="host")).receipt
        opened = await world.call("OpenWebSession", cap.OpenWebSessionRequest(
            actor=world.alice_on_web, signed_in_with=cap.SIGN_IN_METHOD_LINK), "web")
        decision = await world.signed_decision(pending)

        world.database_place.cut()
        calls = {
            "ListApprovals": lambda: world.call("ListApprovals", cap.ListApprovalsRequest(actor=world.alice), "web"),
            "GetApproval": lambda: world.call("GetApproval", cap.GetApprovalRequest(
                actor=world.alice, approval_id=pending.approval_id), "web"),
            "BeginDecision": lambda: world.call("BeginDecision", cap.BeginDecisionRequest(
                actor=world.alice, approval_id=pending.approval_id), "web"),
            "SubmitIntent": lambda: world.flag(1_002, command="cmd-during", principal="host"),
            "Decide": lambda: world.call("Decide", decision, "cli"),
            "CheckWebSession": lambda: world.call("CheckWebSession", cap.CheckWebSessionRequest(
                secret=opened.secret), "web"),
            "GetReceipt": lambda: world.call("GetReceipt", cap.GetReceiptRequest(
                actor=world.alice, intent_id=pending.intent_id), "cli"),
        }
        for name, call in calls.items():
            _told_away(await call(), name)
        before = world.version(1_001)  # the warehouse never went away

        world.database_place.back()  # the same process, no restart
        listed = await calls["ListApprovals"]()
        assert [a.approval_id for a in listed.approvals] == [pending.approval_id]
        assert (await calls["GetApproval"]()).card.summary.approval_id == pending.approval_id
        decided = await calls["Decide"]()  # the very request refused during the outage: its nonce still good
        assert decided.receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED, decided
        assert world.version(1_001) == before + 1
        during = await calls["SubmitIntent"]()  # nothing was recorded while away: the press now counts
        assert during.receipt.status == common_pb2.INTENT_STATUS_AWAITING_APPROVAL and not during.replayed
        assert (await calls["CheckWebSession"]()).session.session_id == opened.session.session_id
        assert (await calls["GetReceipt"]()).receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert _said(caplog) == ["broker database is not answering", "broker database is answering again"]
    _no_tracebacks(caplog)
    kinds = [r.kind for r in world.store.audit_after("acme", 0)]
    assert "decision-refused" not in kinds  # a database away refused nothing


def _counted(calls: dict, name: str, function):
    """`function`, counting its calls that failed and those that answered."""
    calls[name] = {"failed": 0, "answered": 0}

    def counting(*args, **kwargs):
        try:
            result = function(*args, **kwargs)
        except Exception:
            calls[name]["failed"] += 1
            raise
        calls[name]["answered"] += 1
        return result

    return counting


def test_the_background_loops_say_an_outage_once_and_its_end_once_and_resume_by_themselves(
        world, monkeypatch, caplog):
    """Many rounds of each loop fail while the database is away: one line when it stops answering, one when
    it answers again, no traceback and no line per round."""
    monkeypatch.setattr(sweeps, "EXPIRY_SWEEP_SECONDS", 0.005)
    monkeypatch.setattr(sweeps, "WEB_SESSION_PURGE_SECONDS", 0.005)
    monkeypatch.setattr(publisher_module, "IDLE_SECONDS", 0.005)
    store, calls = world.store, {}
    running, _ = store.create("claim-held", {
        "tenant_id": "acme", "actor_id": "alice", "session_id": "ses_1", "action_id": "orders.flag_for_review",
        "effect": common_pb2.ACTION_EFFECT_REVERSIBLE_WRITE, "input_json": "{}", "arguments_json": "{}",
        "arguments_sha256": "a" * 64, "surface": None, "dry_run": False}, 600, "reversible-write")
    store.lease_seconds = 0.06  # renewed every 0.02 s: many renewals fail while the database is away
    store.decide(running.approval_id, "acme", "alice", True, "ok", "a" * 64, [],
                 signature=verified_signature(store, running.approval_id))
    store.expire_due = _counted(calls, "sweep", store.expire_due)
    store.pending_events = _counted(calls, "publisher", store.pending_events)
    store.renew = _counted(calls, "lease", store.renew)
    world.web_sessions.records.purge = _counted(calls, "purge", world.web_sessions.records.purge)
    # A loop with a 1 s backoff once it fails (the publisher) needs one failed round; the others, many.
    rounds = {"sweep": 20, "purge": 20, "lease": 10, "publisher": 1}
    # The database goes away and comes back between two calls, never under one: a call under way at the cut
    # may still finish on the file SQLite holds open, and would count as the database answering again.
    between_calls, guarded = threading.Lock(), world.database.guarded

    def one_at_a_time(function, *args, **kwargs):
        with between_calls:
            return guarded(function, *args, **kwargs)

    world.database.guarded = one_at_a_time

    def counts(kind: str) -> dict:
        return {name: calls[name][kind] for name in rounds}

    async def scenario():
        loops = [asyncio.create_task(loop) for loop in (
            sweeps.sweep_expired(world.broker), sweeps.purge_web_sessions(world.web_sessions, world.database),
            world.publisher.run(), world.broker.execution.hold_lease(running.intent_id))]
        await wait_until_async(lambda: all(n >= 2 for n in counts("answered").values()), what="healthy rounds",
                               detail=lambda: calls)
        with between_calls:
            world.database_place.cut()
        failed = counts("failed")
        await wait_until_async(lambda: all(counts("failed")[n] >= failed[n] + r for n, r in rounds.items()),
                               what="rounds failing while the database is away", detail=lambda: calls)
        with between_calls:
            world.database_place.back()
        answered = counts("answered")
        await wait_until_async(lambda: all(counts("answered")[n] >= answered[n] + 2 for n in rounds),
                               what="every loop answering again, without a restart", detail=lambda: calls)
        assert not any(loop.done() for loop in loops)
        for loop in loops:
            loop.cancel()
        await asyncio.gather(*loops, return_exceptions=True)

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert _said(caplog) == ["broker database is not answering", "broker database is answering again"]
    _no_tracebacks(caplog)
    assert store.intent(running.intent_id).status == common_pb2.INTENT_STATUS_RUNNING  # still ours, renewed


def test_a_broker_that_starts_while_its_database_is_away_takes_up_what_was_left_running_once_it_answers(
        world, caplog):
    """The start-up pass fails while the database is away and is tried again each round, with nothing logged
    per round; once it answers, the approved intent a previous process left runs, once."""
    world.store.lease_seconds = 0.06  # the recovery rounds come every 0.02 s
    pending = asyncio.run(world.flag(1_010)).receipt
    # Approved in a previous life of the broker, which stopped before running it.
    previous = BrokerStore(world.engine, lease_seconds=-1)
    previous.decide(pending.approval_id, "acme", "alice", True, "checked", pending.arguments_sha256, ["e1"],
                    signature=verified_signature(previous, pending.approval_id))
    before = world.version(1_010)
    with caplog.at_level(logging.INFO):
        world.database_place.cut()
        take_ups = {}
        world.store.take_up = _counted(take_ups, "recover", world.store.take_up)

        async def start_then_answer():
            recovering = asyncio.create_task(sweeps.recover(world.broker))
            await wait_until_async(lambda: take_ups["recover"]["failed"] >= 10, what="start-up passes failing",
                                   detail=lambda: take_ups)
            world.database_place.back()
            await wait_until_async(lambda: world.store.intent(pending.intent_id).status ==
                                   common_pb2.INTENT_STATUS_SUCCEEDED, what="the intent left running, run")
            recovering.cancel()
            await asyncio.gather(recovering, return_exceptions=True)

        asyncio.run(start_then_answer())
    assert world.version(1_010) == before + 1
    assert _said(caplog) == ["broker database is not answering", "broker database is answering again"]
    _no_tracebacks(caplog)


def test_a_flag_press_while_the_change_target_is_away_is_refused_as_such_and_records_nothing(world, caplog):
    async def scenario():
        world.warehouse.cut()
        for _ in range(5):
            refused = await world.flag(1_020, command=f"cmd-{uuid.uuid4().hex}", principal="host")
            assert isinstance(refused, TesseraError), refused
            assert (refused.code.name, refused.reason) == ("UNAVAILABLE", "CHANGE_TARGET_UNAVAILABLE")
            assert refused.message == "the order records cannot be reached right now; try again in a few seconds"
        world.warehouse.back()
        return await world.flag(1_020, command="cmd-after", principal="host")

    with caplog.at_level(logging.INFO):
        after = asyncio.run(scenario())
    assert after.receipt.status == common_pb2.INTENT_STATUS_AWAITING_APPROVAL
    assert len(world.store.approvals_of("acme", "alice", [], 0, 10)) == 1  # the refused presses left nothing
    assert _said(caplog) == ["data change target is not answering", "data change target is answering again"]
    _no_tracebacks(caplog)


def test_an_approved_change_whose_target_is_away_stays_running_then_is_applied_once(world, caplog):
    """The decision is recorded and the intent is neither failed nor lost: once its lease runs out and the
    target answers, a take-up reconciles it against the record versions and applies it, once."""
    world.store.lease_seconds = 0.2
    before = world.version(1_030)

    async def scenario():
        pending = (await world.flag(1_030)).receipt
        decision = await world.signed_decision(pending)
        world.warehouse.cut()
        decided = await world.call("Decide", decision, "cli")
        assert decided.receipt.status == common_pb2.INTENT_STATUS_RUNNING, decided
        assert world.store.intent(pending.intent_id).status == common_pb2.INTENT_STATUS_RUNNING
        world.warehouse.back()
        await wait_until_async(world.broker.take_up, what="the intent taken up once its lease ran out")
        await wait_until_async(lambda: world.store.intent(pending.intent_id).status ==
                               common_pb2.INTENT_STATUS_SUCCEEDED, what="the change applied")
        assert await world.broker.take_up(any_lease=True) == 0  # nothing left to run
        again = await world.call("Decide", decision, "cli")  # a client's retry: the outcome, not a second run
        assert again.replayed and again.receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert world.version(1_030) == before + 1
    _no_tracebacks(caplog)


def test_an_effect_whose_outcome_cannot_be_recorded_is_reconciled_not_run_again(world, caplog):
    """The broker's database goes away between the change and its receipt: the decision is told
    DATABASE_UNAVAILABLE, and once the database answers the take-up finds the change applied (by the record
    versions) and records it, without applying it a second time."""
    world.store.lease_seconds = 0.2
    before = world.version(1_040)
    changes = world.broker.execution.changes
    apply = changes.apply

    def apply_then_lose_the_broker_database(*args):
        applied = apply(*args)
        world.database_place.cut()
        return applied

    async def scenario():
        pending = (await world.flag(1_040)).receipt
        decision = await world.signed_decision(pending)
        changes.apply = apply_then_lose_the_broker_database
        _told_away(await world.call("Decide", decision, "cli"), "Decide")
        changes.apply = apply
        assert world.version(1_040) == before + 1
        world.database_place.back()
        await wait_until_async(world.broker.take_up, what="the intent taken up once its lease ran out")
        await wait_until_async(lambda: world.store.intent(pending.intent_id).status ==
                               common_pb2.INTENT_STATUS_SUCCEEDED, what="the change recorded as applied")
        kinds = [r.kind for r in world.store.audit_after("acme", 0) if r.intent_id == pending.intent_id]
        assert kinds.count("intent-succeeded") == 1 and "intent-taken-up" in kinds

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    assert world.version(1_040) == before + 1  # applied once
    _no_tracebacks(caplog)
