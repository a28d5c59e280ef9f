"""The broker verifies who signed a decision, against the running set: passkeys registered through one-time
links, the operator CLI's key, and a precise, audited refusal for each way a signature can be wrong. Nothing
runs unless a valid signature of the person (or the operator's key) approves it."""

from __future__ import annotations

import json

import httpx
import pytest

from shared.identity.actors import ActorVerifier, assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.identity.decisions import signed_by_operator
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke_stream
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tests.capabilities.integration.test_broker import (
    Broker,
    flag,
    order,
    own_broker,  # noqa: F401, F811  (fixture)
    refused,
)
from tests.fixtures.approvers import SHIPPED_ACTIONS
from tests.fixtures.signing import SoftPasskey, enroll, passkey_signed, sign_in


@pytest.fixture(scope="module")
def broker(running_set, credentials):
    client = Broker(running_set.handles["capabilities"].address, credentials)
    yield client
    client.close()


def person(cert_dir, name, edge="web"):
    return assert_actor(load_signing_key(signing_key_path(cert_dir, edge)), name, "acme")


def approve(actor, receipt) -> cap.DecideRequest:
    return cap.DecideRequest(actor=actor, approval_id=receipt.approval_id, decision=cap.DECISION_APPROVE,
                             arguments_sha256=receipt.arguments_sha256)


def audit_reasons(running_set, credentials, actor, kind="decision-refused") -> list[str]:
    with sync_channel(running_set.handles["capabilities"].address, credentials("cli"), "capabilities") as channel:
        records = [json.loads(r.record_json) for r in invoke_stream(
            channel, "capabilities", "ExportAudit", cap.ExportAuditRequest(actor=actor), timeout=60)]
    return [r["detail"].get("reason") for r in records if r["kind"] == kind]


def test_every_wrong_signature_is_refused_with_its_reason_audited_and_nothing_runs(broker, running_set, credentials,
                                                                                     cert_dir, warehouse_url):
    dana, erin = person(cert_dir, "dana"), person(cert_dir, "erin")
    dana_key, erin_key = enroll(broker, dana, cert_dir), enroll(broker, erin, cert_dir)
    receipt = flag(broker, dana, 81, principal="agent").receipt
    request = approve(dana, receipt)

    def with_passkey(key, **options):
        return passkey_signed(broker, request, key, **options)

    cases = {
        "DECISION_UNSIGNED": lambda: broker("web", "Decide", request),
        "CREDENTIAL_UNKNOWN": lambda: broker("web", "Decide", with_passkey(erin_key)),  # another person's passkey
        "USER_VERIFICATION_REQUIRED": lambda: broker("web", "Decide", with_passkey(dana_key, user_verified=False)),
        "ORIGIN_NOT_ALLOWED": lambda: broker("web", "Decide", with_passkey(dana_key, origin="https://evil.example")),
        "OPERATOR_KEY_FROM_CLI_ONLY": lambda: broker("web", "Decide", signed_by_operator(
            request, broker("web", "BeginDecision", cap.BeginDecisionRequest(
                actor=dana, approval_id=receipt.approval_id)).nonce,
            load_signing_key(signing_key_path(cert_dir, "cli")))),
        "NONCE_REQUIRED": lambda: broker("web", "Decide", dana_key.signed(request, "")),
        "NONCE_UNKNOWN": lambda: broker("web", "Decide", dana_key.signed(request, "n-made-up")),
    }
    for reason, attempt in cases.items():
        assert refused(attempt)[1] == reason, reason
    other_args = approve(dana, receipt)
    other_args.arguments_sha256 = "0" * 64
    signed_for_other_args = passkey_signed(broker, other_args, dana_key)
    signed_for_other_args.arguments_sha256 = receipt.arguments_sha256  # sent as if for the real ones
    assert refused(lambda: broker("web", "Decide", signed_for_other_args))[1] == "ASSERTION_NOT_FOR_THIS_DECISION"
    assert order(warehouse_url, 81) == ("none", 1)  # nothing ran
    reasons = audit_reasons(running_set, credentials, dana)
    assert set(cases) | {"ASSERTION_NOT_FOR_THIS_DECISION"} <= set(reasons)

    done = broker("web", "Decide", with_passkey(dana_key))
    assert done.receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED and order(warehouse_url, 81) == ("flagged", 2)
    counted = dana_key.count  # what the broker recorded as the passkey's counter

    # A nonce given out for another of her approvals; a signature whose counter did not move (a copy of the
    # authenticator, or a replay): both refused.
    later, other = (flag(broker, dana, record, principal="agent").receipt for record in (86, 87))
    borrowed = broker("web", "BeginDecision", cap.BeginDecisionRequest(actor=dana, approval_id=other.approval_id))
    assert refused(lambda: broker("web", "Decide", dana_key.signed(approve(dana, later), borrowed.nonce)))[1] == \
        "NONCE_UNKNOWN"
    dana_key.count = counted  # the counter the broker saw last, again
    stale = passkey_signed(broker, approve(dana, later), dana_key, advance=False)
    assert refused(lambda: broker("web", "Decide", stale))[1] == "ASSERTION_REPLAYED"
    assert (order(warehouse_url, 86), order(warehouse_url, 87)) == (("none", 1), ("none", 1))

    # The operator revokes her passkey (a lost device): its signatures no longer count.
    operator = person(cert_dir, "operator", edge="cli")
    left = broker("cli", "RevokePasskey", cap.RevokePasskeyRequest(
        actor=operator, person=cap.Person(actor_id="dana", tenant_id="acme"), credential_id=dana_key.id))
    assert left.passkeys == 0
    assert refused(lambda: broker("web", "Decide", passkey_signed(broker, approve(dana, later), dana_key)))[1] == \
        "CREDENTIAL_UNKNOWN"
    assert refused(lambda: broker("cli", "RevokePasskey", cap.RevokePasskeyRequest(
        actor=dana, person=cap.Person(actor_id="dana", tenant_id="acme"), credential_id=erin_key.id)))[1] == \
        "OPERATOR_FROM_CLI_ONLY"  # a web-asserted person cannot manage anyone's passkeys


def test_a_policy_may_require_a_passkey_and_the_operator_key_is_verified(broker, cert_dir):
    """The operator CLI's key counts only for a CLI-asserted person, only if the action accepts it, and only if
    it verifies."""
    frank = person(cert_dir, "frank", edge="cli")
    receipt = flag(broker, frank, 82, principal="agent").receipt
    begun = broker("cli", "BeginDecision", cap.BeginDecisionRequest(actor=frank, approval_id=receipt.approval_id))
    assert begun.operator_key_allowed and begun.rp_id == "localhost" and not begun.credential_ids
    other_key = load_signing_key(signing_key_path(cert_dir, "web"))  # a key that is not the operator's
    forged = signed_by_operator(approve(frank, receipt), begun.nonce, other_key)
    assert refused(lambda: broker("cli", "Decide", forged))[1] == "SIGNATURE_INVALID"
    tampered = signed_by_operator(approve(frank, receipt), begun.nonce,
                                  load_signing_key(signing_key_path(cert_dir, "cli")))
    for field, value in (("reason", "words the person never wrote"), ("decision", cap.DECISION_REJECT)):
        changed = cap.DecideRequest()
        changed.CopyFrom(tampered)
        setattr(changed, field, value)  # changed after signing: the signature no longer covers it
        assert refused(lambda changed=changed: broker("cli", "Decide", changed))[1] == "SIGNATURE_INVALID", field
    done = broker("cli", "Decide", approve(frank, receipt))  # the test client signs as the real CLI does
    assert done.receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED


def audit_records(broker: Broker, actor, kind) -> list[dict]:
    """The audit records of `kind` in the actor's tenant that name the actor (as the one acting or the person)."""
    with sync_channel(broker.address, broker.credentials("cli"), "capabilities") as channel:
        records = [json.loads(r.record_json) for r in invoke_stream(
            channel, "capabilities", "ExportAudit", cap.ExportAuditRequest(actor=actor), timeout=60)]
    who = ActorVerifier.from_cert_dir(broker.cert_dir).verify(actor).actor_id
    return [r for r in records if r["kind"] == kind and who in (r["actor_id"], r["detail"].get("person"))]


def refused_with_the_operator_key(broker: Broker, actor, receipt) -> str:
    """Approve as the CLI does, with the operator key over a fresh nonce, where BeginDecision said the key is
    not accepted; the broker's reason for refusing it."""
    begun = broker("cli", "BeginDecision", cap.BeginDecisionRequest(actor=actor, approval_id=receipt.approval_id))
    assert not begun.operator_key_allowed
    signed = signed_by_operator(approve(actor, receipt), begun.nonce,
                                load_signing_key(signing_key_path(broker.cert_dir, "cli")))
    return refused(lambda: broker("cli", "Decide", signed))[1]


def test_under_the_shipped_policy_the_operator_key_cannot_approve_a_persons_intent(own_broker, cert_dir):  # noqa: F811
    """The attack of issue 38: a process that read the CLI's key asserts the person through the CLI and signs
    their pending change with the operator key. The shipped policy names no operator key: refused
    PASSKEY_REQUIRED, on the record, nothing runs; the person's own passkey still approves it."""
    client, _, warehouse = own_broker(TESSERA_CAPABILITIES_ACTIONS_FILE=str(SHIPPED_ACTIONS))
    lou = person(cert_dir, "local-user")  # as web asserts her: the change is raised in her session
    receipt = flag(client, lou, 91, principal="agent").receipt
    as_her_by_cli = person(cert_dir, "local-user", edge="cli")
    assert refused_with_the_operator_key(client, as_her_by_cli, receipt) == "PASSKEY_REQUIRED"
    assert order(warehouse, 91) == ("none", 1)
    refusals = [r["detail"] for r in audit_records(client, lou, "decision-refused")
                if r["detail"]["approval_id"] == receipt.approval_id]
    assert refusals == [{"approval_id": receipt.approval_id, "reason": "PASSKEY_REQUIRED",
                         "signed_with": "operator_key"}]
    her_key = enroll(client, lou, cert_dir)
    done = client("web", "Decide", passkey_signed(client, approve(lou, receipt), her_key))
    assert done.receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED and order(warehouse, 91) == ("flagged", 2)


def test_the_operator_key_approves_only_in_the_tenants_the_policy_names(broker, running_set, credentials,
                                                                        cert_dir, warehouse_url):
    """The test services' policy names the operator key for acme and local (tests/fixtures/approvers.py): an
    intent of another tenant is refused OPERATOR_KEY_NOT_FOR_TENANT, audited, and nothing runs."""
    outsider = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "frank", "globex")
    receipt = flag(broker, outsider, 92, principal="agent").receipt
    assert refused_with_the_operator_key(broker, outsider, receipt) == "OPERATOR_KEY_NOT_FOR_TENANT"
    assert order(warehouse_url, 92) == ("none", 1)
    assert "OPERATOR_KEY_NOT_FOR_TENANT" in audit_reasons(running_set, credentials, outsider)
    named = person(cert_dir, "frank", edge="cli")  # acme: named, so the same key approves there
    done = broker("cli", "Decide", approve(named, flag(broker, named, 93, principal="agent").receipt))
    assert done.receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED and order(warehouse_url, 93) == ("flagged", 2)


def _sign_in(broker, operator, who: str, replace: bool = False) -> cap.RedeemEnrollmentResponse:
    """A fresh link for `who` (acme), redeemed by web: a sign-in by link."""
    link = broker("cli", "CreateEnrollment", cap.CreateEnrollmentRequest(
        actor=operator, person=cap.Person(actor_id=who, tenant_id="acme"), replace=replace))
    return broker("web", "RedeemEnrollment", cap.RedeemEnrollmentRequest(token=link.token))


def _register(broker, actor, redeemed, new: SoftPasskey, existing=None):
    return broker("web", "RegisterPasskey", cap.RegisterPasskeyRequest(
        actor=actor, enrollment_id=redeemed.enrollment_id, credential_json=new.register(
            redeemed.registration_options_json), existing_passkey=existing))


def test_a_further_passkey_needs_one_the_person_has_and_the_next_sign_in_shows_it(broker, cert_dir):
    """A link alone (what the CLI key can make) adds only a first passkey; a second needs an existing one's
    assertion over this enrollment and this new key; the next sign-in lists what was added since the last."""
    ivy, other = person(cert_dir, "ivy"), person(cert_dir, "jack")
    operator = person(cert_dir, "operator", edge="cli")
    first = _sign_in(broker, operator, "ivy")
    assert not first.existing_credential_ids and not first.passkeys_added
    original = SoftPasskey()
    assert _register(broker, ivy, first, original).passkeys == 1
    jacks = enroll(broker, other, cert_dir)

    second = _sign_in(broker, operator, "ivy")
    assert list(second.existing_credential_ids) == [original.id]
    assert [p.credential_id for p in second.passkeys_added] == [original.id]  # added since the first sign-in
    newcomer = SoftPasskey()
    decoy = SoftPasskey()  # the assertion must name the key being added, not another one
    cases = {
        "PASSKEY_SIGNATURE_REQUIRED": None,
        "CREDENTIAL_UNKNOWN": jacks.confirm(second, newcomer),
        "ASSERTION_NOT_FOR_THIS_ENROLLMENT": original.confirm(second, decoy),
        "USER_VERIFICATION_REQUIRED": original.confirm(second, newcomer, user_verified=False),
        "ORIGIN_NOT_ALLOWED": original.confirm(second, newcomer, origin="https://evil.example"),
    }
    for reason, assertion in cases.items():
        assert refused(lambda a=assertion: _register(broker, ivy, second, newcomer, a))[1] == reason, reason
    assert set(cases) <= {r["detail"]["reason"] for r in audit_records(broker, ivy, "passkey-refused")}
    added = _register(broker, ivy, second, newcomer, original.confirm(second, newcomer))
    assert (added.passkeys, added.credential_id) == (2, newcomer.id)
    registered = [r["detail"] for r in audit_records(broker, ivy, "passkey-registered")]
    assert registered[-1] == {"credential_id": newcomer.id, "signed_by": original.id}
    stale = SoftPasskey()  # the same assertion cannot let another key in: the enrollment is used
    assert refused(lambda: _register(broker, ivy, second, stale, original.confirm(second, stale)))[1] == \
        "ENROLLMENT_USED"

    third = _sign_in(broker, operator, "ivy")
    assert [p.credential_id for p in third.passkeys_added] == [newcomer.id]  # only what came since the second
    assert sorted(third.existing_credential_ids) == sorted([original.id, newcomer.id])


def test_the_operator_replaces_a_persons_passkeys_on_the_record(broker, cert_dir, warehouse_url):
    """`--replace` (a lost device): the person's passkeys are revoked with the link, audited each by id, their
    signatures stop counting, the link enrolls a first passkey again, and the next sign-in shows it."""
    kim = person(cert_dir, "kim")
    operator = person(cert_dir, "operator", edge="cli")
    lost = enroll(broker, kim, cert_dir)
    receipt = flag(broker, kim, 94, principal="agent").receipt
    replacing = _sign_in(broker, operator, "kim", replace=True)
    assert not replacing.existing_credential_ids and replacing.passkeys == 0
    assert broker("cli", "ListPasskeys", cap.ListPasskeysRequest(
        actor=operator, person=cap.Person(actor_id="kim", tenant_id="acme"))).passkeys == []
    (replaced,) = audit_records(broker, kim, "passkeys-replaced")
    assert replaced["actor_id"] == "operator"
    assert replaced["detail"] == {"person": "kim", "revoked": [lost.id], "sessions_ended": 0}
    assert refused(lambda: broker("web", "Decide", passkey_signed(broker, approve(kim, receipt), lost)))[1] == \
        "CREDENTIAL_UNKNOWN"
    fresh = SoftPasskey()
    assert _register(broker, kim, replacing, fresh).passkeys == 1  # no old passkey left to confirm it
    assert [p.credential_id for p in _sign_in(broker, operator, "kim").passkeys_added] == [fresh.id]
    done = broker("web", "Decide", passkey_signed(broker, approve(kim, receipt), fresh))
    assert done.receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED and order(warehouse_url, 94) == ("flagged", 2)


def test_enrollment_links_are_single_use_personal_and_only_the_operator_makes_them(broker, running_set, cert_dir,
                                                                                  credentials):
    gina = person(cert_dir, "gina")
    operator = person(cert_dir, "operator", edge="cli")
    assert refused(lambda: broker("web", "CreateEnrollment", cap.CreateEnrollmentRequest(
        actor=gina, person=cap.Person(actor_id="gina", tenant_id="acme"))))[1] == "CALLER_NOT_ALLOWED"
    assert refused(lambda: broker("cli", "CreateEnrollment", cap.CreateEnrollmentRequest(
        actor=operator, person=cap.Person(actor_id="gina smith", tenant_id="acme"))))[1] == "FIELD_INVALID"
    link = broker("cli", "CreateEnrollment", cap.CreateEnrollmentRequest(
        actor=operator, person=cap.Person(actor_id="gina", tenant_id="acme", display_name="Gina")))
    redeemed = broker("web", "RedeemEnrollment", cap.RedeemEnrollmentRequest(token=link.token))
    assert (redeemed.person.actor_id, redeemed.person.tenant_id, redeemed.passkeys) == ("gina", "acme", 0)
    options = json.loads(redeemed.registration_options_json)
    assert options["authenticatorSelection"]["userVerification"] == "required" and options["rp"]["id"] == "localhost"
    assert refused(lambda: broker("web", "RedeemEnrollment", cap.RedeemEnrollmentRequest(token=link.token)))[1] == \
        "LINK_USED"
    assert refused(lambda: broker("agent", "RedeemEnrollment", cap.RedeemEnrollmentRequest(token=link.token)))[1] == \
        "CALLER_NOT_ALLOWED"
    key = SoftPasskey()
    # Someone else's enrollment reads as unknown; a registration without user verification is refused.
    assert refused(lambda: broker("web", "RegisterPasskey", cap.RegisterPasskeyRequest(
        actor=person(cert_dir, "henry"), enrollment_id=redeemed.enrollment_id,
        credential_json=key.register(redeemed.registration_options_json))))[1] == "ENROLLMENT_UNKNOWN"
    assert refused(lambda: broker("web", "RegisterPasskey", cap.RegisterPasskeyRequest(
        actor=gina, enrollment_id=redeemed.enrollment_id,
        credential_json=key.register(redeemed.registration_options_json, user_verified=False))))[1] == \
        "USER_VERIFICATION_REQUIRED"
    assert refused(lambda: broker("web", "RegisterPasskey", cap.RegisterPasskeyRequest(
        actor=gina, enrollment_id=redeemed.enrollment_id, credential_json="{not json")))[1] == "PASSKEY_MALFORMED"
    registered = broker("web", "RegisterPasskey", cap.RegisterPasskeyRequest(
        actor=gina, enrollment_id=redeemed.enrollment_id,
        credential_json=key.register(redeemed.registration_options_json)))
    assert registered.passkeys == 1 and registered.credential_id == key.id
    assert refused(lambda: broker("web", "RegisterPasskey", cap.RegisterPasskeyRequest(
        actor=gina, enrollment_id=redeemed.enrollment_id,
        credential_json=SoftPasskey().register(redeemed.registration_options_json))))[1] == "ENROLLMENT_USED"
    # The same passkey again, through a new link: the store refuses it, and the refusal is on the record.
    again = broker("web", "RedeemEnrollment", cap.RedeemEnrollmentRequest(token=broker(
        "cli", "CreateEnrollment", cap.CreateEnrollmentRequest(
            actor=operator, person=cap.Person(actor_id="gina", tenant_id="acme"))).token))
    assert refused(lambda: broker("web", "RegisterPasskey", cap.RegisterPasskeyRequest(
        actor=gina, enrollment_id=again.enrollment_id, credential_json=key.register(again.registration_options_json),
        existing_passkey=key.confirm(again, key))))[1] == "PASSKEY_ALREADY_REGISTERED"
    assert {"ENROLLMENT_USED", "PASSKEY_MALFORMED", "PASSKEY_ALREADY_REGISTERED"} <= set(
        audit_reasons(running_set, credentials, gina, "passkey-refused"))
    begun = broker("web", "BeginDecision", cap.BeginDecisionRequest(
        actor=gina, approval_id=flag(broker, gina, 83, principal="agent").receipt.approval_id))
    assert list(begun.credential_ids) == [key.id] and begun.operator_key_allowed


def test_web_sends_its_security_headers_everywhere_and_shows_itself_only_to_people(running_set, credentials):
    base = f"http://{running_set.handles['web'].address}"
    with httpx.Client(base_url=base, headers={"Origin": base}, timeout=60) as client:
        paths = ["/", "/sign-in", "/status", "/info", "/healthz", "/api/session", "/api/approvals", "/nowhere"]
        for path in paths:
            reply = client.get(path)
            csp = reply.headers.get("content-security-policy", "")
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp, path
            assert reply.headers["x-content-type-options"] == "nosniff", path
            assert reply.headers["referrer-policy"] == "no-referrer", path
            assert "camera=()" in reply.headers["permissions-policy"], path
        assert (client.get("/info").status_code, client.get("/status").status_code) == (401, 401)
        assert "identity" not in client.get("/info").text
        sign_in(client, running_set, credentials)
        assert client.get("/info").json()["name"] == "web" and client.get("/status").status_code == 200
        asset = next(p for p in client.get("/").text.split('"') if p.startswith("/assets/") and p.endswith(".js"))
        assert client.get(asset).headers["content-security-policy"]
