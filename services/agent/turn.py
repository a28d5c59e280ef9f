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

from services.agent.chat import ChatAdapter, ChatError
from services.agent.chat_planner import ChatPlanner
from services.agent.external_tools import build_external_tools, list_external
from services.agent.planner import EmbeddedPlanner
from services.agent.tools import MAX_REPAIRS, PeerReadiness, TurnState, build_tools, model_message
from shared.actors import Actor
from shared.errors import TesseraError, error_details
from shared.tool_bridge import ToolBridge, ToolResult
from tessera.agent.v1 import agent_pb2
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.host.v1 import host_pb2

MAX_QUESTION_CHARS = 2_000
# Failures that mean "the peer is not there", as opposed to a refusal the model can act on.
_UNAVAILABLE_CODES = {"UNAVAILABLE", "DEADLINE_EXCEEDED", "TOOL_UNAVAILABLE"}


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
    if "untrusted_data" in content:
        data = content["untrusted_data"]
        flags = f", flagged: {', '.join(data['flags'])}" if data.get("flags") else ""
        return f"{len(data['text'])} characters of external data from {data['source']}{flags}"[:200]
    if content.get("status") == "awaiting-approval":
        return f"awaiting approval {content['approval_id']}"
    return "ok"


class ModelTranscript:
    """Append-only JSONL of everything handed to the model (question and tool results), when configured.

    It exists so the no-payload property can be checked over real turns: it holds
    exactly what the model saw, which by design carries no rows.
    """

    def __init__(self, path: str) -> None:
        self._path = path

    def record(self, turn_id: str, kind: str, text: str) -> None:
        if self._path:
            with open(self._path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"turn_id": turn_id, "kind": kind, "text": text}) + "\n")


def _with_unavailable(answer: str, degraded: dict[str, str]) -> str:
    """The final answer names every unavailable tool, whatever the model wrote."""
    missing = [tool for tool in degraded if tool not in answer]
    if not missing:
        return answer
    return f"{answer} (Unavailable this turn: {', '.join(missing)}.)".strip()


async def _cancel_requests(capabilities, state: TurnState) -> str:
    """Cancel the turn's requests still waiting for a person; a sentence for the answer."""
    try:
        reply = await capabilities.CancelIntents(cap.CancelIntentsRequest(
            actor=state.actor, session_id=state.session_id, turn_id=state.turn_id), timeout=10)
    except grpc.aio.AioRpcError as exc:
        return (f" Its requests waiting for approval ({', '.join(state.awaiting_approval)}) could not be "
                f"cancelled ({exc.code().name}); reject them.")
    count = len(reply.receipts)
    return f" {count} request{'s' if count != 1 else ''} waiting for approval {'were' if count != 1 else 'was'} " \
           "cancelled too." if count else ""


@dataclass
class RunningTurn:
    actor_id: str
    tenant_id: str
    task: asyncio.Task | None = None
    cancel_requested: bool = False


async def run_turn(request: agent_pb2.StartTurnRequest, resources, host, capabilities, actor: Actor,
                   running: dict[str, RunningTurn], peers_ready: PeerReadiness, chat: ChatAdapter | None = None,
                   transcript: ModelTranscript | None = None) -> AsyncIterator:
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
    transcript = transcript or ModelTranscript("")
    transcript.record(state.turn_id, "question", request.question)
    reported_give_up = False

    async def call(tool: str, arguments: dict) -> ToolResult:
        nonlocal calls
        calls += 1
        return await call_raw(f"call-{calls}", tool, json.dumps(arguments))

    async def call_raw(call_id: str, tool: str, arguments_json: str) -> ToolResult:
        await events.put(event(tool_step=agent_pb2.ToolStep(
            call_id=call_id, tool=tool, phase=agent_pb2.TOOL_STEP_PHASE_STARTED,
            status=agent_pb2.TOOL_STEP_STATUS_RUNNING)))
        nonlocal reported_give_up
        begun_at = time.perf_counter()
        result = await bridge.call(call_id, tool, arguments_json)
        if result is None:  # the bridge was closed (turn cancelled): nothing more reaches the model
            raise asyncio.CancelledError
        status = agent_pb2.TOOL_STEP_STATUS_OK if result.ok else agent_pb2.TOOL_STEP_STATUS_FAILED
        approval_id = ""
        if result.ok and isinstance(result.content, dict) and result.content.get("status") == "awaiting-approval":
            status, approval_id = agent_pb2.TOOL_STEP_STATUS_AWAITING_APPROVAL, result.content["approval_id"]
        if not result.ok and result.error_code in _UNAVAILABLE_CODES:
            status = agent_pb2.TOOL_STEP_STATUS_UNAVAILABLE
            state.mark_unavailable(tool, f"{result.error_code.lower()}: {result.error_message}"[:200])
        await events.put(event(tool_step=agent_pb2.ToolStep(
            call_id=call_id, tool=tool, phase=agent_pb2.TOOL_STEP_PHASE_FINISHED, status=status,
            elapsed=_duration(time.perf_counter() - begun_at), summary=_summary(result), approval_id=approval_id)))
        for unavailable, reason in state.new_notices:
            await events.put(event(degraded=agent_pb2.DegradedNotice(
                tool=unavailable, reason="TOOL_UNAVAILABLE", message=reason)))
        state.new_notices.clear()
        if state.gave_up and not reported_give_up:
            reported_give_up = True
            await events.put(event(error=agent_pb2.TurnError(
                reason="REPAIR_LIMIT_REACHED", retryable=False,
                message=f"the proposal still had errors after {MAX_REPAIRS} repairs; the last good surface stays")))
        transcript.record(state.turn_id, f"result:{tool}", model_message(result))
        for committed in state.commit_events:
            await events.put(event(surface_committed=agent_pb2.SurfaceCommitted(
                surface_id=state.surface_id, revision_id=committed.revision_id,
                content_hash=committed.content_hash, diagnostics=committed.diagnostics)))
        state.commit_events.clear()
        return result

    external = await list_external(state, capabilities)
    state.external_tools = [t.tool_id for t in external]
    tools = build_tools(state, resources, host, peers_ready, capabilities) + build_external_tools(
        state, capabilities, external)
    bridge = ToolBridge(tools)
    if chat is None:
        task = asyncio.create_task(EmbeddedPlanner(list(begun.earlier_questions)).run(request.question, call))
    else:
        planner = ChatPlanner(chat, [t.contract for t in tools], earlier_questions=list(begun.earlier_questions))
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
        answer = "The turn was cancelled."
        if state.awaiting_approval:  # what it asked for must not be approved and run later
            answer += await _cancel_requests(capabilities, state)
        yield event(done=agent_pb2.TurnDone(outcome=agent_pb2.TURN_OUTCOME_CANCELLED, revision_ids=state.revisions,
                                            answer=answer, elapsed=_duration(time.perf_counter() - started_at)))
        return
    except Exception as exc:  # the model or the planner failed: report it, commit nothing more
        bridge.close()
        running.pop(state.turn_id, None)
        if isinstance(exc, ChatError):
            yield event(error=agent_pb2.TurnError(reason=f"MODEL_{exc.code}", message=exc.message[:500],
                                                  retryable=exc.code in ("STREAM_BROKEN", "HTTP_429", "HTTP_503")))
        else:
            yield event(error=agent_pb2.TurnError(reason="PLANNER_FAILED", message=type(exc).__name__))
        yield event(done=agent_pb2.TurnDone(outcome=agent_pb2.TURN_OUTCOME_FAILED, revision_ids=state.revisions,
                                            degraded=bool(state.degraded), tainted=state.tainted,
                                            flagged=state.flagged,
                                            elapsed=_duration(time.perf_counter() - started_at)))
        return
    bridge.close()
    running.pop(state.turn_id, None)
    answer = plan.answer
    if state.gave_up:
        answer = f"{answer} I could not produce a valid display after {MAX_REPAIRS} repairs.".strip()
    answer = _with_unavailable(answer, state.degraded)
    if plan.answered and not state.gave_up:
        outcome = agent_pb2.TURN_OUTCOME_ANSWERED
    elif state.gave_up:
        outcome = agent_pb2.TURN_OUTCOME_FAILED
    else:
        outcome = agent_pb2.TURN_OUTCOME_NOT_ANSWERABLE
    yield event(answer_delta=agent_pb2.AnswerDelta(text=answer))
    yield event(done=agent_pb2.TurnDone(outcome=outcome, answer=answer, revision_ids=state.revisions,
                                        degraded=bool(state.degraded), tainted=state.tainted, flagged=state.flagged,
                                        elapsed=_duration(time.perf_counter() - started_at),
                                        suggested_questions=plan.suggestions[:3]))
