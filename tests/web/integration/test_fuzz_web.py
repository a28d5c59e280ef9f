"""Hostile JSON bodies at web's `/api/commands` and `/api/ask`, over real HTTP against the running set.

Whatever a page (or anyone who can reach web) posts, web answers with a 2xx or a 4xx carrying a
reason, never a 5xx (an exception escaping web or a service's INTERNAL), and never hangs. Commands
are sent against real revisions too, so they reach the host and, for an action button, the broker's
SubmitIntent: issue #13's integer ≥ 2^63 in an action input was an HTTP 500 there.
"""

from __future__ import annotations

import json
import re
import uuid

import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.fixtures.fuzz import fuzz_settings
from tests.fixtures.signing import sign_in

REQUEST_TIMEOUT = 60.0  # seconds; a turn of the embedded planner takes about one
REASON = re.compile(r"^[A-Z][A-Z0-9_]*$")
HUGE = [2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30, 1e308, -1e308, 5e-324, -0.0]
leaves = (st.none() | st.booleans() | st.integers() | st.sampled_from(HUGE)
          | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=8), inner, max_size=4), max_leaves=16)


def _page(running_set, credentials, question: str | None = None) -> tuple[httpx.Client, str | None]:
    """A signed-in browser with its own session (so its own surface); with a question, the revision it produced."""
    base = f"http://{running_set.handles['web'].address}"
    client = httpx.Client(base_url=base, timeout=REQUEST_TIMEOUT, headers={"Origin": base})
    sign_in(client, running_set, credentials)
    client.running_set, client.credentials = running_set, credentials  # to sign in again after a sign-out
    assert client.get("/api/session").status_code == 200
    if question is None:
        return client, None
    events = _sse(client.post("/api/ask", json={"question": question}))
    return client, events[-1]["done"]["revision_ids"][0]


@pytest.fixture(scope="module")
def page(running_set, credentials):
    client, _ = _page(running_set, credentials)
    yield client
    client.close()


@pytest.fixture(scope="module")
def table_page(running_set, credentials):
    client, revision = _page(running_set, credentials, "What is our net revenue by region?")
    yield client, revision
    client.close()


@pytest.fixture(scope="module")
def flag_page(running_set, credentials):
    client, revision = _page(running_set, credentials, "Flag order 1111 for review")
    yield client, revision
    client.close()


def _answered(response: httpx.Response, body: object) -> httpx.Response:
    """A 2xx, or a 4xx with a machine-readable reason; never a 5xx."""
    assert response.status_code < 500, (response.status_code, response.text[:500], repr(body)[:500])
    if response.status_code >= 400:
        reason = response.json()["reason"]
        assert REASON.match(reason), (reason, repr(body)[:500])
    return response


def _sse(response: httpx.Response) -> list[dict]:
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def _command(client: httpx.Client, body: object) -> httpx.Response:
    return _answered(client.post("/api/commands", content=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"}), body)


# --- /api/commands -------------------------------------------------------------------------------------------

COMMANDS = ["resource_window", "action_trigger", "approval_decision", "state_write", "ack"]
command_bodies = json_values | st.fixed_dictionaries({}, optional={
    "command_id": st.text(max_size=200) | json_values, "revision_id": st.text(max_size=40) | json_values,
    **{name: json_values | st.dictionaries(st.sampled_from(
        ["node_id", "offset", "limit", "column_ids", "input_json", "action_slice_id", "approval_id", "approve",
         "arguments_sha256", "approved_entry_ids", "state_slice_id", "value_json", "cursor", "epoch",
         "sequence"]), json_values, max_size=4) for name in COMMANDS}})


@fuzz_settings(40)
@given(body=command_bodies)
@example(body={"command_id": "c", "resource_window": {"node_id": "table", "offset": 2**64, "limit": 2**63}})
@example(body={"command_id": "c", "ack": {"cursor": {"epoch": -1, "sequence": 2**64}}})
@example(body={"command_id": "c", "action_trigger": {"node_id": "flag", "input_json": '{"record_id": 1}'},
               "resource_window": {}})
def test_hostile_commands_get_a_status_and_a_reason(page, body):
    _command(page, body)


# Issue #13: record_id 2^63 passed the action's input schema and overflowed SQLite in the broker.
# Whole record ids stay clear of the demo's orders (so no example leaves an approval on a record other
# tests use): they are out of range, or in range with no such order.
record_ids = st.sampled_from(HUGE) | st.integers(10**9, 2**53) | st.integers(max_value=0) | json_values.filter(
    lambda value: not isinstance(value, int) or isinstance(value, bool))
ACTION_INPUTS = st.one_of(
    st.fixed_dictionaries({"record_id": record_ids},
                          optional={"reason": json_values | st.text(max_size=600)}).map(json.dumps),
    json_values.map(json.dumps), st.text(max_size=40))


@fuzz_settings(25)
@given(input_json=ACTION_INPUTS, node=st.sampled_from(["flag", "flag", "table", "nope", ""]))
@example(input_json=json.dumps({"record_id": 2**63}), node="flag")
@example(input_json=json.dumps({"record_id": 2**64 + 1, "reason": "x"}), node="flag")
@example(input_json=json.dumps({"record_id": -(2**63) - 1}), node="flag")
@example(input_json=json.dumps({"record_id": 1e300}), node="flag")
def test_action_inputs_reaching_the_broker_are_refused_not_crashed(flag_page, input_json, node):
    client, revision = flag_page
    body = {"command_id": f"fz-{uuid.uuid4().hex}", "revision_id": revision,
            "action_trigger": {"node_id": node, "input_json": input_json}}
    response = _command(client, body)
    if node == "flag" and re.fullmatch(r'\{"record_id": -?[0-9.e+]+\}', input_json):
        # A whole number past the schema's maximum is refused by the broker's schema check itself.
        if abs(json.loads(input_json)["record_id"]) >= 2**63:
            assert (response.status_code, response.json()["reason"]) == (400, "INPUT_INVALID")


@fuzz_settings(15)
@given(window=st.fixed_dictionaries({}, optional={
    "node_id": st.sampled_from(["table", "flag", "", "x" * 300]) | st.text(max_size=10),
    "offset": st.integers(-5, 2**64 + 5) | st.sampled_from([0, 2**63, 2**64 - 1]),
    "limit": st.integers(-5, 2**32 + 5) | st.sampled_from([0, 1, 1000, 1001, 2**32 - 1]),
    "column_ids": st.lists(st.text(max_size=12), max_size=3) | json_values}))
@example(window={"node_id": "table", "offset": 2**64 - 1, "limit": 1000})
@example(window={"node_id": "table", "offset": 2**63, "limit": 2**32 - 1})
def test_windows_against_a_real_revision_get_a_status_and_a_reason(table_page, window):
    client, revision = table_page
    _command(client, {"command_id": f"fz-{uuid.uuid4().hex}", "revision_id": revision, "resource_window": window})


# --- /api/ask --------------------------------------------------------------------------------------------------

# Mostly bodies web refuses itself; a string question runs a real turn (about a second), so few do.
ask_bodies = json_values | st.fixed_dictionaries({}, optional={
    "question": json_values | st.sampled_from(["", "   ", "\u0000", "x" * 5_000, "\u202e\u200b?"]),
    "request_id": json_values | st.text(max_size=300)})


@fuzz_settings(25)
@given(body=ask_bodies)
@example(body={"question": ["What is our net revenue by region?"]})
@example(body={"question": {"text": "hi"}, "request_id": 2**64})
@example(body={"question": "x" * 5_000})
@example(body={"question": "Flag order 9223372036854775808 for review"})
def test_hostile_questions_get_a_status_and_a_reason(page, body):
    response = _answered(page.post("/api/ask", content=json.dumps(body).encode(),
                                   headers={"content-type": "application/json"}), body)
    if response.status_code == 200:
        events = _sse(response)
        errors = [e["error"] for e in events if "error" in e]
        assert "done" in events[-1] or errors, events[-3:]
        assert not any(e["reason"] in ("INTERNAL", "UNKNOWN") for e in errors), errors


@fuzz_settings(20)
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
@example(raw=b'{"question": "\\ud800"}')
@example(raw=b'{"command_id": 1e999}')
@example(raw=b"[" * 200 + b"]" * 200)
def test_bodies_that_are_not_json_objects_are_refused(page, raw):
    for path in ("/api/commands", "/api/ask"):
        _answered(page.post(path, content=raw, headers={"content-type": "application/json"}), raw)


# --- people: sign-in links, passkeys, signed decisions --------------------------------------------------------

b64url_texts = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", max_size=90)
passkey_fields = st.fixed_dictionaries({}, optional={
    name: b64url_texts | json_values for name in ("id", "authenticator_data", "client_data_json", "signature",
                                                  "user_handle")})
PEOPLE_PATHS = ["/api/approvals/apr_{}/decision", "/api/approvals/apr_{}/challenge", "/api/passkeys",
                "/api/sign-in/link", "/api/sign-out"]


@fuzz_settings(40)
@given(path=st.sampled_from(PEOPLE_PATHS), approval=st.text(alphabet="0123456789abcdef", max_size=24),
       body=json_values | st.fixed_dictionaries({}, optional={
           "approve": json_values, "arguments_sha256": st.text(max_size=70) | json_values,
           "nonce": st.text(max_size=200) | json_values, "reason": st.text(max_size=2100) | json_values,
           "decision_id": st.text(max_size=140) | json_values, "passkey": passkey_fields | json_values,
           "token": st.text(max_size=220) | json_values, "enrollment_id": st.text(max_size=80) | json_values,
           "credential": json_values}))
@example(path="/api/approvals/apr_{}/decision", approval="0",
         body={"approve": True, "arguments_sha256": "0" * 64, "passkey": {"id": "a", "signature": "A"}})
@example(path="/api/approvals/apr_{}/decision", approval="0",
         body={"approve": True, "arguments_sha256": "0" * 64, "passkey": {"signature": "AAAA"}})
@example(path="/api/passkeys", approval="", body={"enrollment_id": "enr_" + "a" * 20, "credential": {"id": 1}})
@example(path="/api/sign-in/link", approval="", body={"token": "\u0000" * 50})
def test_hostile_people_requests_get_a_status_and_a_reason(page, path, approval, body):
    """Decisions, challenges, passkey registrations and sign-ins with anything in their bodies: a 2xx or a 4xx
    with a reason, never a 5xx; nothing signs anyone in or decides anything without a real signature."""
    response = _answered(page.post(path.format(approval), content=json.dumps(body).encode(),
                                   headers={"content-type": "application/json"}), body)
    if path.endswith("/decision"):
        assert response.status_code >= 400  # no approval here can be decided by anything hypothesis makes
    if path == "/api/sign-out" and response.status_code == 200:
        sign_in(page, page.running_set, page.credentials)  # the next example needs a session again
