"""The HostServer's servicer in process: host_parts() over a real (SQLite) store and fake peers, no subprocess.

What needs only the host (sessions, turns, revisions and who may see them) is tested here; what crosses
processes (commits through the compiler, windows from resources, mTLS and callers) stays in
tests/host/integration/test_host.py.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from services.host.database import AsyncStore
from services.host.fanout import SurfaceFanout
from services.host.peers import Peers
from services.host.server import HostService
from services.host.store import HostStore, engine_for, migrate
from services.host.wiring import host_parts
from shared.identity.actors import ActorVerifier, assert_actor
from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal
from shared.ui.contracts import load_catalog
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.fixtures.in_process import ContractBound

WEB_KEY = ed25519.Ed25519PrivateKey.generate()


class Unused:
    """A peer these RPCs never call: any call is a test failure."""

    def __getattr__(self, name):
        raise AssertionError(f"the host called a peer for {name}")


@pytest.fixture
def host(tmp_path):
    engine = engine_for(f"sqlite:///{tmp_path / 'host.sqlite'}")
    migrate(engine)
    with ThreadPoolExecutor(max_workers=2) as pool:
        db = AsyncStore(HostStore(engine), pool)
        parts = host_parts(info=common_pb2.ServiceInfo(name="host"),
                           actors=ActorVerifier({"web": WEB_KEY.public_key()}),
                           db=db, fanout=SurfaceFanout(db, retention=100), peers=Peers(Unused(), Unused(), Unused()),
                           catalog=load_catalog(), offer_key=ed25519.Ed25519PrivateKey.generate().public_key(),
                           grant_key=ed25519.Ed25519PrivateKey.generate())
        yield ContractBound(HostService(parts), "host")
    engine.dispose()


def person(name: str = "alice") -> common_pb2.ActorAssertion:
    return assert_actor(WEB_KEY, name, "acme")


def run(call):
    return asyncio.run(call)


def refused(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(Refusal) as error:
        run(call)
    return status_of(error.value).code, error.value.reason


def test_a_session_is_opened_once_per_request_id_and_needs_a_signed_actor(host):
    first = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-1"), None))
    again = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-1"), None))
    assert first.session_id == again.session_id and first.surface_id.startswith("srf_")
    forged = assert_actor(ed25519.Ed25519PrivateKey.generate(), "alice", "acme")
    assert refused(host.OpenSession(host_pb2.OpenSessionRequest(actor=forged, request_id="x"), None)) == (
        grpc.StatusCode.UNAUTHENTICATED, "ACTOR_UNKNOWN_SIGNER")
    assert refused(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id=""), None)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")


def test_turns_belong_to_the_sessions_owner_and_carry_its_earlier_questions(host):
    session = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-2"), None))
    questions = ["revenue by region?", "and by month?", "only the web channel"]
    turns = [run(host.BeginTurn(host_pb2.BeginTurnRequest(actor=person(), session_id=session.session_id,
                                                          question=q, request_id=f"t-{n}"), None))
             for n, q in enumerate(questions)]
    assert [(t.turn_id, t.question) for t in turns[-1].earlier_turns] == [
        (t.turn_id, q) for t, q in zip(turns[:2], questions, strict=False)] and turns[0].base_revision_id == ""
    assert refused(host.BeginTurn(host_pb2.BeginTurnRequest(
        actor=person("mallory"), session_id=session.session_id, question="x", request_id="t-9"), None)) == (
        grpc.StatusCode.PERMISSION_DENIED, "SESSION_NOT_YOURS")
    assert refused(host.BeginTurn(host_pb2.BeginTurnRequest(
        actor=person(), session_id=session.session_id, question="", request_id="t-10"), None)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")
    assert refused(host.BeginTurn(host_pb2.BeginTurnRequest(
        actor=person(), session_id="ses_missing", question="x", request_id="t-11"), None)) == (
        grpc.StatusCode.NOT_FOUND, "SESSION_UNKNOWN")


def test_a_revision_is_read_only_on_its_own_surface(host):
    mine = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-3"), None))
    other = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-4"), None))
    assert refused(host.GetRevision(host_pb2.GetRevisionRequest(
        actor=person(), session_id=mine.session_id), None)) == (grpc.StatusCode.NOT_FOUND, "REVISION_UNKNOWN")
    assert refused(host.GetRevision(host_pb2.GetRevisionRequest(
        actor=person(), session_id=mine.session_id, surface_id=other.surface_id), None)) == (
        grpc.StatusCode.PERMISSION_DENIED, "SURFACE_NOT_IN_SESSION")


def _turns(host, session_id: str, questions: list[str]) -> list[str]:
    return [run(host.BeginTurn(host_pb2.BeginTurnRequest(actor=person(), session_id=session_id, question=q,
                                                         request_id=f"t-{n}"), None)).turn_id
            for n, q in enumerate(questions)]


def _finish(turn_id: str, outcome=common_pb2.TURN_OUTCOME_ANSWERED, answer: str = "Here it is.", **more):
    return host_pb2.FinishTurnRequest(turn_id=turn_id, outcome=outcome, answer=answer, **more)


def test_a_turns_end_is_kept_once_and_the_thread_lists_it_for_its_person_only(host):
    session = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-t"), None))
    first, second, third = _turns(host, session.session_id, ["revenue by month", "and just for 2023", "by region?"])
    assert run(host.FinishTurn(_finish(first), None)).recorded
    follow_up = _finish(second, common_pb2.TURN_OUTCOME_NOT_ANSWERABLE, "I can't answer that exactly.",
                        suggested_questions=["Net revenue in 2023"], follows_turn_id=first)
    assert run(host.FinishTurn(follow_up, None)).recorded
    assert not run(host.FinishTurn(follow_up, None)).recorded  # a retry of the same record
    assert refused(host.FinishTurn(_finish(second, answer="Something else."), None)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "TURN_FINISHED")

    listed = run(host.ListTurns(host_pb2.ListTurnsRequest(actor=person(), session_id=session.session_id), None))
    assert [t.turn_id for t in listed.turns] == [third, second, first]  # newest first
    running, refined, answered = listed.turns
    assert running.outcome == common_pb2.TURN_OUTCOME_UNSPECIFIED and not running.HasField("finished_at")
    assert (refined.question, refined.answer, list(refined.suggested_questions), refined.follows_turn_id) == (
        "and just for 2023", "I can't answer that exactly.", ["Net revenue in 2023"], first)
    assert answered.outcome == common_pb2.TURN_OUTCOME_ANSWERED and answered.finished_at.seconds > 0
    assert answered.revision_id == ""  # it committed nothing

    assert refused(host.ListTurns(host_pb2.ListTurnsRequest(
        actor=person("mallory"), session_id=session.session_id), None)) == (
        grpc.StatusCode.PERMISSION_DENIED, "SESSION_NOT_YOURS")


def test_the_thread_is_read_in_pages_newest_first(host):
    session = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-p"), None))
    asked = _turns(host, session.session_id, [f"question {n}" for n in range(5)])
    pages, before = [], ""
    while True:
        page = run(host.ListTurns(host_pb2.ListTurnsRequest(actor=person(), session_id=session.session_id, limit=2,
                                                             before_turn_id=before), None))
        pages.append([t.turn_id for t in page.turns])
        before = page.next_before_turn_id
        if not before:
            break
    assert pages == [asked[4:2:-1], asked[2:0:-1], asked[:1]]
    other = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-q"), None))
    assert refused(host.ListTurns(host_pb2.ListTurnsRequest(actor=person(), session_id=other.session_id,
                                                             before_turn_id=asked[3]), None)) == (
        grpc.StatusCode.NOT_FOUND, "TURN_UNKNOWN")  # a turn of another session is no page mark
    assert refused(host.ListTurns(host_pb2.ListTurnsRequest(actor=person(), session_id=session.session_id,
                                                             limit=101), None)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")


def test_a_turns_end_is_checked_before_it_is_kept(host):
    session = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-c"), None))
    first, second, third = _turns(host, session.session_id, ["revenue", "and orders", "and customers"])
    other = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-d"), None))
    (elsewhere,) = _turns(host, other.session_id, ["customers"])
    cases = [
        (_finish(second, common_pb2.TURN_OUTCOME_UNSPECIFIED), "FIELD_INVALID"),
        (_finish(second, 99), "FIELD_INVALID"),
        (_finish(second, answer="x" * 4_001), "FIELD_INVALID"),
        (_finish(second, suggested_questions=["a", "b", "c", "d"]), "FIELD_INVALID"),
        (_finish(second, suggested_questions=[""]), "FIELD_INVALID"),
        (_finish(second, follows_turn_id=elsewhere), "FOLLOWS_UNKNOWN"),
        (_finish(second, follows_turn_id=second), "FOLLOWS_UNKNOWN"),
        (_finish(second, follows_turn_id=third), "FOLLOWS_UNKNOWN"),  # begun after it: nothing it refines
    ]
    for request, reason in cases:
        assert refused(host.FinishTurn(request, None)) == (grpc.StatusCode.INVALID_ARGUMENT, reason), reason
    assert refused(host.FinishTurn(_finish("trn_missing"), None)) == (grpc.StatusCode.NOT_FOUND, "TURN_UNKNOWN")
    listed = run(host.ListTurns(host_pb2.ListTurnsRequest(actor=person(), session_id=session.session_id), None))
    assert all(t.outcome == common_pb2.TURN_OUTCOME_UNSPECIFIED for t in listed.turns)  # nothing was kept
    assert run(host.FinishTurn(_finish(second, follows_turn_id=first), None)).recorded
