"""Two broker replicas, real processes, one PostgreSQL database: a decision sent to both runs its effect
once; an intent approved on a replica killed mid-effect runs once, on the survivor; the outbox publishes
each event once. Skipped, visibly, without PostgreSQL."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import threading
import time

import grpc
import pytest
import yaml

from cli.launcher import ServiceSet, free_ports, stop_together
from shared.rpc.errors import error_details
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tests.capabilities.integration.test_broker import Broker, flag, order, person, receipt_of, status_is
from tests.capabilities.integration.test_tool_gate import world  # noqa: F401  (fixture: a pinned tool policy)
from tests.fixtures.postgres import postgres_database
from tests.fixtures.race import query, race
from tests.fixtures.waiting import wait_until

LEASE_SECONDS = 5  # short, so a survivor takes over quickly; a live replica renews it every third of that


@pytest.fixture
def replicas(request, cert_dir, tmp_path, warehouse_url, credentials):
    """Start replicas on one fresh PostgreSQL database and a copy of the warehouse; yields
    start(count, host=...) → ([(client, processes)], broker database URL, warehouse URL)."""
    broker_url = postgres_database(request, "tessera_replicas")
    copy = tmp_path / "warehouse.sqlite"
    shutil.copy(warehouse_url.removeprefix("sqlite:///"), copy)
    started = []

    def start(count: int, host: str = "", **env) -> list[tuple[Broker, ServiceSet]]:
        sets = [ServiceSet(cert_dir, tmp_path / f"replica{len(started) + n}", names=("capabilities",),
                           ephemeral_ports=True, extra_env={
                               # No host unless the test needs one: a closed port (events then wait).
                               "TESSERA_HOST_ADDR": host or f"127.0.0.1:{free_ports(1)[0]}",
                               "TESSERA_CAPABILITIES_DATABASE_URL": broker_url,
                               "TESSERA_CAPABILITIES_CHANGES_URL": f"sqlite:///{copy}",
                               "TESSERA_CAPABILITIES_LEASE_SECONDS": str(LEASE_SECONDS), **env})
                for n in range(count)]
        failures = []

        def launch(processes):  # together: the replicas race to migrate the empty database
            try:
                processes.start()
            except Exception as exc:
                failures.append(exc)

        threads = [threading.Thread(target=launch, args=(s,)) for s in sets]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        pairs = [(Broker(s.handles["capabilities"].address, credentials), s) for s in sets]
        started.extend(pairs)
        assert not failures, failures
        return pairs

    yield start, broker_url, f"sqlite:///{copy}"
    for client, _ in started:
        client.close()
    stop_together([processes for _, processes in started])


def _two_replicas_and_a_request(replicas, cert_dir, record_id: int):
    """Two replicas and a request waiting for a person, made on the first: (a, a's processes, b, alice,
    receipt)."""
    (a, a_processes), (b, _) = replicas[0](2)
    alice = person(cert_dir)
    return a, a_processes, b, alice, flag(a, alice, record_id).receipt


def _kinds(broker_url: str, intent_id: str) -> list[str]:
    return [k for (k,) in query(broker_url, "SELECT kind FROM audit_events WHERE intent_id = :i", i=intent_id)]


def _sha(client, alice, receipt) -> str:
    return client("cli", "GetApproval", cap.GetApprovalRequest(actor=alice, approval_id=receipt.approval_id)) \
        .card.arguments_sha256


def _decide(client, alice, receipt, sha, decision_id, timeout=60):
    return client("cli", "Decide", cap.DecideRequest(
        actor=alice, approval_id=receipt.approval_id, reason="checked", decision=cap.DECISION_APPROVE,
        arguments_sha256=sha, decision_id=decision_id), timeout=timeout)


def _approve_held(client, alice, receipt, decision_id, broker_url, warehouse):
    """Approve on `client` while the warehouse is locked, so the effect starts and waits: returns the lock
    (roll it back to let the effect go on), the deciding thread and where its outcome lands."""
    sha = _sha(client, alice, receipt)
    blocker = sqlite3.connect(warehouse.removeprefix("sqlite:///"), isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    outcome = {}

    def approve():
        try:
            outcome["receipt"] = _decide(client, alice, receipt, sha, decision_id)
        except grpc.RpcError as exc:
            outcome["error"] = exc.code()

    thread = threading.Thread(target=approve)
    thread.start()
    wait_until(lambda: query(broker_url, "SELECT attempted FROM intents WHERE intent_id = :i",
                             i=receipt.intent_id)[0][0], 60, what="the approved intent starting")
    return blocker, thread, outcome


def test_twenty_decisions_across_two_replicas_run_the_effect_once(replicas, cert_dir):
    _, broker_url, warehouse = replicas
    a, _, b, alice, receipt = _two_replicas_and_a_request(replicas, cert_dir, 71)
    version = order(warehouse, 71)[1]  # the warehouse is shared with other tests: count from here
    sha = _sha(a, alice, receipt)

    def send(index):  # odd ones retry one shared decision id, even ones are decisions of their own
        client = (a, b)[index % 2]
        decision_id = "shared-71" if index % 2 else f"own-71-{index}"
        try:
            return decision_id, _decide(client, alice, receipt, sha, decision_id)
        except grpc.RpcError as exc:
            details = error_details(exc)
            return decision_id, (details.code, details.reason, details.metadata)

    outcomes = race(20, send)  # released together, across both replicas
    decided = [(d, o) for d, o in outcomes if isinstance(o, cap.DecideResponse) and not o.replayed]
    assert len(decided) == 1  # one decision recorded …
    winner, response = decided[0]
    assert response.receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED
    assert order(warehouse, 71) == ("flagged", version + 1)  # … and one effect: the version moved by exactly one
    for decision_id, outcome in outcomes:
        if decision_id == winner:  # its retries, on either replica: the same outcome, replayed
            assert isinstance(outcome, cap.DecideResponse) and outcome.receipt == response.receipt
            assert outcome.replayed or outcome is response
        else:  # everyone else: a clear refusal that says how it ended
            code, reason, metadata = outcome
            assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "APPROVAL_ALREADY_DECIDED")
            assert metadata["intent_id"] == receipt.intent_id and metadata["decision"] == "approve"
    kinds = _kinds(broker_url, receipt.intent_id)
    assert kinds.count("approval-approved") == 1 and kinds.count("intent-succeeded") == 1


def test_an_intent_approved_on_a_replica_killed_mid_effect_runs_once_on_the_survivor(replicas, cert_dir):
    _, broker_url, warehouse = replicas
    a, a_processes, b, alice, receipt = _two_replicas_and_a_request(replicas, cert_dir, 72)
    version = order(warehouse, 72)[1]  # the warehouse is shared with other tests: count from here
    # A's effect waits on the warehouse …
    blocker, thread, outcome = _approve_held(a, alice, receipt, "kill-72", broker_url, warehouse)
    os.kill(a_processes.handles["capabilities"].pid, signal.SIGKILL)  # … when A dies
    a_processes.handles["capabilities"].process.wait()
    killed_at = time.monotonic()
    thread.join(30)
    assert outcome.get("error") == grpc.StatusCode.UNAVAILABLE
    blocker.execute("ROLLBACK")
    blocker.close()

    # B takes it up once A's lease runs out (A renewed it until it died), and runs it: once.
    done = wait_until(status_is(b, alice, receipt.intent_id, common_pb2.INTENT_STATUS_SUCCEEDED), 60,
                      what="the survivor finishing the intent")
    print(f"kill -9 of A to the effect finished on B: {time.monotonic() - killed_at:.2f} s "
          f"(lease {LEASE_SECONDS} s)")  # the figure for the record (pytest -s)
    assert order(warehouse, 72) == ("flagged", version + 1)
    retried = _decide(b, alice, receipt, _sha(b, alice, receipt), "kill-72")  # the caller's retry, now on B
    assert retried.replayed and retried.receipt == done == receipt_of(b, alice, receipt.intent_id)
    kinds = _kinds(broker_url, receipt.intent_id)
    assert kinds.count("intent-taken-up") == 1 and kinds.count("intent-succeeded") == 1
    assert order(warehouse, 72) == ("flagged", version + 1)


def test_a_live_replica_keeps_its_slow_effect(replicas, cert_dir):
    """An effect that outlasts several leases stays with its replica: the other never takes it over."""
    _, broker_url, warehouse = replicas
    a, _, b, alice, receipt = _two_replicas_and_a_request(replicas, cert_dir, 73)
    version = order(warehouse, 73)[1]  # the warehouse is shared with other tests: count from here
    blocker, thread, outcome = _approve_held(a, alice, receipt, "slow-73", broker_url, warehouse)
    # Hold the effect for three leases: long enough for B to take it up, were A not renewing.
    lease_until = query(broker_url, "SELECT lease_until FROM intents WHERE intent_id = :i", i=receipt.intent_id)
    wait_until(lambda: query(broker_url, "SELECT lease_until FROM intents WHERE intent_id = :i",
                             i=receipt.intent_id)[0][0] > lease_until[0][0] + 2 * LEASE_SECONDS, 60,
               what="A renewing its lease twice over")
    blocker.execute("ROLLBACK")
    blocker.close()
    thread.join(30)
    assert outcome["receipt"].receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED
    assert order(warehouse, 73) == ("flagged", version + 1)
    assert "intent-taken-up" not in _kinds(broker_url, receipt.intent_id)


def test_two_replicas_publish_each_outbox_event_once(replicas, cert_dir, running_set):
    start, broker_url, _ = replicas
    (a, _), (b, _) = start(2, host=running_set.handles["host"].address)
    alice = person(cert_dir)
    surface = cap.SurfaceRef(surface_id="srf_nowhere", node_id="n1", command_id="cmd_1")
    for n in range(20):  # each one queues an approval-requested event for the host
        flag((a, b)[n % 2], alice, 80 + n, principal="host", session_id="ses_nowhere", surface=surface)

    def delivered():
        rows = query(broker_url, "SELECT state, attempts FROM outbox")
        return [tuple(r) for r in rows] if len(rows) == 20 and all(s != "pending" for s, _ in rows) else None

    rows = wait_until(delivered, 60, what="both replicas draining the outbox")
    # The host has no such surface and says so for good (dropped): each event was sent exactly once.
    assert rows == [("dropped", 1)] * 20


def test_replicas_judge_the_same_tools_alike_and_both_see_drift(replicas, cert_dir, world, tmp_path):  # noqa: F811
    """Each replica surveys its own tool servers against the one pin file: the same verdicts on both, and a
    server that changed since review is drift on both."""
    drifted = tmp_path / "drifted.yaml"
    document = yaml.safe_load(world["policy"].read_text())
    document["servers"]["drift"]["env"]["DRIFT_DESCRIPTION"] = "changed"
    drifted.write_text(yaml.safe_dump(document))
    start, broker_url, _ = replicas
    pairs = start(2, TESSERA_CAPABILITIES_TOOLS_FILE=str(drifted), TESSERA_CAPABILITIES_MCP_LOG_DIR=str(tmp_path))
    alice = person(cert_dir)
    views = [{t.tool_id: (t.availability, t.reason, t.description) for t in client(
        "agent", "ListTools", cap.ListToolsRequest(actor=alice, session_id="ses_both"), timeout=60).tools}
        for client, _ in pairs]
    assert views[0] == views[1] and len(views[0]) == 9
    assert views[0]["drift.lookup"][:2] == (cap.TOOL_AVAILABILITY_DRIFTED, "DRIFT")
    # its server's mutation is refused too: the server is no longer the one reviewed (issue 45)
    assert views[0]["drift.update"][:2] == (cap.TOOL_AVAILABILITY_DRIFTED, "SERVER_DRIFTED")
    assert {tool_id for tool_id, (availability, _, _) in views[0].items()
            if availability != cap.TOOL_AVAILABILITY_AVAILABLE} == {"drift.lookup", "drift.update"}
    alerts = wait_until(lambda: query(broker_url, "SELECT detail_json FROM audit_events WHERE kind = 'tool-drift'"),
                        60, what="the drift alerts")
    assert all("drift.lookup" in detail for (detail,) in alerts)
