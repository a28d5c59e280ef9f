"""Hostile SubmitIntent and Decide calls, in process through the capability broker's servicer.

Whatever a caller sends (random JSON, wrong types, huge integers, unknown ids, oversized strings, forged or
foreign actors, out-of-range enum values), the broker either answers or refuses (a refusal, sent as the status the
interceptor maps it to) with a status that is not INTERNAL or UNKNOWN (the runtime turns any other exception into
INTERNAL), within a deadline.
Decide carries the security properties too: a record changes only when a Decide answered that the approved
effect succeeded, and asking again never changes it a second time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import sqlite3
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import grpc
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from services.capabilities.broker import Broker
from services.capabilities.changes import DataChanges
from services.capabilities.enrollment import Enrollments
from services.capabilities.mcp_gate import ToolGate
from services.capabilities.metrics import BrokerMetrics
from services.capabilities.passkey_store import PasskeyStore
from services.capabilities.passkeys import RelyingParty
from services.capabilities.policy import ActionPolicy
from services.capabilities.server import CapabilityBrokerService
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import BrokerStore, engine_for, migrate
from services.capabilities.tool_policy import ToolPolicy
from services.capabilities.web_session_store import WebSessionStore
from services.capabilities.web_sessions import WebSessions
from services.capabilities.wiring import CapabilitiesParts, approvers_of
from services.capabilities.wording import Wording
from shared.identity.actors import ActorVerifier, assert_actor
from shared.identity.certs import load_signing_key, load_verify_key, signing_key_path, verify_key_path
from shared.identity.decisions import ChallengeError, signed_by_operator
from shared.rpc.errors import TesseraError, status_of
from shared.rpc.refusals import Refusal
from shared.rpc.runtime import Lifecycle
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tests.fixtures.approvers import operator_key_named
from tests.fixtures.fuzz import fuzz_settings
from tests.fixtures.servicer_context import CallerContext

CALL_DEADLINE = 20.0  # seconds; every call here is a few database round trips, so more is a hang
BAD_CODES = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
REASON = re.compile(r"^[A-Z][A-Z0-9_]*$")
RECORDS = range(1_000, 1_200)  # orders of the seeded warehouse (1-1250); this module changes its own copy


@dataclass
class World:
    servicer: CapabilityBrokerService
    loop: asyncio.AbstractEventLoop
    warehouse: str
    broker_db: str
    actors: dict
    operator_key: object  # the CLI's signing key: it signs the actors' assertions and their decisions

    def call(self, method: str, request, principal: str = "agent"):
        """The servicer's answer, or the refusal as the runtime would send it; a hang fails the example."""
        work = getattr(self.servicer, method)(request, CallerContext(principal))
        try:
            return self.loop.run_until_complete(asyncio.wait_for(work, CALL_DEADLINE))
        except TimeoutError:
            pytest.fail(f"{method} did not answer within {CALL_DEADLINE:g} s: {request}")
        except Refusal as domain:  # the interceptor sends it as its status
            refusal = status_of(domain)
        assert refusal.code not in BAD_CODES, refusal
        assert REASON.match(refusal.reason), refusal
        return refusal

    def version(self, record_id: int) -> int:
        with sqlite3.connect(self.warehouse) as connection:
            return connection.execute("SELECT version FROM orders WHERE order_id = ?", (record_id,)).fetchone()[0]

    def intents(self) -> int:
        with sqlite3.connect(self.broker_db) as connection:
            return connection.execute("SELECT count(*) FROM intents").fetchone()[0]


@pytest.fixture(scope="module")
def world(cert_dir, warehouse_url, tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz-broker")
    warehouse = directory / "warehouse.sqlite"
    shutil.copy(warehouse_url.removeprefix("sqlite:///"), warehouse)
    tools = directory / "tools.yaml"
    tools.write_text(json.dumps({"version": 1, "servers": {}}))
    engine = engine_for(f"sqlite:///{directory / 'broker.sqlite'}")
    migrate(engine)
    changes = engine_for(f"sqlite:///{warehouse}")
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="fuzz-broker")
    # The operator key approves for alice (acme) here; mallory's tenant is not named, so hers are refused.
    policy = ActionPolicy.load(operator_key_named(directory / "actions.yaml", ("acme",)))
    tool_policy = ToolPolicy.load(tools)
    people, relying_party = PasskeyStore(engine), RelyingParty("localhost")
    signatures = DecisionSignatures(people, relying_party, load_verify_key(verify_key_path(cert_dir, "cli")),
                                    partial(approvers_of, policy, tool_policy))
    broker = Broker(policy=policy, store=BrokerStore(engine), changes=DataChanges(changes, policy.policy.data_changes),
                    pool=pool, approval_ttl=600, dry_run=False, metrics=BrokerMetrics(),
                    gate=ToolGate(tool_policy, directory), signatures=signatures)
    key = load_signing_key(signing_key_path(cert_dir, "cli"))
    forged = assert_actor(key, "alice", "acme")
    forged.signed.claims = forged.signed.claims[:-1] + bytes([forged.signed.claims[-1] ^ 1])
    actors = {"alice": assert_actor(key, "alice", "acme"), "mallory": assert_actor(key, "mallory", "other"),
              "nobody": common_pb2.ActorAssertion(), "forged": forged}
    loop = asyncio.new_event_loop()
    servicer = CapabilityBrokerService(CapabilitiesParts(
        info=common_pb2.ServiceInfo(name="capabilities"), actors=ActorVerifier.from_cert_dir(cert_dir), broker=broker,
        wording=Wording(policy, tool_policy), enrollments=Enrollments(people, relying_party),
        web_sessions=WebSessions(WebSessionStore(engine), 3600, people), lifecycle=Lifecycle()))
    yield World(servicer, loop, str(warehouse), str(directory / "broker.sqlite"), actors, key)
    loop.close()
    pool.shutdown(wait=True)
    engine.dispose()
    changes.dispose()


# --- hostile values ---------------------------------------------------------------------------------------------

HUGE = [2**31, 2**53, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30, -(10**40), 1e308, -1e308, 5e-324,
        -0.0, 1.5, 9.223372036854776e18]
WORDS = ["order", "customer", "review_status", "status", "flagged", "none", "cleared", "record_id", "changes",
         "entity", "field", "value", "reason", "e1", "e2", ""]
leaves = (st.none() | st.booleans() | st.integers() | st.sampled_from(HUGE) | st.sampled_from(WORDS)
          | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(WORDS) | st.text(max_size=6), inner, max_size=5), max_leaves=16)


def mostly(usual, other):
    """`usual` three times in four: enough calls get past the first check to reach the deeper ones. (Not
    one_of(usual, usual, other): Hypothesis merges the repeated branch.)"""
    return st.sampled_from([0, 1, 2, 3]).flatmap(lambda pick: other if pick == 3 else usual)


# Shapes close to the real contracts, with anything in their places: what gets past a shallow check.
records = st.sampled_from(list(RECORDS))
flag_inputs = st.fixed_dictionaries({"record_id": mostly(records, leaves)}, optional={"reason": json_values})
change_inputs = st.fixed_dictionaries({"entity": mostly(st.just("order"), leaves), "changes": mostly(st.lists(
    st.fixed_dictionaries({"record_id": mostly(records, leaves), "field": mostly(st.just("review_status"), leaves),
                           "value": mostly(st.sampled_from(["none", "flagged", "cleared"]), json_values)}),
    max_size=3), json_values)})
NOT_JSON = ["", "{", "[]", "null", '{"record_id": 1, "record_id": 2}', '{"record_id": NaN}', '{"a": "\\ud800"}',
            '{"reason": "' + "x" * 70_000 + '"}']
inputs_json = mostly(st.one_of(flag_inputs, change_inputs, json_values).map(json.dumps),
                     st.text(max_size=40) | st.sampled_from(NOT_JSON))
long_text = st.sampled_from(["x" * 129, "y" * 2_001, "z" * 100_000, "\u202e\u200b", "\x00", "💥" * 600])
ids = st.text(max_size=20) | long_text | st.from_regex(r"\A(apr|int)_[0-9a-f]{20}\Z")
enum_values = mostly(st.sampled_from([cap.DECISION_APPROVE, cap.DECISION_REJECT]), st.integers(-(2**31), 2**31 - 1))
actors = mostly(st.just("alice"), st.sampled_from(["mallory", "nobody", "forged"]))


@fuzz_settings(60)
@given(action=mostly(st.sampled_from(["orders.flag_for_review", "records.propose_changes"]), ids),
       input_json=inputs_json,
       key=st.sampled_from(["k"]) | ids, session=st.sampled_from(["ses_fuzz"]) | ids, actor=actors,
       principal=st.sampled_from(["agent", "host"]), surface=mostly(st.just(False), st.just(True)))
@example(action="orders.flag_for_review", input_json=json.dumps({"record_id": 2**63}), key="k", session="s",
         actor="alice", principal="agent", surface=False)
@example(action="records.propose_changes", input_json=json.dumps(
    {"entity": "order", "changes": [{"record_id": 1_001, "field": "review_status", "value": 10**30}]}), key="k",
    session="s", actor="alice", principal="host", surface=True)
def test_submit_intent_never_fails_internally_and_a_refusal_records_nothing(world, action, input_json, key, session,
                                                                         actor, principal, surface):
    before = world.intents()
    request = cap.SubmitIntentRequest(
        actor=world.actors[actor], session_id=session, action_id=action, input_json=input_json,
        idempotency_key=f"{key}-{uuid.uuid4().hex}" if key == "k" else key,
        surface=cap.SurfaceRef(surface_id="srf_fuzz", node_id="n", command_id="c") if surface else None)
    reply = world.call("SubmitIntent", request, principal)
    event(f"submit: {reply.reason if isinstance(reply, TesseraError) else 'ok'}")
    if isinstance(reply, TesseraError):
        assert world.intents() == before
    else:  # every action writes: accepted only as a request waiting for a person
        assert reply.receipt.status == common_pb2.INTENT_STATUS_AWAITING_APPROVAL and reply.receipt.approval_id


def _pending(world, record_id: int) -> cap.SubmitIntentResponse:
    reply = world.call("SubmitIntent", cap.SubmitIntentRequest(
        actor=world.actors["alice"], session_id="ses_fuzz", action_id="orders.flag_for_review",
        input_json=json.dumps({"record_id": record_id}), idempotency_key=uuid.uuid4().hex))
    assert not isinstance(reply, TesseraError), reply
    return reply


@fuzz_settings(40)
@given(record_id=st.sampled_from(list(RECORDS)), approval=mostly(st.just("real"), ids), decision=enum_values,
       reason=mostly(st.text(max_size=30), long_text), sha=mostly(st.just("real"), st.text(max_size=64)),
       entries=st.lists(st.tuples(st.sampled_from(["e1", "e2"]) | ids, enum_values), max_size=4),
       decision_id=mostly(st.sampled_from(["", "web-1", "cli-" + "a" * 124]), ids), actor=actors,
       principal=st.sampled_from(["web", "cli", "host"]), signed=mostly(st.just(True), st.just(False)))
@example(record_id=1_190, approval="real", decision=cap.DECISION_APPROVE, reason="", sha="real", entries=[],
         decision_id="web-1", actor="alice", principal="web", signed=True)
@example(record_id=1_191, approval="real", decision=cap.DECISION_APPROVE, reason="", sha="real",
         entries=[("e1", 2**31 - 1)], decision_id="", actor="alice", principal="cli", signed=True)
@example(record_id=1_192, approval="real", decision=cap.DECISION_APPROVE, reason="", sha="real", entries=[],
         decision_id="", actor="alice", principal="cli", signed=False)
def test_decide_never_fails_internally_and_an_effect_runs_only_once_when_approved(
        world, record_id, approval, decision, reason, sha, entries, decision_id, actor, principal, signed):
    pending = _pending(world, record_id).receipt
    version = world.version(record_id)
    request = cap.DecideRequest(
        actor=world.actors[actor], approval_id=pending.approval_id if approval == "real" else approval,
        decision=decision, reason=reason, decision_id=decision_id,
        arguments_sha256=pending.arguments_sha256 if sha == "real" else sha,
        entries=[cap.EntryDecision(entry_id=e, decision=d) for e, d in entries])
    if signed:  # as the operator's CLI signs, over a nonce the broker gave out (when it gives one)
        begun = world.call("BeginDecision", cap.BeginDecisionRequest(actor=request.actor,
                                                                     approval_id=request.approval_id), "cli")
        if not isinstance(begun, TesseraError):
            with contextlib.suppress(ChallengeError):  # ids no challenge can hold: sent unsigned
                request = signed_by_operator(request, begun.nonce, world.operator_key)
    reply = world.call("Decide", request, principal)
    succeeded = not isinstance(reply, TesseraError) and reply.receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED
    event(f"decide: {reply.reason if isinstance(reply, TesseraError) else 'ok'}")
    # The record moved (by exactly one version) if and only if the broker answered that the approved effect ran.
    assert world.version(record_id) == version + (1 if succeeded else 0)
    if succeeded:  # only a signed approval by the person who asked ever runs
        assert decision == cap.DECISION_APPROVE and actor == "alice" and request.HasField("operator_key")
    again = world.call("Decide", request, principal)  # the same call once more: a client's retry
    assert world.version(record_id) == version + (1 if succeeded else 0)
    if not isinstance(reply, TesseraError) and decision_id:
        assert again.replayed and again.receipt == reply.receipt
    elif not isinstance(reply, TesseraError):  # no decision id: not retry-safe, but never a second effect
        assert isinstance(again, TesseraError) and again.reason in ("APPROVAL_ALREADY_DECIDED", "ASSERTION_REPLAYED")


def test_concurrent_retries_of_one_decision_share_its_one_effect(world):
    """Not fuzz, but the same in-process broker: a decision and its retries arriving together (a client that
    timed out and retried while the first call was still deciding) all answer with the one effect's receipt."""
    record_id = 1_199
    pending = _pending(world, record_id).receipt
    version = world.version(record_id)
    request = cap.DecideRequest(actor=world.actors["alice"], approval_id=pending.approval_id,
                                decision=cap.DECISION_APPROVE, arguments_sha256=pending.arguments_sha256,
                                decision_id="web-together")
    begun = world.call("BeginDecision", cap.BeginDecisionRequest(actor=request.actor,
                                                                 approval_id=request.approval_id), "cli")
    request = signed_by_operator(request, begun.nonce, world.operator_key)

    async def together():
        calls = [world.servicer.Decide(request, CallerContext("web")) for _ in range(6)]
        return await asyncio.wait_for(asyncio.gather(*calls), CALL_DEADLINE)

    replies = world.loop.run_until_complete(together())
    assert sorted(reply.replayed for reply in replies) == [False] + [True] * 5
    assert {reply.receipt.SerializeToString() for reply in replies} == {replies[0].receipt.SerializeToString()}
    assert replies[0].receipt.status == common_pb2.INTENT_STATUS_SUCCEEDED
    assert world.version(record_id) == version + 1
