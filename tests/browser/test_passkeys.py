"""People, not processes, approve: in Chromium with its virtual authenticator (CDP WebAuthn), a person signs
in with the operator's one-time link, adds a passkey and approves with it; every way a process on the same
machine (or a rewriting web) could try to approve without that person's passkey is refused, and nothing runs."""

from __future__ import annotations

import base64
import json

import grpc
import httpx
import pytest

from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.identity.decisions import request_challenge
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke_stream
from shared.rpc.errors import error_details
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tests.browser.conftest import open_signed_in
from tests.browser.test_browser import _press_for_a_new_card, ask
from tests.capabilities.integration.test_broker import Broker
from tests.capabilities.integration.test_broker import order as review_status
from tests.fixtures.signing import SoftPasskey, b64url, unb64url
from tests.fixtures.web_cookie import session_cookie_name


@pytest.fixture
def broker(running_set, credentials):
    client = Broker(running_set.handles["capabilities"].address, credentials)
    yield client
    client.close()


def _capture_decision(page, forward: bool):
    """Record the body of the page's next decision POST; forward it to web, or keep it from web."""
    sent = []

    def capture(route):
        sent.append(route.request.post_data_json)
        route.continue_() if forward else route.abort("connectionreset")

    page.route("**/api/approvals/*/decision", capture)
    return sent


def _as_grpc_decision(actor, approval_id: str, body: dict, approve: bool) -> cap.DecideRequest:
    passkey = body["passkey"]
    return cap.DecideRequest(
        actor=actor, approval_id=approval_id, arguments_sha256=body["arguments_sha256"], nonce=body["nonce"],
        decision=cap.DECISION_APPROVE if approve else cap.DECISION_REJECT, decision_id="web-rewritten",
        passkey=common_pb2.PasskeyAssertion(
            credential_id=passkey["id"], authenticator_data=unb64url(passkey["authenticator_data"]),
            client_data_json=unb64url(passkey["client_data_json"]), signature=unb64url(passkey["signature"]),
            user_handle=unb64url(passkey["user_handle"])))


def _refusal(call) -> str:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    return error_details(refused.value).reason


def test_an_approval_is_signed_by_the_enrolled_passkey_and_recorded_as_such(page, running_set, credentials,
                                                                           cert_dir, warehouse_url):
    ask(page, "Flag order 1220 for review")
    card = _press_for_a_new_card(page)
    sent = _capture_decision(page, forward=True)
    card.locator("textarea").fill("Geprüft ✓ — Kundin bestätigt")  # signed too: the page and the broker agree
    card.locator("button.approve").click()
    card.locator(".receipt").wait_for(timeout=30_000)
    assert "succeeded" in card.locator(".receipt").inner_text()
    assert review_status(warehouse_url, 1220) == ("flagged", 2)
    (body,) = sent
    client_data = json.loads(unb64url(body["passkey"]["client_data_json"]))
    assert client_data["type"] == "webauthn.get" and client_data["origin"].startswith("http://localhost:")
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), page.person, "local")
    with sync_channel(running_set.handles["capabilities"].address, credentials("cli"), "capabilities") as channel:
        audit = [json.loads(r.record_json) for r in invoke_stream(
            channel, "capabilities", "ExportAudit", cap.ExportAuditRequest(actor=person), timeout=60)]
    approved = [r for r in audit if r["kind"] == "approval-approved"
                and r["approval_id"] == card.get_attribute("approval-id")]
    assert approved and approved[0]["detail"]["signed_with"] == f"passkey:{body['passkey']['id']}"
    assert approved[0]["detail"]["reason"] == "Geprüft ✓ — Kundin bestätigt"


def test_a_process_with_the_persons_cookie_but_no_passkey_cannot_approve(page, running_set, broker, cert_dir,
                                                                         warehouse_url):
    """The attack this guards against: a local process holding a session cookie (here: the person's own, the
    worst case), the approval id and the arguments hash, but not the person's authenticator."""
    ask(page, "Flag order 1221 for review")
    approval_id = _press_for_a_new_card(page).get_attribute("approval-id")
    base = f"http://localhost:{running_set.handles['web'].port}"
    cookie = next(c["value"] for c in page.context.cookies() if c["name"] == session_cookie_name(base))
    with httpx.Client(base_url=base, headers={"Origin": base}, cookies={session_cookie_name(base): cookie},
                      timeout=60) as attacker:
        card = attacker.get(f"/api/approvals/{approval_id}").json()
        plain = attacker.post(f"/api/approvals/{approval_id}/decision", json={
            "approve": True, "arguments_sha256": card["arguments_sha256"], "decision_id": "web-attack-1"})
        assert (plain.status_code, plain.json()["reason"]) == (403, "DECISION_UNSIGNED")
        # Its own software passkey, never enrolled by the person: unknown to the broker.
        nonce = attacker.post(f"/api/approvals/{approval_id}/challenge", json={}).json()["nonce"]
        request = cap.DecideRequest(approval_id=approval_id, arguments_sha256=card["arguments_sha256"],
                                    decision=cap.DECISION_APPROVE, nonce=nonce)
        own = SoftPasskey(base).sign(request_challenge(request))
        forged = attacker.post(f"/api/approvals/{approval_id}/decision", json={
            "approve": True, "arguments_sha256": card["arguments_sha256"], "decision_id": "web-attack-2",
            "nonce": nonce, "passkey": {"id": own.credential_id, "authenticator_data": b64url(own.authenticator_data),
                                        "client_data_json": b64url(own.client_data_json),
                                        "signature": b64url(own.signature), "user_handle": ""}})
        assert (forged.status_code, forged.json()["reason"]) == (403, "CREDENTIAL_UNKNOWN")
    # Without even the cookie, a second browser has no person at all.
    stranger = httpx.get(f"{base}/api/approvals", headers={"Origin": base})
    assert (stranger.status_code, stranger.json()["reason"]) == (401, "NO_SESSION")
    assert review_status(warehouse_url, 1221) == ("none", 1)  # nothing ran
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), page.person, "local")
    still = broker("cli", "GetApproval", cap.GetApprovalRequest(actor=person, approval_id=approval_id)).card
    assert still.summary.status == common_pb2.INTENT_STATUS_AWAITING_APPROVAL


def test_a_replayed_or_rewritten_assertion_is_refused_and_nothing_runs(page, running_set, credentials, broker,
                                                                       warehouse_url):
    """The person rejects; a web that keeps the signed rejection and sends it as an approval, or replays it on
    another approval, is refused by the broker: the signature covers the decision and the approval."""
    ask(page, "Flag order 1222 for review")
    first = _press_for_a_new_card(page)
    first_id = first.get_attribute("approval-id")
    sent = _capture_decision(page, forward=False)  # the rogue web keeps the person's signed rejection
    first.locator("button.reject").click()
    first.locator(".error").wait_for(timeout=30_000)
    body = sent[0]  # the card retried what it sent when no answer came: the very same signed body
    assert all(retry == body for retry in sent) and body["approve"] is False and body["passkey"]
    web_actor = assert_actor(load_signing_key(signing_key_path(credentials.cert_dir, "web")), page.person, "local")
    # A web process with web's own certificate and key: it turns the rejection into an approval.
    assert _refusal(lambda: broker("web", "Decide", _as_grpc_decision(web_actor, first_id, body, approve=True))) \
        == "ASSERTION_NOT_FOR_THIS_DECISION"
    # The same signature on another approval of the same person.
    page.unroute("**/api/approvals/*/decision")
    second_id = _press_for_a_new_card(page).get_attribute("approval-id")
    assert second_id != first_id
    assert _refusal(lambda: broker("web", "Decide", _as_grpc_decision(web_actor, second_id, body, approve=False))) \
        == "ASSERTION_NOT_FOR_THIS_DECISION"
    # The signed rejection itself goes through once, and its replay is refused.
    assert broker("web", "Decide", _as_grpc_decision(web_actor, first_id, body, approve=False)).receipt.status == \
        common_pb2.INTENT_STATUS_REJECTED
    replay = _as_grpc_decision(web_actor, first_id, body, approve=False)
    replay.decision_id = "web-replayed"
    assert _refusal(lambda: broker("web", "Decide", replay)) == "ASSERTION_REPLAYED"
    assert review_status(warehouse_url, 1222) == ("none", 1)  # nothing ever ran


def test_without_a_passkey_the_card_says_how_to_get_one_and_reject_still_works(browser, running_set, credentials,
                                                                                warehouse_url):
    page = open_signed_in(browser, running_set, credentials, passkey=False, person="no-passkey-yet")
    try:
        ask(page, "Flag order 1223 for review")
        card = _press_for_a_new_card(page)
        card.locator("button.approve").click()
        error = card.locator(".error")
        error.wait_for(timeout=30_000)
        assert "tessera persons enroll no-passkey-yet --tenant local" in error.inner_text()
        assert review_status(warehouse_url, 1223) == ("none", 1)
        card.locator("button.reject").click()
        card.locator(".receipt").wait_for(timeout=30_000)
        assert "rejected" in card.locator(".receipt").inner_text()
    finally:
        page.context.close()


def test_the_page_runs_under_its_content_security_policy(browser, running_set, credentials):
    """No inline script, no inline style, no eval: the app signs in, renders a chart and a table and an
    approval card with the policy enforced, and the browser reports no violation."""
    page = open_signed_in(browser, running_set, credentials, enforce_csp=True)
    try:
        page.fill("#question", "What is our net revenue by region?")
        page.click("#ask-button")
        page.locator("tessera-data-table tbody tr").first.wait_for(timeout=60_000)
        page.locator("tessera-chart svg").first.wait_for(timeout=60_000)
        page.fill("#question", "Flag order 1224 for review")
        page.click("#ask-button")
        page.locator("tessera-action-button button").wait_for(timeout=60_000)
        page.locator("tessera-action-button button").click()
        page.locator("tessera-approval-card button.reject").first.wait_for(timeout=30_000)
        assert not page.problems, page.problems
    finally:
        page.context.close()


# Holds the page's navigator.credentials.get() until the test lets it go: the moment between the new passkey's
# creation and the existing one's confirmation, when the test hands this device the existing credential (it
# cannot hold it earlier: the enrollment excludes the person's passkeys from creating a second copy).
HOLD_GET = """
(() => {
  const get = navigator.credentials.get.bind(navigator.credentials);
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  window.__releaseGet = release;
  navigator.credentials.get = async (options) => { await released; return get(options); };
})();
"""


def _credential_ids(page) -> list[str]:
    found = page.cdp.send("WebAuthn.getCredentials", {"authenticatorId": page.authenticator})["credentials"]
    return [b64url(base64.b64decode(c["credentialId"])) for c in found]


def test_a_new_device_adds_a_passkey_only_confirmed_by_one_the_person_has_and_the_next_sign_in_says_so(
        browser, running_set, credentials):
    """The page's own enrollment flow, with Chromium's authenticators: a person with a passkey signs in on a
    new device, sees the passkey added since their last sign-in, creates a passkey there and confirms it with
    the one they have; the broker keeps it; their next sign-in shows it was added."""
    person = "browser-two-devices"
    first = open_signed_in(browser, running_set, credentials, person=person)  # their first passkey, first device
    (original,) = _credential_ids(first)
    exported = first.cdp.send("WebAuthn.getCredentials", {"authenticatorId": first.authenticator})["credentials"]
    first.context.close()
    device = open_signed_in(browser, running_set, credentials, passkey=False, person=person)
    try:
        notice = device.locator("#passkeys-added")
        notice.wait_for(timeout=15_000)
        assert original[:12] in notice.inner_text() and device.locator("#passkey-confirm").is_visible()
        device.evaluate(HOLD_GET)
        device.click("#add-passkey")
        device.wait_for_function("document.getElementById('passkey-status').textContent.startsWith('Now confirm')",
                                 timeout=15_000)
        (created,) = _credential_ids(device)  # the new passkey, made on this device
        # The person's existing one, as a non-discoverable copy: an authenticator keeps one discoverable
        # credential per person and site, and this device's is the new one; the page names it explicitly.
        device.cdp.send("WebAuthn.addCredential", {"authenticatorId": device.authenticator, "credential": {
            **exported[0], "isResidentCredential": False}})
        device.evaluate("window.__releaseGet()")
        device.wait_for_selector("#passkey[data-enrolled=true]", timeout=15_000)
        assert "you have 2" in device.locator("#passkey-status").inner_text()
        assert not device.problems, device.problems
    finally:
        device.context.close()
    later = open_signed_in(browser, running_set, credentials, passkey=False, person=person)
    try:
        later.locator("#passkeys-added").wait_for(timeout=15_000)
        shown = later.locator("#passkeys-added").inner_text()
        assert created[:12] in shown and original[:12] not in shown  # only what came since the last sign-in
    finally:
        later.context.close()
