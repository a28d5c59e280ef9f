"""A person's browser session at `web` (§2): who they are, how they signed in, and their host session.

Nobody is signed in by merely holding a cookie web handed out: a person signs
in with a one-time link from the operator (`tessera persons enroll`, redeemed
at the broker) or through the organisation's OpenID provider. The sign-in opens
a session record at the broker (session_records.py), which hands out the
session's random secret once; the cookie carries that secret, sealed by web
(HMAC-SHA256; HttpOnly, SameSite=Strict), so a value web never sealed is
refused without asking the broker. Each sign-in opens a new session (the old id
is never carried over). Web signs the person's actor assertion with its own
Ed25519 key; every service checks it.

Replicas hold no session state: every replica seals and opens cookies with the
same configured key, asks the broker whose session a secret is, and finds a
browser session's host session again through the host's idempotent
OpenSession, keyed by the browser session id.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

from shared.identity.actors import MAX_DISPLAY_NAME_CHARS, assert_actor, valid_id
from tessera.common.v1 import common_pb2

COOKIE = "tessera_session"


def instance_cookie(name: str, host: str) -> str:
    """The name of web's cookie `name` for the address the browser used (its Host header): browsers keep cookies
    per host name, not per port, so two instances on one machine (localhost:8080, localhost:8081) each get
    names of their own instead of overwriting each other's sign-in; behind one public address (the standard
    port) every replica uses the plain name."""
    _, colon, port = host.rpartition(":")
    return f"{name}_{port}" if colon and port.isdigit() else name


def cookie_of(request, name: str = COOKIE) -> str:
    """`instance_cookie` for a request (anything with HTTP `headers`)."""
    return instance_cookie(name, request.headers.get("host", ""))
MIN_SECRET_CHARS = 32  # a shared key anyone could guess would let them mint sessions on every replica
# The broker says how long a session lasts (12 hours by default); no cookie older than this is even looked up.
MAX_SESSION_SECONDS = 7 * 86400
MAX_COOKIE_CHARS = 2048


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

    def valid(self) -> bool:
        return valid_id(self.actor_id) and valid_id(self.tenant_id) and len(self.display_name) <= MAX_DISPLAY_NAME_CHARS


@dataclass(frozen=True)
class PasskeyAdded:
    """A passkey registered for the person since their previous sign-in, as the page shows it."""

    credential_id: str
    created_at: str  # RFC 3339, as the page's other timestamps


@dataclass(frozen=True)
class BrowserSession:
    session_id: str
    person: Person
    signed_in_with: str  # "link" or "oidc"
    issued_at: float
    # Only on the session a sign-in just opened (the broker says so once): passkeys added since the previous one.
    passkeys_added: tuple[PasskeyAdded, ...] = ()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class SessionCookies:
    """Values web hands the browser and must get back unchanged: sealed with an HMAC under the cookie key."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, body: str) -> str:
        return _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())

    def seal(self, purpose: str, fields: dict) -> str:
        """`fields` (JSON) with the time, as a cookie value only this key opens, and only for `purpose` (a
        sign-in's flow cookie is never taken for a session, nor the other way round)."""
        body = _b64(json.dumps({**fields, "p": purpose, "iat": int(time.time())}, separators=(",", ":")).encode())
        return f"{body}.{self._mac(body)}"

    def open(self, purpose: str, cookie: str | None, max_age: float) -> dict | None:
        """What `seal` sealed for `purpose`, if the value is ours, unchanged and younger than `max_age` seconds;
        else None. Sealed means signed, not encrypted: nothing secret from the browser itself goes in."""
        if not cookie or len(cookie) > MAX_COOKIE_CHARS or cookie.count(".") != 1 or not cookie.isascii():
            return None
        body, mac = cookie.split(".")
        if not hmac.compare_digest(mac, self._mac(body)):
            return None
        try:
            fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            age = time.time() - float(fields["iat"])
        except (ValueError, KeyError, TypeError):
            return None
        return fields if isinstance(fields, dict) and fields.get("p") == purpose and 0 <= age < max_age else None

    def session_cookie(self, session_secret: str) -> str:
        """The cookie value of a session the broker opened: its secret, sealed."""
        return self.seal("session", {"s": session_secret})

    def session_secret(self, cookie: str | None) -> str | None:
        """The session secret a cookie we sealed carries, or None (missing, malformed, forged, too old). Whether
        that session is still open only the broker knows."""
        fields = self.open("session", cookie, MAX_SESSION_SECONDS)
        secret = fields.get("s") if fields else None
        return secret if isinstance(secret, str) else None


class Assertions:
    """Actor assertions for signed-in people, signed by web."""

    def __init__(self, signing_key) -> None:
        self._key = signing_key

    def of(self, person: Person) -> common_pb2.ActorAssertion:
        # Short-lived and cheap: a fresh one per call keeps expiry out of the picture.
        return assert_actor(self._key, person.actor_id, person.tenant_id, person.display_name)
