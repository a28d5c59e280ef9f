"""Actor assertions: verified once, then recognised by their exact bytes until their own expiry; anything
else (another signature, altered claims, an unknown signer, an expired assertion) is checked in full."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from shared.identity import tokens
from shared.identity.actors import ActorVerifier, assert_actor
from shared.identity.certs import issue_deployment, load_signing_key, signing_key_path
from tessera.common.v1 import common_pb2
from tests.fixtures.waiting import wait_until


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    directory = tmp_path_factory.mktemp("certs")
    issue_deployment(directory)
    return directory


def test_a_verified_assertion_is_recognised_without_a_second_signature_check(keys, monkeypatch):
    verifier = ActorVerifier.from_cert_dir(keys)
    assertion = assert_actor(load_signing_key(signing_key_path(keys, "cli")), "alice", "acme")
    assert verifier.verify(assertion).actor_id == "alice"
    checks = []
    monkeypatch.setattr(tokens, "verify", lambda *args: checks.append(args))
    again = common_pb2.ActorAssertion.FromString(assertion.SerializeToString())  # the same bytes, a new message
    assert verifier.verify(again).actor_id == "alice" and checks == []


def test_altered_claims_under_a_cached_signature_are_still_refused(keys):
    verifier = ActorVerifier.from_cert_dir(keys)
    assertion = assert_actor(load_signing_key(signing_key_path(keys, "cli")), "alice", "acme")
    verifier.verify(assertion)
    forged = common_pb2.ActorAssertion()
    forged.CopyFrom(assertion)
    claims = common_pb2.ActorClaims.FromString(assertion.signed.claims)
    claims.tenant_id = "globex"
    forged.signed.claims = claims.SerializeToString(deterministic=True)
    with pytest.raises(tokens.TokenError) as refused:
        verifier.verify(forged)
    assert refused.value.reason == "ACTOR_BAD_SIGNATURE"


def test_a_cached_assertion_is_refused_once_it_expires(keys):
    verifier = ActorVerifier.from_cert_dir(keys)
    assertion = assert_actor(load_signing_key(signing_key_path(keys, "web")), "bob", "acme",
                             lifetime=dt.timedelta(seconds=1))
    assert verifier.verify(assertion).actor_id == "bob"
    expires = common_pb2.ActorClaims.FromString(assertion.signed.claims).binding.expires_at.ToNanoseconds() / 1e9
    # The assertion's own clock, not a guess at how long the test takes.
    wait_until(lambda: time.time() >= expires + 0.05, 30, what="the assertion's expiry passing")
    with pytest.raises(tokens.TokenError) as refused:
        verifier.verify(assertion)
    assert refused.value.reason == "ACTOR_EXPIRED"
