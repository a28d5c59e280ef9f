"""`tessera approvals` and `tessera audit` as an operator runs them against the running broker."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys

import grpc
import httpx
import pytest
import sqlalchemy as sa

from cli.approvals import RETRY_DELAYS, retrying
from cli.launcher import ServiceSet
from cli.persons import OPERATOR
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.paths import REPO_ROOT
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke, invoke_stream
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.capabilities.integration.test_broker import order
from tests.cli.integration.test_cli_ask import var_dir  # noqa: F401  (fixture)
from tests.fixtures.signing import enroll_in_browser
from tests.fixtures.waiting import wait_until
from tests.fixtures.web_cookie import session_cookie_name


def tessera(var, *args):  # noqa: F811
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=60, env={"TESSERA_VAR_DIR": str(var), "PATH": "/usr/bin:/bin"})


def test_an_operator_lists_reads_and_decides_approvals(var_dir, running_set, credentials, cert_dir,  # noqa: F811
                                                       warehouse_url, tmp_path):
    operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)
    with sync_channel(running_set.handles["capabilities"].address, credentials("agent"), "capabilities") as broker:
        flagged, rejected = (invoke(broker, "capabilities", "SubmitIntent", cap.SubmitIntentRequest(
            actor=operator, session_id="ses_cli", action_id="orders.flag_for_review",
            input_json=json.dumps({"record_id": record}), idempotency_key=f"cli-{record}")).receipt
            for record in (61, 62))

    listed = tessera(var_dir, "approvals", "list")
    assert listed.returncode == 0, listed.stderr
    assert flagged.approval_id in listed.stdout and rejected.approval_id in listed.stdout

    shown = tessera(var_dir, "approvals", "show", flagged.approval_id)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "Flag order 61 for review"  # in words, as the browser card
    assert "orders.flag_for_review  [mutate]  awaiting-approval" in shown.stdout
    assert re.search(r"e1\s+Order 61\s+Review status: none → flagged\s+1", shown.stdout), shown.stdout
    assert "tainted" not in shown.stdout  # this request read nothing external

    approved = tessera(var_dir, "approvals", "approve", flagged.approval_id, "--reason", "looks odd")
    assert approved.returncode == 0 and approved.stdout.strip() == f"{flagged.intent_id}: succeeded"
    declined = tessera(var_dir, "approvals", "reject", rejected.approval_id, "--reason", "fine")
    assert declined.stdout.strip() == f"{rejected.intent_id}: rejected (REJECTED_BY_PERSON)"
    assert (order(warehouse_url, 61), order(warehouse_url, 62)) == (("flagged", 2), ("none", 1))

    decided_card = tessera(var_dir, "approvals", "show", flagged.approval_id)
    assert re.search(r"decided by operator, signed with operator-key:[0-9a-f]{16}", decided_card.stdout), \
        decided_card.stdout
    again = tessera(var_dir, "approvals", "approve", flagged.approval_id)  # decided already: says how it ended
    assert again.returncode == 1 and "APPROVAL_ALREADY_DECIDED" in again.stderr
    assert re.search(rf"the approval was approved by operator at \S+; {flagged.intent_id}: succeeded", again.stderr)

    out = tmp_path / "audit.jsonl"
    exported = tessera(var_dir, "audit", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    decided = [r for r in records if r["intent_id"] == flagged.intent_id and r["kind"] == "approval-approved"]
    assert decided and decided[0]["actor_id"] == "operator" and decided[0]["detail"]["reason"] == "looks odd"
    assert decided[0]["detail"]["signed_with"].startswith("operator-key:")  # the CLI's own key signed it
    declined_record = next(r for r in records if r["intent_id"] == rejected.intent_id
                           and r["kind"] == "approval-rejected")
    assert declined_record["detail"]["signed_with"].startswith("operator-key:")


def test_an_operator_prints_a_one_time_sign_in_link_for_a_person(var_dir, running_set):  # noqa: F811
    printed = tessera(var_dir, "persons", "enroll", "ada@example.org", "--tenant", "acme", "--name", "Ada")
    assert printed.returncode == 0, printed.stderr
    link = printed.stdout.strip()
    port = running_set.handles["web"].port
    assert re.fullmatch(rf"http://localhost:{port}/sign-in#token=[A-Za-z0-9_-]{{40,}}", link), link
    assert "ada@example.org (tenant acme; no passkey yet)" in printed.stderr and "works once" in printed.stderr
    base = f"http://{running_set.handles['web'].address}"
    token = link.split("#token=")[1]
    with httpx.Client(base_url=base, timeout=60) as browser:
        signed_in = browser.post("/api/sign-in/link", json={"token": token})
        assert signed_in.status_code == 200 and signed_in.json()["actor"] == "ada@example.org"
        assert browser.get("/api/session").json()["name"] == "Ada"
        assert browser.post("/api/sign-in/link", json={"token": token}).json()["reason"] == "LINK_USED"
        passkey = enroll_in_browser(browser.post, signed_in.json(), f"http://localhost:{port}")
        cookie = browser.cookies[session_cookie_name(base)]
    bad = tessera(var_dir, "persons", "enroll", "ada lovelace")
    assert bad.returncode == 1 and "FIELD_INVALID" in bad.stderr

    listed = tessera(var_dir, "persons", "passkeys", "ada@example.org", "--tenant", "acme")
    assert listed.returncode == 0 and passkey.id in listed.stdout and "never" in listed.stdout, listed.stdout
    revoked = tessera(var_dir, "persons", "revoke", "--tenant", "acme", "--", "ada@example.org", passkey.id)
    assert revoked.returncode == 0 and re.fullmatch(
        r"revoked; ada@example\.org has 0 passkey\(s\) left; [1-9][0-9]* web session\(s\) ended",
        revoked.stdout.strip()), revoked.stdout
    # The browser signed in when the passkey was added is signed out with it (web asks the broker within 5 s).
    assert wait_until(lambda: (reply := httpx.get(f"{base}/api/session", cookies={session_cookie_name(base): cookie},
                                                  timeout=30)).status_code == 401 and reply.json()["reason"], 30,
                      what="the revoked passkey's session ended") == "SESSION_ENDED"
    again = tessera(var_dir, "persons", "revoke", "--tenant", "acme", "--", "ada@example.org", passkey.id)
    assert again.returncode == 1 and "PASSKEY_UNKNOWN" in again.stderr
    assert "has no passkey" in tessera(var_dir, "persons", "passkeys", "ada@example.org", "--tenant", "acme").stdout


def test_the_operator_key_is_refused_where_the_policy_does_not_name_it_and_the_refusal_is_on_record(
        var_dir, running_set, credentials, cert_dir):  # noqa: F811
    """A tool whose rule names no approvers takes the person's passkey only: `tessera approvals approve` sends
    the operator key's signature anyway, and prints the broker's refusal, which the audit trail records."""
    operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)
    with sync_channel(running_set.handles["capabilities"].address, credentials("agent"), "capabilities") as broker:
        asked = invoke(broker, "capabilities", "CallTool", cap.CallToolRequest(
            actor=operator, session_id="ses_cli_tool", turn_id="trn_cli", call_id="cli-ticket-1",
            tool_id="tickets.create_ticket", arguments_json=json.dumps({"subject": "Lamp", "body": "Broken"})),
            timeout=60)
    approval_id = asked.pending_approval.approval_id
    assert approval_id, asked
    refused = tessera(var_dir, "approvals", "approve", approval_id)
    assert refused.returncode == 1 and refused.stderr.startswith("tessera: PASSKEY_REQUIRED: "), refused.stderr
    assert f"decide {approval_id} in the browser" in refused.stderr
    shown = tessera(var_dir, "approvals", "show", approval_id)
    assert "awaiting-approval" in shown.stdout  # nothing was decided
    records = [json.loads(line) for line in tessera(var_dir, "audit", "--json").stdout.splitlines()]
    assert {"approval_id": approval_id, "reason": "PASSKEY_REQUIRED", "signed_with": "operator_key"} in [
        r["detail"] for r in records if r["kind"] == "decision-refused"]


def test_an_operator_replaces_a_persons_passkeys_on_the_record(var_dir, running_set, credentials,  # noqa: F811
                                                               cert_dir):
    """`tessera persons enroll --replace`: the person's passkeys are revoked with the new link, and audited."""
    first = tessera(var_dir, "persons", "enroll", "ben@example.org", "--tenant", "acme")
    port, base = running_set.handles["web"].port, f"http://{running_set.handles['web'].address}"
    with httpx.Client(base_url=base, timeout=60) as browser:
        signed_in = browser.post("/api/sign-in/link", json={"token": first.stdout.strip().split("#token=")[1]})
        lost = enroll_in_browser(browser.post, signed_in.json(), f"http://localhost:{port}")
        assert browser.get("/api/session").status_code == 200
    cookie = signed_in.cookies[session_cookie_name(base)]
    plain = tessera(var_dir, "persons", "enroll", "ben@example.org", "--tenant", "acme")
    assert "1 passkey(s) already: one of them must confirm a new one, or use --replace" in plain.stderr
    replaced = tessera(var_dir, "persons", "enroll", "ben@example.org", "--tenant", "acme", "--replace")
    assert replaced.returncode == 0 and "(tenant acme; 1 passkey(s) revoked, 1 web session(s) ended)" in \
        replaced.stderr, replaced.stderr
    # The browser that registered the replaced passkey is signed out with it, on every replica.
    assert wait_until(lambda: (reply := httpx.get(f"{base}/api/session", cookies={session_cookie_name(base): cookie},
                                                  timeout=30)).status_code == 401 and reply.json()["reason"], 30,
                      what="the replaced passkey's session ended") == "SESSION_ENDED"
    assert "has no passkey" in tessera(var_dir, "persons", "passkeys", "ben@example.org", "--tenant", "acme").stdout
    # On the record in ben's tenant (`tessera audit` exports the operator's own, local).
    in_acme = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "operator", "acme")
    with sync_channel(running_set.handles["capabilities"].address, credentials("cli"), "capabilities") as broker:
        records = [json.loads(r.record_json) for r in invoke_stream(
            broker, "capabilities", "ExportAudit", cap.ExportAuditRequest(actor=in_acme), timeout=60)]
    assert {"person": "ben@example.org", "revoked": [lost.id], "sessions_ended": 1} in [
        r["detail"] for r in records if r["kind"] == "passkeys-replaced"]
    assert {"person": "ben@example.org", "sessions_ended": 1, "cause": "passkeys-replaced"} in [
        r["detail"] for r in records if r["kind"] == "person-signed-out"]


class _CallFailed(grpc.RpcError):
    def __init__(self, code=grpc.StatusCode.UNAVAILABLE):
        self._code = code

    def code(self):
        return self._code


def _failing(code):
    def call():
        raise _CallFailed(code)
    return call


def test_retrying_is_bounded_backs_off_and_gives_up_at_once_on_a_refusal():
    waited, answers = [], [_CallFailed(), _CallFailed(grpc.StatusCode.DEADLINE_EXCEEDED), "decided"]

    def call():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert retrying(call, sleep=waited.append) == "decided" and waited == [0.5, 1.0]
    waited.clear()
    with pytest.raises(_CallFailed):  # down for good: every attempt, then the error
        retrying(_failing(grpc.StatusCode.UNAVAILABLE), sleep=waited.append)
    assert waited == list(RETRY_DELAYS)
    waited.clear()
    with pytest.raises(_CallFailed):  # a refusal is an answer: not retried
        retrying(_failing(grpc.StatusCode.FAILED_PRECONDITION), sleep=waited.append)
    assert waited == []


def test_an_approval_that_went_through_before_the_broker_died_is_reported_after_the_retry(
        running_set, credentials, cert_dir, warehouse_url, tmp_path):
    """`tessera approvals approve` while the broker is killed mid-effect: the CLI retries with its decision id
    until the restarted broker answers, and prints what actually happened (the effect ran once)."""
    copy = tmp_path / "warehouse.sqlite"
    shutil.copy(warehouse_url.removeprefix("sqlite:///"), copy)
    processes = ServiceSet(cert_dir, tmp_path / "run", names=("capabilities",), ephemeral_ports=True, extra_env={
        "TESSERA_HOST_ADDR": running_set.handles["host"].address,
        "TESSERA_CAPABILITIES_DATABASE_URL": f"sqlite:///{tmp_path / 'broker.sqlite'}",
        "TESSERA_CAPABILITIES_CHANGES_URL": f"sqlite:///{copy}"})
    processes.start()
    var = tmp_path / "var"
    (var / "run").mkdir(parents=True)
    (var / "run" / "services.json").write_text(json.dumps(processes.state()))
    broker_db = sa.create_engine(f"sqlite:///{tmp_path / 'broker.sqlite'}")
    blocker = sqlite3.connect(copy, isolation_level=None)
    try:
        operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)
        with sync_channel(processes.handles["capabilities"].address, credentials("agent"), "capabilities") as agent:
            receipt = invoke(agent, "capabilities", "SubmitIntent", cap.SubmitIntentRequest(
                actor=operator, session_id="ses_cli", action_id="orders.flag_for_review",
                input_json=json.dumps({"record_id": 63}), idempotency_key="cli-63")).receipt
        blocker.execute("BEGIN EXCLUSIVE")  # the effect waits on the warehouse …
        approving = subprocess.Popen([sys.executable, "-m", "cli", "approvals", "approve", receipt.approval_id],
                                     cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={"TESSERA_VAR_DIR": str(var), "PATH": "/usr/bin:/bin"})

        def attempted():
            with broker_db.connect() as connection:
                return connection.execute(sa.text("SELECT attempted FROM intents WHERE intent_id = :i"),
                                          {"i": receipt.intent_id}).scalar()

        wait_until(attempted, 60, what="the approval being recorded and its effect starting")
        os.kill(processes.handles["capabilities"].pid, signal.SIGKILL)  # … when the broker dies
        processes.handles["capabilities"].process.wait()
        blocker.execute("ROLLBACK")
        processes.restart("capabilities")  # same port, same database: it takes the approved intent up
        out, err = approving.communicate(timeout=90)
        assert approving.returncode == 0, err
        assert out.strip() == f"{receipt.intent_id}: succeeded"
        assert order(f"sqlite:///{copy}", 63) == ("flagged", 2)  # exactly one effect
    finally:
        blocker.close()
        broker_db.dispose()
        processes.stop()


def test_show_says_the_run_read_external_text_and_what_it_read(var_dir, running_set, credentials,  # noqa: F811
                                                                cert_dir):
    """As the browser card: a request made after reading a ticket shows the taint, the flag and the reads."""
    from tessera.agent.v1 import agent_pb2
    from tessera.host.v1 import host_pb2

    operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host, \
            sync_channel(running_set.handles["agent"].address, credentials("cli"), "agent") as agent:
        session = invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(actor=operator,
                                                                                  request_id="cli-taint"))
        approval_id = ""
        for question in ("What does ticket 4815 say?", "Open a ticket about the delivery address"):
            call = agent.unary_stream("/tessera.agent.v1.AgentService/StartTurn",
                                      request_serializer=agent_pb2.StartTurnRequest.SerializeToString,
                                      response_deserializer=agent_pb2.StartTurnResponse.FromString)
            for event in call(agent_pb2.StartTurnRequest(actor=operator, session_id=session.session_id,
                                                         question=question, request_id=question[:20]), timeout=60):
                if event.WhichOneof("event") == "tool_step" and event.tool_step.approval_id:
                    approval_id = event.tool_step.approval_id
    assert approval_id, "the ticket request asked for approval"
    shown = tessera(var_dir, "approvals", "show", approval_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "Open a support ticket: “the delivery address”"
    assert "tainted: this run read external content before asking" in lines
    assert any(line.startswith("flagged: ") and "ticket_id 4815" in line for line in lines), shown.stdout
    assert any(line.startswith("read: tickets.get_ticket (") for line in lines), shown.stdout
