"""WebAuthn for the broker: registration options, and verifying a registration or a decision's assertion.

The `webauthn` package does the protocol work (CBOR, COSE keys, signatures,
counters); this module adds the broker's rules around it: which origins count,
user verification always required, bounded inputs, and a precise reason for
every refusal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

from webauthn import (
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url, decode_credential_public_key
from webauthn.helpers.decoded_public_key_to_cryptography import decoded_public_key_to_cryptography
from webauthn.helpers.exceptions import InvalidAuthenticationResponse, WebAuthnException
from webauthn.helpers.structs import (
    AuthenticationCredential,
    AuthenticatorAssertionResponse,
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from shared.rpc.refusals import Denied, Invalid, Refusal
from tessera.common.v1 import common_pb2

RP_NAME = "Tessera"
MAX_CREDENTIAL_JSON = 16 * 1024
# Sizes far above what authenticators produce: anything bigger is refused before it is parsed.
MAX_AUTHENTICATOR_DATA, MAX_CLIENT_DATA, MAX_SIGNATURE, MAX_CREDENTIAL_ID = 1024, 4096, 1024, 1400
MAX_CREDENTIAL_ID_BYTES = 1023  # WebAuthn's own bound; base64url of it fits the 1,400-character column
TIMEOUT_MS = 120_000
UV_FLAG = 0x04  # authenticator data flags: user verified


@dataclass(frozen=True)
class RelyingParty:
    """Who the passkeys are for: the WebAuthn RP id (a domain) and the page origins allowed to use them.

    No origins configured: http(s)://<rp id> on any port, and for `localhost` plain http too (browsers
    treat http://localhost as a secure context, which is how a developer runs Tessera)."""

    rp_id: str
    origins: tuple[str, ...] = ()

    def origin_allowed(self, origin: str) -> bool:
        if self.origins:
            return origin in self.origins
        parts = urlsplit(origin)
        secure_enough = parts.scheme == "https" or (parts.scheme == "http" and self.rp_id == "localhost")
        return secure_enough and parts.hostname == self.rp_id and not parts.path and not parts.username


@dataclass(frozen=True)
class Registered:
    credential_id: str  # base64url without padding
    public_key: bytes
    sign_count: int
    aaguid: str


def registration_options(rp: RelyingParty, actor_id: str, tenant_id: str, display_name: str, user_handle: bytes,
                         challenge: bytes, existing: list[str]) -> str:
    """PublicKeyCredentialCreationOptions (WebAuthn JSON): user verification required, a discoverable
    credential preferred, the person's existing passkeys excluded (no second copy on one authenticator)."""
    options = generate_registration_options(
        rp_id=rp.rp_id, rp_name=RP_NAME, user_name=f"{actor_id}@{tenant_id}", user_id=user_handle,
        user_display_name=display_name or actor_id, challenge=challenge, timeout=TIMEOUT_MS,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED, user_verification=UserVerificationRequirement.REQUIRED),
        exclude_credentials=[PublicKeyCredentialDescriptor(id=_unb64url(c)) for c in existing])
    return options_to_json(options)


def verify_registration(rp: RelyingParty, credential_json: str, challenge: bytes) -> Registered:
    if len(credential_json) > MAX_CREDENTIAL_JSON:
        raise Invalid("PASSKEY_MALFORMED", f"the registration is larger than {MAX_CREDENTIAL_JSON} bytes")
    origin = _client_data(_registration_client_data(credential_json)).get("origin", "")
    _check_origin(rp, origin)
    try:
        verified = verify_registration_response(
            credential=credential_json, expected_challenge=challenge, expected_rp_id=rp.rp_id,
            expected_origin=origin, require_user_verification=True)
        # Decoded now, so a key no signature could ever be checked with is refused here, not at every decision.
        decoded_public_key_to_cryptography(decode_credential_public_key(verified.credential_public_key))
    except (WebAuthnException, ValueError, KeyError, IndexError, TypeError) as exc:  # whatever the bytes were
        text = str(exc).lower()
        reason = "USER_VERIFICATION_REQUIRED" if "user verification" in text or "not verified" in text \
            else "PASSKEY_INVALID"
        raise Invalid(reason, f"the passkey registration was refused: "
                              f"{str(exc)[:200] or type(exc).__name__}") from None
    if len(verified.credential_id) > MAX_CREDENTIAL_ID_BYTES:
        raise Invalid("PASSKEY_INVALID",
                      f"the credential id is longer than WebAuthn allows ({MAX_CREDENTIAL_ID_BYTES} bytes)")
    return Registered(bytes_to_base64url(verified.credential_id), verified.credential_public_key, verified.sign_count,
                      str(verified.aaguid))


# What an assertion over another challenge than the expected one is called, per kind of challenge.
NOT_FOR_THIS_DECISION = ("ASSERTION_NOT_FOR_THIS_DECISION",
                         "the passkey signed a different decision (another approval, other arguments, another "
                         "choice or another nonce) than the one sent")
NOT_FOR_THIS_ENROLLMENT = ("ASSERTION_NOT_FOR_THIS_ENROLLMENT",
                           "the existing passkey signed another enrollment (another link, or another new passkey) "
                           "than the one sent")


def verify_assertion(rp: RelyingParty, assertion: common_pb2.PasskeyAssertion, expected_challenge: bytes,
                     public_key: bytes, sign_count: int,
                     not_for_this: tuple[str, str] = NOT_FOR_THIS_DECISION) -> int:
    """Check an assertion (over a decision's or an enrollment's challenge) against the person's registered key;
    the authenticator's new counter.

    The challenge, user verification and origin are checked here first, so each gets its own reason; the
    library then checks everything again along with the signature and the counter."""
    if (len(assertion.authenticator_data) > MAX_AUTHENTICATOR_DATA or len(assertion.signature) > MAX_SIGNATURE
            or len(assertion.client_data_json) > MAX_CLIENT_DATA or len(assertion.credential_id) > MAX_CREDENTIAL_ID
            or len(assertion.authenticator_data) < 37):
        raise Invalid("PASSKEY_MALFORMED", "the passkey assertion is malformed")
    client_data = _client_data(assertion.client_data_json)
    expected = bytes_to_base64url(expected_challenge)
    if client_data.get("type") != "webauthn.get" or client_data.get("challenge") != expected:
        raise Denied(*not_for_this)
    origin = client_data.get("origin", "")
    _check_origin(rp, origin)
    if not assertion.authenticator_data[32] & UV_FLAG:
        raise Denied("USER_VERIFICATION_REQUIRED",
                     "the passkey did not verify the person (PIN or biometric); signing with it needs that")
    credential = AuthenticationCredential(
        id=assertion.credential_id, raw_id=_unb64url(assertion.credential_id),
        response=AuthenticatorAssertionResponse(
            client_data_json=assertion.client_data_json, authenticator_data=assertion.authenticator_data,
            signature=assertion.signature, user_handle=assertion.user_handle or None))
    try:
        verified = verify_authentication_response(
            credential=credential, expected_challenge=expected_challenge, expected_rp_id=rp.rp_id,
            expected_origin=origin, credential_public_key=public_key, credential_current_sign_count=sign_count,
            require_user_verification=True)
    except InvalidAuthenticationResponse as exc:
        if "sign count" in str(exc):
            raise Denied("ASSERTION_REPLAYED",
                         "the passkey's counter did not advance: a replayed (or cloned) signature") from None
        raise Denied("ASSERTION_INVALID", f"the passkey signature does not verify: {str(exc)[:160]}") from None
    except (WebAuthnException, ValueError, KeyError, IndexError, TypeError) as exc:  # malformed bytes
        raise Denied("ASSERTION_INVALID", f"the passkey assertion is malformed ({type(exc).__name__})") from None
    return verified.new_sign_count


def _check_origin(rp: RelyingParty, origin: str) -> None:
    if not isinstance(origin, str) or not rp.origin_allowed(origin):
        raise Denied("ORIGIN_NOT_ALLOWED",
                     f"the passkey was used on {str(origin)[:100]!r}, which is not a Tessera page "
                     f"(relying party {rp.rp_id!r})")


def _client_data(raw: bytes) -> dict:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict):
        raise Invalid("PASSKEY_MALFORMED", "clientDataJSON is not a JSON object")
    return data


def _registration_client_data(credential_json: str) -> bytes:
    try:
        encoded = json.loads(credential_json)["response"]["clientDataJSON"]
        return _unb64url(encoded)
    except (ValueError, KeyError, TypeError, Refusal):
        raise Invalid("PASSKEY_MALFORMED", "the registration is not a WebAuthn RegistrationResponse JSON") from None


def _unb64url(text: str) -> bytes:
    try:
        return base64url_to_bytes(text)
    except (ValueError, TypeError):
        raise Invalid("PASSKEY_MALFORMED", "a credential id is not base64url") \
            from None
