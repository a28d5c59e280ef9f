"""Bearer tokens of remote MCP clients (the MCP authorization spec: OAuth 2.1, this server a resource server).

A token is a JWT access token (RFC 9068) from the configured authorization server: its signature is checked
against the server's published keys (issuer_keys.py: fetched again on an unknown key id, within a bound),
then its issuer, audience (this server's resource URL, RFC 8707), expiry and scopes (joserfc). The person
and their tenant come from its claims. An invalid token is simply not accepted: the MCP SDK's bearer
middleware answers 401 with the protected-resource metadata's address.
"""

from __future__ import annotations

from dataclasses import dataclass

from joserfc import jws, jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from mcp.server.auth.provider import AccessToken

from services.mcp.issuer_keys import IssuerKeys
from shared.identity.actors import MAX_DISPLAY_NAME_CHARS, valid_id

SIGNING_ALGORITHMS = ["RS256", "ES256", "PS256", "EdDSA"]  # never "none", never a shared-secret HMAC
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


def _decoded(token: str, keys: KeySet | None) -> jwt.Token | None:
    """The token checked against `keys`; None when it does not verify. InvalidKeyIdError: no key for its kid."""
    if keys is None:
        return None
    try:
        return jwt.decode(token, keys, algorithms=SIGNING_ALGORITHMS)
    except InvalidKeyIdError:
        raise
    except (JoseError, ValueError):
        return None


def _key_id(token: str) -> str | None:
    kid = jws.extract_compact(token.encode()).headers().get("kid")  # parsed once already: it has a header
    return kid if isinstance(kid, str) else None


class JwtAccessTokens:
    """The MCP SDK's TokenVerifier for this deployment's authorization server."""

    def __init__(self, policy: TokenPolicy, keys: IssuerKeys) -> None:
        self.policy = policy
        self.keys = keys  # the policy's issuer's

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
        try:
            decoded = _decoded(token, await self.keys.current())
        except InvalidKeyIdError:  # a key id the set lacks: perhaps the server rotated its keys
            try:
                decoded = _decoded(token, await self.keys.with_key(_key_id(token)))
            except InvalidKeyIdError:
                return None
        if decoded is None:
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
    return person, tenant, name[:MAX_DISPLAY_NAME_CHARS] if isinstance(name, str) and name else person
