"""The OIDC provider fixture (tests/fixtures/oidc.py) is a working OpenID Connect provider: an Authlib client
signs a user in with the authorization code flow and PKCE, a plain HTTP client playing the browser (Django's login
form, CSRF token and all), and the ID token verifies against the provider's JWKS with the claims we rely on."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import pytest
from authlib.common.security import generate_token
from authlib.integrations.base_client import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client, OAuth2Client
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import BadSignatureError
from joserfc.jwk import KeySet

from tests.fixtures.oidc import Provider, sign_in_at_provider, start_provider

REDIRECT_URI = "http://127.0.0.1:9/auth/callback"  # never contacted: the browser stops at the redirect to it
SCOPE = "openid profile email tenant"
PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def provider(tmp_path_factory) -> Provider:
    provider = start_provider(tmp_path_factory.mktemp("oidc-provider"))
    yield provider
    provider.stop()
    assert provider.process.returncode == 0, provider.stderr()


@pytest.fixture(scope="module")
def ada(provider) -> str:
    """Ada's `sub`."""
    return provider.add_user("ada", PASSWORD, email="ada@example.org", name="Ada Lovelace", tenant="acme")


def browser() -> httpx.Client:
    return httpx.Client(timeout=30, trust_env=False)


def sign_in(client: httpx.Client, authorize_url: str, username: str, password: str) -> str:
    return sign_in_at_provider(client, authorize_url, username, password, REDIRECT_URI)


def verified_claims(provider: Provider, id_token: str) -> dict:
    """The ID token's claims once its RS256 signature checks out against the provider's JWKS."""
    metadata = provider.metadata()
    key_set = KeySet.import_key_set(httpx.get(metadata["jwks_uri"], trust_env=False, timeout=30).json())
    token = jwt.decode(id_token, key_set, algorithms=["RS256"])
    assert token.header["alg"] == "RS256" and token.header["kid"] in {key.kid for key in key_set.keys}
    # a token whose payload was changed after signing is refused: the check above is a real one
    header, _, signature = id_token.split(".")
    forged = base64.urlsafe_b64encode(json.dumps({**token.claims, "tenant": "evil"}).encode()).rstrip(b"=").decode()
    with pytest.raises(BadSignatureError):
        jwt.decode(f"{header}.{forged}.{signature}", key_set, algorithms=["RS256"])
    return token.claims


def test_discovery_names_the_issuer_and_its_endpoints(provider):
    metadata = provider.metadata()
    assert metadata["issuer"] == provider.issuer == f"http://127.0.0.1:{provider.port}/openid"
    for endpoint in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"):
        assert metadata[endpoint].startswith(provider.issuer + "/")
    assert "code" in metadata["response_types_supported"]
    assert "RS256" in metadata["id_token_signing_alg_values_supported"]


def test_confidential_client_signs_in_with_code_and_pkce(provider, ada):
    """The round trip our web service makes: authorize -> login form -> code -> token (client_secret_basic, with
    the PKCE verifier) -> an ID token signed by the provider, for this user, tenant and nonce."""
    client_id, client_secret = provider.add_client(REDIRECT_URI)
    assert client_secret
    metadata = provider.metadata()
    nonce, verifier = generate_token(20), generate_token(48)

    async def round_trip():
        async with AsyncOAuth2Client(client_id, client_secret, scope=SCOPE, redirect_uri=REDIRECT_URI,
                                     code_challenge_method="S256", trust_env=False, timeout=30) as client:
            url, state = client.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier,
                                                         nonce=nonce)
            assert "code_challenge_method=S256" in url
            with browser() as person:
                callback = sign_in(person, url, "ada", PASSWORD)
            token = await client.fetch_token(metadata["token_endpoint"], authorization_response=callback,
                                             state=state, code_verifier=verifier)
            userinfo = (await client.get(metadata["userinfo_endpoint"])).json()
            return token, userinfo

    token, userinfo = asyncio.run(round_trip())
    claims = verified_claims(provider, token["id_token"])
    assert claims["iss"] == provider.issuer
    assert claims["aud"] == client_id
    assert claims["sub"] == ada
    assert claims["nonce"] == nonce
    assert claims["tenant"] == "acme"
    assert claims["email"] == "ada@example.org"
    assert claims["name"] == "Ada Lovelace"
    # what Authlib's OpenID client checks in parse_id_token: iss, aud, exp, iat, nonce and at_hash
    id_token = CodeIDToken(claims, {"alg": "RS256"}, {"iss": {"values": [provider.issuer]}},
                           {"nonce": nonce, "client_id": client_id, "access_token": token["access_token"]})
    id_token.validate(leeway=120)
    assert userinfo["sub"] == ada and userinfo["tenant"] == "acme" and userinfo["email"] == "ada@example.org"


def test_public_client_code_is_bound_to_its_pkce_verifier(provider, ada):
    """A public client (no secret) gets tokens only with the verifier of the challenge it sent; the code is
    single-use."""
    client_id, client_secret = provider.add_client(REDIRECT_URI, public=True)
    assert client_secret is None
    metadata = provider.metadata()
    verifier = generate_token(48)
    with OAuth2Client(client_id, scope=SCOPE, redirect_uri=REDIRECT_URI, code_challenge_method="S256",
                      token_endpoint_auth_method="none", trust_env=False, timeout=30) as client:
        url, state = client.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier,
                                                     nonce=generate_token(20))
        with browser() as person:
            callback = sign_in(person, url, "ada", PASSWORD)

        def exchange(**verifier_argument):
            return client.fetch_token(metadata["token_endpoint"], authorization_response=callback, state=state,
                                      **verifier_argument)

        for wrong in ({"code_verifier": generate_token(48)}, {}):
            with pytest.raises(OAuthError) as refused:
                exchange(**wrong)
            assert refused.value.error == "invalid_grant"
        token = exchange(code_verifier=verifier)
        assert verified_claims(provider, token["id_token"])["sub"] == ada
        with pytest.raises(OAuthError) as replayed:
            exchange(code_verifier=verifier)
        assert replayed.value.error == "invalid_grant"


def test_wrong_password_is_refused(provider, ada):
    client_id, _ = provider.add_client(REDIRECT_URI)
    with OAuth2Client(client_id, scope=SCOPE, redirect_uri=REDIRECT_URI) as client:
        url, _ = client.create_authorization_url(provider.metadata()["authorization_endpoint"])
    with browser() as person, pytest.raises(AssertionError, match="sign-in refused"):
        sign_in(person, url, "ada", "not the password")
