"""The agent servicer in this process, over fake peers (plain objects whose async methods answer the real
protobuf messages): no subprocess, no channel. What crosses processes (authz, mTLS, a peer that is really
gone) stays in tests/agent/integration."""

from __future__ import annotations

import asyncio
import json
import time

import grpc
import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from grpc_health.v1 import health_pb2

from services.agent.cancels import cancel_elsewhere, wait_within
from services.agent.chat import ChatAdapter, ChatConfig
from services.agent.peers import Peers, health_readiness
from services.agent.server import AgentService
from services.agent.tools import TOOL_NAMES, TurnState
from services.agent.turn import MAX_ANSWER_CHARS, ModelTranscript, Turn
from services.agent.wiring import AgentParts
from shared.data.analysis_draft import DRAFT_SCHEMA_SHA256, DRAFT_SCHEMA_VERSION
from shared.identity.actors import ActorVerifier, assert_actor
from shared.rpc.errors import status_of
from shared.rpc.refusals import NotFound, Refusal
from tessera.agent.v1 import agent_pb2
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tessera.resources.v1 import resources_pb2 as res
from tests.fixtures.fake_model import chunk
from tests.fixtures.in_process import RULES

CLI_KEY = ed25519.Ed25519PrivateKey.generate()
ALL_SERVING = {"resources": "SERVING", "host": "SERVING", "capabilities": "SERVING"}
COMPONENTS = ("Column", "Heading", "Text", "FigureText", "Metric", "Chart", "DataTable", "EvidenceNote")
ORDERS = res.Entity(
    entity_id="ent_ordersxxxxxx", label="Orders", description="Orders placed",
    fields=[res.Field(field_id="fld_channelxxxxx", label="Sales channel", type=common_pb2.COLUMN_TYPE_STRING,
                      exposure=res.FIELD_EXPOSURE_BOUNDED_VALUES),
            res.Field(field_id="fld_orderedxxxxx", label="Order time", type=common_pb2.COLUMN_TYPE_TIMESTAMP,
                      exposure=res.FIELD_EXPOSURE_BOUNDED_VALUES)],
    metrics=[res.Metric(metric_id="met_revenuexxxxx", label="Net revenue", type=common_pb2.COLUMN_TYPE_DECIMAL)])


def rpc_error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=code.name)


class FakeResources:
    def __init__(self, outline_error: grpc.StatusCode | None = None) -> None:
        self.outline_error = outline_error
        self.drafts: list[dict] = []

    async def Outline(self, request, timeout=None):
        if self.outline_error:
            raise rpc_error(self.outline_error)
        return res.OutlineResponse(dataset_label="Retail", entities=[res.OutlineEntity(
            label="Orders", description="Orders placed", measures=["Net revenue"], dimensions=["Sales channel"],
            time_fields=["Order time"])])

    async def InspectContext(self, request, timeout=None):
        return res.InspectContextResponse(dataset_label="Retail", catalog_fingerprint="fp", probes_remaining=2,
                                          capability_token="tok-0", draft_schema_version=DRAFT_SCHEMA_VERSION,
                                          draft_schema_sha256=DRAFT_SCHEMA_SHA256)

    async def InspectCatalog(self, request, timeout=None):
        return res.InspectCatalogResponse(entities=[ORDERS], capability_token="tok-1")

    async def Analyze(self, request, timeout=None):
        self.drafts.append(json.loads(request.draft_json))
        return res.AnalyzeResponse(
            offer=common_pb2.SignedToken(claims=b"offer"), descriptor=common_pb2.ResourceDescriptor(
                resource_id="res_1", row_count=1, columns=[common_pb2.ColumnDescriptor(
                    column_id="m0", label="Net revenue", type=common_pb2.COLUMN_TYPE_DECIMAL,
                    role=common_pb2.COLUMN_ROLE_MEASURE)]))


class FakeHost:
    def __init__(self) -> None:
        self.proposals: list[dict] = []
        self.freezing = asyncio.Event()  # set when the turn asks for its slice
        self.release = asyncio.Event()  # the slice is frozen only once this is set
        self.release.set()
        self.finished: list[host_pb2.FinishTurnRequest] = []  # how the turns ended, as recorded

    async def BeginTurn(self, request, timeout=None):
        return host_pb2.BeginTurnResponse(turn_id="trn_1", surface_id="srf_1", base_revision_id="rev_0")

    async def FreezeSlice(self, request, timeout=None):
        self.freezing.set()
        await self.release.wait()
        view = {"components": [{"name": name, "id": f"component-{i + 1:06d}"} for i, name in enumerate(COMPONENTS)],
                "resources": [{"id": "resource-000001", "offer": "0123456789abcdef", "rows": 1}], "evidence": [],
                "actions": []}
        return host_pb2.FreezeSliceResponse(slice_hash="sha-1", model_view_json=json.dumps(view),
                                            present_ui_schema_json="{}")

    async def FinishTurn(self, request, timeout=None):
        self.finished.append(request)
        return host_pb2.FinishTurnResponse(recorded=True)

    async def RequestTurnCancel(self, request, timeout=None):
        """As the host answers: the one turn it began runs until its end is recorded; any other is unknown."""
        if request.turn_id != "trn_1":
            status = status_of(NotFound("TURN_UNKNOWN", "no such turn")).to_status()
            raise grpc.aio.AioRpcError(status.code, grpc.aio.Metadata(), grpc.aio.Metadata(*status.trailing_metadata),
                                       details=status.details)
        ended = [f for f in self.finished if f.turn_id == request.turn_id]
        return host_pb2.RequestTurnCancelResponse(running=not ended, outcome=ended[-1].outcome if ended else 0)

    async def SubmitProposal(self, request, timeout=None):
        self.proposals.append(json.loads(request.proposal_json))
        return host_pb2.SubmitProposalResponse(outcome=host_pb2.PROPOSAL_OUTCOME_COMMITTED, surface_id="srf_1",
                                               revision_id="rev_1", content_hash="h1")


class FakeCapabilities:
    def __init__(self) -> None:
        self.cancelled: list[str] = []

    async def ListTools(self, request, timeout=None):
        return cap.ListToolsResponse()

    async def CancelIntents(self, request, timeout=None):
        self.cancelled.append(request.turn_id)
        return cap.CancelIntentsResponse()


def agent(readiness: dict[str, str] | None = None, resources: FakeResources | None = None,
          host: FakeHost | None = None, chat: ChatAdapter | None = None,
          capabilities: FakeCapabilities | None = None) -> AgentService:
    async def ready() -> dict[str, str]:
        return readiness or ALL_SERVING

    peers = Peers(resources=resources or FakeResources(), host=host or FakeHost(),
                  capabilities=capabilities or FakeCapabilities(), ready=ready)
    return AgentService(AgentParts(info=common_pb2.ServiceInfo(name="agent"),
                                   actors=ActorVerifier({"cli": CLI_KEY.public_key()}), peers=peers, chat=chat))


def person(actor_id: str = "alice") -> common_pb2.ActorAssertion:
    return assert_actor(CLI_KEY, actor_id, "acme")


def turn_request(question: str, actor: common_pb2.ActorAssertion | None = None) -> agent_pb2.StartTurnRequest:
    return agent_pb2.StartTurnRequest(actor=actor or person(), session_id="ses_1", question=question,
                                      request_id="r1")


async def events_of(service: AgentService, request: agent_pb2.StartTurnRequest) -> list:
    return [event async for event in service.StartTurn(request, None)]


def finished_tools(events) -> list[str]:
    return [e.tool_step.tool for e in events if e.WhichOneof("event") == "tool_step"
            and e.tool_step.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED]


def test_get_info_names_the_embedded_model_and_the_six_tools():
    reply = asyncio.run(agent().GetInfo(agent_pb2.GetInfoRequest(), None))
    assert reply.model == "embedded" and list(reply.tools) == list(TOOL_NAMES) and reply.info.name == "agent"


def test_outline_gives_the_resources_outline_with_suggested_questions():
    reply = asyncio.run(agent().Outline(agent_pb2.OutlineRequest(actor=person()), None))
    assert reply.dataset_label == "Retail"
    assert [(e.label, list(e.measures), list(e.dimensions)) for e in reply.entities] == [
        ("Orders", ["Net revenue"], ["Sales channel", "Order time"])]
    assert reply.suggested_questions


def test_outline_is_refused_while_resources_cannot_answer():
    service = agent(resources=FakeResources(outline_error=grpc.StatusCode.UNAVAILABLE))
    with pytest.raises(Refusal) as refused:
        asyncio.run(service.Outline(agent_pb2.OutlineRequest(actor=person()), None))
    assert (status_of(refused.value).code, refused.value.reason) == (
        grpc.StatusCode.UNAVAILABLE, "RESOURCES_UNAVAILABLE")


@pytest.mark.parametrize(("actor", "reason"), [
    (common_pb2.ActorAssertion(), "ACTOR_MISSING"),
    (assert_actor(ed25519.Ed25519PrivateKey.generate(), "mallory", "acme"), "ACTOR_UNKNOWN_SIGNER")])
def test_a_turn_needs_an_actor_signed_by_an_edge(actor, reason):
    with pytest.raises(Refusal) as refused:
        asyncio.run(events_of(agent(), turn_request("What is our total net revenue?", actor)))
    assert (status_of(refused.value).code, refused.value.reason) == (grpc.StatusCode.UNAUTHENTICATED, reason)


def test_a_simple_question_is_answered_with_a_committed_surface():
    resources, host = FakeResources(), FakeHost()
    events = asyncio.run(events_of(agent(resources=resources, host=host),
                                   turn_request("What is our total net revenue?")))
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "started" and kinds[-2:] == ["answer_delta", "done"] and "surface_committed" in kinds
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert finished_tools(events) == ["inspect_current_context", "inspect_catalog", "run_analysis", "present_ui",
                                      "present_ui"]
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and list(done.revision_ids) == ["rev_1"]
    assert not done.degraded and not done.tainted
    assert [m["metric"] for m in resources.drafts[0]["measures"]] == ["met_revenuexxxxx"]
    metric = f"component-{COMPONENTS.index('Metric') + 1:06d}"
    assert any(block["component"] == metric for block in host.proposals[0]["blocks"])
    # The host keeps how it ended, in the words the person was shown, before the stream says done.
    (kept,) = host.finished
    assert (kept.turn_id, kept.outcome, kept.answer, kept.follows_turn_id) == (
        "trn_1", common_pb2.TURN_OUTCOME_ANSWERED, done.answer, "")


def test_a_gateway_with_another_draft_schema_turns_run_analysis_off_naming_both_schemas():
    class OtherSchema(FakeResources):  # the same version number, other text: a gateway of another release
        async def InspectContext(self, request, timeout=None):
            reply = await super().InspectContext(request, timeout)
            reply.draft_schema_sha256 = "0" * 64
            return reply

    resources = OtherSchema()
    events = asyncio.run(events_of(agent(resources=resources), turn_request("What is our total net revenue?")))
    notices = [e.degraded for e in events if e.WhichOneof("event") == "degraded"]
    (notice,) = [n for n in notices if n.tool == "run_analysis"]
    assert f"v{DRAFT_SCHEMA_VERSION} (sha256 000000000000…)" in notice.message, notice.message
    assert DRAFT_SCHEMA_SHA256[:12] in notice.message and "different versions" in notice.message
    assert not resources.drafts, "no draft reaches a gateway that enforces another schema"


def test_a_follow_up_is_recorded_as_refining_the_earlier_turn_it_was_read_against():
    class Earlier(FakeHost):
        async def BeginTurn(self, request, timeout=None):
            earlier = [host_pb2.EarlierTurn(turn_id="trn_1", question="Net revenue"),
                       host_pb2.EarlierTurn(turn_id="trn_2", question="hello")]
            return host_pb2.BeginTurnResponse(turn_id="trn_3", surface_id="srf_1", base_revision_id="rev_0",
                                              earlier_turns=earlier)

    for question, follows in (("and for 2024?", "trn_1"), ("What is our total net revenue?", ""),
                              ("What is the weather on Mars?", "")):
        host = Earlier()
        asyncio.run(events_of(agent(host=host), turn_request(question)))
        assert [f.follows_turn_id for f in host.finished] == [follows], question


def test_with_resources_unready_the_turn_is_degraded_and_says_so():
    events = asyncio.run(events_of(agent(readiness={**ALL_SERVING, "resources": "UNREACHABLE"}),
                                   turn_request("What is our net revenue by region?")))
    notices = [e.degraded for e in events if e.WhichOneof("event") == "degraded"]
    assert {n.tool for n in notices} == {"inspect_catalog", "describe_data", "probe_data", "run_analysis"}
    done = events[-1].done
    assert done.degraded and done.outcome == common_pb2.TURN_OUTCOME_NOT_ANSWERABLE and not done.revision_ids
    assert all(tool in done.answer for tool in ("inspect_catalog", "run_analysis"))


def test_only_the_turns_own_actor_may_cancel_it():
    async def scenario():
        host, broker = FakeHost(), FakeCapabilities()
        host.release.clear()  # the turn waits in present_ui until the cancels are done
        service = agent(host=host, capabilities=broker)
        turn = asyncio.create_task(events_of(service, turn_request("What is our total net revenue?")))
        await asyncio.wait_for(host.freezing.wait(), 30)
        with pytest.raises(Refusal) as refused:
            await service.CancelTurn(agent_pb2.CancelTurnRequest(actor=person("bob"), turn_id="trn_1"), None)
        cancelled = await service.CancelTurn(agent_pb2.CancelTurnRequest(actor=person(), turn_id="trn_1"), None)
        return refused.value, cancelled, await asyncio.wait_for(turn, 30), broker.cancelled

    refused, cancelled, events, cancelled_at_broker = asyncio.run(scenario())
    # The broker is asked to cancel the turn's requests even though none came back awaiting approval: one cut
    # short by the cancel may have reached it.
    assert cancelled_at_broker == ["trn_1"]
    assert (status_of(refused).code, refused.reason) == (grpc.StatusCode.PERMISSION_DENIED, "TURN_NOT_YOURS")
    assert cancelled.cancelled and cancelled.outcome == common_pb2.TURN_OUTCOME_CANCELLED
    assert events[-1].done.outcome == common_pb2.TURN_OUTCOME_CANCELLED
    assert events[-1].done.answer == "The turn was cancelled."


def test_cancelling_a_turn_that_is_not_running_cancels_nothing():
    reply = asyncio.run(agent().CancelTurn(agent_pb2.CancelTurnRequest(actor=person(), turn_id="trn_unknown"), None))
    assert not reply.cancelled


def test_a_cancel_for_a_turn_that_does_not_stop_says_so_after_a_bounded_wait():
    """The host has the turn running and reported, but it does not end in time: a precise refusal, not a hang."""
    host = FakeHost()
    request = agent_pb2.CancelTurnRequest(actor=person(), turn_id="trn_1")
    began = time.monotonic()
    with pytest.raises(Refusal) as refused:
        asyncio.run(cancel_elsewhere(host, request, wait_seconds=0.5))
    assert (status_of(refused.value).code, refused.value.reason) == (grpc.StatusCode.UNAVAILABLE, "TURN_NOT_STOPPED")
    assert "still stopping after 0.5 s" in refused.value.message and time.monotonic() - began < 5
    # Once its end is recorded, the answer says how it ended: answered before the stop landed is not cancelled.
    host.finished.append(host_pb2.FinishTurnRequest(turn_id="trn_1", outcome=common_pb2.TURN_OUTCOME_ANSWERED))
    reply = asyncio.run(cancel_elsewhere(host, request))
    assert (reply.cancelled, reply.outcome) == (False, common_pb2.TURN_OUTCOME_ANSWERED)


def test_a_cancel_waits_for_the_turn_only_within_its_callers_deadline():
    """The answer must reach the caller (web waits 20 s) before its deadline, whatever the turn does."""
    assert [wait_within(left) for left in (None, 20.0, 5.0, 0.5)] == [15.0, 15.0, 4.0, 0.0]


def test_cancel_turn_needs_a_signed_actor():
    with pytest.raises(Refusal) as refused:
        asyncio.run(agent().CancelTurn(agent_pb2.CancelTurnRequest(turn_id="trn_unknown"), None))
    assert (status_of(refused.value).code, refused.value.reason) == (grpc.StatusCode.UNAUTHENTICATED, "ACTOR_MISSING")


def test_a_model_stream_that_breaks_fails_the_turn_and_runs_no_tool():
    def half_a_tool_call(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=chunk({"tool_calls": [
            {"index": 0, "id": "b1", "type": "function", "function": {"name": "present_ui", "arguments": '{"p'}}]}))

    async def scenario():
        chat = ChatAdapter(ChatConfig(base_url="http://model.test/v1", model="scripted"),
                           transport=httpx.MockTransport(half_a_tool_call))
        try:
            service = agent(chat=chat)
            info = await service.GetInfo(agent_pb2.GetInfoRequest(), None)
            return info, await events_of(service, turn_request("net revenue"))
        finally:
            await chat.aclose()

    info, events = asyncio.run(scenario())
    assert info.model == "openai-compatible:scripted"
    assert [e.error.reason for e in events if e.WhichOneof("event") == "error"] == ["MODEL_STREAM_BROKEN"]
    assert events[-1].done.outcome == common_pb2.TURN_OUTCOME_FAILED and not finished_tools(events)


class FakeHealth:
    def __init__(self, answer: int | grpc.StatusCode) -> None:
        self.answer = answer

    async def Check(self, request, timeout=None):
        if isinstance(self.answer, grpc.StatusCode):
            raise rpc_error(self.answer)
        return health_pb2.HealthCheckResponse(status=self.answer)


def test_peer_readiness_is_each_peers_own_health_answer():
    ready = health_readiness({"resources": FakeHealth(grpc.StatusCode.UNAVAILABLE),
                              "host": FakeHealth(health_pb2.HealthCheckResponse.SERVING),
                              "capabilities": FakeHealth(grpc.StatusCode.PERMISSION_DENIED)})
    assert asyncio.run(ready()) == {"resources": "UNREACHABLE", "host": "SERVING",
                                    "capabilities": "PERMISSION_DENIED"}


def test_a_turns_end_is_kept_within_the_hosts_bounds_never_refused_for_one_long_suggestion():
    host = FakeHost()
    peers = Peers(resources=FakeResources(), host=host, capabilities=FakeCapabilities(), ready=None)
    state = TurnState(common_pb2.ActorAssertion(), "ses_1", "trn_1", "srf_1", "")
    turn = Turn("revenue?", host_pb2.BeginTurnResponse(turn_id="trn_1"), state, peers, time.time(),
                ModelTranscript(""))
    long_answer, too_long = "a" * (MAX_ANSWER_CHARS + 10), "why " * 600
    done = agent_pb2.TurnDone(outcome=common_pb2.TURN_OUTCOME_ANSWERED, answer=long_answer,
                              suggested_questions=["by region?", too_long, "", "by month?", "by channel?", "by week?"])
    asyncio.run(turn.record_end(done))
    (kept,) = host.finished
    RULES.check("/tessera.host.v1.HostService/FinishTurn", kept)  # what the host's contract accepts
    assert kept.answer == long_answer[:MAX_ANSWER_CHARS]
    assert list(kept.suggested_questions) == ["by region?", "by month?", "by channel?"]
