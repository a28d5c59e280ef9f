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

from services.capabilities.passkey_store import PasskeyStore
from services.capabilities.passkeys import RelyingParty
from services.capabilities.policy import ActionPolicy, PolicyError
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import engine_for, migrate
from shared import decisions
from shared.actors import Actor
from shared.errors import TesseraError
from shared.paths import REPO_ROOT
from shared.refusals import Exhausted
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
    """The browser signs what passkeys.js computes; the broker verifies against shared/decisions.py: byte for
    byte the same, entries in any order, any reason (its UTF-8 SHA-256 is what is signed)."""
    ours = decisions.challenge("apr_1", "a" * 64, approve, [(e, True) for e in entries], "n-1", reason)
    assert _page_challenge("apr_1", "a" * 64, approve, entries, "n-1", reason) == ours
    assert ours != decisions.challenge("apr_1", "a" * 64, not approve, [(e, True) for e in entries], "n-1", reason)
    assert ours != decisions.challenge("apr_1", "a" * 64, approve, [(e, True) for e in entries], "n-1", reason + ".")


def test_ids_a_challenge_cannot_hold_are_refused():
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
