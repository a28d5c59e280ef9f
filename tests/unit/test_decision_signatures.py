"""Who may sign a decision, below the broker's servicer: the policy's approvers per action or tool, the
operator key only for a CLI-asserted person, and the challenge the browser and the broker both compute."""

from __future__ import annotations

import hashlib
import json
import time
from types import SimpleNamespace

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import ed25519

from services.capabilities.passkey_store import PasskeyStore
from services.capabilities.passkeys import RelyingParty
from services.capabilities.policy import ActionPolicy, PolicyError
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import engine_for, migrate
from shared import decisions
from shared.actors import Actor
from shared.errors import TesseraError
from shared.paths import REPO_ROOT
from tessera.capabilities.v1 import capabilities_pb2 as cap

OPERATOR_KEY = ed25519.Ed25519PrivateKey.generate()
APPROVERS = {"flag": ("passkey", "operator-key"), "wire_money": ("passkey",), "cli_only": ("operator-key",)}


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
    with pytest.raises(TesseraError) as refused:
        call()
    return refused.value.reason


def test_the_operator_key_counts_only_where_the_policy_accepts_it_and_only_from_the_cli(signatures):
    by_cli = Actor("ops", "acme", "", "cli")
    signed = decisions.signed_by_operator(_request(), "n-1", OPERATOR_KEY)
    assert signatures.verify(by_cli, signed, SimpleNamespace(action_id="flag")).signed_with.startswith(
        "operator-key:")
    assert _refusal(lambda: signatures.verify(by_cli, signed, SimpleNamespace(action_id="wire_money"))) == \
        "PASSKEY_REQUIRED"
    assert _refusal(lambda: signatures.verify(Actor("ops", "acme", "", "web"), signed,
                                              SimpleNamespace(action_id="flag"))) == "OPERATOR_KEY_FROM_CLI_ONLY"
    passkey_signed = _request()
    passkey_signed.passkey.credential_id = "abc"
    assert _refusal(lambda: signatures.verify(by_cli, passkey_signed, SimpleNamespace(action_id="cli_only"))) == \
        "PASSKEY_NOT_ALLOWED"
    unsigned_reject = cap.DecideRequest(approval_id="apr_1", decision=cap.DECISION_REJECT)
    assert signatures.verify(by_cli, unsigned_reject, SimpleNamespace(action_id="wire_money")).signed_with == \
        "unsigned"


def test_a_nonce_is_bounded_per_approval(signatures):
    for number in range(20):
        signatures.people.issue_nonce(f"n-{number}", "apr_1", "acme", "dana", time.time() + 300)
    with pytest.raises(TesseraError) as refused:
        signatures.people.issue_nonce("n-21", "apr_1", "acme", "dana", time.time() + 300)
    assert refused.value.reason == "TOO_MANY_OPEN_DECISIONS"
    signatures.people.issue_nonce("n-other", "apr_2", "acme", "dana", time.time() + 300)  # per approval


def test_the_challenge_is_the_sha256_of_the_json_the_page_builds():
    """The page computes SHA-256(JSON.stringify([...])) (services/web/frontend/src/passkeys.js); this is that
    array, so the two agree byte for byte; entries are sorted, and ids outside printable ASCII are refused."""
    reason = "Prüfung ✓"
    expected = json.dumps(["tessera.decision.v1", "apr_1", "a" * 64, "approve", [["e1", "approve"], ["e2", "approve"]],
                           "n-1", hashlib.sha256(reason.encode()).hexdigest()], separators=(",", ":")).encode()
    assert decisions.challenge("apr_1", "a" * 64, True, [("e2", True), ("e1", True)], "n-1", reason) == \
        hashlib.sha256(expected).digest()
    assert decisions.challenge("apr_1", "a" * 64, True, [], "n-1") != decisions.challenge(
        "apr_1", "a" * 64, False, [], "n-1")
    with pytest.raises(decisions.ChallengeError):
        decisions.challenge("apr_\u00e9", "a" * 64, True, [], "n-1")


def test_a_policy_names_who_may_approve_each_action(tmp_path):
    shipped = yaml.safe_load((REPO_ROOT / "deploy" / "policy" / "actions.yaml").read_text())
    shipped["actions"]["orders.flag_for_review"]["approvers"] = ["passkey"]
    path = tmp_path / "actions.yaml"
    path.write_text(yaml.safe_dump(shipped))
    assert ActionPolicy.load(path).actions["orders.flag_for_review"].spec.approvers == ("passkey",)
    for wrong in ([], ["root"]):
        shipped["actions"]["orders.flag_for_review"]["approvers"] = wrong
        path.write_text(yaml.safe_dump(shipped))
        with pytest.raises(PolicyError):
            ActionPolicy.load(path)
