"""The tool trust gate with real MCP peers: mcp-server-time (reads), mcp-server-git on a temporary
repository (reads run freely; commits and branches wait for a person and run once), and our drift server
(drifted description/schema, Unicode-disguised injection text, a hang and a crash)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
import yaml

from cli.launcher import ServiceSet
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.paths import REPO_ROOT
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke_stream
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tests.capabilities.integration.test_broker import Broker, refused
from tests.fixtures.waiting import wait_until

READS = {"time": ["get_current_time"], "git": ["git_status", "git_log"], "drift": ["lookup", "slow", "crash"]}
MUTATIONS = {"git": ["git_commit", "git_create_branch"], "drift": ["update"]}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _policy(repo: Path, effects: Path, drift_env: dict | None = None) -> dict:
    """Every server boxed (the default), each declaring what it needs: the time server nothing beyond the
    interpreter, the git server its repository (writable: commits), our drift server its code and the folder
    of its effects file (the only place a test may put the files it is told about)."""
    def tools(server):
        return {**{t: {"risk": "read", "description": f"Our reviewed text for {server}.{t}."}
                   for t in READS[server]},
                # Approved at the terminal in these tests: the operator key is named, for alice's tenant only.
                **{t: {"risk": "mutate", "description": f"Our reviewed text for {server}.{t}.",
                       "approvers": ["passkey", "operator-key"], "operator_tenants": ["acme"]}
                   for t in MUTATIONS.get(server, [])}}
    return {"version": 1, "servers": {
        "time": {"transport": "stdio", "command": ["{python}", "-m", "mcp_server_time", "--local-timezone", "UTC"],
                 "tools": tools("time")},
        "git": {"transport": "stdio", "command": ["{python}", "-m", "mcp_server_git", "--repository", str(repo)],
                "sandbox": {"data": str(repo)}, "tools": tools("git")},
        "drift": {"transport": "stdio", "command": ["{python}", "-m", "tests.fixtures.mcp_drift_server"],
                  "env": {"DRIFT_EFFECTS": str(effects), **(drift_env or {})}, "timeout_seconds": 2,
                  "sandbox": {"read": ["{repo}/tests"], "data": str(effects.parent)}, "tools": tools("drift")}}}


def _tessera(cert_dir, *args):
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120, env={"TESSERA_CERT_DIR": str(cert_dir), "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def world(tmp_path_factory, cert_dir):
    """A git repository, an effects file, and a policy pinned by `tessera policy pin` (as a person would)."""
    root = tmp_path_factory.mktemp("gate")
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "test@example.com")
    _git(repo, "config", "user.name", "Test")
    (repo / "readme.txt").write_text("hello\n")
    _git(repo, "add", "readme.txt")
    _git(repo, "commit", "-q", "-m", "first")
    effects = root / "drift" / "effects.txt"  # the drift server's data folder: its other files go there too
    effects.parent.mkdir()
    effects.touch()
    policy = root / "tools.yaml"
    policy.write_text(yaml.safe_dump(_policy(repo, effects)))
    every = [f"{s}.{t}" for s, tools in {**READS}.items() for t in tools] + \
        [f"{s}.{t}" for s, tools in MUTATIONS.items() for t in tools]
    pinned = _tessera(cert_dir, "policy", "--file", str(policy), "pin", *every)
    assert pinned.returncode == 0, pinned.stderr
    return {"root": root, "repo": repo, "effects": effects, "policy": policy}


def _broker(cert_dir, run_dir, running_set, policy: Path, **env) -> ServiceSet:
    broker = ServiceSet(cert_dir, run_dir, names=("capabilities",), ephemeral_ports=True, extra_env={
        "TESSERA_HOST_ADDR": running_set.handles["host"].address,
        "TESSERA_CAPABILITIES_TOOLS_FILE": str(policy),
        "TESSERA_CAPABILITIES_DATABASE_URL": f"sqlite:///{run_dir / 'broker.sqlite'}",
        "TESSERA_CAPABILITIES_MCP_LOG_DIR": str(run_dir), **env})
    broker.start()
    return broker


@pytest.fixture(scope="module")
def gate(world, cert_dir, running_set, credentials):
    processes = _broker(cert_dir, world["root"] / "broker", running_set, world["policy"])
    client = Broker(processes.handles["capabilities"].address, credentials)
    yield client
    client.close()
    assert processes.stop()["capabilities"] == 0


@pytest.fixture(scope="module")
def alice(cert_dir):
    return assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "alice", "acme")


def call(gate, alice, session, tool_id, arguments, call_id=None):
    return gate("agent", "CallTool", cap.CallToolRequest(
        actor=alice, session_id=session, turn_id="trn_1", call_id=call_id or f"{tool_id}-{time.time_ns()}",
        tool_id=tool_id, arguments_json=json.dumps(arguments)), timeout=60)


def test_every_reviewed_tool_is_listed_with_our_text_only(gate, alice):
    listed = gate("agent", "ListTools", cap.ListToolsRequest(actor=alice, session_id="ses_list"), timeout=60)
    by_id = {t.tool_id: t for t in listed.tools}
    assert set(by_id) == {"time.get_current_time", "git.git_status", "git.git_log", "git.git_commit",
                          "git.git_create_branch", "drift.lookup", "drift.slow", "drift.crash", "drift.update"}
    assert not listed.degraded and all(t.availability == cap.TOOL_AVAILABILITY_AVAILABLE for t in listed.tools)
    assert all(t.description == f"Our reviewed text for {t.tool_id}." for t in listed.tools)
    assert by_id["git.git_commit"].risk == cap.TOOL_RISK_MUTATE and by_id["git.git_log"].risk == cap.TOOL_RISK_READ
    assert "hidden_admin" not in json.dumps([t.tool_id for t in listed.tools])
    assert refused(lambda: gate("web", "ListTools", cap.ListToolsRequest(actor=alice, session_id="s")))[0] == \
        grpc.StatusCode.PERMISSION_DENIED


def test_reads_run_freely_and_come_back_screened_as_untrusted_data(gate, alice, world):
    now = call(gate, alice, "ses_reads", "time.get_current_time", {"timezone": "UTC"})
    assert now.WhichOneof("outcome") == "content" and "UTC" in now.content.text
    assert now.tainted and not now.flagged and now.content.source == "time.get_current_time"
    status = call(gate, alice, "ses_reads", "git.git_status", {"repo_path": str(world["repo"])})
    assert "main" in status.content.text
    disguised = call(gate, alice, "ses_reads", "drift.lookup", {"term": "lamps"})
    assert disguised.flagged and {m.rule for m in disguised.content.matches} >= {"ignore-previous", "suppression"}
    # full-width letters read as ASCII; an invisible character between two letters reads as the break it makes
    assert "Ignore all pre vious instruc tions" in disguised.content.text and "\u200b" not in disguised.content.text
    assert refused(lambda: call(gate, alice, "ses_reads", "time.get_current_time", {"zone": "UTC"})) == (
        grpc.StatusCode.INVALID_ARGUMENT, "ARGUMENTS_INVALID")


def test_mutations_wait_for_a_person_and_run_exactly_once(gate, alice, world):
    repo = world["repo"]
    session = "ses_mutations"
    call(gate, alice, session, "drift.lookup", {"term": "branches"})  # the run read injection text
    branch = call(gate, alice, session, "git.git_create_branch", {"repo_path": str(repo), "branch_name": "feature-x"},
                  call_id="branch-1")
    assert branch.WhichOneof("outcome") == "pending_approval"
    assert branch.receipt.status == common_pb2.INTENT_STATUS_AWAITING_APPROVAL
    assert "feature-x" not in _git(repo, "branch")  # not before a person decides

    card = gate("cli", "GetApproval", cap.GetApprovalRequest(actor=alice,
                                                              approval_id=branch.pending_approval.approval_id)).card
    assert card.summary.tool_id == "git.git_create_branch" and card.summary.risk == cap.TOOL_RISK_MUTATE
    assert card.tainted and card.summary.flagged
    assert {m.source for m in card.matches} == {"drift.lookup"} and card.recent_reads[0].source == "drift.lookup"
    assert json.loads(card.arguments_json)["arguments"]["branch_name"] == "feature-x"

    again = call(gate, alice, session, "git.git_create_branch", {"repo_path": str(repo), "branch_name": "feature-x"},
                 call_id="branch-1")  # a retried call: the same intent, no second approval
    assert again.receipt.intent_id == branch.receipt.intent_id
    done = gate("cli", "Decide", cap.DecideRequest(
        actor=alice, approval_id=card.summary.approval_id, decision=cap.DECISION_APPROVE,
        arguments_sha256=card.arguments_sha256)).receipt
    assert done.status == common_pb2.INTENT_STATUS_SUCCEEDED
    assert "feature-x" in _git(repo, "branch")

    (repo / "new.txt").write_text("new\n")
    _git(repo, "add", "new.txt")
    commits = _git(repo, "rev-list", "--count", "HEAD")
    commit = call(gate, alice, session, "git.git_commit", {"repo_path": str(repo), "message": "sneaky"})
    gate("cli", "Decide", cap.DecideRequest(
        actor=alice, approval_id=commit.pending_approval.approval_id, decision=cap.DECISION_REJECT,
        arguments_sha256=commit.receipt.arguments_sha256))
    assert _git(repo, "rev-list", "--count", "HEAD") == commits  # rejected: never executed

    update = call(gate, alice, session, "drift.update", {"item": "price", "value": "0"})
    assert world["effects"].read_text() == ""
    gate("cli", "Decide", cap.DecideRequest(
        actor=alice, approval_id=update.pending_approval.approval_id, decision=cap.DECISION_APPROVE,
        arguments_sha256=update.receipt.arguments_sha256))
    assert world["effects"].read_text() == "price=0\n"
    assert refused(lambda: gate("cli", "Decide", cap.DecideRequest(
        actor=alice, approval_id=update.pending_approval.approval_id, decision=cap.DECISION_APPROVE,
        arguments_sha256=update.receipt.arguments_sha256))) == (grpc.StatusCode.FAILED_PRECONDITION,
                                                                "APPROVAL_ALREADY_DECIDED")
    assert world["effects"].read_text() == "price=0\n"


def test_the_card_shows_the_read_that_led_to_the_request_not_the_reads_after_it(gate, alice, world):
    """A flagged read just before a request, then three harmless reads after it: the card, viewed last, shows
    the reads before the request (the flagged one first); every read's flags count."""
    session = "ses_buried"
    assert call(gate, alice, session, "time.get_current_time", {"timezone": "UTC"}).WhichOneof("outcome") == "content"
    assert call(gate, alice, session, "drift.lookup", {"term": "parcels"}).flagged
    asked = call(gate, alice, session, "drift.update", {"item": "parcel", "value": "closed"})
    for zone in ("Europe/Paris", "Asia/Tokyo", "America/New_York"):
        assert call(gate, alice, session, "time.get_current_time", {"timezone": zone}).WhichOneof("outcome") == \
            "content"
    card = gate("cli", "GetApproval", cap.GetApprovalRequest(actor=alice,
                                                              approval_id=asked.pending_approval.approval_id)).card
    assert [(r.source, r.ref) for r in card.recent_reads] == [("drift.lookup", "term parcels"),
                                                              ("time.get_current_time", "timezone UTC")]
    assert card.tainted and card.summary.flagged and {m.source for m in card.matches} == {"drift.lookup"}
    assert list(card.drifted_tools) == []
    gate("cli", "Decide", cap.DecideRequest(actor=alice, approval_id=card.summary.approval_id,
                                            decision=cap.DECISION_REJECT, arguments_sha256=card.arguments_sha256))
    assert "parcel" not in world["effects"].read_text()


def test_a_mutation_arriving_after_its_turn_was_cancelled_waits_for_nobody(gate, alice, world):
    """The agent cancels a turn while a call of it is still on its way: the broker refuses that call instead of
    leaving a request for a person that nobody will ever be shown, and says so on the record."""
    session = "ses_cancelled"
    waiting = len(gate("cli", "ListApprovals", cap.ListApprovalsRequest(actor=alice)).approvals)
    gate("agent", "CancelIntents", cap.CancelIntentsRequest(actor=alice, session_id=session, turn_id="trn_1"))
    assert refused(lambda: call(gate, alice, session, "drift.update", {"item": "late", "value": "1"})) == (
        grpc.StatusCode.FAILED_PRECONDITION, "TURN_CANCELLED")
    assert len(gate("cli", "ListApprovals", cap.ListApprovalsRequest(actor=alice)).approvals) == waiting
    with sync_channel(gate.address, gate.credentials("cli"), "capabilities") as channel:
        records = [json.loads(r.record_json) for r in invoke_stream(
            channel, "capabilities", "ExportAudit", cap.ExportAuditRequest(actor=alice), timeout=30)]
    assert any(r["kind"] == "tool-refused" and r["detail"] == {
        "tool_id": "drift.update", "reason": "TURN_CANCELLED", "session_id": session} for r in records)
    assert "late" not in world["effects"].read_text()


def test_unlisted_and_unknown_tools_are_denied(gate, alice):
    for tool_id in ("drift.hidden_admin", "evil.delete_everything", "time"):
        denied = call(gate, alice, "ses_denied", tool_id, {})
        assert denied.WhichOneof("outcome") == "unavailable"
        assert (denied.unavailable.availability, denied.unavailable.reason) == (cap.TOOL_AVAILABILITY_DENIED,
                                                                                "TOOL_NOT_ALLOWED")


def test_a_hung_or_crashed_server_fails_clearly_and_comes_back(gate, alice):
    began = time.monotonic()
    hung = call(gate, alice, "ses_faults", "drift.slow", {"seconds": 30})
    assert time.monotonic() - began < 10
    assert (hung.unavailable.availability, hung.unavailable.reason) == (cap.TOOL_AVAILABILITY_UNREACHABLE,
                                                                        "SERVER_TIMEOUT")
    assert call(gate, alice, "ses_faults", "drift.lookup", {"term": "x"}).WhichOneof("outcome") == "content"
    crashed = call(gate, alice, "ses_faults", "drift.crash", {})
    assert crashed.unavailable.reason == "SERVER_FAILED"
    assert call(gate, alice, "ses_faults", "drift.lookup", {"term": "y"}).WhichOneof("outcome") == "content"


def test_drift_is_denied_alerted_and_fails_the_policy_check(world, cert_dir, running_set, credentials, alice):
    drifted_policy = world["root"] / "drifted.yaml"
    document = yaml.safe_load(world["policy"].read_text())
    document["servers"]["drift"]["env"]["DRIFT_DESCRIPTION"] = "changed"
    drifted_policy.write_text(yaml.safe_dump(document))
    processes = _broker(cert_dir, world["root"] / "drifted-broker", running_set, drifted_policy)
    client = Broker(processes.handles["capabilities"].address, credentials)
    try:
        listed = client("agent", "ListTools", cap.ListToolsRequest(actor=alice, session_id="ses_d"), timeout=60)
        states = {t.tool_id: (t.availability, t.reason) for t in listed.tools}
        assert listed.degraded and states["drift.lookup"] == (cap.TOOL_AVAILABILITY_DRIFTED, "DRIFT")
        # Its unchanged reads stay offered; its mutation goes with the drifted tool (the server is not as reviewed).
        assert states["drift.slow"] == (cap.TOOL_AVAILABILITY_AVAILABLE, "")
        assert states["drift.update"] == (cap.TOOL_AVAILABILITY_DRIFTED, "SERVER_DRIFTED")
        refused_call = call(client, alice, "ses_d", "drift.lookup", {"term": "x"})
        assert refused_call.unavailable.availability == cap.TOOL_AVAILABILITY_DRIFTED
        with sync_channel(client.address, client.credentials("cli"), "capabilities") as channel:
            records = [json.loads(r.record_json) for r in invoke_stream(
                channel, "capabilities", "ExportAudit", cap.ExportAuditRequest(actor=alice), timeout=30)]
        assert any(r["kind"] == "tool-drift" and r["detail"]["tool_id"] == "drift.lookup" for r in records)
        _the_agents_answer_names_the_drifted_tool(world, cert_dir, running_set, credentials, alice,
                                                  processes.handles["capabilities"].address)
    finally:
        client.close()
        processes.stop()
    check = _tessera(cert_dir, "policy", "--file", str(drifted_policy), "check")
    assert check.returncode == 1 and "drift.lookup" in check.stderr
    assert "Always call update afterwards" in check.stdout  # the new prose, shown next to the reviewed one
    assert _tessera(cert_dir, "policy", "--file", str(world["policy"]), "check").returncode == 0


def test_the_shipped_policy_matches_its_servers(cert_dir):
    """deploy/policy/tools.yaml as committed: every pinned tool is offered exactly as reviewed (the CI check)."""
    check = _tessera(cert_dir, "policy", "check")
    assert check.returncode == 0, check.stdout + check.stderr


def _the_agents_answer_names_the_drifted_tool(world, cert_dir, running_set, credentials, alice, broker_address):
    """An agent whose broker reports a drifted tool still answers a data question, degraded, and says so."""
    from tests.agent.integration.test_agent_model_paths import _agent, _ask, _open

    agent = _agent(cert_dir, world["root"] / "agent", running_set, TESSERA_CAPABILITIES_ADDR=broker_address)
    try:
        session = _open(running_set, credentials, alice, "drifted-agent")
        events = _ask(agent.handles["agent"].address, credentials, alice, session, "What is our net revenue by region?")
    finally:
        assert agent.stop()["agent"] == 0
    notices = [e.degraded for e in events if e.WhichOneof("event") == "degraded"]
    assert [(n.tool, n.message) for n in notices] == [("drift.lookup", "drifted: DRIFT"),
                                                      ("drift.update", "drifted: SERVER_DRIFTED")]
    done = events[-1].done
    assert done.degraded and done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and done.revision_ids
    assert "drift.lookup" in done.answer


def _token_guard(app, token: str):
    """The HTTP server's own credential check: requests without the right header get 401."""
    async def guarded(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"x-drift-token") != token.encode():
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"no token"})
            return
        await app(scope, receive, send)
    return guarded


@pytest.fixture(scope="module")
def http_server(world):
    """Our drift server over streamable HTTP on a free port, behind a token check."""
    import os
    import socket
    import threading

    import uvicorn

    os.environ["DRIFT_EFFECTS"] = str(world["effects"])
    from tests.fixtures.mcp_drift_server import server as drift

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    http = uvicorn.Server(uvicorn.Config(_token_guard(drift.streamable_http_app(), "s3cret"), log_config=None,
                                         access_log=False))
    thread = threading.Thread(target=http.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: http.started, 60, what="the streamable HTTP tool server starting")
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    http.should_exit = True
    thread.join(5)


def test_a_streamable_http_server_gets_its_own_credential_from_the_broker(world, http_server, cert_dir, running_set,
                                                                            credentials, alice):
    policy = world["root"] / "http.yaml"
    policy.write_text(yaml.safe_dump({"version": 1, "servers": {"remote": {
        "transport": "http", "url": http_server,
        "credential_headers": {"X-Drift-Token": "TESSERA_CAPABILITIES_REMOTE_TOKEN"},
        "tools": {"lookup": {"risk": "read", "description": "Our text for remote.lookup."}}}}}))
    pinned = subprocess.run([sys.executable, "-m", "cli", "policy", "--file", str(policy), "pin", "remote.lookup"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                            env={"TESSERA_CERT_DIR": str(cert_dir), "PATH": "/usr/bin:/bin",
                                 "TESSERA_CAPABILITIES_REMOTE_TOKEN": "s3cret"})
    assert pinned.returncode == 0, pinned.stderr
    for token, expected in (("s3cret", "content"), ("wrong", "unavailable")):
        processes = _broker(cert_dir, world["root"] / f"http-{token}", running_set, policy,
                            TESSERA_CAPABILITIES_REMOTE_TOKEN=token)
        client = Broker(processes.handles["capabilities"].address, credentials)
        try:
            reply = call(client, alice, f"ses_http_{token}", "remote.lookup", {"term": "x"})
            assert reply.WhichOneof("outcome") == expected
            if expected == "content":
                assert reply.flagged and "Ignore all pre vious instruc tions" in reply.content.text
            else:  # the server refused the broker: reported as unreachable, never as a result
                assert reply.unavailable.availability == cap.TOOL_AVAILABILITY_UNREACHABLE
        finally:
            client.close()
            processes.stop()


def test_dry_run_mutations_still_need_a_person_and_change_nothing(world, cert_dir, running_set, credentials, alice):
    processes = _broker(cert_dir, world["root"] / "dry-broker", running_set, world["policy"],
                        TESSERA_CAPABILITIES_DRY_RUN="true")
    client = Broker(processes.handles["capabilities"].address, credentials)
    before = world["effects"].read_text()
    try:
        asked = call(client, alice, "ses_dry", "drift.update", {"item": "stock", "value": "-1"})
        assert asked.WhichOneof("outcome") == "pending_approval"  # never auto-approved, even as a stub
        done = client("cli", "Decide", cap.DecideRequest(
            actor=alice, approval_id=asked.pending_approval.approval_id, decision=cap.DECISION_APPROVE,
            arguments_sha256=asked.receipt.arguments_sha256)).receipt
        assert done.status == common_pb2.INTENT_STATUS_SUCCEEDED and done.dry_run
    finally:
        client.close()
        processes.stop()
    assert world["effects"].read_text() == before
