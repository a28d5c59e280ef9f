"""One-time links that sign a person in and let them register a passkey (§2, §7).

The operator's CLI asks for a link (`tessera persons enroll PERSON`); only the
link's SHA-256 is kept. Web redeems the token once and learns who it is for,
with the registration options of an enrollment that stays open until the link's
expiry; the person's authenticator answers them and the broker verifies and
keeps the public key. A local process that can reach web but not the operator's
terminal has no link, so it can neither sign in as the person nor add a key.

A link alone adds only a person's first passkey. Whoever holds the operator's key
can make links, so a further passkey also needs one of the person's existing
passkeys to sign the enrollment challenge (`enrollment_challenge`), which binds the
enrollment and the new credential; or the operator replaces (`replace`: every old
passkey revoked, audited). Each sign-in by link lists the passkeys added since the
previous one, so the person sees a key they did not add.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time

from webauthn.helpers import bytes_to_base64url

from services.capabilities.passkey_store import Passkey
from services.capabilities.passkeys import (
    NOT_FOR_THIS_ENROLLMENT,
    Registered,
    RelyingParty,
    registration_options,
    verify_assertion,
    verify_registration,
)
from services.capabilities.ports import People
from services.capabilities.store import PasskeyUse
from shared.identity.actors import Actor
from shared.rpc.refusals import Conflict, Denied, NotFound
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2

LINK_SECONDS = 600.0  # ten minutes, single use
_TOKEN = re.compile(r"[A-Za-z0-9_-]{20,100}")
_ENROLLMENT_ID = re.compile(r"enr_[A-Za-z0-9_-]{10,60}")
PURPOSE = "tessera.enrollment.v1"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def enrollment_challenge(enrollment_id: str, credential_id: str, registration_challenge: bytes) -> bytes:
    """What an existing passkey signs to let a new one in: SHA-256 of the compact JSON [purpose, enrollment id,
    the new credential's id, the registration challenge], each printable ASCII (ids and base64url), so the page
    computes the same bytes with JSON.stringify. It names this enrollment and this new key, so it adds nothing
    else, and the enrollment registers once."""
    text = json.dumps([PURPOSE, enrollment_id, credential_id, bytes_to_base64url(registration_challenge)],
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).digest()


class Enrollments:
    def __init__(self, people: People, rp: RelyingParty) -> None:
        self.people = people
        self.rp = rp

    def create_link(self, operator: Actor, person: capabilities_pb2.Person,
                    replace: bool = False) -> tuple[capabilities_pb2.CreateEnrollmentResponse, list[str]]:
        """A link for `person` (and, with `replace`, their passkeys revoked and their web sessions ended); (reply,
        the revoked ids)."""
        token = secrets.token_urlsafe(32)
        expires_at = time.time() + LINK_SECONDS
        count, revoked, ended = self.people.create_link(token_hash(token), person.tenant_id, person.actor_id,
                                                 person.display_name or person.actor_id, operator.actor_id,
                                                 expires_at, replace)
        reply = capabilities_pb2.CreateEnrollmentResponse(token=token, passkeys=count, passkeys_revoked=len(revoked),
                                                          sessions_ended=ended)
        reply.expires_at.FromNanoseconds(int(expires_at * 1e9))
        return reply, revoked

    def redeem(self, token: str) -> capabilities_pb2.RedeemEnrollmentResponse:
        if not _TOKEN.fullmatch(token):
            raise NotFound("LINK_UNKNOWN", "this sign-in link is not one Tessera made; ask your operator for a new one")
        challenge = secrets.token_bytes(32)
        enrollment, held, added = self.people.redeem_link(token_hash(token), f"enr_{secrets.token_urlsafe(24)}",
                                                          challenge)
        existing = [p.credential_id for p in held]
        # The user handle only has to be stable per person and reveal nothing: a hash of who they are.
        handle = hashlib.sha256(f"{enrollment.tenant_id}\0{enrollment.actor_id}".encode()).digest()
        options = registration_options(self.rp, enrollment.actor_id, enrollment.tenant_id, enrollment.display_name,
                                       handle, challenge, existing)
        reply = capabilities_pb2.RedeemEnrollmentResponse(
            person=capabilities_pb2.Person(actor_id=enrollment.actor_id, tenant_id=enrollment.tenant_id,
                                           display_name=enrollment.display_name),
            enrollment_id=enrollment.enrollment_id, registration_options_json=options, passkeys=len(held),
            existing_credential_ids=existing)
        for found in added:
            passkey_info(reply.passkeys_added.add(), found)
        reply.expires_at.FromNanoseconds(int(enrollment.expires_at * 1e9))
        return reply

    def register(self, actor: Actor, enrollment_id: str, credential_json: str,
                 existing_passkey: common_pb2.PasskeyAssertion | None = None,
                 ) -> tuple[capabilities_pb2.RegisterPasskeyResponse, str]:
        """Verify and keep a new passkey; (reply, the existing passkey that signed for it, or "")."""
        enrollment = self.people.enrollment(enrollment_id) if _ENROLLMENT_ID.fullmatch(enrollment_id) else None
        # Someone else's enrollment reads as unknown, like someone else's approval.
        if enrollment is None or (enrollment.tenant_id, enrollment.actor_id) != (actor.tenant_id, actor.actor_id):
            raise NotFound("ENROLLMENT_UNKNOWN", "no such enrollment")
        if enrollment.registered:
            raise Conflict("ENROLLMENT_USED", "this enrollment registered a passkey already; a new link adds another")
        if time.time() >= enrollment.expires_at:
            raise Conflict("ENROLLMENT_EXPIRED",
                           "the enrollment expired (10 minutes from the link); ask your operator for a new link")
        registered = verify_registration(self.rp, credential_json, enrollment.challenge)
        signed_by = self._countersignature(actor, enrollment_id, enrollment.challenge, registered, existing_passkey)
        count = self.people.register(enrollment_id, registered.credential_id, registered.public_key,
                                     registered.sign_count, registered.aaguid, signed_by)
        return (capabilities_pb2.RegisterPasskeyResponse(credential_id=registered.credential_id, passkeys=count),
                signed_by.credential_id if signed_by else "")

    def _countersignature(self, actor: Actor, enrollment_id: str, challenge: bytes, registered: Registered,
                          assertion: common_pb2.PasskeyAssertion | None) -> PasskeyUse | None:
        """The verified signature of one of the person's passkeys over this enrollment and new key; None when
        they have none (their first passkey: the link is enough). The store checks again as it adds the key."""
        held = {p.credential_id: p for p in self.people.passkeys_of(actor.tenant_id, actor.actor_id)}
        if not held:
            return None
        if assertion is None or not assertion.credential_id:
            raise Denied("PASSKEY_SIGNATURE_REQUIRED",
                         "you have a passkey already: adding another needs one of yours to confirm it (or the "
                         "operator replaces them: tessera persons enroll --replace)")
        record: Passkey | None = held.get(assertion.credential_id)
        if record is None:  # another person's passkey, or none at all: both read as unknown
            raise Denied("CREDENTIAL_UNKNOWN", "the passkey that signed is not one of yours")
        digest = enrollment_challenge(enrollment_id, registered.credential_id, challenge)
        new_count = verify_assertion(self.rp, assertion, digest, record.public_key, record.sign_count,
                                     NOT_FOR_THIS_ENROLLMENT)
        return PasskeyUse(record.credential_id, record.sign_count, new_count)

    def passkeys(self, person: capabilities_pb2.Person) -> capabilities_pb2.ListPasskeysResponse:
        reply = capabilities_pb2.ListPasskeysResponse()
        for found in self.people.passkeys_of(person.tenant_id, person.actor_id):
            passkey_info(reply.passkeys.add(), found)
        return reply

    def revoke(self, person: capabilities_pb2.Person, credential_id: str) -> capabilities_pb2.RevokePasskeyResponse:
        left, ended = self.people.revoke(person.tenant_id, person.actor_id, credential_id[:1400])
        return capabilities_pb2.RevokePasskeyResponse(passkeys=left, sessions_ended=ended)


def passkey_info(info: capabilities_pb2.PasskeyInfo, found: Passkey) -> None:
    info.credential_id, info.aaguid = found.credential_id, found.aaguid
    info.created_at.FromNanoseconds(int(found.created_at * 1e9))
    if found.last_used_at is not None:
        info.last_used_at.FromNanoseconds(int(found.last_used_at * 1e9))
