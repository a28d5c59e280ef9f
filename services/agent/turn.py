"""One turn: begin it at the host, let the model (the embedded planner) call tools through the
bridge, and stream what happens as turn events. Events carry names, counts and ids, never rows."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
from google.protobuf.duration_pb2 import Duration

from services.agent.chat import ChatAdapter
from services.agent.chat_planner import ChatPlanner
from services.agent.planner import EmbeddedPlanner
from services.agent.tools import TurnState, build_tools
from shared.actors import Actor
from shared.errors import TesseraError, error_details
from shared.tool_bridge import ToolBridge, ToolResult
from tessera.agent.v1 import agent_pb2
from tessera.host.v1 import host_pb2

MAX_QUESTION_CHARS = 2_000


def _duration(seconds: float) -> Duration:
    duration = Duration()
    duration.FromNanoseconds(int(seconds * 1e9))
    return duration


def _summary(result: ToolResult) -> str:
    if not result.ok:
        return f"{result.error_code}: {result.error_message}"[:200]
    content = result.content or {}
    if "entities" in content:
        return f"{len(content['entities'])} entities"
    if "resource" in content:
        return f"{content['resource']['rows']} rows"
    if "slice" in content:
        return f"{len(content['slice']['components'])} components offered"
    if "outcome" in content:
        return f"{content['outcome']} {content.get('revision', '')}".strip()
    return "ok"


@dataclass
class RunningTurn:
    actor_id: str
    tenant_id: str
    task: asyncio.Task | None = None
    cancel_requested: bool = False


async def run_turn(request: agent_pb2.StartTurnRequest, resources, host, actor: Actor,
                   running: dict[str, RunningTurn], chat: ChatAdapter | None = None) -> AsyncIterator:
    started_at = time.perf_counter()
    if not request.question or len(request.question) > MAX_QUESTION_CHARS:
        raise TesseraError(grpc.StatusCode.INVALID_ARGUMENT, "QUESTION_INVALID",
                           f"a question is 1-{MAX_QUESTION_CHARS} characters")
    try:
        begun = await host.BeginTurn(host_pb2.BeginTurnRequest(
            actor=request.actor, session_id=request.session_id, question=request.question,
            request_id=request.request_id or f"turn-{time.time_ns()}"), timeout=30)
    except grpc.aio.AioRpcError as exc:
        details = error_details(exc)
        raise TesseraError(exc.code(), details.reason or "HOST_REFUSED", details.message) from None
    state = TurnState(request.actor, request.session_id, begun.turn_id, begun.surface_id, begun.base_revision_id)
    events: asyncio.Queue = asyncio.Queue()
    sequence = 0

    def event(**payload) -> agent_pb2.StartTurnResponse:
        nonlocal sequence
        sequence += 1
        response = agent_pb2.StartTurnResponse(turn_id=state.turn_id, sequence=sequence, **payload)
        response.at.GetCurrentTime()
        return response

    yield event(started=agent_pb2.TurnStarted(turn_id=state.turn_id, surface_id=state.surface_id,
                                              base_revision_id=state.base_revision_id))
    calls = 0

    async def call(tool: str, arguments: dict) -> ToolResult:
        nonlocal calls
        calls += 1
        return await call_raw(f"call-{calls}", tool, json.dumps(arguments))

    async def call_raw(call_id: str, tool: str, arguments_json: str) -> ToolResult:
        await events.put(event(tool_step=agent_pb2.ToolStep(
            call_id=call_id, tool=tool, phase=agent_pb2.TOOL_STEP_PHASE_STARTED,
            status=agent_pb2.TOOL_STEP_STATUS_RUNNING)))
        begun_at = time.perf_counter()
        result = await bridge.call(call_id, tool, arguments_json)
        if result is None:  # the bridge was closed (turn cancelled): nothing more reaches the model
            raise asyncio.CancelledError
        await events.put(event(tool_step=agent_pb2.ToolStep(
            call_id=call_id, tool=tool, phase=agent_pb2.TOOL_STEP_PHASE_FINISHED,
            status=agent_pb2.TOOL_STEP_STATUS_OK if result.ok else agent_pb2.TOOL_STEP_STATUS_FAILED,
            elapsed=_duration(time.perf_counter() - begun_at), summary=_summary(result))))
        for committed in state.commit_events:
            await events.put(event(surface_committed=agent_pb2.SurfaceCommitted(
                surface_id=state.surface_id, revision_id=committed.revision_id,
                content_hash=committed.content_hash, diagnostics=committed.diagnostics)))
        state.commit_events.clear()
        return result

    tools = build_tools(state, resources, host)
    bridge = ToolBridge(tools)
    if chat is None:
        task = asyncio.create_task(EmbeddedPlanner().run(request.question, call))
    else:
        planner = ChatPlanner(chat, [t.contract for t in tools])
        task = asyncio.create_task(planner.run(request.question, call_raw, lambda: bool(state.revisions)))
    record = running[state.turn_id] = RunningTurn(actor.actor_id, actor.tenant_id, task)
    try:
        while not (task.done() and events.empty()):
            getter = asyncio.create_task(events.get())
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield getter.result()
            else:
                getter.cancel()
        plan = task.result()
    except asyncio.CancelledError:
        bridge.close()
        task.cancel()
        running.pop(state.turn_id, None)
        if not record.cancel_requested:
            raise  # the client went away: nobody to tell
        yield event(done=agent_pb2.TurnDone(outcome=agent_pb2.TURN_OUTCOME_CANCELLED, revision_ids=state.revisions,
                                            answer="The turn was cancelled.",
                                            elapsed=_duration(time.perf_counter() - started_at)))
        return
    except Exception as exc:  # the planner failed: report it, commit nothing more
        bridge.close()
        running.pop(state.turn_id, None)
        yield event(error=agent_pb2.TurnError(reason="PLANNER_FAILED", message=type(exc).__name__))
        yield event(done=agent_pb2.TurnDone(outcome=agent_pb2.TURN_OUTCOME_FAILED, revision_ids=state.revisions,
                                            elapsed=_duration(time.perf_counter() - started_at)))
        return
    bridge.close()
    running.pop(state.turn_id, None)
    yield event(answer_delta=agent_pb2.AnswerDelta(text=plan.answer))
    yield event(done=agent_pb2.TurnDone(
        outcome=agent_pb2.TURN_OUTCOME_ANSWERED if plan.answered else agent_pb2.TURN_OUTCOME_NOT_ANSWERABLE,
        answer=plan.answer, revision_ids=state.revisions, elapsed=_duration(time.perf_counter() - started_at)))
