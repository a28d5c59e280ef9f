"""The challenge a person signs to decide an approval, and the operator key's signature over it.

A decision is signed, not merely asserted: the broker recomputes the challenge
from the decision it received and checks the person's signature over it, so a
process that carries the decision (web, host) cannot change what was decided,
for which approval, on which arguments, with which reason, or use it twice (the
broker's nonce is single use).

The challenge is the SHA-256 of a compact JSON array, so a browser computes the
same bytes with `JSON.stringify` and `crypto.subtle.digest` (see the page's
approval card); every string in it is checked to be printable ASCII, where the
two serialisations agree byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519

from shared.identity import tokens
from tessera.capabilities.v1 import capabilities_pb2

PURPOSE = "tessera.decision.v1"
_PRINTABLE = re.compile(r"[\x20-\x7e]{0,256}")


class ChallengeError(ValueError):
    """A decision that cannot be turned into a challenge (an id that is not printable ASCII)."""


def challenge(approval_id: str, arguments_sha256: str, approve: bool, entries: Iterable[tuple[str, bool]],
              nonce: str, reason: str = "") -> bytes:
    """The 32 bytes a person's authenticator (or the operator's key) signs for this decision.

    `entries` are the per-entry decisions as (entry id, approve); their order does not matter. The reason the
    person wrote is covered by its SHA-256 (UTF-8), so the audit trail's reason is theirs too."""
    decided = sorted({entry_id: ok for entry_id, ok in entries}.items())
    words = [PURPOSE, approval_id, arguments_sha256, nonce, *(entry_id for entry_id, _ in decided)]
    bad = next((w for w in words if not _PRINTABLE.fullmatch(w)), None)
    if bad is not None:
        raise ChallengeError(f"{bad[:40]!r}: ids in a decision are 0-256 printable ASCII characters")
    reason_sha256 = hashlib.sha256(reason.encode("utf-8")).hexdigest()
    text = json.dumps([PURPOSE, approval_id, arguments_sha256, "approve" if approve else "reject",
                       [[entry_id, "approve" if ok else "reject"] for entry_id, ok in decided], nonce,
                       reason_sha256], separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).digest()


def sign_with_key(key: ed25519.Ed25519PrivateKey, digest: bytes) -> tuple[str, bytes]:
    """(key id, signature): the operator CLI's signature over a decision's challenge."""
    return tokens.key_id(key.public_key()), key.sign(PURPOSE.encode() + b"\0" + digest)


def key_signature_valid(key: ed25519.Ed25519PublicKey, digest: bytes, signature: bytes) -> bool:
    try:
        key.verify(signature, PURPOSE.encode() + b"\0" + digest)
    except InvalidSignature:
        return False
    return True


def request_challenge(request: capabilities_pb2.DecideRequest) -> bytes:
    """The challenge of a DecideRequest as sent (its nonce included)."""
    return challenge(request.approval_id, request.arguments_sha256,
                     request.decision == capabilities_pb2.DECISION_APPROVE,
                     [(e.entry_id, e.decision == capabilities_pb2.DECISION_APPROVE) for e in request.entries],
                     request.nonce, request.reason)


def signed_by_operator(request: capabilities_pb2.DecideRequest, nonce: str,
                       key: ed25519.Ed25519PrivateKey) -> capabilities_pb2.DecideRequest:
    """A copy of the request quoting `nonce` (from BeginDecision), signed with the operator CLI's key."""
    signed = capabilities_pb2.DecideRequest()
    signed.CopyFrom(request)
    signed.nonce = nonce
    key_id, signature = sign_with_key(key, request_challenge(signed))
    signed.operator_key.CopyFrom(capabilities_pb2.OperatorKeySignature(key_id=key_id, signature=signature))
    return signed
