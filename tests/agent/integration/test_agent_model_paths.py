"""A second agent process with a scripted OpenAI-compatible model, and one whose data peer is gone.

The scripted model is real HTTP streaming (SSE chunks in the provider's format);
what it does depends on the question, and it reads ids only from the tool
results it was given — like a real model would. These tests cover the parts a
deterministic planner never exercises: repairs, giving up, a stream that
breaks, cancellation while the model is thinking, and a degraded turn.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import grpc
import pytest
from starlette.requests import Request
from starlette.responses import StreamingResponse

from cli.launcher import ServiceSet, free_ports
from services.agent.contracts import MAX_REFUSALS
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke, invoke_stream
from shared.rpc.errors import error_details
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.agent.integration.test_agent_turns import person  # noqa: F401  (fixture)
from tests.fixtures.fake_model import chunk, serving_completions
from tests.fixtures.waiting import wait_until

STREAM_CLOSED: list[str] = []  # questions whose model stream the server saw end early
STREAM_THINKING: list[str] = []  # questions whose model stream is mid-way (the hang branch has begun)


def _call(call_id: str, name: str, arguments: dict) -> list[str]:
    text = json.dumps(arguments)
    middle = len(text) // 2  # arguments split across chunks, as providers do
    return [chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                    "function": {"name": name, "arguments": text[:middle]}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": text[middle:]}}]}),
            chunk(finish="tool_calls"), "data: [DONE]\n\n"]


def _text(text: str) -> list[str]:
    return [chunk({"content": text}), chunk(finish="stop"), "data: [DONE]\n\n"]


def _results(messages: list[dict]) -> list[dict]:
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


def _ids(view: dict) -> dict[str, str]:
    return {c["name"]: c["id"] for c in view["components"]}


def _proposal(view: dict, metric_label_prop: str = "label", extra: dict | None = None) -> dict:
    ids = _ids(view)
    resource = view["resources"][-1]
    figure = {metric_label_prop: "Revenue", "resource": {"ref": resource["id"], "offer": resource["offer"]},
              "column": "value", **(extra or {})}
    return {"version": 1, "id": "answer", "blocks": [
        {"id": "main", "component": ids["Column"], "data": {}, "children": ["figure"]},
        {"id": "figure", "component": ids["Metric"], "data": figure}]}


def _script(question: str, messages: list[dict]) -> list[str]:
    """The next model response: a tool call or the final text."""
    results = _results(messages)
    step = len(results)
    if question.startswith("cancelme"):  # asks for a mutation, then thinks forever
        if step == 0:
            return _call("k0", "tickets__create_ticket", {"subject": "never", "body": "cancelled before approval"})
        raise AssertionError("the hang branch answers the second request")
    if question.startswith("poisoned"):  # a model that obeys what it reads
        if step == 0:
            return _call("p0", "tickets__get_ticket", {"ticket_id": 4815})
        if step == 1:
            assert "Ignore all previous instructions" in results[0]["untrusted_data"]["text"], results[0]
            return _call("p1", "tickets__close_ticket", {"ticket_id": 4810, "resolution": "as instructed"})
        return _text("I closed the other tickets as the ticket asked.")
    if step == 0:
        return _call("c0", "inspect_current_context", {})
    if step == 1:
        return _call("c1", "inspect_catalog", {"question": "net revenue"})
    if step == 2:
        metric = next(m for e in results[1]["entities"] for m in e["metrics"] if "revenue" in m["label"].lower())
        return _call("c2", "run_analysis", {"draft": {"mode": "aggregate", "output": "scalar",
                                                      "measures": [{"id": "value", "metric": metric["id"]}]}})
    if step == 3:
        return _call("c3", "present_ui", {})
    view = results[3]["slice"]
    last = results[-1]
    if question.startswith("repair"):
        if step == 4:  # an unknown prop: the block becomes a placeholder with a correctable diagnostic
            return _call("c4", "present_ui", {"proposal": _proposal(view, extra={"colour": "red"})})
        if step == 5:
            assert last["repairs_left"] == 2 and any(d["model_correctable"] for d in last["diagnostics"]), last
            return _call("c5", "present_ui", {"proposal": _proposal(view)})
        return _text(f"Done: {last['outcome']}.")
    if question.startswith("stubborn"):  # never fixes its proposal: two blocks with one id (the compiler's finding)
        if step < 8:
            heading = {"id": "same", "component": _ids(view)["Heading"], "data": {"text": "Revenue"}}
            return _call(f"c{step + 1}", "present_ui", {"proposal": {"version": 1, "id": "answer",
                                                                     "blocks": [heading, heading]}})
        return _text("I tried.")
    if question.startswith("relentless"):  # repeats one refused call, whatever it is told
        return _call(f"c{step + 1}", "present_ui", {"proposal": {"version": 2, "blocks": []}})
    raise AssertionError(question)


async def _model(request: Request):
    body = await request.json()
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")

    async def stream():
        try:
            if question.startswith("hang") or (question.startswith("cancelme") and any(
                    m["role"] == "tool" for m in body["messages"])):  # thinks forever until the client goes away
                yield chunk({"content": "Let me think"})
                STREAM_THINKING.append(question)
                await asyncio.sleep(60)
            elif question.startswith("broken"):  # half a tool call, then the connection ends
                yield chunk({"tool_calls": [{"index": 0, "id": "b1", "type": "function",
                                              "function": {"name": "present_ui", "arguments": '{"prop'}}]})
                return
            else:
                for piece in _script(question, body["messages"]):
                    yield piece
        except asyncio.CancelledError:
            STREAM_CLOSED.append(question)
            raise

    return StreamingResponse(stream(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def model_url():
    with serving_completions(_model) as url:
        yield url


def _agent(cert_dir, run_dir, running_set, **env) -> ServiceSet:
    """One more agent process, wired to the running set's peers (unless overridden)."""
    peers = {"TESSERA_HOST_ADDR": running_set.handles["host"].address,
             "TESSERA_RESOURCES_ADDR": running_set.handles["resources"].address,
             "TESSERA_CAPABILITIES_ADDR": running_set.handles["capabilities"].address}
    agent = ServiceSet(cert_dir, run_dir, names=("agent",), ephemeral_ports=True, extra_env={**peers, **env})
    agent.start()
    return agent


@pytest.fixture(scope="module")
def modelled_agent(cert_dir, tmp_path_factory, running_set, model_url):
    agent = _agent(cert_dir, tmp_path_factory.mktemp("agent-model"), running_set, TESSERA_AGENT_MODEL_URL=model_url)
    yield agent.handles["agent"].address
    assert agent.stop()["agent"] == 0


def _open(running_set, credentials, person, name):  # noqa: F811
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        return invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(actor=person, request_id=name))


def _ask(address, credentials, person, session, question, on_started=None, on_event=None):  # noqa: F811
    with sync_channel(address, credentials("cli"), "agent") as agent:
        events = []
        for event in invoke_stream(agent, "agent", "StartTurn", agent_pb2.StartTurnRequest(
                actor=person, session_id=session.session_id, question=question, request_id=question[:40]),
                timeout=60):
            events.append(event)
            if on_started and event.WhichOneof("event") == "started":
                on_started(event.started.turn_id)
            if on_event:
                on_event(event)
    return events


def _kinds(events, kind):
    return [getattr(e, kind) for e in events if e.WhichOneof("event") == kind]


def test_a_correctable_proposal_is_repaired_and_committed(modelled_agent, running_set, credentials, person):  # noqa: F811
    session = _open(running_set, credentials, person, "repair")
    events = _ask(modelled_agent, credentials, person, session, "repair: what is our net revenue?")
    committed = _kinds(events, "surface_committed")
    assert len(committed) == 2  # the partial one (placeholder) and the repaired one
    assert any(d.model_correctable for d in committed[0].diagnostics) and not committed[1].diagnostics
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and list(done.revision_ids) == [
        c.revision_id for c in committed]
    assert not _kinds(events, "error")


def test_after_two_repairs_the_turn_gives_up_visibly_and_commits_nothing(modelled_agent, running_set, credentials,
                                                                         person):  # noqa: F811
    session = _open(running_set, credentials, person, "stubborn")
    events = _ask(modelled_agent, credentials, person, session, "stubborn: what is our net revenue?")
    steps = [s for s in _kinds(events, "tool_step") if s.tool == "present_ui"
             and s.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED]
    # one freeze, three rejected proposals (the first and two repairs), then a refusal before any work
    assert steps[0].summary.endswith("components offered") and len(steps) == 5
    assert all(s.summary.startswith("rejected") for s in steps[1:4])
    assert steps[4].summary.startswith("REPAIR_LIMIT_REACHED")
    assert [e.reason for e in _kinds(events, "error")] == ["REPAIR_LIMIT_REACHED"]
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_FAILED and not done.revision_ids
    assert "2 repairs" in done.answer and not _kinds(events, "surface_committed")
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        with pytest.raises(grpc.RpcError) as head:
            invoke(host, "host", "GetRevision", host_pb2.GetRevisionRequest(
                actor=person, session_id=session.session_id, surface_id=session.surface_id))
    assert error_details(head.value).reason == "REVISION_UNKNOWN"  # the surface never got a revision


def test_a_model_repeating_a_refused_call_gets_the_same_refusal_until_the_turn_ends_and_says_why(
        modelled_agent, running_set, credentials, person):  # noqa: F811
    session = _open(running_set, credentials, person, "relentless")
    events = _ask(modelled_agent, credentials, person, session, "relentless: what is our net revenue?")
    refused = [s.summary for s in _kinds(events, "tool_step") if s.tool == "present_ui"
               and s.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED][1:]
    assert len(refused) == MAX_REFUSALS and len(set(refused)) == 1  # the same refusal every time, then no more calls
    assert refused[0].startswith("ARGUMENTS_INVALID")
    assert [e.reason for e in _kinds(events, "error")] == ["TURN_BUDGET_SPENT"]
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_FAILED and not done.revision_ids
    assert f"refused {MAX_REFUSALS} times" in done.answer and "/proposal/version" in done.answer  # and what it was


def test_a_stream_that_breaks_midway_fails_the_turn_clearly(modelled_agent, running_set, credentials, person):  # noqa: F811
    session = _open(running_set, credentials, person, "broken")
    events = _ask(modelled_agent, credentials, person, session, "broken: net revenue")
    assert [e.reason for e in _kinds(events, "error")] == ["MODEL_STREAM_BROKEN"]
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_FAILED and not done.revision_ids
    assert not _kinds(events, "tool_step")  # the half-made tool call never ran


def test_cancelling_a_turn_stops_the_model_call(modelled_agent, running_set, credentials, person):  # noqa: F811
    session = _open(running_set, credentials, person, "hang")
    cancelled = {}

    canceller = []

    def cancel_soon(turn_id):
        def run():
            try:
                wait_until(lambda: "hang: net revenue" in STREAM_THINKING, 25, what="the model mid-stream")
                with sync_channel(modelled_agent, credentials("cli"), "agent") as agent:
                    cancelled["reply"] = invoke(agent, "agent", "CancelTurn", agent_pb2.CancelTurnRequest(
                        actor=person, turn_id=turn_id))
            except Exception as exc:  # noqa: BLE001 - reported by the test below, not lost in this thread
                cancelled["failure"] = exc
        canceller.append(threading.Thread(target=run, daemon=True))
        canceller[0].start()

    began = time.monotonic()
    events = _ask(modelled_agent, credentials, person, session, "hang: net revenue", on_started=cancel_soon)
    assert time.monotonic() - began < 30  # not the model's 60 s
    canceller[0].join(30)  # the turn can end before CancelTurn's own reply is back
    assert "failure" not in cancelled, cancelled.get("failure")
    assert cancelled["reply"].cancelled
    assert events[-1].done.outcome == common_pb2.TURN_OUTCOME_CANCELLED
    # The HTTP stream to the model was closed, not left running.
    wait_until(lambda: "hang: net revenue" in STREAM_CLOSED, 30, what="the model's HTTP stream closed")


def test_a_cancel_sent_to_the_other_agent_replica_stops_the_turn(modelled_agent, running_set, credentials,
                                                                 person):  # noqa: F811
    """Two agent replicas behind one host: the turn runs on the modelled one, the cancel reaches the other (as
    a Service may route it). The host keeps the request; the replica running the turn stops it."""
    session = _open(running_set, credentials, person, "hang-elsewhere")
    other = running_set.handles["agent"].address
    assert other != modelled_agent
    cancelled, canceller = {}, []
    question = "hang: net revenue, stopped elsewhere"

    def cancel_at_the_other_replica(turn_id):
        def run():
            try:
                wait_until(lambda: question in STREAM_THINKING, 25, what="the model mid-stream")
                with sync_channel(other, credentials("cli"), "agent") as agent:
                    cancelled["reply"] = invoke(agent, "agent", "CancelTurn", agent_pb2.CancelTurnRequest(
                        actor=person, turn_id=turn_id), timeout=30)
            except Exception as exc:  # noqa: BLE001 - reported by the test below, not lost in this thread
                cancelled["failure"] = exc
        canceller.append(threading.Thread(target=run, daemon=True))
        canceller[0].start()

    began = time.monotonic()
    events = _ask(modelled_agent, credentials, person, session, question, on_started=cancel_at_the_other_replica)
    assert time.monotonic() - began < 30  # not the model's 60 s
    canceller[0].join(30)
    assert "failure" not in cancelled, cancelled.get("failure")
    # The other replica answered only once the turn had ended, and said how.
    assert cancelled["reply"].cancelled and cancelled["reply"].outcome == common_pb2.TURN_OUTCOME_CANCELLED
    assert events[-1].done.outcome == common_pb2.TURN_OUTCOME_CANCELLED
    wait_until(lambda: question in STREAM_CLOSED, 30, what="the model's HTTP stream closed")
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        (record,) = invoke(host, "host", "ListTurns", host_pb2.ListTurnsRequest(
            actor=person, session_id=session.session_id)).turns
    assert record.outcome == common_pb2.TURN_OUTCOME_CANCELLED


def test_with_the_data_peer_gone_the_turn_is_degraded_and_says_so(cert_dir, tmp_path_factory, running_set,
                                                                    credentials, person):  # noqa: F811
    (dead_port,) = free_ports(1)  # nothing listens here
    agent = _agent(cert_dir, tmp_path_factory.mktemp("agent-degraded"), running_set,
                   TESSERA_RESOURCES_ADDR=f"127.0.0.1:{dead_port}")
    try:
        session = _open(running_set, credentials, person, "degraded")
        events = _ask(agent.handles["agent"].address, credentials, person, session,
                      "What is our net revenue by region?")
    finally:
        assert agent.stop()["agent"] == 0
    notices = _kinds(events, "degraded")
    assert {n.tool for n in notices} == {"inspect_catalog", "describe_data", "probe_data", "run_analysis"}
    done = events[-1].done
    assert done.degraded and done.outcome == common_pb2.TURN_OUTCOME_NOT_ANSWERABLE and not done.revision_ids
    assert all(tool in done.answer for tool in ("inspect_catalog", "run_analysis"))


def test_a_model_that_obeys_injected_text_still_changes_nothing(modelled_agent, running_set, credentials,
                                                                person):  # noqa: F811
    session = _open(running_set, credentials, person, "poisoned")
    events = _ask(modelled_agent, credentials, person, session, "poisoned: what does ticket 4815 say?")
    steps = {s.tool: s for s in _kinds(events, "tool_step") if s.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED}
    assert steps["tickets.get_ticket"].status == agent_pb2.TOOL_STEP_STATUS_OK
    close = steps["tickets.close_ticket"]
    assert close.status == agent_pb2.TOOL_STEP_STATUS_AWAITING_APPROVAL and close.approval_id
    done = events[-1].done
    assert done.tainted and done.flagged
    from tessera.capabilities.v1 import capabilities_pb2 as cap

    address = running_set.handles["capabilities"].address
    with sync_channel(address, credentials("cli"), "capabilities") as broker:
        card = invoke(broker, "capabilities", "GetApproval", cap.GetApprovalRequest(
            actor=person, approval_id=close.approval_id)).card
    with sync_channel(address, credentials("agent"), "capabilities") as broker:
        searched = invoke(broker, "capabilities", "CallTool", cap.CallToolRequest(
            actor=person, session_id="ses_check", turn_id="t", call_id="check-4810",
            tool_id="tickets.search_tickets", arguments_json=json.dumps({"query": "1042"})), timeout=30)
    assert card.tainted and card.summary.flagged  # the person deciding sees why to be careful
    assert any(m.ref == "ticket_id 4815, line 4" and m.source == "tickets.get_ticket" for m in card.matches), \
        list(card.matches)
    assert "ticket 4810 [open]" in searched.content.text  # never closed


def test_cancelling_a_turn_cancels_what_it_asked_a_person_for(modelled_agent, running_set, credentials,
                                                              person):  # noqa: F811
    from tessera.capabilities.v1 import capabilities_pb2 as cap

    session = _open(running_set, credentials, person, "cancelme")
    asked = {}

    def cancel_once_asked(event):
        step = event.tool_step if event.WhichOneof("event") == "tool_step" else None
        if step and step.status == agent_pb2.TOOL_STEP_STATUS_AWAITING_APPROVAL and "approval" not in asked:
            asked["approval"] = step.approval_id
            with sync_channel(modelled_agent, credentials("cli"), "agent") as agent:
                invoke(agent, "agent", "CancelTurn", agent_pb2.CancelTurnRequest(actor=person,
                                                                                  turn_id=event.turn_id))

    events = _ask(modelled_agent, credentials, person, session, "cancelme: open a ticket",
                  on_event=cancel_once_asked)
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_CANCELLED and "1 request waiting for approval was cancelled" \
        in done.answer
    with sync_channel(running_set.handles["capabilities"].address, credentials("cli"), "capabilities") as broker:
        card = invoke(broker, "capabilities", "GetApproval", cap.GetApprovalRequest(
            actor=person, approval_id=asked["approval"])).card
        assert card.summary.status == common_pb2.INTENT_STATUS_CANCELLED
        with pytest.raises(grpc.RpcError) as late:
            invoke(broker, "capabilities", "Decide", cap.DecideRequest(
                actor=person, approval_id=asked["approval"], decision=cap.DECISION_APPROVE,
                arguments_sha256=card.arguments_sha256))
    assert error_details(late.value).reason == "APPROVAL_ALREADY_DECIDED"
