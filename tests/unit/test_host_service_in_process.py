"""The HostServer's servicer in process: host_parts() over a real (SQLite) store and fake peers, no subprocess.

What needs only the host (sessions, turns, revisions and who may see them) is tested here; what crosses
processes (commits through the compiler, windows from resources, mTLS and callers) stays in
tests/integration/test_host.py.
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
from services.host.server import HostService, host_parts
from services.host.store import HostStore, engine_for, migrate
from shared.actors import ActorVerifier, assert_actor
from shared.errors import TesseraError
from shared.ui.contracts import load_catalog
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2

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
        parts = host_parts(common_pb2.ServiceInfo(name="host"), ActorVerifier({"web": WEB_KEY.public_key()}), db,
                           SurfaceFanout(db, retention=100), Peers(Unused(), Unused(), Unused()), load_catalog(),
                           ed25519.Ed25519PrivateKey.generate().public_key(), ed25519.Ed25519PrivateKey.generate())
        yield HostService(parts)
    engine.dispose()


def person(name: str = "alice") -> common_pb2.ActorAssertion:
    return assert_actor(WEB_KEY, name, "acme")


def run(call):
    return asyncio.run(call)


def refused(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(TesseraError) as error:
        run(call)
    return error.value.code, error.value.reason


def test_a_session_is_opened_once_per_request_id_and_needs_a_signed_actor(host):
    first = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-1"), None))
    again = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-1"), None))
    assert first.session_id == again.session_id and first.surface_id.startswith("srf_")
    forged = assert_actor(ed25519.Ed25519PrivateKey.generate(), "alice", "acme")
    assert refused(host.OpenSession(host_pb2.OpenSessionRequest(actor=forged, request_id="x"), None)) == (
        grpc.StatusCode.UNAUTHENTICATED, "ACTOR_UNKNOWN_SIGNER")
    assert refused(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id=""), None)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_ID_REQUIRED")


def test_turns_belong_to_the_sessions_owner_and_carry_its_earlier_questions(host):
    session = run(host.OpenSession(host_pb2.OpenSessionRequest(actor=person(), request_id="open-2"), None))
    questions = ["revenue by region?", "and by month?", "only the web channel"]
    turns = [run(host.BeginTurn(host_pb2.BeginTurnRequest(actor=person(), session_id=session.session_id,
                                                          question=q, request_id=f"t-{n}"), None))
             for n, q in enumerate(questions)]
    assert list(turns[-1].earlier_questions) == questions[:2] and turns[0].base_revision_id == ""
    assert refused(host.BeginTurn(host_pb2.BeginTurnRequest(
        actor=person("mallory"), session_id=session.session_id, question="x", request_id="t-9"), None)) == (
        grpc.StatusCode.PERMISSION_DENIED, "SESSION_NOT_YOURS")
    assert refused(host.BeginTurn(host_pb2.BeginTurnRequest(
        actor=person(), session_id=session.session_id, question="", request_id="t-10"), None)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "TURN_INVALID")
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
