"""Who signed a decision (§7): the person's passkey or the operator CLI's key, verified here, never trusted.

A decision's challenge (shared/identity/decisions.py) covers the approval, the arguments
hash, approve or reject, each entry's decision and a nonce this broker gave out
(`begin`). An approval needs a valid signature; a rejection may come unsigned
(it runs nothing), except where the operator key vouches for it: the
CLI asserts the person, so its rejection, signed or not, is held to the
operator key's scope like an approval. The nonce is used up, and the passkey's counter advanced, in
the transaction that records the decision (store.decide), so a signature
decides at most once.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric import ed25519

from services.capabilities.passkeys import RelyingParty, verify_assertion
from services.capabilities.policy import OPERATOR_KEY, PASSKEY, Approvers
from services.capabilities.ports import People
from services.capabilities.store import Approval, Intent, PasskeyUse, Signature
from shared.identity import decisions, tokens
from shared.identity.actors import Actor
from shared.rpc.refusals import Denied, Invalid
from tessera.capabilities.v1 import capabilities_pb2

NONCE_SECONDS = 300.0  # a person has five minutes between opening a decision and signing it


class DecisionSignatures:
    def __init__(self, people: People, rp: RelyingParty, operator_key: ed25519.Ed25519PublicKey,
                 approvers_of: Callable[[str], Approvers]) -> None:
        self.people = people
        self.rp = rp
        self._operator_key = operator_key
        self._operator_key_id = tokens.key_id(operator_key)
        self._approvers_of = approvers_of  # action or tool id → the signers its policy accepts

    def begin(self, actor: Actor, approval: Approval, intent: Intent) -> capabilities_pb2.BeginDecisionResponse:
        """A nonce for deciding this (pending) approval, and how the person can sign (blocking: the database)."""
        nonce = secrets.token_urlsafe(24)
        expires_at = min(approval.expires_at, time.time() + NONCE_SECONDS)
        self.people.issue_nonce(nonce, approval.approval_id, actor.tenant_id, actor.actor_id, expires_at)
        reply = capabilities_pb2.BeginDecisionResponse(
            nonce=nonce, rp_id=self.rp.rp_id,
            credential_ids=[p.credential_id for p in self.people.passkeys_of(actor.tenant_id, actor.actor_id)],
            operator_key_allowed=self._approvers_of(intent.action_id).operator_key_in(intent.tenant_id))
        reply.expires_at.FromNanoseconds(int(expires_at * 1e9))
        return reply

    def verify(self, actor: Actor, request: capabilities_pb2.DecideRequest, intent: Intent) -> Signature:
        """The decision's verified signature, or a refusal saying exactly why (blocking: the database)."""
        kind = request.WhichOneof("signature")
        approve = request.decision == capabilities_pb2.DECISION_APPROVE
        approvers = self._approvers_of(intent.action_id)
        if kind is None:
            if approve:
                raise Denied("DECISION_UNSIGNED",
                             "approving needs the person's own signature: a passkey in the browser, or "
                             "`tessera approvals approve` at the operator's terminal")
            if actor.asserted_by == "cli":  # the operator key's word too: it signed the assertion itself
                _operator_key_may(approvers, intent.tenant_id, approve)
            return Signature("unsigned")
        if not request.nonce:
            raise Invalid("NONCE_REQUIRED", "a signed decision quotes the nonce BeginDecision gave out")
        try:
            digest = decisions.request_challenge(request)
        except decisions.ChallengeError as exc:
            raise Invalid("DECISION_INVALID", str(exc)) from None
        if kind == "operator_key":
            return self._operator_signature(actor, request.operator_key, digest, request.nonce,
                                            approvers, intent.tenant_id, approve)
        # The person's own passkey may always reject their own intent (it runs nothing); approving with it needs
        # the policy to accept passkeys.
        if approve and PASSKEY not in approvers.approvers:
            raise Denied("PASSKEY_NOT_ALLOWED", "this action's policy does not accept passkey approvals")
        return self._passkey_signature(actor, request.passkey, digest, request.nonce)

    def _operator_signature(self, actor: Actor, signed: capabilities_pb2.OperatorKeySignature, digest: bytes,
                            nonce: str, approvers: Approvers, tenant_id: str, approve: bool) -> Signature:
        """The operator key's signature, on an approval or a rejection alike, where its policy lets it decide."""
        if actor.asserted_by != "cli":
            raise Denied("OPERATOR_KEY_FROM_CLI_ONLY",
                         "an operator key signature counts only for a person the CLI asserts")
        _operator_key_may(approvers, tenant_id, approve)
        if signed.key_id != self._operator_key_id or not decisions.key_signature_valid(
                self._operator_key, digest, signed.signature):
            raise Denied("SIGNATURE_INVALID", "the operator key's signature does not verify for this decision")
        return Signature(f"{OPERATOR_KEY}:{self._operator_key_id}", nonce)

    def _passkey_signature(self, actor: Actor, assertion, digest: bytes, nonce: str) -> Signature:
        record = self.people.passkey(assertion.credential_id)
        # Another person's passkey reads as unknown: no refusal tells whose a credential is.
        if record is None or (record.tenant_id, record.actor_id) != (actor.tenant_id, actor.actor_id):
            raise Denied("CREDENTIAL_UNKNOWN",
                         "this passkey is not registered for you; enroll it with a link from your operator")
        new_count = verify_assertion(self.rp, assertion, digest, record.public_key, record.sign_count)
        return Signature(f"{PASSKEY}:{record.credential_id[:43]}", nonce,
                         PasskeyUse(record.credential_id, record.sign_count, new_count))


def _operator_key_may(approvers: Approvers, tenant_id: str, approve: bool) -> None:
    """Refused unless the intent's policy names the operator key for the intent's tenant.

    Rejections are held to exactly the rule approvals are, not to "any tenant some rule lists": whoever holds
    the CLI's key can assert any person, so an unscoped rejection would let a process that read the key file
    reject every pending intent of every person in every tenant (a denial of their work, and a way to steer
    what runs by rejecting the rest). The reviewed rule that names operator-key for a tenant is where letting
    the operator decide that action there was agreed; a rule for one action does not extend to the others, and
    the tenants a rule lists for one action say nothing about another. The person's own passkey rejects
    their own intents whatever the rule says (`verify`)."""
    verb = "approve" if approve else "reject"
    if OPERATOR_KEY not in approvers.approvers:
        raise Denied("PASSKEY_REQUIRED",
                     f"this action's policy lets only the person's passkey {verb} it: {verb} it in the browser")
    if not approvers.operator_key_in(tenant_id):
        raise Denied("OPERATOR_KEY_NOT_FOR_TENANT",
                     f"this action's policy lets the operator key {verb} only in the tenants it lists "
                     f"(operator_tenants), and {tenant_id[:128]!r} is not one of them")
