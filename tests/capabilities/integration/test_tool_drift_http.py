"""Drift over streamable HTTP caught mid-session (§8): a tool server behind a URL replaced in a rolling deploy
— stopped, and started again on the same port with `lookup` described otherwise and its schema widened —
while a broker's session runs. Nothing fails and nothing reconnects (under 2026-07-28 there is no session to
lose), so only a listing can tell: the broker lists the server before each call, and the first call after the
restart is refused DRIFTED before it is sent. The server's mutation is refused as well (its server drifted),
and an approval asked for before the restart says so on its card and does not run.

The server is our drift server (tests/fixtures/mcp_drift_server.py) in its own process, stateful (the SDK's
session manager) and stateless; its DRIFT_LOG counts every request each start of it received."""

from __future__ import annotations

import json
import signal
import sys

import pytest
import yaml

from cli.launcher import free_ports
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tests.capabilities.integration.test_broker import Broker
from tests.capabilities.integration.test_tool_gate import _broker, _tessera, alice, call  # noqa: F401  (alice: a fixture)
from tests.fixtures.mcp_http_process import serving

DRIFTED, AVAILABLE = cap.TOOL_AVAILABILITY_DRIFTED, cap.TOOL_AVAILABILITY_AVAILABLE


def _drift_server(port: int) -> list[str]:
    return [sys.executable, "-m", "tests.fixtures.mcp_drift_server"]


def _policy(path, port: int) -> None:
    """The drift server at its URL: `lookup` a read, `update` a mutation the operator's key may approve."""
    path.write_text(yaml.safe_dump({"version": 1, "servers": {"remote": {
        "transport": "http", "url": f"http://127.0.0.1:{port}/mcp", "tools": {
            "lookup": {"risk": "read", "description": "Our text for remote.lookup."},
            "update": {"risk": "mutate", "description": "Our text for remote.update.",
                       "approvers": ["passkey", "operator-key"], "operator_tenants": ["acme"]}}}}}))


def _served(log) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _unavailable(reply) -> tuple[int, str] | None:
    return (reply.unavailable.availability, reply.unavailable.reason) \
        if reply.WhichOneof("outcome") == "unavailable" else None


@pytest.mark.parametrize("mode", ["stateful", "stateless"])
def test_a_rolling_restart_with_a_changed_tool_is_refused_before_any_call_reaches_it(
        mode, cert_dir, running_set, credentials, alice, tmp_path):  # noqa: F811
    (port,) = free_ports(1)
    changed, log, effects = tmp_path / "changed", tmp_path / "served.jsonl", tmp_path / "effects.txt"
    # From its next start, the server offers `lookup` with other words and a `scope` parameter.
    env = {"DRIFT_HTTP_PORT": str(port), "DRIFT_STATELESS": "1" if mode == "stateless" else "",
           "DRIFT_CHANGED_IF": str(changed), "DRIFT_WIDEN": "1", "DRIFT_LOG": str(log), "DRIFT_EFFECTS": str(effects)}
    policy = tmp_path / "tools.yaml"
    _policy(policy, port)
    with serving(_drift_server, env, "the drift server over HTTP", port) as (_, _, first):
        pinned = _tessera(cert_dir, "policy", "--file", str(policy), "pin", "remote.lookup", "remote.update")
        assert pinned.returncode == 0, pinned.stderr
        processes = _broker(cert_dir, tmp_path / "broker", running_set, policy)
        client = Broker(processes.handles["capabilities"].address, credentials)
        try:
            session = f"ses_rolling_{mode}"
            assert call(client, alice, session, "remote.lookup", {"term": "before"}).WhichOneof("outcome") == "content"
            asked = call(client, alice, session, "remote.update", {"item": "price", "value": "0"})
            assert asked.WhichOneof("outcome") == "pending_approval"

            # The rolling restart: the old process stops as a pod does (SIGTERM, open requests finished), the
            # new one serves on the same port. The broker is told nothing.
            first.send_signal(signal.SIGTERM)
            first.wait(timeout=60)
            changed.touch()
            with serving(_drift_server, env, "the changed drift server on the same port", port):
                for arguments in ({"term": "after"}, {"term": "again"}):  # every call, not only the first
                    assert _unavailable(call(client, alice, session, "remote.lookup", arguments)) == (DRIFTED, "DRIFT")
                # Its unchanged sibling `update` may not even be asked for: its server is not the one reviewed …
                again = call(client, alice, session, "remote.update", {"item": "stock", "value": "-1"})
                assert _unavailable(again) == (DRIFTED, "SERVER_DRIFTED")
                # … and the request made before the restart says so on its card, and does not run.
                card = client("cli", "GetApproval", cap.GetApprovalRequest(
                    actor=alice, approval_id=asked.pending_approval.approval_id)).card
                assert list(card.drifted_tools) == ["remote.lookup"]
                done = client("cli", "Decide", cap.DecideRequest(
                    actor=alice, approval_id=card.summary.approval_id, decision=cap.DECISION_APPROVE,
                    arguments_sha256=card.arguments_sha256), timeout=60).receipt
                assert (done.status, done.reason) == (common_pb2.INTENT_STATUS_FAILED, "TOOL_SERVER_DRIFTED")
                listed = client("agent", "ListTools", cap.ListToolsRequest(actor=alice, session_id=session),
                                timeout=60)
                assert listed.degraded and {t.tool_id: (t.availability, t.reason) for t in listed.tools} == {
                    "remote.lookup": (DRIFTED, "DRIFT"), "remote.update": (DRIFTED, "SERVER_DRIFTED")}
        finally:
            client.close()
            processes.stop()

    served = _served(log)
    before = served[0]["start"]
    restarted = [e for e in served if e["start"] != before]
    # The restarted server was listed (and offered the changed `lookup`), and received no call at all.
    assert {"request": "tools/list", "lookup": "changed"}.items() <= restarted[0].items()
    assert [e["request"] for e in restarted if e["request"] != "tools/list"] == []
    # Before the restart, the one read as reviewed; the mutation never ran anywhere.
    assert [(e["request"], e.get("arguments")) for e in served if e["start"] == before and
            e["request"] != "tools/list"] == [("tools/call", {"name": "lookup"}), ("lookup", {"term": "before"})]
    assert not effects.exists()
