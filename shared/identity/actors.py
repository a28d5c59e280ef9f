"""Signed actor assertions: who a person is, as asserted by web, the CLI or the MCP front (§2).

The edge that authenticated the person signs ActorClaims with its own
Ed25519 key; every other service verifies with the edge's public key and
never trusts an actor named in a request body.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ed25519

from shared.data.caches import expiring_each
from shared.identity import tokens
from shared.identity.certs import load_verify_key, verify_key_path
from shared.rpc.field_rules import max_chars, text_bounds
from shared.rpc.refusals import Unauthenticated
from tessera.common.v1 import common_pb2
from tessera.rules.v1 import rules_pb2

PURPOSE = "tessera.actor-assertion.v1"
AUDIENCE = "host"
EDGES = ("web", "cli", "mcp")  # the principals that authenticate people
MAX_LIFETIME = dt.timedelta(hours=12)
# A person's id and tenant as the edges accept them from people (OpenID claims, tokens, the CLI's options): the
# contract's kind of text (rules.proto), so what an edge asserts is what the broker's requests accept.
_PERSON = text_bounds(rules_pb2.TEXT_KIND_PERSON_ID)
_ID = re.compile(_PERSON.pattern)
MAX_DISPLAY_NAME_CHARS = max_chars(rules_pb2.TEXT_KIND_DISPLAY_NAME)
VERIFIED_CACHE_SIZE = 10_000  # distinct assertions in use at once (one per person per turn or session)


@dataclass(frozen=True)
class Actor:
    actor_id: str
    tenant_id: str
    display_name: str
    asserted_by: str  # one of EDGES


def valid_id(value: object) -> bool:
    """Whether `value` is a person's id or tenant an edge may assert (rules.proto's TEXT_KIND_PERSON_ID)."""
    return isinstance(value, str) and len(value) <= _PERSON.max_chars and _ID.fullmatch(value) is not None


def assert_actor(signing_key: ed25519.Ed25519PrivateKey, actor_id: str, tenant_id: str, display_name: str = "",
                 lifetime: dt.timedelta = dt.timedelta(hours=8)) -> common_pb2.ActorAssertion:
    now = dt.datetime.now(dt.UTC)
    binding = common_pb2.TokenBinding(subject=actor_id, audience=AUDIENCE, nonce=secrets.token_hex(12))
    binding.issued_at.FromDatetime(now)
    binding.expires_at.FromDatetime(now + lifetime)
    claims = common_pb2.ActorClaims(binding=binding, actor_id=actor_id, tenant_id=tenant_id,
                                    display_name=display_name)
    return common_pb2.ActorAssertion(signed=tokens.sign(signing_key, PURPOSE, claims))


class ActorVerifier:
    """Verifies assertions signed by any edge whose public key it was given."""

    def __init__(self, keys: dict[str, ed25519.Ed25519PublicKey]) -> None:
        self._by_key_id = {tokens.key_id(key): (edge, key) for edge, key in keys.items()}
        # One turn sends the same assertion with every call; an Ed25519 check costs 0.1-0.25 ms here (the
        # largest single cost of an MCP read through the broker). An assertion already verified is looked up
        # by its exact bytes and stays valid until its own expiry; least recently used go first past the size.
        self._verified = expiring_each(VERIFIED_CACHE_SIZE, _until_expiry, timer=time.time)
        self._lock = threading.Lock()  # cachetools caches are not thread-safe; sync servers verify in threads

    @classmethod
    def from_cert_dir(cls, directory: Path) -> ActorVerifier:
        return cls({edge: load_verify_key(verify_key_path(directory, edge)) for edge in EDGES})

    def verify(self, assertion: common_pb2.ActorAssertion) -> Actor:
        """Raise tokens.TokenError (reason ACTOR_*) unless the assertion is valid now."""
        signed = assertion.signed
        exact = (signed.key_id, signed.signature, signed.claims)
        with self._lock:
            known = self._verified.get(exact)
        if known is not None:
            return known[0]
        actor, expires_at = self._verify(signed)
        with self._lock:
            self._verified[exact] = (actor, expires_at)
        return actor

    def require(self, assertion: common_pb2.ActorAssertion) -> Actor:
        """The asserted actor, or the RPC refused UNAUTHENTICATED with the check's reason (every servicer's check)."""
        try:
            return self.verify(assertion)
        except tokens.TokenError as exc:
            raise Unauthenticated(exc.reason, str(exc)) from None

    def _verify(self, signed: common_pb2.SignedToken) -> tuple[Actor, float]:
        if not signed.claims:
            raise tokens.TokenError("ACTOR_MISSING", "a signed actor assertion is required")
        found = self._by_key_id.get(signed.key_id)
        if found is None:
            raise tokens.TokenError("ACTOR_UNKNOWN_SIGNER",
                                    "the actor assertion is not signed by web, the CLI or the MCP front")
        edge, key = found
        try:
            claims = tokens.verify(key, PURPOSE, signed, common_pb2.ActorClaims)
            tokens.check_binding(claims.binding, AUDIENCE, MAX_LIFETIME)
        except tokens.TokenError as exc:
            raise tokens.TokenError(exc.reason.replace("TOKEN_", "ACTOR_"), str(exc)) from None
        if not claims.actor_id or not claims.tenant_id or claims.binding.subject != claims.actor_id:
            raise tokens.TokenError("ACTOR_MALFORMED", "the actor assertion names no actor or tenant")
        return Actor(claims.actor_id, claims.tenant_id, claims.display_name, edge), \
            claims.binding.expires_at.ToNanoseconds() / 1e9


def _until_expiry(_key, value: tuple[Actor, float], _now: float) -> float:
    return value[1]
