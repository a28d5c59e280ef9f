"""Who may sign a decision, below the broker's servicer: the policy's approvers per action or tool, the
operator key only for a CLI-asserted person, and the challenge the browser and the broker both compute."""

from __future__ import annotations

import json
import subprocess
import time
from types import SimpleNamespace

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import ed25519
from pydantic import ValidationError

from services.capabilities.enrollment import enrollment_challenge
from services.capabilities.passkey_store import PasskeyStore
from services.capabilities.passkeys import RelyingParty
from services.capabilities.policy import ActionPolicy, Approvers, PolicyError
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import engine_for, migrate
from services.capabilities.tool_policy import ToolRule
from shared.identity import decisions
from shared.identity.actors import Actor
from shared.paths import REPO_ROOT
from shared.rpc.refusals import Exhausted, Refusal
from tessera.capabilities.v1 import capabilities_pb2 as cap

OPERATOR_KEY = ed25519.Ed25519PrivateKey.generate()
APPROVERS = {"flag": Approvers(approvers=("passkey", "operator-key"), operator_tenants=("acme",)),
             "wire_money": Approvers(),  # the default: the person's passkey only
             "cli_only": Approvers(approvers=("operator-key",), operator_tenants=("acme", "ops"))}


@pytest.fixture
def signatures(tmp_path):
    engine = engine_for(f"sqlite:///{tmp_path / 'broker.sqlite'}")
    migrate(engine)
    yield DecisionSignatures(PasskeyStore(engine), RelyingParty("localhost"), OPERATOR_KEY.public_key(),
                             lambda action_id: APPROVERS[action_id])
    engine.dispose()


def _request(nonce: str = "n-1") -> cap.DecideRequest:
    return cap.DecideRequest(approval_id="apr_1", arguments_sha256="a" * 64, decision=cap.DECISION_APPROVE,
                             nonce=nonce)


def _refusal(call) -> str:
    with pytest.raises(Refusal) as refused:
        call()
    return refused.value.reason


def _intent(action_id: str, tenant_id: str = "acme") -> SimpleNamespace:
    return SimpleNamespace(action_id=action_id, tenant_id=tenant_id)


def test_the_operator_key_counts_only_where_the_policy_names_it_for_the_tenant_and_only_from_the_cli(signatures):
    by_cli = Actor("ops", "acme", "", "cli")
    signed = decisions.signed_by_operator(_request(), "n-1", OPERATOR_KEY)
    assert signatures.verify(by_cli, signed, _intent("flag")).signed_with.startswith("operator-key:")
    # The default approvers: the person's passkey only, whoever asserts them.
    assert _refusal(lambda: signatures.verify(by_cli, signed, _intent("wire_money"))) == "PASSKEY_REQUIRED"
    # Named for acme only: an intent of another tenant is refused, though the signature itself is valid.
    assert _refusal(lambda: signatures.verify(Actor("ops", "globex", "", "cli"), signed,
                                              _intent("flag", "globex"))) == "OPERATOR_KEY_NOT_FOR_TENANT"
    assert _refusal(lambda: signatures.verify(Actor("ops", "acme", "", "web"), signed,
                                              _intent("flag"))) == "OPERATOR_KEY_FROM_CLI_ONLY"
    passkey_signed = _request()
    passkey_signed.passkey.credential_id = "abc"
    assert _refusal(lambda: signatures.verify(by_cli, passkey_signed, _intent("cli_only"))) == "PASSKEY_NOT_ALLOWED"


def test_the_operator_key_rejects_only_where_it_may_approve_and_the_person_rejects_their_own_anywhere(signatures):
    """Whoever holds the CLI's key can assert any person: its rejections, signed or unsigned, are held to the
    same rule as its approvals (the intent's policy names operator-key for the intent's tenant)."""
    unsigned_reject = cap.DecideRequest(approval_id="apr_1", decision=cap.DECISION_REJECT)
    signed_reject = decisions.signed_by_operator(unsigned_reject, "n-1", OPERATOR_KEY)
    for reject in (unsigned_reject, signed_reject):
        kind = reject.WhichOneof("signature") or "unsigned"
        assert _refusal(lambda r=reject: signatures.verify(Actor("ops", "acme", "", "cli"), r,
                                                           _intent("wire_money"))) == "PASSKEY_REQUIRED", kind
        for tenant in ("globex", "ops"):  # "ops" is listed, but for another action (cli_only) only
            assert _refusal(lambda r=reject, t=tenant: signatures.verify(
                Actor("ops", t, "", "cli"), r, _intent("flag", t))) == "OPERATOR_KEY_NOT_FOR_TENANT", (kind, tenant)
        signed_with = signatures.verify(Actor("ops", "acme", "", "cli"), reject, _intent("flag")).signed_with
        assert signed_with.startswith("operator-key:" if kind == "operator_key" else "unsigned"), kind
    assert signatures.verify(Actor("ops", "acme", "", "cli"), signed_reject,
                             _intent("cli_only")).signed_with.startswith("operator-key:")
    # In the person's own session (web asserts them) a rejection may still come unsigned: it runs nothing.
    assert signatures.verify(Actor("alice", "globex", "", "web"), unsigned_reject,
                             _intent("wire_money", "globex")).signed_with == "unsigned"
    # The person's own passkey may reject even where only the operator key may approve: the policy's approvers
    # are not asked (an unknown credential gets as far as the passkey lookup, not PASSKEY_NOT_ALLOWED).
    passkey_reject = cap.DecideRequest(approval_id="apr_1", arguments_sha256="a" * 64,
                                       decision=cap.DECISION_REJECT, nonce="n-1")
    passkey_reject.passkey.credential_id = "abc"
    assert _refusal(lambda: signatures.verify(Actor("alice", "acme", "", "web"), passkey_reject,
                                              _intent("cli_only"))) == "CREDENTIAL_UNKNOWN"


def test_begin_decision_tells_whether_the_operator_key_may_approve_here(signatures):
    approval = SimpleNamespace(approval_id="apr_1", expires_at=time.time() + 600)
    for action, tenant, allowed in (("flag", "acme", True), ("flag", "globex", False), ("wire_money", "acme", False)):
        begun = signatures.begin(Actor("ops", tenant, "", "cli"), approval, _intent(action, tenant))
        assert begun.operator_key_allowed is allowed, (action, tenant)


def test_a_nonce_is_bounded_per_approval(signatures):
    for number in range(20):
        signatures.people.issue_nonce(f"n-{number}", "apr_1", "acme", "dana", time.time() + 300)
    with pytest.raises(Exhausted) as refused:
        signatures.people.issue_nonce("n-21", "apr_1", "acme", "dana", time.time() + 300)
    assert refused.value.reason == "TOO_MANY_OPEN_DECISIONS"
    signatures.people.issue_nonce("n-other", "apr_2", "acme", "dana", time.time() + 300)  # per approval


PAGE_MODULE = REPO_ROOT / "services" / "web" / "frontend" / "src" / "passkeys.js"


def _page_challenge(approval_id: str, arguments_sha256: str, approve: bool, entries: list[str], nonce: str,
                    reason: str) -> bytes:
    """What the page's own code (passkeys.js, run by Node) asks the passkey to sign."""
    script = (f"import {{ decisionChallenge }} from {json.dumps(PAGE_MODULE.as_uri())};\n"
              "const [a, s, ok, entries, nonce, reason] = JSON.parse(process.argv[1]);\n"
              "const bytes = await decisionChallenge(a, s, ok, entries, nonce, reason);\n"
              "console.log(Buffer.from(bytes).toString('hex'));")
    done = subprocess.run(["node", "--input-type=module", "-e", script,
                           json.dumps([approval_id, arguments_sha256, approve, entries, nonce, reason])],
                          capture_output=True, text=True, timeout=60, check=True)
    return bytes.fromhex(done.stdout.strip())


@pytest.mark.parametrize(("approve", "entries", "reason"), [
    (True, [], ""), (False, [], "looks wrong"), (True, ["e2", "e1"], "Geprüft ✓ — \"quoted\" \\ <b>"),
])
def test_the_page_and_the_broker_compute_the_same_challenge(approve, entries, reason):
    """The browser signs what passkeys.js computes; the broker verifies against shared/identity/decisions.py: byte for
    byte the same, entries in any order, any reason (its UTF-8 SHA-256 is what is signed)."""
    ours = decisions.challenge("apr_1", "a" * 64, approve, [(e, True) for e in entries], "n-1", reason)
    assert _page_challenge("apr_1", "a" * 64, approve, entries, "n-1", reason) == ours
    assert ours != decisions.challenge("apr_1", "a" * 64, not approve, [(e, True) for e in entries], "n-1", reason)
    assert ours != decisions.challenge("apr_1", "a" * 64, approve, [(e, True) for e in entries], "n-1", reason + ".")


def test_ids_a_challenge_cannot_hold_are_refused():
    with pytest.raises(decisions.ChallengeError):
        decisions.challenge("apr_\u00e9", "a" * 64, True, [], "n-1")


def test_a_policy_names_who_may_approve_each_action_and_the_operator_key_only_with_its_tenants(tmp_path):
    shipped = yaml.safe_load((REPO_ROOT / "deploy" / "policy" / "actions.yaml").read_text())
    path = tmp_path / "actions.yaml"
    assert all(a.spec.approvers == ("passkey",) for a in ActionPolicy.load(
        REPO_ROOT / "deploy" / "policy" / "actions.yaml").actions.values())  # as shipped: no operator key
    flag = shipped["actions"]["orders.flag_for_review"]
    flag.update(approvers=["passkey", "operator-key"], operator_tenants=["ops"])
    path.write_text(yaml.safe_dump(shipped))
    spec = ActionPolicy.load(path).actions["orders.flag_for_review"].spec
    assert spec.operator_key_in("ops") and not spec.operator_key_in("acme")
    wrongs = ({"approvers": []}, {"approvers": ["root"]},
              {"approvers": ["passkey", "operator-key"], "operator_tenants": []},  # named without tenants
              {"approvers": ["passkey"], "operator_tenants": ["ops"]},  # tenants for a key it does not name
              {"approvers": ["operator-key"], "operator_tenants": ["not a tenant"]})
    for wrong in wrongs:
        flag.pop("operator_tenants", None)
        flag.update(wrong)
        path.write_text(yaml.safe_dump(shipped))
        with pytest.raises(PolicyError):
            ActionPolicy.load(path)


def test_a_tool_rule_names_its_approvers_by_the_same_rule():
    """Tool rules (tools.yaml) take the action contracts' approvers: the passkey by default, the operator key
    only with its tenants."""
    assert ToolRule(risk="mutate", description="Open a ticket.").approvers == ("passkey",)
    named = ToolRule(risk="mutate", description="Open a ticket.", approvers=["passkey", "operator-key"],
                     operator_tenants=["ops"])
    assert named.operator_key_in("ops") and not named.operator_key_in("acme")
    with pytest.raises(ValidationError):
        ToolRule(risk="mutate", description="Open a ticket.", approvers=["operator-key"])


ENROLLMENT_PAGE = (f"import {{ enrollmentChallenge }} from {json.dumps(PAGE_MODULE.as_uri())};\n"
                   "const bytes = await enrollmentChallenge(...JSON.parse(process.argv[1]));\n"
                   "console.log(Buffer.from(bytes).toString('hex'));")


def test_the_page_and_the_broker_compute_the_same_enrollment_challenge():
    """An existing passkey confirms a new one over what passkeys.js computes; the broker verifies against
    enrollment.py: the same bytes, and a different enrollment or new credential is a different challenge."""
    registration_challenge = bytes(range(32))
    done = subprocess.run(["node", "--input-type=module", "-e", ENROLLMENT_PAGE, json.dumps(
        ["enr_abcdefghijkl", "Y3JlZA", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"])],
        capture_output=True, text=True, timeout=60, check=True)
    ours = enrollment_challenge("enr_abcdefghijkl", "Y3JlZA", registration_challenge)
    assert bytes.fromhex(done.stdout.strip()) == ours
    assert ours != enrollment_challenge("enr_abcdefghijkm", "Y3JlZA", registration_challenge)
    assert ours != enrollment_challenge("enr_abcdefghijkl", "Y3JlZB", registration_challenge)
