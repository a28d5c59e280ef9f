"""The ID token checks of web's OpenID sign-in, with tokens made here: only a token signed by the provider's
key, for this client, from this issuer, for this sign-in's nonce and not expired signs anyone in; the person
comes from the configured claims."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from services.web.oidc import OidcConfig, OidcSignIn, SignInFailed
from services.web.session import SessionCookies

KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})
OTHER_KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})  # same key id, not the provider's key
ISSUER, CLIENT = "https://id.example.org", "tessera-web"
CONFIG = OidcConfig(ISSUER, CLIENT, "", "openid", "email", "tenant", "", "name", "")


def _sign_in(config: OidcConfig = CONFIG) -> OidcSignIn:
    sign_in = OidcSignIn(config, SessionCookies(b"k" * 32), lambda person, response: None)
    sign_in._keys = (time.monotonic(), KeySet([KEY]))  # as if fetched from the provider's jwks_uri
    sign_in._metadata = (time.monotonic(), {"issuer": ISSUER, "jwks_uri": "https://id.example.org/jwks"})

    async def provider_keys(url: str) -> dict:  # a key id it does not know makes web fetch the keys again
        return {"keys": [KEY.as_dict(private=False)]}

    sign_in._get = provider_keys
    return sign_in


def _token(key=KEY, alg="RS256", **overrides) -> str:
    claims = {"iss": ISSUER, "aud": CLIENT, "sub": "1", "nonce": "n-1", "exp": int(time.time()) + 300,
              "iat": int(time.time()), "email": "ada@example.org", "email_verified": True, "tenant": "acme",
              "name": "Ada Lovelace", **overrides}
    return jwt.encode({"alg": alg, "kid": "k1"}, {k: v for k, v in claims.items() if v is not None}, key)


def _claims(token: str, nonce: str = "n-1") -> dict:
    return asyncio.run(_sign_in()._verified_claims(token, nonce))


def test_a_good_token_names_the_person_by_the_configured_claims():
    person = _sign_in()._person_of(_claims(_token()))
    assert (person.actor_id, person.tenant_id, person.display_name) == ("ada@example.org", "acme", "Ada Lovelace")


@pytest.mark.parametrize("token", [
    _token(iss="https://evil.example.org"), _token(aud="another-client"), _token(exp=int(time.time()) - 600),
    _token(nonce="n-2"), _token(nonce=None), _token(key=OTHER_KEY), _token(aud=[CLIENT, "other"]),
], ids=["issuer", "audience", "expired", "nonce", "no-nonce", "foreign-key", "two-audiences-no-azp"])
def test_a_token_not_for_this_sign_in_is_refused(token):
    with pytest.raises(SignInFailed) as refused:
        _claims(token)
    assert refused.value.reason == "OIDC_ID_TOKEN_INVALID"


def test_an_unsigned_token_is_refused():
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none"}).encode()).rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(json.dumps({"iss": ISSUER, "aud": CLIENT, "nonce": "n-1", "sub": "1",
                                                "exp": int(time.time()) + 300}).encode()).rstrip(b"=").decode()
    with pytest.raises(SignInFailed) as refused:
        _claims(f"{header}.{body}.")
    assert refused.value.reason == "OIDC_ID_TOKEN_INVALID"


def test_claims_that_cannot_name_a_person_are_refused():
    for claims, reason in (({"email_verified": False}, "OIDC_EMAIL_UNVERIFIED"),
                           ({"tenant": None}, "OIDC_CLAIM_MISSING"),
                           ({"email": "ada lovelace@example.org"}, "OIDC_CLAIM_INVALID")):
        with pytest.raises(SignInFailed) as refused:
            _sign_in()._person_of(_claims(_token(**claims)))
        assert refused.value.reason == reason, claims
