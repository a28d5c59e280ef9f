"""People's web sessions (§2): opened when web signs someone in, checked on web's requests, ended by signing
out or by the operator (`tessera persons sign-out`).

Web keeps no session state: its cookie carries a random secret that the broker made and handed out once,
and every web replica asks here whose it is (remembering an answer for a few seconds at most), so a session
ended on one replica is ended on all of them within that bound. Only the secret's SHA-256 is stored.

Every sign-in, by link or OpenID Connect, is told the passkeys registered for the person since their previous
session opened: whoever could add one (a link made for them, the operator's --replace) could approve as them,
so the person sees a key they did not add whichever way they sign in. A person with no session on record (the
store keeps each person's newest) is shown every passkey they have.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time

from services.capabilities.enrollment import passkey_info
from services.capabilities.ports import People, WebSessionRecords
from services.capabilities.store import new_id
from services.capabilities.web_session_store import WebSessionRecord
from shared.identity.actors import Actor
from shared.rpc.refusals import Conflict, Denied, Invalid, NotFound, Refusal
from tessera.capabilities.v1 import capabilities_pb2 as cap

_SECRET = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32), as `open` makes them
_METHODS = {cap.SIGN_IN_METHOD_LINK: "link", cap.SIGN_IN_METHOD_OIDC: "oidc"}
_METHOD_OF = {name: method for method, name in _METHODS.items()}
_SIGN_IN_AGAIN = "sign in again with a new link from your operator or your organisation's sign-in"


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class WebSessions:
    def __init__(self, records: WebSessionRecords, lifetime_seconds: float, people: People) -> None:
        self.records = records
        self.lifetime_seconds = lifetime_seconds
        self.people = people

    def open(self, person: Actor, signed_in_with: int) -> cap.OpenWebSessionResponse:
        if person.asserted_by != "web":  # the caller table says web too; the assertion must agree
            raise Denied("SESSION_FROM_WEB_ONLY", "only a person web signed in has a web session")
        if signed_in_with not in _METHODS:
            raise _invalid("signed_in_with: SIGN_IN_METHOD_LINK or SIGN_IN_METHOD_OIDC")
        secret, now = secrets.token_urlsafe(32), time.time()
        record = WebSessionRecord(new_id("wss"), person.tenant_id, person.actor_id,
                                  person.display_name[:128] or person.actor_id, _METHODS[signed_in_with], now,
                                  now + self.lifetime_seconds, None)
        previous = self.records.open(record, secret_hash(secret))
        reply = cap.OpenWebSessionResponse(session=_session(record), secret=secret)
        for found in self.people.passkeys_of(person.tenant_id, person.actor_id):
            if previous is None or found.created_at > previous:
                passkey_info(reply.passkeys_added.add(), found)
        return reply

    def check(self, secret: str) -> cap.CheckWebSessionResponse:
        """The open session of this secret; ended, expired or unknown ones are refused with which it is."""
        found = self.records.find(secret_hash(secret)) if _SECRET.fullmatch(secret) else None
        if found is None:
            raise NotFound("SESSION_UNKNOWN", f"this browser is not signed in; {_SIGN_IN_AGAIN}")
        if found.revoked_at is not None:
            raise Conflict("SESSION_ENDED", f"this session was signed out; {_SIGN_IN_AGAIN}")
        if time.time() >= found.expires_at:
            raise Conflict("SESSION_EXPIRED", f"this session ran out (a sign-in lasts "
                                              f"{self.lifetime_seconds / 3600:g} hours); {_SIGN_IN_AGAIN}")
        return cap.CheckWebSessionResponse(session=_session(found))

    def end(self, secret: str) -> tuple[cap.EndWebSessionResponse, WebSessionRecord | None]:
        """Sign out: (the reply, the session that ended, if one was open)."""
        ended = self.records.end(secret_hash(secret), time.time()) if _SECRET.fullmatch(secret) else None
        return cap.EndWebSessionResponse(ended=ended is not None), ended

    def sign_out(self, person: cap.Person) -> cap.SignOutPersonResponse:  # its ids' bounds: the contract's
        return cap.SignOutPersonResponse(ended=self.records.end_all_of(person.tenant_id, person.actor_id,
                                                                       time.time()))

    def purge(self) -> int:
        return self.records.purge(time.time())


def _invalid(message: str) -> Refusal:
    """A request web or the CLI should never send."""
    return Invalid("SESSION_REQUEST_INVALID", message)


def _session(record: WebSessionRecord) -> cap.WebSession:
    session = cap.WebSession(session_id=record.session_id, signed_in_with=_METHOD_OF[record.signed_in_with],
                             person=cap.Person(actor_id=record.actor_id, tenant_id=record.tenant_id,
                                               display_name=record.display_name))
    session.created_at.FromNanoseconds(int(record.created_at * 1e9))
    session.expires_at.FromNanoseconds(int(record.expires_at * 1e9))
    return session
