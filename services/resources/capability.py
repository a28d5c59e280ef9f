"""HMAC capability tokens: which catalog ids this session's model has seen.

A token names the catalog fingerprint, the session, an expiry, and exactly
the ids returned to the model so far; `InspectCatalog` and `Describe` widen
it. Any id outside it is refused (`ID_NOT_IN_SCOPE`); a token minted for an
older catalog is refused as `CATALOG_CHANGED`. Only this service holds the
key, so the token is stateless and cannot be forged or widened by a caller.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from shared.rpc.refusals import Conflict, Denied

TOKEN_LIFETIME_SECONDS = 8 * 3600
MAX_TOKEN_CHARS = 64_000


@dataclass(frozen=True)
class Capability:
    fingerprint: str
    session_id: str
    expires_at: int
    ids: frozenset[str]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CapabilityIssuer:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, body: str) -> str:
        return _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())

    def mint(self, fingerprint: str, session_id: str, ids: Iterable[str], expires_at: int | None = None) -> str:
        payload = {"v": 1, "fp": fingerprint, "s": session_id,
                   "exp": expires_at or int(time.time()) + TOKEN_LIFETIME_SECONDS, "ids": sorted(set(ids))}
        body = _b64(zlib.compress(json.dumps(payload, separators=(",", ":")).encode(), 9))
        return f"{body}.{self._mac(body)}"

    def widen(self, capability: Capability, ids: Iterable[str]) -> str:
        return self.mint(capability.fingerprint, capability.session_id, capability.ids | set(ids),
                         capability.expires_at)

    def open(self, token: str, fingerprint: str, session_id: str) -> Capability:
        """Verify a token for this catalog and session, or raise a precise refusal."""
        if not token:
            raise Denied("CAPABILITY_MISSING", "a capability token is required: call inspect_current_context first")
        if len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
            raise Denied("CAPABILITY_INVALID", "capability token is malformed")
        body, mac = token.split(".")
        if not hmac.compare_digest(mac.encode("utf-8", "replace"), self._mac(body).encode()):
            raise Denied("CAPABILITY_INVALID", "capability token does not verify")
        payload = json.loads(zlib.decompress(_unb64(body)))
        if payload["fp"] != fingerprint:
            raise Conflict("CATALOG_CHANGED",
                           "the catalog changed since this token was issued; inspect the catalog again",
                           {"catalog_fingerprint": fingerprint})
        if payload["s"] != session_id:
            raise Denied("CAPABILITY_INVALID", "capability token belongs to another session")
        if payload["exp"] <= time.time():
            raise Denied("CAPABILITY_EXPIRED", "capability token expired; inspect the catalog again")
        return Capability(payload["fp"], payload["s"], payload["exp"], frozenset(payload["ids"]))

