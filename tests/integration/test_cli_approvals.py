"""`tessera approvals` and `tessera audit` as an operator runs them against the running broker."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from cli.approvals import OPERATOR
from shared.actors import assert_actor
from shared.certs import load_signing_key, signing_key_path
from shared.channels import sync_channel
from shared.contracts import invoke
from shared.paths import REPO_ROOT
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.integration.test_broker import order
from tests.integration.test_cli_ask import var_dir  # noqa: F401  (fixture)


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
    assert "orders.flag_for_review  [mutate]  awaiting-approval" in shown.stdout
    assert re.search(r'e1\s+/entries/0/after\s+"none"\s+"flagged"\s+1', shown.stdout)

    approved = tessera(var_dir, "approvals", "approve", flagged.approval_id, "--reason", "looks odd")
    assert approved.returncode == 0 and approved.stdout.strip() == f"{flagged.intent_id}: succeeded"
    declined = tessera(var_dir, "approvals", "reject", rejected.approval_id, "--reason", "fine")
    assert declined.stdout.strip() == f"{rejected.intent_id}: rejected (REJECTED_BY_PERSON)"
    assert (order(warehouse_url, 61), order(warehouse_url, 62)) == (("flagged", 2), ("none", 1))

    again = tessera(var_dir, "approvals", "approve", flagged.approval_id)
    assert again.returncode == 1 and "APPROVAL_ALREADY_DECIDED" in again.stderr

    out = tmp_path / "audit.jsonl"
    exported = tessera(var_dir, "audit", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    decided = [r for r in records if r["intent_id"] == flagged.intent_id and r["kind"] == "approval-approved"]
    assert decided and decided[0]["actor_id"] == "operator" and decided[0]["detail"]["reason"] == "looks odd"
