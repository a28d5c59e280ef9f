"""Bearer tokens of remote MCP clients (the MCP authorization spec: OAuth 2.1, this server a resource server).

A token is a JWT access token (RFC 9068) from the configured authorization server: its signature is checked
against the server's published keys (found through its RFC 8414 or OpenID discovery document; fetched again
on an unknown key id), then its issuer, audience (this server's resource URL, RFC 8707), expiry and scopes
(joserfc). The person and their tenant come from its claims. An invalid token is simply not accepted: the
MCP SDK's bearer middleware answers 401 with the protected-resource metadata's address.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from mcp.server.auth.provider import AccessToken

from shared.actors import valid_id
from shared.logs import log

logger = logging.getLogger("tessera.mcp")
SIGNING_ALGORITHMS = ["RS256", "ES256", "PS256", "EdDSA"]  # never "none", never a shared-secret HMAC
METADATA_SECONDS = 3600
LEEWAY_SECONDS = 60
ACCESS_TOKEN_TYPES = {"at+jwt", "application/at+jwt"}


@dataclass(frozen=True)
class TokenPolicy:
    issuer: str
    resource_url: str
    scopes: tuple[str, ...]
    person_claim: str
    tenant_claim: str  # empty: everyone is in `tenant`
    tenant: str
    name_claim: str


def discovery_urls(issuer: str) -> list[str]:
    """Where the authorization server describes itself: RFC 8414 first, then OpenID Connect discovery."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return [f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{path}",
            f"{issuer.rstrip('/')}/.well-known/openid-configuration"]


class JwtAccessTokens:
    """The MCP SDK's TokenVerifier for this deployment's authorization server."""

    def __init__(self, policy: TokenPolicy) -> None:
        self.policy = policy
        self._keys: tuple[float, KeySet] | None = None

    async def _jwks_uri(self, client: httpx.AsyncClient) -> str:
        for url in discovery_urls(self.policy.issuer):
            try:
                reply = await client.get(url)
                found = reply.json() if reply.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                continue
            if isinstance(found, dict) and found.get("issuer") == self.policy.issuer \
                    and isinstance(found.get("jwks_uri"), str):
                return found["jwks_uri"]
        raise LookupError("the authorization server published no usable metadata")

    async def _key_set(self, refresh: bool) -> KeySet | None:
        if refresh or self._keys is None or time.monotonic() - self._keys[0] > METADATA_SECONDS:
            try:
                async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
                    reply = await client.get(await self._jwks_uri(client))
                    reply.raise_for_status()
                    self._keys = (time.monotonic(), KeySet.import_key_set(reply.json()))
            except (httpx.HTTPError, LookupError, JoseError, ValueError, TypeError) as exc:
                log(logger, logging.WARNING, "authorization server keys unavailable", error=type(exc).__name__)
                return self._keys[1] if self._keys else None
        return self._keys[1]

    async def verify_token(self, token: str) -> AccessToken | None:
        claims = await self._verified_claims(token)
        if claims is None:
            return None
        granted = claims.get("scope", "")
        scopes = granted.split() if isinstance(granted, str) else []
        # Missing scopes are the SDK's to refuse (403 insufficient_scope, naming the scope), not an invalid token.
        return AccessToken(token=token, client_id=str(claims.get("client_id") or claims.get("azp") or ""),
                           scopes=scopes, expires_at=int(claims["exp"]), resource=self.policy.resource_url,
                           subject=str(claims.get("sub", "")), claims=claims)

    async def _verified_claims(self, token: str) -> dict | None:
        for refresh in (False, True):  # a key id we do not know yet: the server rotated its keys
            keys = await self._key_set(refresh)
            if keys is None:
                return None
            try:
                decoded = jwt.decode(token, keys, algorithms=SIGNING_ALGORITHMS)
                break
            except (JoseError, ValueError):
                if refresh:
                    return None
        if str(decoded.header.get("typ", "")).lower() not in ACCESS_TOKEN_TYPES:
            return None  # an ID token or another JWT is not an access token for this server
        registry = jwt.JWTClaimsRegistry(leeway=LEEWAY_SECONDS, iss={"essential": True, "value": self.policy.issuer},
                                         aud={"essential": True, "value": self.policy.resource_url},
                                         exp={"essential": True})
        try:
            registry.validate(decoded.claims)
        except JoseError:
            return None
        return decoded.claims


def person_of(policy: TokenPolicy, claims: dict) -> tuple[str, str, str] | None:
    """(person, tenant, display name) from a verified token's claims, or None when they are missing or invalid."""
    person = claims.get(policy.person_claim)
    tenant = claims.get(policy.tenant_claim) if policy.tenant_claim else policy.tenant
    if not (valid_id(person) and valid_id(tenant)):
        return None
    name = claims.get(policy.name_claim)
    return person, tenant, name[:128] if isinstance(name, str) and name else person
