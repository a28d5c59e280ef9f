"""Sessions can be ended (issue 38, part 4), with real processes: two web replicas in front of one broker.

A session is a record at the broker, so signing out on one replica, or the operator's `tessera persons
sign-out`, refuses the cookie on the other replica within web's check bound (TESSERA_WEB_SESSION_CHECK_SECONDS,
5 s); an expired or unknown session is nobody, and a broker that cannot answer is a 503, never a session."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
import sqlalchemy as sa

from cli.launcher import ServiceSet, stop_together
from services.web.session import SessionCookies
from tests.cli.integration.test_cli_approvals import tessera
from tests.cli.integration.test_cli_ask import var_dir  # noqa: F401  (fixture)
from tests.fixtures.signing import sign_in
from tests.fixtures.waiting import wait_until
from tests.fixtures.web_cookie import session_cookie_name
from tests.web.integration.test_web_api import sse
from tests.web.integration.test_web_replicas import SECRET, base, start_web

CHECK_BOUND_SECONDS = 5.0  # web's default TESSERA_WEB_SESSION_CHECK_SECONDS
SLACK_SECONDS = 5.0  # a loaded 2-core machine answering late; the bound itself is web's memo


@pytest.fixture(scope="module")
def replicas(cert_dir, running_set, tmp_path_factory):
    """Two web replicas with one cookie key in front of the running set's broker (and host, agent)."""
    started = [start_web(cert_dir, tmp_path_factory.mktemp(f"web-{label}"), running_set) for label in "ab"]
    yield started
    assert stop_together(started) == [{"web": 0}, {"web": 0}]


def _signed_in(replica: ServiceSet, running_set, credentials, person: str) -> str:
    """A person signed in on `replica` with a one-time link: their session cookie."""
    with httpx.Client(base_url=base(replica), timeout=60, headers={"Origin": base(replica)}) as browser:
        sign_in(browser, running_set, credentials, person)
        return browser.cookies[session_cookie_name(base(replica))]


def _session(replica: ServiceSet, cookie: str) -> httpx.Response:
    return httpx.get(base(replica) + "/api/session", cookies=_cookie(replica, cookie), timeout=60)


def _cookie(replica: ServiceSet, cookie: str) -> dict[str, str]:
    """The session cookie as a browser sends it to `replica` (named for the address it uses)."""
    return {session_cookie_name(base(replica)): cookie}


def _refused_within_bound(replica: ServiceSet, cookie: str, since: float) -> tuple[str, float]:
    """Wait until `replica` refuses the cookie: (its reason, seconds since `since`)."""
    refused = wait_until(lambda: (reply := _session(replica, cookie)).status_code == 401 and reply, 30,
                         what="the ended session refused")
    return refused.json()["reason"], time.monotonic() - since


def test_a_signed_out_cookie_is_refused_on_the_other_replica_within_the_bound(running_set, credentials, replicas):
    cookie = _signed_in(replicas[0], running_set, credentials, "sign-out-person")
    assert [_session(replica, cookie).status_code for replica in replicas] == [200, 200]  # both remember it now
    signed_out = httpx.post(base(replicas[0]) + "/api/sign-out", json={}, cookies=_cookie(replicas[0], cookie),
                            headers={"Origin": base(replicas[0])}, timeout=60)
    ended_at = time.monotonic()
    assert signed_out.json() == {"signed_out": True}
    assert session_cookie_name(base(replicas[0])) in signed_out.headers["set-cookie"]
    own = _session(replicas[0], cookie)  # the replica that signed the person out forgets at once
    assert (own.status_code, own.json()["reason"]) == (401, "SESSION_ENDED")
    reason, seconds = _refused_within_bound(replicas[1], cookie, ended_at)
    assert reason == "SESSION_ENDED" and seconds <= CHECK_BOUND_SECONDS + SLACK_SECONDS, seconds
    for path in ("/api/approvals", "/api/outline", "/info", "/status"):  # every door, not only /api/session
        reply = httpx.get(base(replicas[1]) + path, cookies=_cookie(replicas[1], cookie), timeout=60)
        assert reply.status_code == 401, path


def test_an_open_surface_stream_ends_when_its_session_does(running_set, credentials, replicas):
    cookie = _signed_in(replicas[0], running_set, credentials, "streaming-person")
    assert _session(replicas[1], cookie).status_code == 200
    with httpx.stream("GET", base(replicas[1]) + "/api/surface/stream", cookies=_cookie(replicas[1], cookie),
                      timeout=60) as stream:
        assert stream.status_code == 200  # open, and waiting for the surface's next event
        signed_out = httpx.post(base(replicas[0]) + "/api/sign-out", json={}, cookies=_cookie(replicas[0], cookie),
                                headers={"Origin": base(replicas[0])}, timeout=60)
        ended_at = time.monotonic()
        assert signed_out.status_code == 200
        events = [event for _, event in sse(stream)]  # to the stream's end: web closes it
        seconds = time.monotonic() - ended_at
    assert events[-1]["error"]["reason"] == "SESSION_ENDED", events
    # The memo's bound, then the stream's next look at its session (every bound).
    assert seconds <= 2 * CHECK_BOUND_SECONDS + SLACK_SECONDS, seconds


def test_the_operator_signs_a_person_out_of_every_session_on_every_replica(running_set, credentials, replicas,
                                                                            var_dir):  # noqa: F811
    laptop = _signed_in(replicas[0], running_set, credentials, "leaver")
    phone = _signed_in(replicas[1], running_set, credentials, "leaver")
    colleague = _signed_in(replicas[0], running_set, credentials, "stayer")
    for replica in replicas:
        assert all(_session(replica, cookie).status_code == 200 for cookie in (laptop, phone, colleague))
    signed_out = tessera(var_dir, "persons", "sign-out", "leaver", "--tenant", "local")
    ended_at = time.monotonic()
    assert signed_out.returncode == 0, signed_out.stderr
    assert "2 web session(s) ended" in signed_out.stdout
    for replica in replicas:
        for cookie in (laptop, phone):
            reason, seconds = _refused_within_bound(replica, cookie, ended_at)
            assert reason == "SESSION_ENDED" and seconds <= CHECK_BOUND_SECONDS + SLACK_SECONDS, seconds
        assert _session(replica, colleague).status_code == 200  # nobody else is signed out
    again = tessera(var_dir, "persons", "sign-out", "leaver", "--tenant", "local")
    assert again.returncode == 0 and "0 web session(s) ended" in again.stdout
    audit = tessera(var_dir, "audit", "--json")
    assert '"kind": "person-signed-out"' in audit.stdout and '"sessions_ended": 2' in audit.stdout


def test_an_expired_or_unknown_session_is_nobody(running_set, credentials, replicas, service_env):
    # Sealed with the replicas' own key, so only the broker can say it is no session.
    unknown = SessionCookies(SECRET.encode()).session_cookie("A" * 43)
    reply = _session(replicas[1], unknown)
    assert (reply.status_code, reply.json()["reason"]) == (401, "SESSION_UNKNOWN")
    cookie = _signed_in(replicas[0], running_set, credentials, "expiring-person")
    assert _session(replicas[0], cookie).status_code == 200
    broker = sa.create_engine(service_env["TESSERA_CAPABILITIES_DATABASE_URL"])
    try:
        with broker.begin() as connection:  # the sign-in's time ran out
            connection.execute(sa.text("UPDATE web_sessions SET expires_at = :past WHERE actor_id = :person"),
                               {"past": time.time() - 1, "person": "expiring-person"})
    finally:
        broker.dispose()
    expired = _session(replicas[1], cookie)  # a replica that has not seen it asks the broker now
    assert (expired.status_code, expired.json()["reason"]) == (401, "SESSION_EXPIRED")
    reason, _ = _refused_within_bound(replicas[0], cookie, time.monotonic())
    assert reason == "SESSION_EXPIRED"


@pytest.fixture
def cut_off_web(cert_dir, running_set, tmp_path):
    """A web replica whose broker address answers nothing (a port nobody listens on)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{probe.getsockname()[1]}"
    replica = ServiceSet(cert_dir, tmp_path, names=("web",), ephemeral_ports=True, extra_env={
        "TESSERA_HOST_ADDR": running_set.handles["host"].address,
        "TESSERA_AGENT_ADDR": running_set.handles["agent"].address, "TESSERA_CAPABILITIES_ADDR": nobody,
        "TESSERA_WEB_SESSION_SECRET": SECRET})
    replica.start()
    try:
        yield replica
    finally:
        replica.stop()


def test_a_broker_that_cannot_answer_is_a_503_and_never_a_session(running_set, credentials, replicas, cut_off_web):
    cookie = _signed_in(replicas[0], running_set, credentials, "cut-off-person")  # a good session elsewhere
    for path in ("/api/session", "/api/approvals", "/info"):
        reply = httpx.get(base(cut_off_web) + path, cookies=_cookie(cut_off_web, cookie), timeout=60)
        assert (reply.status_code, reply.json()["reason"]) == (503, "SESSION_CHECK_UNAVAILABLE"), path
        assert "try again" in reply.json()["message"]
    signing_out = httpx.post(base(cut_off_web) + "/api/sign-out", json={}, cookies=_cookie(cut_off_web, cookie),
                             headers={"Origin": base(cut_off_web)}, timeout=60)
    # Not ended at the broker: the person is told so, and keeps the cookie to sign out again.
    assert signing_out.status_code == 503 and "set-cookie" not in signing_out.headers
    assert _session(replicas[0], cookie).status_code == 200
