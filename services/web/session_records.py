"""People's sessions as the broker records them (§2), seen from web: opened at sign-in, checked on every
request, ended at sign-out.

Web holds no session state of its own. Each request's cookie is opened (web's seal: a value web never sealed
is refused here, without a call), and the secret inside is checked at the broker. A check's answer is
remembered for at most `check_seconds`, so a session ended on any replica (sign-out, or the operator's
`tessera persons sign-out`) is refused on every replica within that bound. On the replica that signed a
session out it is refused at once, and stays refused: the session's hash is remembered as ended (a bounded
set), so a check that asked the broker before the sign-out and answers after it cannot put "open" back in the
memo. When the broker cannot be asked, the request is refused 503, never taken as signed in.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable

import grpc

from services.web.session import BrowserSession, PasskeyAdded, Person, SessionCookies
from shared.data.caches import bounded_lru, expiring
from shared.logs import log
from shared.rpc.errors import ErrorDetails, error_details
from tessera.capabilities.v1 import capabilities_pb2 as cap

logger = logging.getLogger("tessera.web")
MAX_REMEMBERED_CHECKS = 10_000  # sessions in use on one replica at once; the least recently used go first
# Sessions signed out here, remembered as ended: far more than sign-outs within one check's call (CALL_SECONDS),
# which is all they must outlive; one forgotten is asked about again and the broker says "ended".
MAX_REMEMBERED_ENDED = 10_000
CALL_SECONDS = 5.0
_METHODS = {"link": cap.SIGN_IN_METHOD_LINK, "oidc": cap.SIGN_IN_METHOD_OIDC}
_METHOD_NAMES = {method: name for name, method in _METHODS.items()}
# The broker's answers that mean "not signed in" (anything else is the broker failing).
_NOT_SIGNED_IN = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION)
# Why a cookie's session is no longer one, in words (the broker's reason stays the reason).
_ENDED = {"SESSION_ENDED": "This session was signed out.", "SESSION_EXPIRED": "This session ran out."}
_UNAVAILABLE = {what: f"Tessera cannot {doing} right now (its capability broker is not answering); try again in a "
                      "few seconds" for what, doing in (("open", "sign you in"), ("check", "check your sign-in"),
                                                         ("end", "sign you out"))}


class SessionRefused(Exception):
    """The request has no open session (401), or its session could not be checked (503)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


class SessionRecords:
    def __init__(self, broker, cookies: SessionCookies, assertions, check_seconds: float, sign_in_hint: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.broker = broker  # the capability broker's stub
        self.cookies = cookies
        self.assertions = assertions
        self.sign_in_hint = sign_in_hint
        # secret's SHA-256 → BrowserSession, or the SessionRefused it got; on the event loop only
        self._checked = expiring(MAX_REMEMBERED_CHECKS, check_seconds, clock) if check_seconds > 0 else None
        self._ended = bounded_lru(MAX_REMEMBERED_ENDED)  # secret's SHA-256 of sessions signed out here → True
        self.recheck_seconds = check_seconds or 1.0  # how often an open stream asks whether its session still is

    async def open(self, person: Person, signed_in_with: str) -> tuple[BrowserSession, str, int]:
        """A new session at the broker for a person who just signed in: (the session, its cookie value, the
        cookie's max-age in seconds)."""
        try:
            opened = await self.broker.OpenWebSession(cap.OpenWebSessionRequest(
                actor=self.assertions.of(person), signed_in_with=_METHODS[signed_in_with]), timeout=CALL_SECONDS)
        except grpc.aio.AioRpcError as exc:
            raise self._failed(error_details(exc, "capabilities"), "open") from None
        session = _browser_session(opened.session, opened.passkeys_added)
        max_age = max(0, round(opened.session.expires_at.ToNanoseconds() / 1e9 - time.time()))
        return session, self.cookies.session_cookie(opened.secret), max_age

    async def check(self, cookie: str | None) -> BrowserSession:
        """The open session this cookie carries, or SessionRefused (401 not signed in, 503 cannot tell)."""
        secret = self.cookies.session_secret(cookie)
        if secret is None:
            raise SessionRefused(401, "NO_SESSION", self.sign_in_hint)
        key = hashlib.sha256(secret.encode()).digest()
        found = self._ended_here(key) or (self._checked.get(key) if self._checked is not None else None)
        if found is None:
            found = await self._ask(secret)
            # Signed out here while the broker was asked: its answer may predate the sign-out; "ended" stands.
            found = self._ended_here(key) or found
            if self._checked is not None:
                self._checked[key] = found
        if isinstance(found, SessionRefused):
            raise found
        return found

    async def _ask(self, secret: str) -> BrowserSession | SessionRefused:
        try:
            checked = await self.broker.CheckWebSession(cap.CheckWebSessionRequest(secret=secret),
                                                        timeout=CALL_SECONDS)
        except grpc.aio.AioRpcError as exc:
            details = error_details(exc, "capabilities")
            if exc.code() in _NOT_SIGNED_IN and details.from_peer:  # the broker's answer: remembered like a session
                reason = details.reason or "NO_SESSION"
                return SessionRefused(401, reason, f"{_ENDED.get(reason, 'This browser is not signed in.')} "
                                                   f"{self.sign_in_hint}")
            raise self._failed(details, "check") from None
        return _browser_session(checked.session)

    async def until_ended(self, cookie: str | None) -> SessionRefused:
        """Wait until the cookie's session is no longer open (signed out, ended by the operator, expired): the
        refusal that says so. For streams that outlive the request that opened them; their checks come from the
        memo, so all the streams of one session cost one broker call per bound. A broker that cannot answer
        ends nothing: the stream was opened by a person who was signed in."""
        while True:
            await asyncio.sleep(self.recheck_seconds)
            try:
                await self.check(cookie)
            except SessionRefused as refused:
                if refused.status == 401:
                    return refused

    async def end(self, cookie: str | None) -> BrowserSession | None:
        """Sign out: the session ends at the broker (so on every replica); the session it was, if open."""
        secret = self.cookies.session_secret(cookie)
        if secret is None:
            return None
        try:
            session = await self.check(cookie)
        except SessionRefused as refused:
            if refused.status != 401:
                raise
            session = None
        try:
            await self.broker.EndWebSession(cap.EndWebSessionRequest(secret=secret), timeout=CALL_SECONDS)
        except grpc.aio.AioRpcError as exc:
            raise self._failed(error_details(exc, "capabilities"), "end") from None
        key = hashlib.sha256(secret.encode()).digest()
        self._ended[key] = True
        if self._checked is not None:
            self._checked.pop(key, None)
        return session

    def _ended_here(self, key: bytes) -> SessionRefused | None:
        """The refusal of a session signed out on this replica, or None (not signed out here)."""
        if key not in self._ended:
            return None
        return SessionRefused(401, "SESSION_ENDED", f"{_ENDED['SESSION_ENDED']} {self.sign_in_hint}")

    def _failed(self, details: ErrorDetails, what: str) -> SessionRefused:
        """The broker could not answer (down, restarting, too slow, or refusing web itself): 503, never a
        session."""
        log(logger, logging.WARNING, f"could not {what} a session at the broker", code=details.code.name,
            reason=details.reason, transport=details.transport[:1000])
        return SessionRefused(503, "SESSION_CHECK_UNAVAILABLE", _UNAVAILABLE[what])


def _browser_session(session: cap.WebSession, passkeys_added=()) -> BrowserSession:
    person = Person(session.person.actor_id, session.person.tenant_id, session.person.display_name)
    added = tuple(PasskeyAdded(p.credential_id, p.created_at.ToJsonString()) for p in passkeys_added)
    return BrowserSession(session.session_id, person, _METHOD_NAMES.get(session.signed_in_with, ""),
                          session.created_at.ToNanoseconds() / 1e9, added)
