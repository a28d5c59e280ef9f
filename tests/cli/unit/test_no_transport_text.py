"""No person and no model reads transport text (issue 39): when a service dies mid-question, what web's API and
its event streams, the agent's turn events and tool results, the MCP front's tool results and the CLI show is a
documented reason with a sentence; socket paths, addresses and gRPC core's words go to the logs only.

Every path is fed the failures of tests/fixtures/transport_text.py (real calls to dead addresses, and what gRPC
core says when a peer dies mid-call) through its real code, with the failing peer played by a stub that raises
them; everything shown is scanned for TRANSPORT_TEXT. tests/fixtures/recovery.py applies the same scan while
integration tests kill real services.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys

import grpc
import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from google.protobuf.json_format import MessageToJson
from starlette.applications import Starlette

import cli.ask
from cli.main import DEMO_QUESTIONS
from services.agent.external_tools import build_external_tools, list_external
from services.agent.peers import Peers
from services.agent.served_turns import serve_tools
from services.agent.server import AgentService
from services.agent.tool_bridge import ToolBridge
from services.agent.tools import TurnState, model_message
from services.agent.turn import ModelTranscript
from services.agent.wiring import AgentParts
from services.mcp.front import Front, Person
from services.web.api import ApiError, WebApi, api_error
from services.web.app import _session_refused
from services.web.session import COOKIE, BrowserSession, SessionCookies
from services.web.session import Person as WebPerson
from services.web.session_records import SessionRecords, SessionRefused
from shared.identity.actors import ActorVerifier
from shared.paths import REPO_ROOT
from shared.rpc.errors import SERVICE_NAMES, TesseraError, error_details, status_of
from shared.rpc.next_steps import NEXT_STEPS
from shared.rpc.refusals import Unavailable
from tessera.agent.v1 import agent_pb2
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.agent.unit.test_agent_service_in_process import (
    ALL_SERVING,
    CLI_KEY,
    FakeCapabilities,
    FakeHost,
    FakeResources,
    person,
    turn_request,
)
from tests.fixtures.transport_text import FAILURE_NAMES, dead_addresses, transport_failures_now, transport_text

ACTORS = ActorVerifier({"cli": CLI_KEY.public_key()})


@pytest.fixture(scope="module")
def failures() -> dict[str, grpc.aio.AioRpcError]:
    return transport_failures_now()


@pytest.fixture(params=FAILURE_NAMES)
def failure(request, failures) -> grpc.aio.AioRpcError:
    """Each failure no Tessera service explained, in turn."""
    return failures[request.param]


def shown_clean(*texts: str) -> None:
    """None of `texts` (what a person or a model reads) holds transport text."""
    leaked = {text[:300]: transport_text(text) for text in texts if transport_text(text)}
    assert not leaked, f"transport text shown: {leaked}"


class Unanswered:
    """A peer's stub whose every call fails with `failure` (unary: when awaited; streaming: when read), except
    the `answers` given: what a web, agent or front stub does when that service died."""

    def __init__(self, failure: grpc.RpcError, **answers) -> None:
        self._failure, self._answers = failure, answers

    def __getattr__(self, name: str):
        if name in self._answers:
            return self._answers[name]
        if name in ("StartTurn", "Subscribe", "ServeTools"):
            return lambda *args, **kwargs: _BrokenStream(self._failure)

        async def rpc(request, timeout=None):
            raise self._failure
        return rpc


class _BrokenStream:
    """A streaming call whose peer is gone: its first read (or write) fails; iterable sync and async."""

    def __init__(self, failure: grpc.RpcError) -> None:
        self._failure = failure

    def __aiter__(self):
        return self

    async def __anext__(self):
        raise self._failure

    def __iter__(self):
        return self

    def __next__(self):
        raise self._failure

    async def write(self, request):
        raise self._failure

    async def read(self):
        raise self._failure

    async def done_writing(self):
        raise self._failure

    def cancel(self):
        return True


# --- the error reasons themselves ------------------------------------------------------------------------------

def test_a_failure_no_service_explained_is_a_documented_reason_in_words_and_its_text_is_logged(failure, caplog):
    with caplog.at_level(logging.INFO, logger="tessera.errors"):
        details = [error_details(failure, service) for service in (None, *SERVICE_NAMES)]
    for told in details:
        assert told.reason in NEXT_STEPS and not told.from_peer, told  # a model is told what to do next
        assert told.metadata.get("next_step") and told.message.endswith(("seconds", "happening", "Tessera", "less"))
        shown_clean(told.reason, told.message, json.dumps(told.metadata))
        assert told.transport == failure.details()  # kept for the log
    assert "Tessera's data service (resources)" in details[1 + list(SERVICE_NAMES).index("resources")].message
    assert all(record.fields["transport"] == failure.details() for record in caplog.records)
    assert len(caplog.records) == len(details)


def test_a_services_own_refusal_reaches_people_as_it_gave_it():
    refusal = Unavailable("DATABASE_UNAVAILABLE", "Tessera's records are away")
    status = status_of(refusal).to_status()
    told = error_details(grpc.aio.AioRpcError(status.code, grpc.aio.Metadata(),
                                              grpc.aio.Metadata(*status.trailing_metadata), details=status.details))
    assert (told.reason, told.message, told.from_peer, told.transport) == (
        "DATABASE_UNAVAILABLE", "Tessera's records are away", True, "")


# --- web: the API's errors and its event streams ---------------------------------------------------------------

ADA = WebPerson("ada", "acme", "Ada Lovelace")


class _SignedIn:
    """Ada's session, open at a broker that answers (the session check's own failures are tested below)."""

    async def check(self, cookie):
        return BrowserSession("wss_1", ADA, "link", 0.0)

    async def until_ended(self, cookie):
        await asyncio.Event().wait()


class _Assertions:
    def of(self, person):
        return common_pb2.ActorAssertion()


def _web(host, agent_stub, capabilities, sessions=None) -> Starlette:
    api = WebApi(host, agent_stub, capabilities, sessions or _SignedIn(), _Assertions())
    # The handlers web's app answers refusals with (services/web/app.py).
    return Starlette(routes=api.routes(), exception_handlers={ApiError: api_error, SessionRefused: _session_refused})


async def _opened(request, timeout=None):
    return host_pb2.OpenSessionResponse(session_id="ses_1", surface_id="srf_1")


# Each request the page makes that reaches a peer: (method, path, JSON body).
PAGE_CALLS = [
    ("GET", "/api/session", None), ("GET", "/api/outline", None), ("GET", "/api/approvals", None),
    ("GET", "/api/approvals/apr_1", None), ("POST", "/api/commands", {"command_id": "c1"}),
    ("POST", "/api/turns/trn_1/cancel", {}), ("POST", "/api/approvals/apr_1/challenge", {}),
    ("POST", "/api/approvals/apr_1/decision", {"approve": False, "arguments_sha256": "ab"}),
    ("POST", "/api/sign-in/link", {"token": "t"}),
    ("POST", "/api/passkeys", {"enrollment_id": "enr_1", "credential": {}}),
    ("POST", "/api/ask", {"question": "What is our net revenue by region?"}),
    ("POST", "/api/chat", {"messages": [{"role": "user", "parts": [{"type": "text", "text": "Net revenue?"}]}]}),
    ("GET", "/api/surface/stream", None),
]


async def _page_calls(app: Starlette) -> list[tuple[str, int, str]]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://web.test") as page:
        replies = []
        for method, path, body in PAGE_CALLS:
            page.cookies.set(COOKIE, "c")
            reply = await page.request(method, path, json=body, timeout=30)
            replies.append((path, reply.status_code, reply.text))
        return replies


STREAMS = ("/api/ask", "/api/chat", "/api/surface/stream")


def _stream_errors(text: str) -> list[str]:
    """The reasons an event stream gave (web's own events, and the AI SDK stream's error parts)."""
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    return [e["error"]["reason"] for e in events if "error" in e] + \
        [e["errorText"].split(":")[0] for e in events if e.get("type") == "error"]


def test_web_tells_the_page_why_in_words_whichever_service_died(failure):
    # Everything gone: each call is refused before anything streams.
    for path, status, text in asyncio.run(_page_calls(_web(*(Unanswered(failure) for _ in range(3))))):
        shown_clean(text)  # a gateway's failure, never the person's (no 4xx that reads as "sign in")
        assert status >= 500 and json.loads(text)["reason"] in NEXT_STEPS, (path, status, text)
    # The host still opens sessions, so a question reaches the agent and the surface stream the host: the streams
    # open, then say why they cannot go on.
    app = _web(Unanswered(failure, OpenSession=_opened), Unanswered(failure), Unanswered(failure))
    for path, status, text in asyncio.run(_page_calls(app)):
        shown_clean(text)
        if path in STREAMS:
            said = _stream_errors(text)
            assert status == 200 and (said or failure.code() == grpc.StatusCode.CANCELLED), (path, text)
            assert all(reason in NEXT_STEPS for reason in said), (path, said)


def test_web_says_the_broker_cannot_check_the_session_in_words(failure):
    # The person's session is checked at a broker that died: a 503 with web's own sentence.
    cookies = SessionCookies(b"k" * 32)
    records = SessionRecords(Unanswered(failure), cookies, _Assertions(), 5.0, "sign in first")
    app = _web(Unanswered(failure), Unanswered(failure), Unanswered(failure), records)

    async def scenario():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://web.test") as page:
            page.cookies.set(COOKIE, cookies.session_cookie("secret"))
            return await page.get("/api/session")

    reply = asyncio.run(scenario())
    shown_clean(reply.text)
    assert (reply.status_code, reply.json()["reason"]) == (503, "SESSION_CHECK_UNAVAILABLE")


# --- the agent: its turn events and the results a model reads --------------------------------------------------

class _NoAnalysis(FakeResources):
    def __init__(self, failure) -> None:
        super().__init__()
        self.failure = failure

    async def Analyze(self, request, timeout=None):
        raise self.failure


class _NoCommit(FakeHost):
    def __init__(self, failure) -> None:
        super().__init__()
        self.failure = failure

    async def SubmitProposal(self, request, timeout=None):
        raise self.failure


class _NoBroker(FakeCapabilities):
    def __init__(self, failure) -> None:
        super().__init__()
        self.failure = failure

    async def ListTools(self, request, timeout=None):
        raise self.failure


def _peers(resources=None, host=None, capabilities=None) -> Peers:
    """The agent's peers (tests/agent/unit/test_agent_service_in_process.py's fakes where not given), all serving."""
    async def ready() -> dict[str, str]:
        return ALL_SERVING

    return Peers(resources=resources or FakeResources(), host=host or FakeHost(),
                 capabilities=capabilities or FakeCapabilities(), ready=ready)


def _agent(transcript: str = "", **peers) -> AgentService:
    return AgentService(AgentParts(info=common_pb2.ServiceInfo(name="agent"), actors=ACTORS, peers=_peers(**peers),
                                   transcript=ModelTranscript(transcript)))


def _turn_shown(tmp_path, name: str, **peers) -> list[str]:
    """Everything a turn with these peers shows: its events (errors, notices, steps, answer) as the person's
    client receives them, and each tool result exactly as the model read it (the model transcript)."""
    path = tmp_path / f"{name}.jsonl"
    service = _agent(str(path), **peers)

    async def run():
        return [event async for event in service.StartTurn(turn_request("What is our net revenue by region?"), None)]

    events = asyncio.run(run())
    assert events[-1].WhichOneof("event") == "done"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert any(r["kind"].startswith("result:") for r in records)
    return [MessageToJson(e) for e in events] + [r["text"] for r in records if r["kind"] != "question"]


def test_a_turn_whose_peers_die_tells_the_person_and_the_model_in_words(failure, tmp_path):
    shown = [
        *_turn_shown(tmp_path, "no-data", resources=Unanswered(failure)),
        *_turn_shown(tmp_path, "no-analysis", resources=_NoAnalysis(failure)),
        *_turn_shown(tmp_path, "no-commit", host=_NoCommit(failure)),
        *_turn_shown(tmp_path, "no-broker", capabilities=_NoBroker(failure)),
    ]
    shown_clean(*shown)
    assert any("SERVICE_" in text for text in shown)


def test_a_turn_the_host_cannot_begin_is_refused_in_words(failure):
    class NoTurns(FakeHost):
        async def BeginTurn(self, request, timeout=None):
            raise failure

    with pytest.raises(TesseraError) as refused:  # the host's failure, passed on in words
        asyncio.run(_agent(host=NoTurns()).StartTurn(turn_request("Net revenue?"), None).__anext__())
    told = refused.value
    assert told.reason in NEXT_STEPS and "display service (host)" in told.message
    shown_clean(str(told), json.dumps(told.metadata), told.to_status().details)


def test_an_outside_models_calls_read_a_dead_peer_in_words(failure):
    # ServeTools: the MCP front's turn at the agent, where the outside model's results come from.
    async def requests():
        yield agent_pb2.ServeToolsRequest(open=agent_pb2.OpenToolTurn(actor=person(), session_id="ses_1",
                                                                      question="Net revenue?", request_id="r1"))
        for i, (tool, arguments) in enumerate([("inspect_current_context", {}),
                                               ("inspect_catalog", {"question": "net revenue"}),
                                               ("present_ui", {})]):
            yield agent_pb2.ServeToolsRequest(call=agent_pb2.ToolCall(call_id=f"c{i}", tool=tool,
                                                                      arguments_json=json.dumps(arguments)))

    peers = _peers(resources=Unanswered(failure), host=Unanswered(failure, BeginTurn=FakeHost().BeginTurn))

    async def run():
        return [reply async for reply in serve_tools(requests(), ACTORS, peers, ModelTranscript(""))]

    replies = asyncio.run(run())
    results = [json.loads(r.result.model_message_json) for r in replies if r.WhichOneof("event") == "result"]
    assert len(results) == 3 and all(r["error"] in NEXT_STEPS and r["next_step"] for r in results), results
    shown_clean(*(MessageToJson(r) for r in replies))


def test_a_broker_tool_whose_broker_died_is_read_in_words(failure):
    state = TurnState(person(), "ses_1", "trn_1", "srf_1", "rev_0")
    listed = [cap.Tool(tool_id="tickets.search", description="Search tickets",
                       input_schema_json='{"type": "object"}', availability=cap.TOOL_AVAILABILITY_AVAILABLE)]
    bridge = ToolBridge(build_external_tools(state, Unanswered(failure), listed))

    async def run():
        await list_external(state, Unanswered(failure))
        return await bridge.call("c1", "tickets.search", "{}")

    result = asyncio.run(run())
    assert result.error_code in NEXT_STEPS and "action broker (capabilities)" in result.error_message
    shown_clean(model_message(result), json.dumps(state.degraded))


# --- the MCP front: what an outside agent's model reads -------------------------------------------------------

def test_the_mcp_front_words_a_dead_agent_or_host_for_the_outside_model(failure):
    key = ed25519.Ed25519PrivateKey.generate()
    someone = Person("ada", "acme", "Ada Lovelace", "client-1")

    class Started(_BrokenStream):
        """The agent opened the turn, then died: the call's result never comes."""

        def __init__(self) -> None:
            super().__init__(failure)
            self.reads = 0

        async def write(self, request):
            return None

        async def read(self):
            self.reads += 1
            if self.reads == 1:
                return agent_pb2.ServeToolsResponse(turn_event=agent_pb2.StartTurnResponse(
                    started=agent_pb2.TurnStarted(turn_id="trn_1")))
            raise failure

    async def run():
        results = []
        for agent_stub, host in ((Unanswered(failure), Unanswered(failure, OpenSession=_opened)),
                                 (Unanswered(failure, ServeTools=Started), Unanswered(failure, OpenSession=_opened)),
                                 (Unanswered(failure), Unanswered(failure))):
            front = Front(agent_stub, host, key, "http://web.test", 60)
            results.append(await front.call(someone, "inspect_catalog", {"question": "net revenue"}))
        with pytest.raises(RuntimeError) as listing:
            await Front(Unanswered(failure), Unanswered(failure), key, "http://web.test", 60).tools()
        return results, str(listing.value)

    results, listing = asyncio.run(run())
    assert all(r.is_error and r.structured_content["error"] in NEXT_STEPS for r in results), results
    shown_clean(listing, *(r.model_dump_json() for r in results))


# --- the CLI: what `tessera ask` and `tessera approvals` print ---------------------------------------------------

class _Channel:
    """A sync channel to a set where `failing` RPCs fail with `failure` and the others answer as given."""

    def __init__(self, failure, failing: set[str], answers: dict) -> None:
        self.failure, self.failing, self.answers = failure, failing, answers

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False

    def _rpc(self, path: str, streaming: bool):
        method = path.rsplit("/", 1)[-1]

        def call(request, timeout=None):
            if method in self.failing:
                if streaming:
                    return _BrokenStream(self.failure)
                raise self.failure
            answer = self.answers[method]
            return _Replies(answer) if streaming else answer
        return call

    def unary_unary(self, path, **kwargs):
        return self._rpc(path, False)

    def unary_stream(self, path, **kwargs):
        return self._rpc(path, True)


class _Replies(list):
    def cancel(self):
        return True


REVISION = host_pb2.GetRevisionResponse(revision=host_pb2.Revision(revision_id="rev_1", surface_id="srf_1",
    document_json=json.dumps({"top": ["m"], "blocks": [{"id": "m", "component": "Metric", "data": {
        "label": "Net revenue", "resource": {"resource": "res_1"}, "column": "m0"}}]})))
ANSWERS = {"OpenSession": host_pb2.OpenSessionResponse(session_id="ses_1", surface_id="srf_1"),
           "StartTurn": [agent_pb2.StartTurnResponse(done=agent_pb2.TurnDone(answer="Here it is.",
                                                                             revision_ids=["rev_1"]))],
           "GetRevision": REVISION}


def test_tessera_ask_prints_a_dead_service_in_words(failure, cert_dir, capsys, monkeypatch):
    # The host gone before the session opens; the agent gone mid-question; the host gone as the answer is read.
    for failing in ({"OpenSession"}, {"StartTurn"}, {"GetRevision"}, {"Subscribe", "SendCommand"}):
        monkeypatch.setattr(cli.ask, "sync_channel", lambda *args, f=failing: _Channel(failure, f, ANSWERS))
        asked = cli.ask.ask({"host": "h", "agent": "a"}, cert_dir, "What is our net revenue by region?")
        printed = capsys.readouterr()
        shown_clean(printed.out, printed.err)
        if failing != {"Subscribe", "SendCommand"}:
            assert asked.done.outcome == common_pb2.TURN_OUTCOME_FAILED and "tessera: error: SERVICE_" in printed.err
            assert asked.exit_status == cli.ask.EXIT_FAILED
        else:
            assert "could not be read: SERVICE_" in printed.out


def _cli(var_dir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=60, env={"TESSERA_VAR_DIR": str(var_dir), "PATH": "/usr/bin:/bin",
                                           "XDG_CONFIG_HOME": str(var_dir / "config")})


def test_commands_against_a_set_whose_services_died_print_words_and_log_the_rest(cert_dir, tmp_path):
    # A real process over real (mTLS) channels, as `tessera up` left the set: what the person's terminal shows.
    with dead_addresses() as dead:
        (tmp_path / "run").mkdir()
        (tmp_path / "run" / "services.json").write_text(json.dumps({"cert_dir": str(cert_dir), "processes": [
            {"name": "host", "address": dead["refusing"]}, {"name": "agent", "address": dead["refusing"]},
            {"name": "web", "address": dead["refusing"]}, {"name": "capabilities", "address": dead["refusing"]}]}))
        asked = _cli(tmp_path, "ask", DEMO_QUESTIONS[0])
        listed = _cli(tmp_path, "approvals", "list")
    for shown in (asked, listed):
        assert shown.returncode == 1 and "tessera: error:" in shown.stderr, shown
        shown_clean(shown.stdout, shown.stderr)
    assert "Tessera's display service (host) is not answering" in asked.stderr
    assert "SERVICE_UNAVAILABLE" in listed.stderr
    logged = (tmp_path / "run" / "logs" / "cli.log").read_text()
    assert transport_text(logged)  # what the terminal did not show is in the log
