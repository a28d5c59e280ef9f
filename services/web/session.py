"""A person's browser session at `web` (§2): who they are, and their host session.

Development default: one local person, remembered by a signed cookie
(HMAC-SHA256 over a random session id; HttpOnly, SameSite=Strict). Web signs
that person's actor assertion with its own Ed25519 key; every service checks it.
The host session (surface) is opened once per browser session, idempotently.

Replicas hold no session state: every replica signs and checks cookies with the
same configured key, and finds a browser session's host session again through
the host's idempotent OpenSession, keyed by the browser session id.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from shared.actors import assert_actor
from tessera.common.v1 import common_pb2

COOKIE = "tessera_session"
MIN_SECRET_CHARS = 32  # a shared key anyone could guess would let them mint sessions on every replica


class SessionSecretError(ValueError):
    """A configured session secret too weak to sign cookies with."""


def cookie_key(configured: str) -> tuple[bytes, bool]:
    """(key, shared): the configured secret, shared by every replica that is given it, or when none is
    configured a random key of this process only. A weak configured secret is refused."""
    if not configured:
        return secrets.token_bytes(32), False
    if len(configured) < MIN_SECRET_CHARS:
        raise SessionSecretError(f"TESSERA_WEB_SESSION_SECRET: at least {MIN_SECRET_CHARS} characters "
                                 f"(it has {len(configured)}); e.g. `openssl rand -hex 32`")
    return configured.encode(), True


@dataclass(frozen=True)
class Person:
    actor_id: str
    tenant_id: str
    display_name: str


class SessionCookies:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, session_id: str) -> str:
        digest = hmac.new(self._secret, session_id.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def issue(self) -> tuple[str, str]:
        """(session id, cookie value) for a new browser session."""
        session_id = secrets.token_urlsafe(18)
        return session_id, f"{session_id}.{self._mac(session_id)}"

    def verify(self, cookie: str | None) -> str | None:
        """The session id of a cookie we issued, or None (missing, malformed or forged)."""
        if not cookie or cookie.count(".") != 1:
            return None
        session_id, mac = cookie.split(".")
        if not (session_id.isascii() and mac.isascii()):  # compare_digest refuses non-ASCII str: not ours anyway
            return None
        return session_id if hmac.compare_digest(mac, self._mac(session_id)) else None


class Assertions:
    """Actor assertions for the local person, signed by web, renewed well before they expire."""

    def __init__(self, signing_key, person: Person) -> None:
        self._key = signing_key
        self.person = person

    def current(self) -> common_pb2.ActorAssertion:
        # Short-lived and cheap: a fresh one per call keeps expiry out of the picture.
        return assert_actor(self._key, self.person.actor_id, self.person.tenant_id, self.person.display_name)
