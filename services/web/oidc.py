"""Sign-in through the organisation's OpenID provider (§2): authorization code with PKCE, by Authlib.

- `GET /auth/oidc/login`     sends the browser to the provider, with a fresh state, nonce and PKCE verifier
                             kept in a short-lived sealed cookie (so any web replica can finish the sign-in);
- `GET /auth/oidc/callback`  exchanges the code (Authlib's client, with the verifier), verifies the ID token
                             (signature against the provider's keys, issuer, audience, expiry, nonce; joserfc)
                             and signs the person in: their id and tenant come from the token's claims, mapped
                             by configuration.

Every failure is a page saying what went wrong and how to start again, never a 500.
"""

from __future__ import annotations

import html
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
from authlib.integrations.base_client import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from services.web.session import Person, SessionCookies, cookie_of
from services.web.session_records import SessionRefused
from shared.identity.actors import MAX_DISPLAY_NAME_CHARS
from shared.logs import log

logger = logging.getLogger("tessera.web")
FLOW_COOKIE = "tessera_oidc"
FLOW_SECONDS = 600  # a sign-in at the provider must finish within ten minutes
METADATA_SECONDS = 3600  # discovery and keys are fetched again after an hour (or on an unknown key id)
CALLBACK = "/auth/oidc/callback"
SIGNING_ALGORITHMS = ["RS256", "ES256", "PS256", "EdDSA"]  # never "none", never a shared-secret HMAC
ENDPOINTS = ("authorization_endpoint", "token_endpoint", "jwks_uri")


@dataclass(frozen=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str  # empty: a public client (PKCE alone)
    scopes: str
    person_claim: str
    tenant_claim: str  # empty: every person gets `tenant`
    tenant: str
    name_claim: str
    public_url: str  # where browsers reach web, for the redirect URI; empty: the request's own scheme and host


class SignInFailed(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


class OidcSignIn:
    def __init__(self, config: OidcConfig, cookies: SessionCookies,
                 signed_in: Callable[[Person, Request, Response], Awaitable[object]],
                 secure_cookies: bool = False) -> None:
        self.config = config
        self.cookies = cookies
        self.secure_cookies = secure_cookies
        self._signed_in = signed_in  # opens the session at the broker and sets its cookie on the response
        self._metadata: tuple[float, dict] | None = None
        self._keys: tuple[float, KeySet] | None = None

    # --- provider metadata and keys --------------------------------------------------------------------------

    async def _get(self, url: str) -> dict:
        try:
            async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
                reply = await client.get(url)
                reply.raise_for_status()
                return reply.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise SignInFailed(502, "OIDC_PROVIDER_UNREACHABLE",
                               f"the sign-in provider did not answer ({type(exc).__name__}); try again shortly") \
                from None

    async def metadata(self) -> dict:
        if self._metadata is None or time.monotonic() - self._metadata[0] > METADATA_SECONDS:
            found = await self._get(self.config.issuer.rstrip("/") + "/.well-known/openid-configuration")
            if not isinstance(found, dict) or found.get("issuer") != self.config.issuer:  # it must name itself
                raise SignInFailed(502, "OIDC_ISSUER_MISMATCH",
                                   "the sign-in provider names another issuer than the one configured")
            missing = [k for k in ENDPOINTS if not isinstance(found.get(k), str) or not found[k].startswith("http")]
            if missing:
                raise SignInFailed(502, "OIDC_PROVIDER_INCOMPLETE",
                                   f"the sign-in provider's configuration has no {missing[0]}")
            self._metadata = (time.monotonic(), found)
        return self._metadata[1]

    async def _key_set(self, refresh: bool) -> KeySet:
        if refresh or self._keys is None or time.monotonic() - self._keys[0] > METADATA_SECONDS:
            try:
                keys = KeySet.import_key_set(await self._get((await self.metadata())["jwks_uri"]))
            except (JoseError, ValueError, KeyError, TypeError):
                raise SignInFailed(502, "OIDC_KEYS_INVALID", "the sign-in provider's keys could not be read") \
                    from None
            self._keys = (time.monotonic(), keys)
        return self._keys[1]

    # --- the two steps ---------------------------------------------------------------------------------------

    def _redirect_uri(self, request: Request) -> str:
        base = self.config.public_url or f"{request.url.scheme}://{request.headers.get('host', '')}"
        return base.rstrip("/") + CALLBACK

    def _client(self, request: Request) -> AsyncOAuth2Client:
        return AsyncOAuth2Client(self.config.client_id, self.config.client_secret or None, scope=self.config.scopes,
                                 redirect_uri=self._redirect_uri(request), code_challenge_method="S256",
                                 token_endpoint_auth_method="client_secret_basic" if self.config.client_secret
                                 else "none", trust_env=False, timeout=15)

    async def login(self, request: Request) -> Response:
        try:
            metadata = await self.metadata()
        except SignInFailed as failed:
            return _page(failed.status, failed.message)
        verifier, nonce = secrets.token_urlsafe(48), secrets.token_urlsafe(24)
        async with self._client(request) as client:
            url, state = client.create_authorization_url(metadata["authorization_endpoint"], code_verifier=verifier,
                                                         nonce=nonce)
        response = RedirectResponse(url, status_code=302)
        flow = self.cookies.seal("oidc-flow", {"state": state, "verifier": verifier, "nonce": nonce})
        response.set_cookie(cookie_of(request, FLOW_COOKIE), flow,
                            max_age=FLOW_SECONDS, httponly=True, samesite="lax", path="/auth/oidc",
                            secure=self.secure_cookies)
        return response

    async def callback(self, request: Request) -> Response:
        try:
            person = await self._person(request)
        except SignInFailed as failed:
            log(logger, logging.WARNING, "sign-in refused", reason=failed.reason)
            response = _page(failed.status, failed.message)
        else:
            response = RedirectResponse("/", status_code=303)
            try:
                await self._signed_in(person, request, response)
            except SessionRefused as refused:  # the broker could not open the session: nobody is signed in
                response = _page(refused.status, refused.message)
        response.delete_cookie(cookie_of(request, FLOW_COOKIE), path="/auth/oidc")
        return response

    async def _person(self, request: Request) -> Person:
        flow = self.cookies.open("oidc-flow", request.cookies.get(cookie_of(request, FLOW_COOKIE)), FLOW_SECONDS)
        params = request.query_params
        if flow is None or not params.get("state") or not secrets.compare_digest(
                str(params.get("state")).encode(), str(flow.get("state", "")).encode()):
            raise SignInFailed(400, "OIDC_STATE_INVALID",
                               "this sign-in was not started here, or took longer than ten minutes; start again")
        if params.get("error"):
            raise SignInFailed(401, "OIDC_REFUSED", f"the sign-in provider refused: {params['error'][:100]}")
        if not params.get("code"):
            raise SignInFailed(400, "OIDC_CODE_MISSING", "the sign-in provider sent no code; start again")
        metadata = await self.metadata()
        try:
            async with self._client(request) as client:
                token = await client.fetch_token(metadata["token_endpoint"], code=params["code"],
                                                 code_verifier=flow["verifier"])
        except (OAuthError, httpx.HTTPError, ValueError) as exc:
            # The provider's own refusal (an OAuth error) is shown; a connection's text (addresses, errno) is logged.
            said = str(exc)[:100] if isinstance(exc, OAuthError) else type(exc).__name__
            log(logger, logging.WARNING, "the sign-in provider did not hand out a token", error=type(exc).__name__,
                detail=str(exc)[:500])
            raise SignInFailed(502, "OIDC_TOKEN_FAILED",
                               f"the sign-in provider did not hand out a token ({said}); start again") from None
        claims = await self._verified_claims(token.get("id_token", ""), flow["nonce"])
        return self._person_of(claims)

    async def _verified_claims(self, id_token: str, nonce: str) -> dict:
        if not id_token:
            raise SignInFailed(502, "OIDC_ID_TOKEN_MISSING", "the sign-in provider sent no ID token")
        for refresh in (False, True):  # a key id we do not know yet: the provider rotated its keys
            try:
                decoded = jwt.decode(id_token, await self._key_set(refresh), algorithms=SIGNING_ALGORITHMS)
                break
            except (JoseError, ValueError) as exc:
                if refresh:
                    raise SignInFailed(401, "OIDC_ID_TOKEN_INVALID",
                                       f"the ID token does not verify ({type(exc).__name__})") from None
        registry = jwt.JWTClaimsRegistry(leeway=120, iss={"essential": True, "value": self.config.issuer},
                                         aud={"essential": True, "value": self.config.client_id},
                                         exp={"essential": True}, nonce={"essential": True, "value": nonce})
        try:
            registry.validate(decoded.claims)
        except JoseError as exc:
            raise SignInFailed(401, "OIDC_ID_TOKEN_INVALID", f"the ID token is not for this sign-in "
                                                             f"({type(exc).__name__}: {str(exc)[:100]})") from None
        audiences = decoded.claims["aud"] if isinstance(decoded.claims["aud"], list) else [decoded.claims["aud"]]
        if len(audiences) > 1 and decoded.claims.get("azp") != self.config.client_id:  # OIDC Core 3.1.3.7
            raise SignInFailed(401, "OIDC_ID_TOKEN_INVALID", "the ID token was issued to another party")
        return decoded.claims

    def _person_of(self, claims: dict) -> Person:
        config = self.config
        actor = claims.get(config.person_claim)
        tenant = claims.get(config.tenant_claim) if config.tenant_claim else config.tenant
        for claim, value in ((config.person_claim, actor), (config.tenant_claim or "tenant", tenant)):
            if not isinstance(value, str | int) or isinstance(value, bool) or str(value) == "":
                raise SignInFailed(403, "OIDC_CLAIM_MISSING",
                                   f"the sign-in provider did not say your {claim!r}; ask your administrator")
        if config.person_claim == "email" and claims.get("email_verified") is not True:
            raise SignInFailed(403, "OIDC_EMAIL_UNVERIFIED",
                               "the sign-in provider has not verified your email address, which names you here")
        name = claims.get(config.name_claim)
        person = Person(str(actor), str(tenant), str(name)[:MAX_DISPLAY_NAME_CHARS] if isinstance(name, str) and name
                        else str(actor))
        if not person.valid():
            raise SignInFailed(403, "OIDC_CLAIM_INVALID",
                               "your id or tenant from the sign-in provider has characters Tessera does not accept "
                               "(letters, digits and . _ @ | : - only, at most 128)")
        return person

    def routes(self) -> list[Route]:
        return [Route("/auth/oidc/login", self.login), Route(CALLBACK, self.callback)]


def _page(status: int, message: str) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Sign-in</title></head>"
                        f"<body><main><h1>Sign-in did not work</h1><p>{html.escape(message)}</p>"
                        f"<p><a href='/'>Back to Tessera</a></p></main></body></html>", status_code=status)
