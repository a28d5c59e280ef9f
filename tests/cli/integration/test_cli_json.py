"""The operator CLI for scripts: `--json` on status, approvals, audit and persons gives the same facts the
tables give, a refusal as JSON too, and the audit table shows times as people read them."""

from __future__ import annotations

import datetime as dt
import json
import re

from cli.persons import OPERATOR
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.capabilities.integration.test_broker import order
from tests.cli.integration.test_cli_approvals import tessera
from tests.cli.integration.test_cli_ask import var_dir  # noqa: F401  (fixture)

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def test_status_as_json_says_what_the_table_says(var_dir, running_set):  # noqa: F811
    shown = tessera(var_dir, "status")
    report = tessera(var_dir, "status", "--json")
    assert report.returncode == shown.returncode == 0, report.stderr
    document = json.loads(report.stdout)
    assert document["healthy"] is True
    assert [s["service"] for s in document["services"]] == list(running_set.handles)
    for service in document["services"]:
        assert service["health"] == "SERVING" and service["pid"] == running_set.handles[service["service"]].pid
        row = next(line.split() for line in shown.stdout.splitlines() if line.startswith(service["service"] + " "))
        assert row[1:4] == [service["address"], str(service["pid"]), "SERVING"]
    assert {s["name"] for s in document["tool_servers"]} == {
        line.split()[0] for line in shown.stdout.split("\n\n", 1)[1].splitlines()[2:] if line.split()}


def test_an_approval_is_listed_shown_and_decided_as_json_and_audited_with_readable_times(
        var_dir, running_set, credentials, cert_dir, warehouse_url):  # noqa: F811
    operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)
    with sync_channel(running_set.handles["capabilities"].address, credentials("agent"), "capabilities") as broker:
        flagged = invoke(broker, "capabilities", "SubmitIntent", cap.SubmitIntentRequest(
            actor=operator, session_id="ses_cli_json", action_id="orders.flag_for_review",
            input_json=json.dumps({"record_id": 64}), idempotency_key="cli-json-64")).receipt

    listed = json.loads(tessera(var_dir, "approvals", "list", "--json").stdout)
    mine = next(a for a in listed if a["approval_id"] == flagged.approval_id)
    assert mine["title"] == "Flag order 64 for review" and mine["status"] == "awaiting-approval"
    assert ISO_UTC.fullmatch(mine["requested_at"]) and mine["expires_at"] > mine["requested_at"]

    card = json.loads(tessera(var_dir, "approvals", "show", flagged.approval_id, "--json").stdout)
    assert card["changes"] == [{"entry": "e1", "record": "Order 64", "field": "Review status", "before": "none",
                                "after": "flagged", "record_version": "1"}]
    assert card["risk"] == "mutate" and card["tainted"] is False and card["arguments"] is None

    approved = tessera(var_dir, "approvals", "approve", flagged.approval_id, "--reason", "scripted", "--json")
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout) == {"approval_id": flagged.approval_id, "intent_id": flagged.intent_id,
                                           "status": "succeeded", "reason": ""}
    assert order(warehouse_url, 64) == ("flagged", 2)
    again = tessera(var_dir, "approvals", "approve", flagged.approval_id, "--json")
    assert again.returncode == 1 and json.loads(again.stdout)["error"]["reason"] == "APPROVAL_ALREADY_DECIDED"

    records = [json.loads(line) for line in tessera(var_dir, "audit", "--json").stdout.splitlines()]
    decided = next(r for r in records if r["intent_id"] == flagged.intent_id and r["kind"] == "approval-approved")
    table = tessera(var_dir, "audit")
    assert table.returncode == 0 and table.stdout.splitlines()[0].split() == [
        "when", "(UTC)", "what", "who", "about", "detail"]
    when = dt.datetime.fromtimestamp(decided["at"], dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    row = next(line for line in table.stdout.splitlines() if "approval-approved" in line and flagged.intent_id in line)
    assert row.startswith(when) and "reason=scripted" in row, row
    assert not re.search(r"\b1[0-9]{9}\.[0-9]+\b", table.stdout), "an epoch time in the table"


def test_a_persons_link_passkeys_and_sign_out_as_json_and_a_refusal_as_json(var_dir, running_set):  # noqa: F811
    enrolled = tessera(var_dir, "persons", "enroll", "grace@example.org", "--tenant", "acme", "--json")
    assert enrolled.returncode == 0, enrolled.stderr
    link = json.loads(enrolled.stdout)
    assert link["person"] == "grace@example.org" and link["passkeys"] == 0 and ISO_UTC.fullmatch(link["expires_at"])
    assert re.fullmatch(rf"http://localhost:{running_set.handles['web'].port}/sign-in#token=[A-Za-z0-9_-]{{40,}}",
                        link["link"])
    assert json.loads(tessera(var_dir, "persons", "passkeys", "grace@example.org", "--tenant", "acme",
                              "--json").stdout) == {"person": "grace@example.org", "tenant": "acme", "passkeys": []}
    signed_out = json.loads(tessera(var_dir, "persons", "sign-out", "grace@example.org", "--tenant", "acme",
                                    "--json").stdout)
    assert signed_out == {"person": "grace@example.org", "tenant": "acme", "sessions_ended": 0}
    bad = tessera(var_dir, "persons", "enroll", "grace hopper", "--json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["reason"] == "FIELD_INVALID"
    assert "FIELD_INVALID" in bad.stderr


def test_an_action_a_question_leaves_waiting_is_on_the_operators_desk(var_dir):  # noqa: F811
    """`tessera ask` exits 4 when the answer waits for a person; the approval it names is the one `tessera
    approvals list` shows the operator, in words."""
    asked = tessera(var_dir, "ask", "Open a ticket about a flickering desk lamp", "--json")
    assert asked.returncode == 4, asked.stdout + asked.stderr
    (approval_id,) = json.loads(asked.stdout)["approvals"]
    waiting = json.loads(tessera(var_dir, "approvals", "list", "--json").stdout)
    mine = next(a for a in waiting if a["approval_id"] == approval_id)
    assert mine["action"] == "tickets.create_ticket" and mine["status"] == "awaiting-approval"
    assert approval_id in tessera(var_dir, "approvals", "list").stdout
