"""Two web replicas behind alternating requests (issue #14): web keeps no state of its own, so a person's
session, their surface stream (resumed from its cursor on the other replica) and their approvals work
whichever replica answers. Real processes: the replicas are web alone, in front of the running set."""

from __future__ import annotations

import json
import secrets
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from cli.launcher import ServiceSet, stop_together
from tests.conftest import run_module
from tests.fixtures.signing import browser_decision, enroll_in_browser, link_token, sign_in
from tests.fixtures.web_cookie import session_cookie_name
from tests.web.integration.test_web_api import sse

SECRET = secrets.token_hex(32)  # what a Kubernetes Secret would hand every replica
UNSET_WARNING = "TESSERA_WEB_SESSION_SECRET is not set"


def start_web(cert_dir: Path, run_dir: Path, running_set) -> ServiceSet:
    """One more web replica, talking to the running set's host, agent and broker."""
    peers = {f"TESSERA_{name.upper()}_ADDR": running_set.handles[name].address
             for name in ("host", "agent", "capabilities")}
    replica = ServiceSet(cert_dir, run_dir, names=("web",), ephemeral_ports=True,
                         extra_env={**peers, "TESSERA_WEB_SESSION_SECRET": SECRET})
    replica.start()
    return replica


@pytest.fixture(scope="module")
def replicas(cert_dir, running_set, tmp_path_factory):
    started: list[ServiceSet] = []
    try:
        for label in ("a", "b"):
            started.append(start_web(cert_dir, tmp_path_factory.mktemp(f"web-{label}"), running_set))
        yield started
    finally:
        codes = stop_together(started)
        assert all(code == {"web": 0} for code in codes), codes


def base(replica: ServiceSet) -> str:
    return f"http://{replica.handles['web'].address}"


class Browser:
    """One person's browser (one cookie jar) whose requests a load balancer sends to either replica: every request
    is addressed to the balancer's one public address (here replica 0's, as Host and Origin say), whichever
    replica answers it."""

    def __init__(self, client: httpx.Client, replicas: list[ServiceSet]) -> None:
        self.client, self.bases = client, [base(r) for r in replicas]
        public = self.bases[0]
        self.addressed = {"Host": public.removeprefix("http://"), "Origin": public}

    def request(self, replica: int, method: str, path: str, **kwargs) -> httpx.Response:
        return self.client.request(method, self.bases[replica] + path,
                                   headers={**self.addressed, **kwargs.pop("headers", {})}, **kwargs)

    def ask(self, replica: int, question: str) -> list[dict]:
        with self.client.stream("POST", self.bases[replica] + "/api/ask", json={"question": question},
                                headers=self.addressed) as response:
            assert response.status_code == 200, response.read()
            return [data for _, data in sse(response, until=lambda d: "done" in d)]

    def surface(self, replica: int, until, after: str | None = None, query: bool = False):
        """The surface stream's (id, event) pairs up to `until`, resumed after `after` if given."""
        headers = {**self.addressed, **({"Last-Event-ID": after} if after and not query else {})}
        path = f"/api/surface/stream?after={after}" if after and query else "/api/surface/stream"
        with self.client.stream("GET", self.bases[replica] + path, headers=headers) as response:
            assert response.status_code == 200, response.read()
            return sse(response, until=until)


@pytest.fixture
def browser(replicas, running_set, credentials):
    """A browser signed in (on replica 0) with a one-time link, as the local person."""
    with httpx.Client(timeout=120) as client:
        browser = Browser(client, replicas)
        token = link_token(running_set, credentials, replace=True)  # this browser's passkey: a new device
        signed_in = browser.request(0, "POST", "/api/sign-in/link", json={"token": token})
        assert signed_in.status_code == 200, signed_in.text
        browser.signed_in = signed_in.json()
        yield browser


QUESTION = "What is our net revenue by region?"


def shown(revision: str):
    """Until the surface shows `revision`'s components."""
    return lambda event: event.get("revision_id") == revision and "updateComponents" in event.get("message", {})


def test_a_session_is_the_same_on_every_replica(running_set, credentials, replicas, browser):
    opened = browser.request(0, "GET", "/api/session")
    assert opened.status_code == 200
    for replica in (1, 0, 1):
        again = browser.request(replica, "GET", "/api/session")
        assert again.status_code == 200 and "set-cookie" not in again.headers  # the cookie is good here too
        assert (again.json()["session_id"], again.json()["surface_id"]) == (
            opened.json()["session_id"], opened.json()["surface_id"])
    # A cookie signed with another key (the running set's web has a key of its own) is no session here.
    with httpx.Client(base_url=f"http://{running_set.handles['web'].address}", timeout=60) as elsewhere:
        sign_in(elsewhere, running_set, credentials)
        foreign = elsewhere.cookies[session_cookie_name(running_set.handles["web"].address)]
    refused = httpx.get(base(replicas[1]) + "/api/approvals", cookies={session_cookie_name(base(replicas[1])): foreign})
    assert (refused.status_code, refused.json()["reason"]) == (401, "NO_SESSION")


def test_first_visits_racing_on_both_replicas_find_one_host_session(running_set, credentials, replicas):
    # A browser session whose host session neither replica has opened: each asks the host for it at once.
    with httpx.Client(base_url=base(replicas[0]), timeout=60, headers={"Origin": base(replicas[0])}) as signing_in:
        sign_in(signing_in, running_set, credentials)
        cookie = signing_in.cookies[session_cookie_name(base(replicas[0]))]
    urls = [base(replicas[n % 2]) + "/api/session" for n in range(8)]
    with ThreadPoolExecutor(len(urls)) as pool:
        replies = list(pool.map(lambda url: httpx.get(url, cookies={session_cookie_name(url.removesuffix(
            "/api/session")): cookie}, timeout=60), urls))
    assert all(reply.status_code == 200 and "set-cookie" not in reply.headers for reply in replies)
    assert len({(reply.json()["session_id"], reply.json()["surface_id"]) for reply in replies}) == 1


def test_web_says_at_start_when_sessions_are_its_own(running_set, replicas, cert_dir):
    assert UNSET_WARNING in running_set.handles["web"].log_path.read_text()  # the single-process default
    assert all(UNSET_WARNING not in r.handles["web"].log_path.read_text() for r in replicas)
    weak = "a-shared-but-guessable-secret"
    result = run_module("services.web", {"TESSERA_CERT_DIR": str(cert_dir), "TESSERA_WEB_PORT": "0",
                                         "TESSERA_WEB_SESSION_SECRET": weak})
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "at least 32 characters" in lines[0], result.stderr
    assert weak not in result.stderr + result.stdout  # the secret itself is never printed


def test_the_surface_stream_resumes_on_the_other_replica_exactly_once(browser):
    browser.request(0, "GET", "/api/session")
    browser.ask(1, QUESTION)
    first = browser.surface(0, until=lambda event: True)  # A: one event, then the browser goes away
    (revision,) = browser.ask(0, "What is our net revenue by month?")[-1]["done"]["revision_ids"]
    resumed = browser.surface(1, shown(revision), after=first[-1][0])  # B, with the browser's Last-Event-ID
    everything = browser.surface(0, shown(revision))  # a fresh viewer: the journal as it is
    assert [i for i, _ in first + resumed] == [i for i, _ in everything]  # nothing missed, nothing twice
    assert [e["payload_hash"] for _, e in first + resumed] == [e["payload_hash"] for _, e in everything]
    epoch, start = (int(part) for part in everything[0][0].split(":"))
    assert [i for i, _ in everything] == [f"{epoch}:{n}" for n in range(start, start + len(everything))]
    # The page's own reopening (`?after=`, after EventSource gave up) resumes the same way.
    assert browser.surface(0, shown(revision), after=first[-1][0], query=True) == resumed
    # A cursor this journal never issued: snapshot-required, then the whole journal, never a silent gap.
    unknown = browser.surface(1, shown(revision), after=f"{epoch}:{10**9}")
    assert (unknown[0][0], unknown[0][1]["kind"]) == (f"{epoch}:0", "snapshot_required")
    assert unknown[1:] == everything


def test_a_stream_survives_its_replica_being_killed(cert_dir, running_set, replicas, browser, tmp_path):
    doomed = start_web(cert_dir, tmp_path, running_set)
    browser.bases.append(base(doomed))
    try:
        browser.request(2, "GET", "/api/session")
        browser.ask(0, QUESTION)
        seen: list = []
        with browser.client.stream("GET", browser.bases[2] + "/api/surface/stream",
                                   headers=browser.addressed) as response:
            with pytest.raises(httpx.TransportError):  # kill -9 after the first event: the connection breaks
                sse(response, until=lambda _: doomed.handles["web"].process.kill(), events=seen)
    finally:
        doomed.stop()
    assert seen and all(event_id for event_id, _ in seen)
    (revision,) = browser.ask(1, "What is our net revenue by month?")[-1]["done"]["revision_ids"]
    resumed = browser.surface(1, shown(revision), after=seen[-1][0])
    assert [i for i, _ in seen + resumed] == [i for i, _ in browser.surface(0, shown(revision))]


def test_a_lost_question_leaves_what_it_committed_on_the_surface(browser):
    browser.request(1, "GET", "/api/session")
    with browser.client.stream("POST", browser.bases[0] + "/api/ask", headers=browser.addressed,
                               json={"question": QUESTION}) as response:
        committed = sse(response, until=lambda d: "surface_committed" in d)[-1][1]["surface_committed"]
    # The browser went away mid-turn on A; on B the surface shows what the turn had committed.
    events = browser.surface(1, shown(committed["revision_id"]))
    assert events[-1][1]["message"]["updateComponents"]["surfaceId"]


def test_approvals_shown_on_one_replica_are_decided_on_the_other(browser, replicas, warehouse_url):
    browser.request(0, "GET", "/api/session")
    (revision,) = browser.ask(1, "Flag order 1216 for review")[-1]["done"]["revision_ids"]
    pressed = browser.request(0, "POST", "/api/commands", json={
        "command_id": "replica-press-1216", "revision_id": revision,
        "action_trigger": {"node_id": "flag", "input_json": json.dumps({"record_id": 1216})}})
    assert pressed.status_code == 200, pressed.text
    intent = pressed.json()["receipt"]["intent_id"]
    listed = browser.request(0, "GET", "/api/approvals").json()["approvals"]
    approval = next(a["approval_id"] for a in listed if a["intent_id"] == intent)
    card = browser.request(1, "GET", f"/api/approvals/{approval}").json()
    passkey = enroll_in_browser(partial(browser.request, 0, "POST"), browser.signed_in,
                                f"http://localhost:{replicas[0].handles['web'].port}")
    decision = browser_decision(partial(browser.request, 1, "POST"), passkey, approval, {
        "approve": True, "arguments_sha256": card["arguments_sha256"], "decision_id": "replica-click"})
    done = browser.request(1, "POST", f"/api/approvals/{approval}/decision", json=decision)
    assert done.status_code == 200 and done.json()["receipt"]["status"] == "INTENT_STATUS_SUCCEEDED", done.text
    # The page's retry lands on the other replica: the same receipt, nothing run twice.
    retried = browser.request(0, "POST", f"/api/approvals/{approval}/decision", json=decision)
    assert retried.status_code == 200 and retried.json() == {**done.json(), "replayed": True}
    other = browser.request(0, "POST", f"/api/approvals/{approval}/challenge", json={})  # another click
    assert (other.status_code, other.json()["reason"]) == (409, "APPROVAL_ALREADY_DECIDED")
    # Both replicas stream the same request and receipt for it.
    for replica in (0, 1):
        events = browser.surface(replica, lambda e: e.get("kind") == "effect_receipt"
                                 and e["event"]["receipt"]["intent_id"] == intent)
        assert any(e.get("kind") == "approval_requested" and e["event"]["approval_id"] == approval
                   for _, e in events)
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        status = connection.execute(sa.text("SELECT review_status FROM orders WHERE order_id = 1216")).scalar()
    engine.dispose()
    assert status == "flagged"


def test_two_instances_on_one_machine_keep_their_sign_ins_apart(running_set, credentials, replicas):
    """A browser keeps cookies per host name, not per port: signing in to one instance on localhost must not
    replace the sign-in to another (each names its cookie for the address it was reached at)."""
    with httpx.Client(timeout=60) as browser:  # one cookie jar for both, as a browser has
        for replica, person in zip(replicas, ("first-instance-person", "second-instance-person"), strict=True):
            signed_in = browser.post(base(replica) + "/api/sign-in/link", headers={"Origin": base(replica)},
                                     json={"token": link_token(running_set, credentials, person, "local")})
            assert signed_in.status_code == 200, signed_in.text
        assert [browser.get(base(replica) + "/api/session").json()["actor"] for replica in replicas] == [
            "first-instance-person", "second-instance-person"]
        assert {cookie.name for cookie in browser.cookies.jar} == {
            session_cookie_name(base(replica)) for replica in replicas}
