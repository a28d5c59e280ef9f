"""A real broker process whose PostgreSQL database goes away and comes back (through a relay the test closes):
calls are UNAVAILABLE / DATABASE_UNAVAILABLE meanwhile, readiness says NOT_SERVING, the log says it once (no
traceback, no line per sweep), and the same process answers again once the database does. Skipped, visibly,
without PostgreSQL."""

from __future__ import annotations

import grpc
import pytest
import sqlalchemy as sa

from cli.launcher import check_health, cli_credentials, free_ports
from shared.data.db import unavailable
from shared.rpc.errors import error_details
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.capabilities.integration.test_broker import flag, person
from tests.capabilities.integration.test_broker_replicas import replicas  # noqa: F401  (fixture)
from tests.fixtures.forwarder import TcpForwarder
from tests.fixtures.waiting import wait_until


def test_a_broker_whose_database_goes_away_refuses_as_unavailable_then_answers_without_a_restart(
        request, replicas, cert_dir):  # noqa: F811
    start, broker_url, _ = replicas
    direct = sa.make_url(broker_url)
    target, port = (direct.host or "127.0.0.1", direct.port or 5432), free_ports(1)[0]
    relays = [TcpForwarder(port, target)]
    request.addfinalizer(lambda: relays[-1].close(connections=True))
    through_relay = direct.set(host="127.0.0.1", port=port).render_as_string(hide_password=False)
    [(client, processes)] = start(1, TESSERA_CAPABILITIES_DATABASE_URL=through_relay)
    handle, alice = processes.handles["capabilities"], person(cert_dir)
    receipt = flag(client, alice, 91).receipt
    listing = cap.ListApprovalsRequest(actor=alice)
    card = cap.GetApprovalRequest(actor=alice, approval_id=receipt.approval_id)

    relays[-1].close(connections=True)  # the database is gone for this process, its open connections too
    wait_until(lambda: check_health(handle, cli_credentials(cert_dir)) == "NOT_SERVING", 60,
               what="readiness saying the database is away")
    for method, message in (("ListApprovals", listing), ("GetApproval", card)):
        with pytest.raises(grpc.RpcError) as refused:
            client("cli", method, message)
        details = error_details(refused.value)
        assert (details.code, details.reason, details.message) == (
            grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE", unavailable("broker database").message), method

    relays.append(TcpForwarder(port, target))  # back, on the same address
    wait_until(lambda: check_health(handle, cli_credentials(cert_dir)) == "SERVING", 60,
               what="readiness once the database answers again")
    listed = wait_until(lambda: client("cli", "ListApprovals", listing), 30, ignoring=(grpc.RpcError,),
                        what="the approvals listed again by the same process")
    assert receipt.approval_id in [a.approval_id for a in listed.approvals]
    assert client("cli", "GetApproval", card).card.summary.approval_id == receipt.approval_id
    wait_until(lambda: "broker database is answering again" in handle.log_path.read_text(), 30,
               what="the log saying the database answers again")
    logged = handle.log_path.read_text()
    assert logged.count("broker database is not answering") == 1, logged[-5000:]
    assert "Traceback" not in logged and "expiring approvals failed" not in logged, logged[-5000:]
