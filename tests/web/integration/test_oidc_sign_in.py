"""Web signs people in through a real OpenID provider (django-oidc-provider in its own process): authorization
code with PKCE, the ID token verified, the person's id, tenant and name taken from its claims as configured;
a sign-in that was not started here, that the provider refused, or that took too long gets a page saying so."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import sqlalchemy as sa

from cli.launcher import ServiceSet, free_ports
from services.web.oidc import FLOW_COOKIE
from services.web.session import instance_cookie
from tests.fixtures.oidc import sign_in_at_provider, start_provider
from tests.fixtures.signing import enroll_in_browser, sign_in
from tests.fixtures.web_cookie import session_cookie_name

PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    provider = start_provider(tmp_path_factory.mktemp("oidc-provider"))
    provider.add_user("ada", PASSWORD, email="ada@example.org", name="Ada Lovelace", tenant="acme")
    provider.add_user("nobody", PASSWORD, email="nobody@example.org", name="No Tenant")  # no tenant claim
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def web(cert_dir, running_set, provider, tmp_path_factory):
    """A web process with OpenID sign-in, in front of the running set, on a port the provider knows."""
    (port,) = free_ports(1)
    client_id, secret = provider.add_client(f"http://localhost:{port}/auth/oidc/callback", client_id="tessera-web")
    peers = {f"TESSERA_{name.upper()}_ADDR": running_set.handles[name].address
             for name in ("host", "agent", "capabilities")}
    started = ServiceSet(cert_dir, tmp_path_factory.mktemp("web-oidc"), names=("web",), ephemeral_ports=True,
                         extra_env={**peers, "TESSERA_WEB_OIDC_ISSUER": provider.issuer,
                                    "TESSERA_WEB_OIDC_CLIENT_ID": client_id, "TESSERA_WEB_OIDC_CLIENT_SECRET": secret,
                                    "TESSERA_WEB_OIDC_SCOPES": "openid profile email tenant",
                                    "TESSERA_WEB_OIDC_PERSON_CLAIM": "email", "TESSERA_WEB_OIDC_TENANT_CLAIM": "tenant",
                                    "TESSERA_WEB_OIDC_PROVIDER_NAME": "Example SSO"})
    started.handles["web"].port = port
    started.start()
    yield f"http://localhost:{port}"
    assert started.stop() == {"web": 0}


def browser(base: str) -> httpx.Client:
    """One cookie jar for web and the provider (browsers send no Origin on the navigations used here)."""
    return httpx.Client(base_url=base, timeout=60, trust_env=False)


def through_the_provider(client: httpx.Client, base: str, username: str) -> httpx.Response:
    """From web's login to web's answer at the callback (the provider's login form filled in on the way)."""
    started = client.get("/auth/oidc/login")
    assert started.status_code == 302 and "code_challenge_method=S256" in started.headers["location"]
    assert instance_cookie(FLOW_COOKIE, base.removeprefix("http://")) in client.cookies
    callback = sign_in_at_provider(client, started.headers["location"], username, PASSWORD,
                                   f"{base}/auth/oidc/callback")
    return client.get(callback)


def test_a_person_signs_in_through_the_provider_with_their_claims(web, running_set, credentials, service_env):
    with browser(web) as client:
        options = client.get("/api/sign-in/options").json()
        assert options["oidc"] == {"url": "/auth/oidc/login", "provider": "Example SSO"}
        sign_in(client, running_set, credentials)  # signed in another way first: the new sign-in replaces it
        before = client.cookies[session_cookie_name(web)]
        done = through_the_provider(client, web, "ada")
        assert done.status_code == 303 and done.headers["location"] == "/", done.text
        assert client.cookies[session_cookie_name(web)] != before  # a new session, never the old id
        session = client.get("/api/session").json()
        assert (session["actor"], session["tenant"], session["name"], session["signed_in_with"]) == (
            "ada@example.org", "acme", "Ada Lovelace", "oidc")
        assert client.get("/api/approvals").status_code == 200
        # The sign-in is a session record at the broker, like a link's, and signing out ends it there.
        broker = sa.create_engine(service_env["TESSERA_CAPABILITIES_DATABASE_URL"])
        cookie = client.cookies[session_cookie_name(web)]
        assert client.post("/api/sign-out", json={}, headers={"Origin": web}).json() == {"signed_out": True}
        ended = httpx.get(f"{web}/api/session", cookies={session_cookie_name(web): cookie}, trust_env=False)
        assert (ended.status_code, ended.json()["reason"]) == (401, "SESSION_ENDED")
        with broker.connect() as connection:
            recorded = connection.execute(sa.text("SELECT tenant_id, signed_in_with, revoked_at IS NOT NULL "
                                                  "FROM web_sessions WHERE actor_id = 'ada@example.org'")).all()
        broker.dispose()
        assert ("acme", "oidc", True) in [tuple(row) for row in recorded]


def test_a_sign_in_that_was_not_started_here_or_was_refused_says_so(web, provider):
    with browser(web) as client:
        forged = client.get("/auth/oidc/callback?code=abc&state=made-up")
        assert forged.status_code == 400 and "not started here" in forged.text
        started = client.get("/auth/oidc/login")
        wrong_state = client.get("/auth/oidc/callback?code=abc&state=made-up")
        assert wrong_state.status_code == 400 and "start again" in wrong_state.text
        client.get("/auth/oidc/login")  # the failed callback ended that flow: a new one
        state = parse_qs(urlsplit(client.get("/auth/oidc/login").headers["location"]).query)["state"][0]
        refused = client.get(f"/auth/oidc/callback?error=access_denied&state={state}")
        assert refused.status_code == 401 and "access_denied" in refused.text
        assert started.status_code == 302
        assert client.get("/api/session").status_code == 401
    with browser(web) as client:  # the provider vouches for someone but names no tenant: not signed in
        done = through_the_provider(client, web, "nobody")
        assert done.status_code == 403 and "tenant" in done.text
        assert client.get("/api/session").status_code == 401


def test_a_sign_in_through_the_provider_shows_the_passkeys_added_since_the_previous_sign_in(
        web, provider, running_set, credentials):
    """The notice a link's sign-in shows, for a person who signs in through their organisation: the broker
    says which passkeys were added since their previous session, and the page's first /api/session shows them,
    once."""
    provider.add_user("grace", PASSWORD, email="grace@example.org", name="Grace Hopper", tenant="acme")
    with browser(web) as client:
        assert through_the_provider(client, web, "grace").status_code == 303
        assert "passkeys_added" not in client.get("/api/session").json()  # none yet
        # A passkey is added for her (here by a link the operator made; it could be anyone holding one).
        added = enroll_in_browser(lambda path, json: client.post(path, json=json, headers={"Origin": web}),
                                  sign_in(client, running_set, credentials, "grace@example.org", "acme"), web)
    with browser(web) as client:
        assert through_the_provider(client, web, "grace").status_code == 303
        session = client.get("/api/session").json()
        assert session["signed_in_with"] == "oidc"
        assert [p["credential_id"] for p in session["passkeys_added"]] == [added.id[:16]]  # as the page shows it
        assert session["passkeys_added"][0]["created_at"].endswith("Z")
        assert "passkeys_added" not in client.get("/api/session").json()  # shown once
    with browser(web) as client:  # nothing new since: no notice
        assert through_the_provider(client, web, "grace").status_code == 303
        assert "passkeys_added" not in client.get("/api/session").json()
