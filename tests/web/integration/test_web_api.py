"""The browser's API at `web`, over real HTTP against the running set: a one-time link's sign-in, a question
streamed as server-sent events, the trusted surface stream (resumable), commands, and approvals signed with
a passkey."""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import pytest
import sqlalchemy as sa

from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.fixtures.golden.reference import expected_figures
from tests.fixtures.signing import SoftPasskey, b64url, browser_decision, enroll_in_browser, link_token, sign_in
from tests.fixtures.web_cookie import session_cookie_name

PERSON = "web-api-person"


@pytest.fixture
def browser(running_set, credentials):
    """A browser: one cookie jar, same-origin requests, signed in with a one-time link as a person of these
    tests only (so no other test's passkeys are theirs)."""
    base = f"http://{running_set.handles['web'].address}"
    with httpx.Client(base_url=base, timeout=120, headers={"Origin": base}) as client:
        client.signed_in = sign_in(client, running_set, credentials, PERSON)
        opened = client.get("/api/session")
        assert opened.status_code == 200, opened.text
        client.session_info = opened.json()
        yield client


def sse(response: httpx.Response, until=None, events: list | None = None) -> list[tuple[str | None, dict]]:
    """(id, data) of each server-sent event, stopping after `until(data)` is true; appended to `events`
    as they arrive when given (so a caller keeps what came before the connection broke)."""
    events, event_id = [] if events is None else events, None
    for line in response.iter_lines():
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
            events.append((event_id, data))
            event_id = None
            if until and until(data):
                break
    return events


def ask(browser, question: str) -> list[dict]:
    with browser.stream("POST", "/api/ask", json={"question": question}) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        return [data for _, data in sse(response, until=lambda d: "done" in d)]


def stream(browser, after: str | None = None, until=None) -> list[tuple[str, dict]]:
    headers = {"Last-Event-ID": after} if after else {}
    with browser.stream("GET", "/api/surface/stream", headers=headers) as response:
        assert response.status_code == 200
        return sse(response, until=until)


def test_a_signed_in_session_opens_one_surface_and_a_cookie_alone_is_nobody(running_set, credentials, browser):
    again = browser.get("/api/session").json()
    assert again["surface_id"] == browser.session_info["surface_id"] and again["actor"] == PERSON
    assert again["signed_in_with"] == "link"
    base = f"http://{running_set.handles['web'].address}"
    stranger = httpx.get(f"{base}/api/session")  # no sign-in: no person, no cookie handed out
    assert (stranger.status_code, stranger.json()["reason"]) == (401, "NO_SESSION")
    assert "set-cookie" not in stranger.headers and "tessera persons enroll" in stranger.json()["message"]
    with httpx.Client(base_url=base, timeout=60, headers={"Origin": base}) as other:
        token = link_token(running_set, credentials)
        signed_in = other.post("/api/sign-in/link", json={"token": token})
        cookie = signed_in.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "max-age=43200" in cookie
        assert other.get("/api/session").json()["surface_id"] != browser.session_info["surface_id"]
        rotated = other.cookies[session_cookie_name(base)]
        sign_in(other, running_set, credentials)  # signing in again never keeps the old session id
        assert other.cookies[session_cookie_name(base)] != rotated
        used = other.post("/api/sign-in/link", json={"token": token})  # a link works once
        assert (used.status_code, used.json()["reason"]) == (409, "LINK_USED")
        logs = "".join(handle.log_path.read_text() for handle in running_set.handles.values())
        assert "signed in" in logs and token not in logs  # the sign-in is logged; its link never is
        assert other.post("/api/sign-out", json={}).json() == {"signed_out": True}
        assert session_cookie_name(base) not in other.cookies
        assert other.get("/api/session").status_code == 401
    unknown = httpx.post(f"{base}/api/sign-in/link", json={"token": "x" * 43}, headers={"Origin": base})
    assert (unknown.status_code, unknown.json()["reason"]) == (404, "LINK_UNKNOWN")


def test_a_question_streams_its_turn_and_the_surface_shows_the_numbers(browser, warehouse_url):
    events = ask(browser, "What is our net revenue by region?")
    assert "started" in events[0] and "done" in events[-1]
    assert any(e.get("tool_step", {}).get("tool") == "run_analysis" for e in events)
    (revision,) = events[-1]["done"]["revision_ids"]

    envelopes = stream(browser, until=lambda d: d["kind"] == "a2ui" and "updateComponents" in d["message"])
    kinds = [next(iter(d["message"].keys() - {"version"})) for _, d in envelopes if d["kind"] == "a2ui"]
    assert kinds[-1] == "updateComponents" and all(d["revision_id"] for _, d in envelopes)
    last_id = envelopes[-1][0]

    reply = browser.post("/api/commands", json={"command_id": "w-1", "revision_id": revision,
                                                "resource_window": {"node_id": "table", "limit": 100}})
    assert reply.status_code == 200, reply.text
    cursor = reply.json()["cursor"]
    resumed = stream(browser, after=last_id, until=lambda d: d["sequence"] == int(cursor["sequence"]))
    epoch, first = (int(part) for part in last_id.split(":"))
    assert [event_id for event_id, _ in resumed] == [  # exactly the missed events, in order
        f"{epoch}:{n}" for n in range(first + 1, int(cursor["sequence"]) + 1)]
    window = resumed[-1][1]
    rows = window["message"]["updateDataModel"]["value"]["rows"]

    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"}, "")
    assert {r[0] for r in rows} == set(expected)
    assert all(abs(Decimal(str(v)) - expected[k]) < Decimal("0.01") for k, v in rows)


def test_a_flag_button_press_becomes_an_approval_the_person_signs(running_set, browser, warehouse_url):
    events = ask(browser, "Flag order 1111 for review")
    (revision,) = events[-1]["done"]["revision_ids"]
    pressed = browser.post("/api/commands", json={"command_id": "press-1111", "revision_id": revision,
                                                  "action_trigger": {"node_id": "flag",
                                                                     "input_json": json.dumps({"record_id": 1111})}})
    assert pressed.status_code == 200, pressed.text
    assert pressed.json()["receipt"]["status"] == "INTENT_STATUS_AWAITING_APPROVAL"
    listed = browser.get("/api/approvals").json()["approvals"]
    approval = next(a for a in listed if a["intent_id"] == pressed.json()["receipt"]["intent_id"])
    card = browser.get(f"/api/approvals/{approval['approval_id']}").json()
    assert card["changes"][0]["after_json"] == '"flagged"' and card["summary"]["tool_id"] == "orders.flag_for_review"
    url = f"/api/approvals/{approval['approval_id']}/decision"
    unsigned = browser.post(url, json={"approve": True, "arguments_sha256": card["arguments_sha256"]})
    assert (unsigned.status_code, unsigned.json()["reason"]) == (403, "DECISION_UNSIGNED")
    begun = browser.post(f"/api/approvals/{approval['approval_id']}/challenge", json={}).json()
    assert begun["credential_ids"] == [] and f"tessera persons enroll {PERSON}" in begun["enroll_hint"]
    passkey = enroll_in_browser(browser.post, browser.signed_in, f"http://localhost:{running_set.handles['web'].port}")
    wrong = browser.post(url, json=browser_decision(browser.post, passkey, approval["approval_id"],
                                                    {"approve": True, "arguments_sha256": "0" * 64}))
    assert (wrong.status_code, wrong.json()["reason"]) == (409, "ARGUMENTS_CHANGED")
    decision = browser_decision(browser.post, passkey, approval["approval_id"], {
        "approve": True, "arguments_sha256": card["arguments_sha256"], "reason": "odd order",
        "decision_id": "web-click-1111"})
    done = browser.post(url, json=decision)
    assert done.json()["receipt"]["status"] == "INTENT_STATUS_SUCCEEDED" and not done.json().get("replayed")
    # The page's retry of the same click (its answer was lost): the same receipt, nothing run again.
    retried = browser.post(f"/api/approvals/{approval['approval_id']}/decision", json=decision)
    assert retried.status_code == 200 and retried.json() == {**done.json(), "replayed": True}
    # The same signature under another decision id (a replay): refused, with how the approval ended.
    replayed = browser.post(url, json={**decision, "decision_id": "web-click-replayed"})
    assert (replayed.status_code, replayed.json()["reason"]) == (409, "ASSERTION_REPLAYED")
    assert replayed.json()["outcome"]["intent_status"] == "INTENT_STATUS_SUCCEEDED"
    # Another click, tab or device: refused before it is signed, with how the approval ended.
    other = browser.post(f"/api/approvals/{approval['approval_id']}/challenge", json={})
    assert (other.status_code, other.json()["reason"]) == (409, "APPROVAL_ALREADY_DECIDED")
    assert other.json()["outcome"]["intent_status"] == "INTENT_STATUS_SUCCEEDED"
    assert other.json()["outcome"]["decided_by"] == PERSON
    assert other.json()["outcome"]["signed_with"] == f"passkey:{passkey.id}"
    # Refused by web itself, before any call, as the broker's contract would (rules.proto's plain id).
    for bad in (7, "not an id!", "x" * 129):
        refused = browser.post(f"/api/approvals/{approval['approval_id']}/decision",
                               json={**decision, "decision_id": bad})
        assert (refused.status_code, refused.json()["reason"], refused.json()["pointer"]) == (
            400, "FIELD_INVALID", "/decision_id")
    forged = browser.post(url, json={**decision, "passkey": {**decision["passkey"], "signature": "not base64!"}})
    assert (forged.status_code, forged.json()["reason"]) == (400, "PASSKEY_INVALID")
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT review_status FROM orders WHERE order_id = 1111")).scalar() == \
            "flagged"
    engine.dispose()


def _page_assertion(assertion) -> dict:
    """A PasskeyAssertion as the page posts it (passkeys.js: base64url fields)."""
    return {"id": assertion.credential_id, "authenticator_data": b64url(assertion.authenticator_data),
            "client_data_json": b64url(assertion.client_data_json), "signature": b64url(assertion.signature),
            "user_handle": b64url(assertion.user_handle)}


def test_a_further_passkey_is_confirmed_by_one_the_person_has_and_the_sign_in_says_what_was_added(
        running_set, credentials):
    """Through web as the page uses it: a second sign-in lists the passkeys added since the first and the ones
    that may confirm a new one; web carries the existing passkey's assertion, and without it the broker refuses."""
    base = f"http://{running_set.handles['web'].address}"
    origin = f"http://localhost:{running_set.handles['web'].port}"
    person = "web-api-two-devices"
    with httpx.Client(base_url=base, timeout=60, headers={"Origin": base}) as first_device:
        first = enroll_in_browser(first_device.post, sign_in(first_device, running_set, credentials, person), origin)
    with httpx.Client(base_url=base, timeout=60, headers={"Origin": base}) as second_device:
        signed_in = sign_in(second_device, running_set, credentials, person)
        enrollment = signed_in["enrollment"]
        assert enrollment["existing_credential_ids"] == [first.id]
        assert [p["credential_id"] for p in signed_in["passkeys_added"]] == [first.id]  # the page's notice
        second = SoftPasskey(origin)
        credential = json.loads(second.register(json.dumps(enrollment["options"])))
        alone = second_device.post("/api/passkeys", json={"enrollment_id": enrollment["enrollment_id"],
                                                          "credential": credential})
        assert (alone.status_code, alone.json()["reason"]) == (403, "PASSKEY_SIGNATURE_REQUIRED")
        redeemed = cap.RedeemEnrollmentResponse(enrollment_id=enrollment["enrollment_id"],
                                                registration_options_json=json.dumps(enrollment["options"]))
        confirmed = second_device.post("/api/passkeys", json={
            "enrollment_id": enrollment["enrollment_id"], "credential": credential,
            "existing_passkey": _page_assertion(first.confirm(redeemed, second))})
        assert confirmed.status_code == 200 and confirmed.json()["passkeys"] == 2, confirmed.text
    with httpx.Client(base_url=base, timeout=60, headers={"Origin": base}) as later:
        again = sign_in(later, running_set, credentials, person)
        assert [p["credential_id"] for p in again["passkeys_added"]] == [second.id]


def test_bad_requests_get_a_status_and_a_reason(running_set, browser):
    base = f"http://{running_set.handles['web'].address}"
    no_cookie = httpx.post(f"{base}/api/ask", json={"question": "x"}, headers={"Origin": base})
    assert (no_cookie.status_code, no_cookie.json()["reason"]) == (401, "NO_SESSION")
    forged = httpx.post(f"{base}/api/ask", json={"question": "x"}, headers={"Origin": base},
                        cookies={session_cookie_name(base): "abc.def"})
    assert forged.json()["reason"] == "NO_SESSION"
    cross = browser.post("/api/commands", json={"command_id": "x"}, headers={"Origin": "http://evil.example"})
    assert (cross.status_code, cross.json()["reason"]) == (403, "CROSS_ORIGIN")
    assert browser.post("/api/ask", content=b"{not json", headers={"content-type": "application/json"}).json()[
        "reason"] == "BODY_INVALID"
    assert browser.post("/api/ask", content=b"question=x", headers={
        "content-type": "application/x-www-form-urlencoded"}).status_code == 415
    spoof = browser.post("/api/commands", json={"command_id": "x", "session_id": "ses_someone_else"})
    assert (spoof.status_code, spoof.json()["reason"]) == (400, "FIELD_NOT_ALLOWED")
    unknown = browser.post("/api/commands", json={"command_id": "x", "launch_missiles": {}})
    assert unknown.json()["reason"] == "COMMAND_INVALID"
    stale = browser.post("/api/commands", json={"command_id": "stale", "revision_id": "rev_gone",
                                                "resource_window": {"node_id": "table", "limit": 5}})
    assert (stale.status_code, stale.json()["reason"]) == (409, "STALE_REVISION")
    rebound = httpx.get(f"{base}/api/session", headers={"Host": "evil.example"})  # DNS rebinding
    assert rebound.status_code == 400 and "set-cookie" not in rebound.headers
    odd_cookie = httpx.get(f"{base}/api/approvals",
                           headers={"Cookie": f"{session_cookie_name(base)}=s\u00e9ssion.m\u00e4c".encode()})
    assert (odd_cookie.status_code, odd_cookie.json()["reason"]) == (401, "NO_SESSION")
    huge = browser.post("/api/ask", content=b'{"question": "' + b"x" * 70_000 + b'"}',
                        headers={"content-type": "application/json"})
    assert (huge.status_code, huge.json()["reason"]) == (413, "BODY_TOO_LARGE")
    # Out of the contracts' bounds (rules.proto): refused by web before any call, as the services would.
    for refused, pointer in ((browser.post("/api/ask", json={"question": "x" * 2001}), "/question"),
                             (browser.post("/api/ask", json={"question": "   "}), "/question"),
                             (browser.get("/api/turns?before=turn%201"), "/before"),
                             (browser.get("/api/revisions/rev%3Cscript%3E"), "/revision_id"),
                             (browser.post("/api/turns/trn%20x/cancel", json={}), "/turn_id")):
        assert (refused.status_code, refused.json()["reason"], refused.json()["pointer"]) == (
            400, "FIELD_INVALID", pointer), refused.json()
    for cursor in ("yesterday", "-1:5", "-1:-1", "9" * 400 + ":1", "1:18446744073709551616", "1: 2", "1:2:3",
                   "\u0661:1"):
        bad_cursor = browser.get("/api/surface/stream", headers={"Last-Event-ID": cursor.encode()})
        assert (bad_cursor.status_code, bad_cursor.json()["reason"]) == (400, "CURSOR_INVALID"), cursor
    bad_after = browser.get("/api/surface/stream?after=1:99999999999999999999")
    assert (bad_after.status_code, bad_after.json()["reason"]) == (400, "CURSOR_INVALID")


def test_an_idle_stream_sends_keep_alive_comments(browser):
    """Proxies cut connections that stay silent; both event streams send an SSE comment when idle."""
    with browser.stream("GET", "/api/surface/stream") as response:
        assert response.status_code == 200
        seen = []
        for line in response.iter_lines():
            seen.append(line)
            if line == ": keep-alive":
                break
    assert ": keep-alive" in seen


def test_the_outline_lists_labels_and_questions_that_get_answered(browser):
    described = browser.get("/api/outline")
    assert described.status_code == 200
    catalog = described.json()
    labels = {e["label"]: e for e in catalog["entities"]}
    assert "Net revenue" in labels["Order item"]["measures"] and "Sales channel" in labels["Order"]["dimensions"]
    text = json.dumps(catalog)
    # Labels only: no ids, no physical names, no values.
    assert not any(marker in text for marker in ("fld_", "met_", "ent_", "order_items", "ordered_at"))
    assert 3 <= len(catalog["suggested_questions"]) <= 4
    for question in catalog["suggested_questions"]:
        done = next(d["done"] for d in ask(browser, question) if "done" in d)
        assert done["outcome"] == "TURN_OUTCOME_ANSWERED" and done["revision_ids"], (question, done)


def test_cancelling_a_turn_that_is_not_running_says_so(browser):
    finished = next(d for d in ask(browser, "What is the total number of orders?") if "done" in d)
    reply = browser.post(f"/api/turns/{finished['turn_id']}/cancel", json={})
    assert reply.status_code == 200 and reply.json()["cancelled"] is False
    bad = browser.post("/api/turns/not a turn/cancel", json={})
    assert (bad.status_code, bad.json()["reason"], bad.json()["pointer"]) == (400, "FIELD_INVALID", "/turn_id")
    not_json = browser.post(f"/api/turns/{finished['turn_id']}/cancel", content=b"x",
                            headers={"content-type": "text/plain"})
    assert not_json.status_code == 415
