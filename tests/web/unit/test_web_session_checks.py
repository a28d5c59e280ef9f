"""How web checks a cookie's session at the broker: sealed cookies only, each answer remembered for at most the
configured seconds (so an ended session is refused within that bound), a broker that cannot answer is a 503 and
never a session, signing out ends the session at the broker and forgets it here at once, and a stream ends when
its session does."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import grpc
import pytest

from services.web.api import WebApi
from services.web.session import COOKIE, Person, SessionCookies, instance_cookie
from services.web.session_records import SessionRecords, SessionRefused
from shared.rpc.errors import TesseraError
from tessera.capabilities.v1 import capabilities_pb2 as cap

ADA = Person("ada", "acme", "Ada Lovelace")
TTL = 5.0


def _refused(code: grpc.StatusCode, reason: str = "") -> grpc.aio.AioRpcError:
    """A failed call as web's stub raises it: with the broker's ErrorInfo when the broker answered."""
    trailers = TesseraError(code, reason, "refused").to_status().trailing_metadata if reason else ()
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailers), details="refused")


class FakeBroker:
    """The broker's session RPCs over a dict: secret → (session, state); `down` makes every call fail."""

    def __init__(self) -> None:
        self.sessions: dict[str, tuple[cap.WebSession, str]] = {}
        self.checks = 0
        self.down = False
        self.held: tuple[asyncio.Event, asyncio.Event] | None = None  # (asked, answer): holds the next check

    def hold_next_check(self) -> tuple[asyncio.Event, asyncio.Event]:
        self.held = asyncio.Event(), asyncio.Event()
        return self.held

    def _up(self) -> None:
        if self.down:
            raise _refused(grpc.StatusCode.UNAVAILABLE)

    async def OpenWebSession(self, request, timeout):
        self._up()
        secret = f"secret-{len(self.sessions)}"
        session = cap.WebSession(session_id=f"wss_{len(self.sessions)}", signed_in_with=request.signed_in_with,
                                 person=cap.Person(actor_id="ada", tenant_id="acme", display_name="Ada Lovelace"))
        session.created_at.GetCurrentTime()
        session.expires_at.FromSeconds(session.created_at.seconds + 3600)
        self.sessions[secret] = (session, "open")
        return cap.OpenWebSessionResponse(session=session, secret=secret)

    async def CheckWebSession(self, request, timeout):
        self._up()
        self.checks += 1
        session, state = self.sessions.get(request.secret, (None, "unknown"))
        if self.held is not None:  # the broker has read the state; its answer is on the way back
            held, self.held = self.held, None
            held[0].set()
            await held[1].wait()
        if state == "unknown":
            raise _refused(grpc.StatusCode.NOT_FOUND, "SESSION_UNKNOWN")
        if state == "ended":
            raise _refused(grpc.StatusCode.FAILED_PRECONDITION, "SESSION_ENDED")
        return cap.CheckWebSessionResponse(session=session)

    async def EndWebSession(self, request, timeout):
        self._up()
        found = self.sessions.get(request.secret)
        if found:
            self.sessions[request.secret] = (found[0], "ended")
        return cap.EndWebSessionResponse(ended=bool(found))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Assertions:
    def of(self, person: Person):
        return None  # the fake broker reads no assertion


@pytest.fixture
def world():
    broker, clock, cookies = FakeBroker(), Clock(), SessionCookies(b"k" * 32)
    return broker, clock, cookies, SessionRecords(broker, cookies, Assertions(), TTL, "sign in first", clock)


def _run(coroutine):
    return asyncio.run(coroutine)


def _status(records: SessionRecords, cookie: str | None) -> tuple[int, str]:
    with pytest.raises(SessionRefused) as raised:
        _run(records.check(cookie))
    return raised.value.status, raised.value.reason


def test_an_open_session_is_asked_for_once_per_bound_and_an_ended_one_is_refused_after_it(world):
    broker, clock, cookies, records = world
    session, cookie, max_age = _run(records.open(ADA, "oidc"))
    assert (session.person, session.signed_in_with, session.session_id) == (ADA, "oidc", "wss_0")
    assert 3590 <= max_age <= 3600  # the broker's expiry, as the cookie's max-age
    assert cookies.session_secret(cookie) == "secret-0"  # the broker's secret, sealed by web
    assert [_run(records.check(cookie)).session_id for _ in range(3)] == ["wss_0"] * 3
    assert broker.checks == 1
    broker.sessions["secret-0"] = (broker.sessions["secret-0"][0], "ended")  # signed out on another replica
    clock.now += TTL - 0.1
    assert _run(records.check(cookie)).session_id == "wss_0"  # still within the bound
    clock.now += 0.2
    assert _status(records, cookie) == (401, "SESSION_ENDED")
    assert broker.checks == 2


def test_a_cookie_web_did_not_seal_is_refused_without_asking_the_broker(world):
    broker, _, _, records = world
    foreign = SessionCookies(b"o" * 32).session_cookie("secret-0")
    for cookie in (None, "", "abc.def", foreign):
        assert _status(records, cookie) == (401, "NO_SESSION")
    assert broker.checks == 0


def test_an_unknown_session_is_refused_and_that_answer_is_remembered_too(world):
    broker, _, cookies, records = world
    unknown = cookies.session_cookie("never-opened")
    assert _status(records, unknown) == (401, "SESSION_UNKNOWN")
    assert _status(records, unknown) == (401, "SESSION_UNKNOWN")
    assert broker.checks == 1


def test_a_broker_that_cannot_answer_is_a_503_never_a_session_and_is_not_remembered(world):
    broker, _, _, records = world
    _, cookie, _ = _run(records.open(ADA, "link"))
    broker.down = True
    assert _status(records, cookie) == (503, "SESSION_CHECK_UNAVAILABLE")
    with pytest.raises(SessionRefused) as raised:
        _run(records.open(ADA, "link"))
    assert raised.value.status == 503 and "sign you in" in raised.value.message
    broker.down = False
    assert _run(records.check(cookie)).session_id == "wss_0"  # asked again as soon as the broker is back


def test_signing_out_ends_the_session_at_the_broker_and_here_at_once(world):
    broker, _, _, records = world
    _, cookie, _ = _run(records.open(ADA, "link"))
    assert _run(records.check(cookie)).session_id == "wss_0"
    broker.down = True
    with pytest.raises(SessionRefused):  # not ended at the broker: the person is told, not told they are out
        _run(records.end(cookie))
    broker.down = False
    assert _run(records.end(cookie)).session_id == "wss_0"
    assert broker.sessions["secret-0"][1] == "ended"
    assert _status(records, cookie) == (401, "SESSION_ENDED")  # no memo of the open session survives
    assert _run(records.end(None)) is None


def test_a_check_that_asked_before_the_sign_out_and_answers_after_it_does_not_reopen_the_session(world):
    """The broker said "open" to a check; the person signs out on this replica before that answer arrives. The
    late answer must not go back into the memo: the cookie is refused here from the sign-out on."""
    broker, _, _, records = world

    async def interleaved() -> tuple[object, tuple[int, str], int]:
        _, cookie, _ = await records.open(ADA, "link")
        asked, answer = broker.hold_next_check()
        early = asyncio.create_task(records.check(cookie))
        await asyncio.wait_for(asked.wait(), 5)  # the broker read "open"; the answer is held
        assert (await records.end(cookie)).session_id == "wss_0"  # signed out meanwhile
        answer.set()
        try:
            late = await early
        except SessionRefused as refused:
            late = refused
        checks = broker.checks
        try:
            await records.check(cookie)
            after = (200, "")
        except SessionRefused as refused:
            after = (refused.status, refused.reason)
        return late, after, broker.checks - checks

    late, after, asked_again = _run(interleaved())
    assert isinstance(late, SessionRefused) and late.reason == "SESSION_ENDED"
    assert after == (401, "SESSION_ENDED") and asked_again == 0  # refused here, without asking the broker


def test_a_bound_of_zero_asks_the_broker_on_every_request(world):
    broker, clock, cookies, _ = world
    records = SessionRecords(broker, cookies, Assertions(), 0, "sign in first", clock)
    _, cookie, _ = _run(records.open(ADA, "link"))
    for _ in range(3):
        _run(records.check(cookie))
    assert broker.checks == 3


class _Sessions:
    """until_ended answers once `end` is set (the broker said the session ended)."""

    def __init__(self) -> None:
        self.end = asyncio.Event()

    async def until_ended(self, cookie):
        await self.end.wait()
        return SessionRefused(401, "SESSION_ENDED", "This session was signed out.")


def _request(cookie: str = "c") -> SimpleNamespace:
    return SimpleNamespace(cookies={COOKIE: cookie}, headers={})  # (no Host: the plain cookie name)


def test_a_stream_runs_to_its_own_end_while_the_session_stays_open():
    async def events():
        for n in range(3):
            yield n

    async def scenario():
        api = WebApi(host=None, agent=None, capabilities=None, sessions=_Sessions(), assertions=None)
        return [item async for item in api._while_signed_in(_request(), events())]

    assert _run(scenario()) == [0, 1, 2]


def test_a_stream_waiting_for_its_next_event_ends_when_its_session_does_and_closes_what_it_read():
    closed = []

    async def events():
        try:
            yield "first"
            await asyncio.Event().wait()  # the surface is quiet: nothing more comes
            yield "never"
        finally:
            closed.append(True)  # where the gRPC stream behind it is cancelled

    async def scenario():
        sessions = _Sessions()
        api = WebApi(host=None, agent=None, capabilities=None, sessions=sessions, assertions=None)
        received = []
        async for item in api._while_signed_in(_request(), events()):
            received.append(item)
            sessions.end.set()  # signed out on another replica while the stream waits
        return received

    first, ended = _run(scenario())
    assert first == "first" and json.loads(ended.data)["error"]["reason"] == "SESSION_ENDED"
    assert closed == [True]


def test_a_browser_that_leaves_closes_the_stream_and_stops_watching_its_session():
    closed = []

    async def events():
        try:
            while True:
                yield "tick"
                await asyncio.sleep(0)
        finally:
            closed.append(True)

    async def scenario():
        stream = WebApi(host=None, agent=None, capabilities=None, sessions=_Sessions(),
                        assertions=None)._while_signed_in(_request(), events())
        assert await anext(stream) == "tick"
        await stream.aclose()  # what the server does when the browser goes away
        await asyncio.sleep(0)  # the watcher's cancellation is delivered
        return [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]

    assert _run(scenario()) == [] and closed == [True]  # no watcher left behind either


def test_a_stream_of_another_protocol_ends_in_its_own_words():
    async def events():
        yield "part"
        await asyncio.Event().wait()

    async def scenario():
        sessions = _Sessions()
        api = WebApi(host=None, agent=None, capabilities=None, sessions=sessions, assertions=None)
        received = []
        async for item in api._while_signed_in(_request(), events(), lambda refused: [f"error {refused.reason}",
                                                                                     "[DONE]"]):
            received.append(item)
            sessions.end.set()
        return received

    assert _run(scenario()) == ["part", "error SESSION_ENDED", "[DONE]"]


def test_each_instance_on_one_machine_names_its_cookie_for_its_port():
    assert instance_cookie(COOKIE, "localhost:8080") == "tessera_session_8080"
    assert instance_cookie(COOKIE, "localhost:8081") == "tessera_session_8081"
    assert instance_cookie(COOKIE, "[::1]:8080") == instance_cookie(COOKIE, "127.0.0.1:8080")
    assert instance_cookie(COOKIE, "tessera.example.com") == COOKIE  # every replica behind one public address
    assert instance_cookie(COOKIE, "[::1]") == COOKIE
