"""Signed tokens that carry authority between services (§2).

A token is a serialized claims message plus an Ed25519 signature over a
purpose label and the claims bytes, so a grant can never be replayed as an
offer. The verifier holds only the signer's public key.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from google.protobuf.message import DecodeError, Message

from tessera.common.v1 import common_pb2

PURPOSE_RESOURCE_OFFER = "tessera.resource-offer.v1"
PURPOSE_WINDOW_GRANT = "tessera.window-grant.v1"

M = TypeVar("M", bound=Message)


class TokenError(Exception):
    """Why a token is refused; `reason` is an UPPER_SNAKE ErrorInfo reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def key_id(public_key: ed25519.Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(private_key: ed25519.Ed25519PrivateKey, purpose: str, claims: Message) -> common_pb2.SignedToken:
    data = claims.SerializeToString(deterministic=True)
    signature = private_key.sign(purpose.encode() + b"\0" + data)
    return common_pb2.SignedToken(claims=data, signature=signature, key_id=key_id(private_key.public_key()))


def verify(public_key: ed25519.Ed25519PublicKey, purpose: str, token: common_pb2.SignedToken,
           claims_class: type[M]) -> M:
    """Signature and decoding only; the caller checks audience, expiry and scope."""
    if token.key_id != key_id(public_key):
        raise TokenError("TOKEN_UNKNOWN_KEY", "token was signed with a key this service does not trust")
    try:
        public_key.verify(token.signature, purpose.encode() + b"\0" + token.claims)
    except InvalidSignature:
        raise TokenError("TOKEN_BAD_SIGNATURE", "token signature does not verify") from None
    try:
        return claims_class.FromString(token.claims)
    except DecodeError:
        raise TokenError("TOKEN_MALFORMED", "token claims do not decode") from None


def check_binding(binding: common_pb2.TokenBinding, audience: str, max_lifetime: dt.timedelta,
                  now: dt.datetime | None = None) -> None:
    now = now or dt.datetime.now(dt.UTC)
    if binding.audience != audience:
        raise TokenError("TOKEN_WRONG_AUDIENCE", f"token is for {binding.audience or '(none)'!r}, not {audience!r}")
    issued = binding.issued_at.ToDatetime(dt.UTC)
    expires = binding.expires_at.ToDatetime(dt.UTC)
    if expires - issued > max_lifetime:
        raise TokenError("TOKEN_LIFETIME_TOO_LONG", f"token lives longer than {max_lifetime}")
    if now >= expires:
        raise TokenError("TOKEN_EXPIRED", f"token expired at {expires.isoformat()}")
    if issued > now + dt.timedelta(seconds=30):
        raise TokenError("TOKEN_NOT_YET_VALID", "token is issued in the future")
