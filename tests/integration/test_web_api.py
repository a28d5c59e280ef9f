"""The browser's API at `web`, over real HTTP against the running set: a session cookie, a question
streamed as server-sent events, the trusted surface stream (resumable), commands, and approvals."""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import pytest
import sqlalchemy as sa

from tests.fixtures.golden.reference import expected_figures


@pytest.fixture
def browser(running_set):
    """A browser: one cookie jar, same-origin requests."""
    base = f"http://{running_set.handles['web'].address}"
    with httpx.Client(base_url=base, timeout=120, headers={"Origin": base}) as client:
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


def test_a_session_cookie_opens_one_surface(running_set, browser):
    again = browser.get("/api/session").json()
    assert again["surface_id"] == browser.session_info["surface_id"] and again["actor"] == "local-user"
    fresh = httpx.get(f"http://{running_set.handles['web'].address}/api/session")
    cookie = fresh.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert fresh.json()["surface_id"] != browser.session_info["surface_id"]  # another browser, another surface


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


def test_a_flag_button_press_becomes_an_approval_the_person_decides(browser, warehouse_url):
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
    wrong = browser.post(f"/api/approvals/{approval['approval_id']}/decision",
                         json={"approve": True, "arguments_sha256": "0" * 64})
    assert (wrong.status_code, wrong.json()["reason"]) == (409, "ARGUMENTS_CHANGED")
    decision = {"approve": True, "arguments_sha256": card["arguments_sha256"], "reason": "odd order",
                "decision_id": "web-click-1111"}
    done = browser.post(f"/api/approvals/{approval['approval_id']}/decision", json=decision)
    assert done.json()["receipt"]["status"] == "INTENT_STATUS_SUCCEEDED" and not done.json().get("replayed")
    # The page's retry of the same click (its answer was lost): the same receipt, nothing run again.
    retried = browser.post(f"/api/approvals/{approval['approval_id']}/decision", json=decision)
    assert retried.status_code == 200 and retried.json() == {**done.json(), "replayed": True}
    # Another click, tab or device: refused, with how the approval ended.
    other = browser.post(f"/api/approvals/{approval['approval_id']}/decision",
                         json={**decision, "decision_id": "web-click-other"})
    assert (other.status_code, other.json()["reason"]) == (409, "APPROVAL_ALREADY_DECIDED")
    assert other.json()["outcome"]["intent_status"] == "INTENT_STATUS_SUCCEEDED"
    assert other.json()["outcome"]["decided_by"] == "local-user"
    for bad, reason in ((7, "DECISION_INVALID"), ("not an id!", "DECISION_ID_INVALID")):
        refused = browser.post(f"/api/approvals/{approval['approval_id']}/decision",
                               json={**decision, "decision_id": bad})
        assert (refused.status_code, refused.json()["reason"]) == (400, reason)
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT review_status FROM orders WHERE order_id = 1111")).scalar() == \
            "flagged"
    engine.dispose()


def test_bad_requests_get_a_status_and_a_reason(running_set, browser):
    base = f"http://{running_set.handles['web'].address}"
    no_cookie = httpx.post(f"{base}/api/ask", json={"question": "x"}, headers={"Origin": base})
    assert (no_cookie.status_code, no_cookie.json()["reason"]) == (401, "NO_SESSION")
    forged = httpx.post(f"{base}/api/ask", json={"question": "x"}, headers={"Origin": base},
                        cookies={"tessera_session": "abc.def"})
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
                           headers={"Cookie": "tessera_session=s\u00e9ssion.m\u00e4c".encode()})
    assert (odd_cookie.status_code, odd_cookie.json()["reason"]) == (401, "NO_SESSION")
    huge = browser.post("/api/ask", content=b'{"question": "' + b"x" * 70_000 + b'"}',
                        headers={"content-type": "application/json"})
    assert (huge.status_code, huge.json()["reason"]) == (413, "BODY_TOO_LARGE")
    for cursor in ("yesterday", "-1:5", "1:18446744073709551616", "1: 2", "1:2:3", "\u0661:1"):
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


def test_the_catalog_lists_labels_and_questions_that_get_answered(browser):
    described = browser.get("/api/catalog")
    assert described.status_code == 200
    catalog = described.json()
    labels = {e["label"]: e for e in catalog["entities"]}
    assert "Net revenue" in labels["Order item"]["measures"] and "Sales channel" in labels["Order"]["breakdowns"]
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
    assert (bad.status_code, bad.json()["reason"]) == (400, "TURN_ID_INVALID")
    not_json = browser.post(f"/api/turns/{finished['turn_id']}/cancel", content=b"x",
                            headers={"content-type": "text/plain"})
    assert not_json.status_code == 415
