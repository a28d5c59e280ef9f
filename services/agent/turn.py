"""One turn: begin it at the host, let the model (the embedded planner) call tools through the
bridge, and stream what happens as turn events. Events carry names, counts and ids, never rows."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass

import grpc
from google.protobuf.duration_pb2 import Duration

from services.agent.chat import ChatAdapter, ChatError
from services.agent.chat_planner import ChatPlanner
from services.agent.contracts import MAX_REFUSALS, MAX_REPAIRS
from services.agent.embedded_planner import EmbeddedPlanner, Plan
from services.agent.external_tools import build_external_tools, list_external
from services.agent.peers import Peers
from services.agent.tool_bridge import Tool, ToolBridge
from services.agent.tools import TurnState, build_tools, model_message
from shared.identity.actors import Actor
from shared.rpc.errors import SERVICE_FAILED, SERVICE_STOPPED, error_details, relayed
from shared.rpc.field_rules import max_chars, stated
from shared.rpc.next_steps import metadata
from shared.tools.tool_results import ToolResult, refused
from tessera.agent.v1 import agent_pb2
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tessera.rules.v1 import rules_pb2

logger = logging.getLogger("tessera.agent.turn")
# Failures that are not the model's doing: they do not spend the turn's refusal budget.
_NOT_THE_MODELS = {SERVICE_FAILED, "TOOL_FAILED", "INTERNAL", "UNKNOWN", "CANCELLED", "TURN_BUDGET_SPENT"}
# What the host keeps of a turn's end (host.proto, FinishTurnRequest): an answer is cut to its bound; a suggestion
# over a question's bound is left out, never the whole record refused for it.
MAX_ANSWER_CHARS = max_chars(rules_pb2.TEXT_KIND_ANSWER)
MAX_SUGGESTION_CHARS = max_chars(rules_pb2.TEXT_KIND_QUESTION)
MAX_SUGGESTIONS_KEPT = stated(host_pb2.FinishTurnRequest, "suggested_questions", "max_items")


def _unavailable(reason: str) -> bool:
    """A failure that means "the peer is not there" (nobody answered, a service that stopped, or a service's
    own *_UNAVAILABLE: its database, its peer, a tool), as opposed to a refusal the model can act on."""
    return reason.endswith("_UNAVAILABLE") or reason == SERVICE_STOPPED


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
    """Append-only JSONL of each turn as the model lived it, when configured: one record per line,
    `{"turn_id", "kind", "text"}`, in order: `question`; per tool call `call:<tool>` (the arguments JSON the model
    wrote, with its `call_id`) then `result:<tool>` (the result exactly as handed to the model, same `call_id`);
    and `answer`, the model's final words.

    It exists so the no-payload property can be checked over real turns (the results are exactly what the model
    saw, which by design carries no rows) and so an eval can keep and replay what each turn did.
    """

    def __init__(self, path: str) -> None:
        self._path = path

    def record(self, turn_id: str, kind: str, text: str, call_id: str = "") -> None:
        if self._path:
            entry = {"turn_id": turn_id, "kind": kind, "text": text} | ({"call_id": call_id} if call_id else {})
            with open(self._path, "a", encoding="utf-8") as out:
                out.write(json.dumps(entry) + "\n")


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
        waiting = f" ({', '.join(state.awaiting_approval)})" if state.awaiting_approval else ""
        return (f" Its requests waiting for approval{waiting} could not be cancelled "
                f"({error_details(exc, 'capabilities').message}); reject them.")
    count = len(reply.receipts)
    return f" {count} request{'s' if count != 1 else ''} waiting for approval {'were' if count != 1 else 'was'} " \
           "cancelled too." if count else ""


@dataclass
class RunningTurn:
    actor_id: str
    tenant_id: str
    task: asyncio.Task | None = None
    cancel_requested: bool = False


async def begin_turn(request: agent_pb2.StartTurnRequest, host) -> host_pb2.BeginTurnResponse:
    """The turn begun at the host (the question's bounds are the contract's, agent.proto), or the RPC refused."""
    try:
        return await host.BeginTurn(host_pb2.BeginTurnRequest(
            actor=request.actor, session_id=request.session_id, question=request.question,
            request_id=request.request_id or f"turn-{time.time_ns()}"), timeout=30)
    except grpc.aio.AioRpcError as exc:  # the host's refusal as it gave it; a host nobody reached, in words
        raise relayed(exc, "host") from None


async def run_turn(request: agent_pb2.StartTurnRequest, peers: Peers, actor: Actor,
                   running: dict[str, RunningTurn], chat: ChatAdapter | None = None,
                   transcript: ModelTranscript | None = None) -> AsyncIterator[agent_pb2.StartTurnResponse]:
    """One turn's events, from `started` to `done` (refusals before the turn begins are raised)."""
    started_at = time.perf_counter()
    begun = await begin_turn(request, peers.host)
    turn = Turn(request.question, begun, TurnState(request.actor, request.session_id, begun.turn_id,
                                                   begun.surface_id, begun.base_revision_id),
                peers, started_at, transcript or ModelTranscript(""))
    async for response in turn.run(actor, running, chat):
        yield response


class Turn:
    """One begun turn: it relays what the planner's tool calls do as events, in order, and ends with `done`."""

    def __init__(self, question: str, begun: host_pb2.BeginTurnResponse, state: TurnState, peers: Peers,
                 started_at: float, transcript: ModelTranscript) -> None:
        self.question, self.begun, self.state, self.peers = question, begun, state, peers
        self.started_at, self.transcript = started_at, transcript
        self.events: asyncio.Queue[agent_pb2.StartTurnResponse] = asyncio.Queue()
        self.sequence = 0
        self.calls = 0
        self.reported_give_up = False
        self.reported_spent = False
        self.bridge = ToolBridge([])
        self.record = RunningTurn("", "")
        self.embedded: EmbeddedPlanner | None = None

    def event(self, **payload) -> agent_pb2.StartTurnResponse:
        self.sequence += 1
        response = agent_pb2.StartTurnResponse(turn_id=self.state.turn_id, sequence=self.sequence, **payload)
        response.at.GetCurrentTime()
        return response

    def elapsed(self) -> Duration:
        return _duration(time.perf_counter() - self.started_at)

    async def run(self, actor: Actor, running: dict[str, RunningTurn],
                  chat: ChatAdapter | None) -> AsyncIterator[agent_pb2.StartTurnResponse]:
        state = self.state
        yield self.event(started=agent_pb2.TurnStarted(turn_id=state.turn_id, surface_id=state.surface_id,
                                                       base_revision_id=state.base_revision_id))
        self.transcript.record(state.turn_id, "question", self.question)
        tools = await self._tools()
        record = self.record = RunningTurn(actor.actor_id, actor.tenant_id)
        task = record.task = asyncio.create_task(self._planner_run(chat, tools))
        running[state.turn_id] = record
        try:
            while not (task.done() and self.events.empty()):
                getter = asyncio.create_task(self.events.get())
                done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                else:
                    getter.cancel()
            ending = self._answered(task.result())
        except asyncio.CancelledError:
            if not record.cancel_requested:
                raise  # the client went away: nobody to tell
            ending = self._cancelled()
        except Exception as exc:  # the model or the planner failed: report it, commit nothing more
            ending = self._failed(exc)
        finally:  # nothing more reaches the model, and the turn can no longer be cancelled
            self.bridge.close()
            task.cancel()
            running.pop(state.turn_id, None)
        async for response in ending:
            if response.WhichOneof("event") == "done":
                await self.record_end(response.done)
            yield response

    async def _tools(self) -> list[Tool]:
        """The tools of this turn: the six data tools and the broker's, all through one bridge."""
        external = await list_external(self.state, self.peers.capabilities)
        self.state.external_tools = [t.tool_id for t in external]
        peers = self.peers
        tools = build_tools(self.state, peers.resources, peers.host, peers.ready, peers.capabilities) + \
            build_external_tools(self.state, peers.capabilities, external)
        self.bridge = ToolBridge(tools)
        return tools

    def use_data_tools_only(self) -> None:
        """The six data tools and nothing else (an outside model's turn: the broker's tools are not offered)."""
        peers = self.peers
        self.bridge = ToolBridge(build_tools(self.state, peers.resources, peers.host, peers.ready,
                                             peers.capabilities))

    def _planner_run(self, chat: ChatAdapter | None, tools: list[Tool]) -> Coroutine[object, object, Plan]:
        """The planner's run over the tools: the embedded one, or the configured model's."""
        earlier = [t.question for t in self.begun.earlier_turns]
        if chat is None:
            self.embedded = EmbeddedPlanner(earlier)
            return self.embedded.run(self.question, self.call)
        planner = ChatPlanner(chat, [t.contract for t in tools], earlier_questions=earlier)
        return planner.run(self.question, self.call_raw, lambda: bool(self.state.revisions), self.budget_spent)

    def follows(self) -> str:
        """The earlier turn this one refines: the latest asked with the question the embedded planner read this
        one against ("" none, or a model's turn: which one it leaned on is not known)."""
        question = self.embedded.follows if self.embedded is not None else None
        return next((t.turn_id for t in reversed(self.begun.earlier_turns) if t.question == question), "")

    async def record_end(self, done: agent_pb2.TurnDone) -> None:
        """How the turn ended, kept by the host for the person's thread. A record that cannot be kept loses
        nothing the person was shown: the thread says the turn has no record of how it ended."""
        try:
            await self.peers.host.FinishTurn(host_pb2.FinishTurnRequest(
                turn_id=self.state.turn_id, outcome=done.outcome, answer=done.answer[:MAX_ANSWER_CHARS],
                suggested_questions=[q for q in done.suggested_questions if 0 < len(q) <= MAX_SUGGESTION_CHARS][
                    :MAX_SUGGESTIONS_KEPT], follows_turn_id=self.follows()), timeout=10)
        except grpc.aio.AioRpcError as exc:
            logger.warning("the turn's end was not recorded at the host: %s", error_details(exc, "host").reason,
                           extra={"fields": {"turn_id": self.state.turn_id}})

    async def call(self, tool: str, arguments: dict) -> ToolResult:
        """A call of the embedded planner, which numbers its calls."""
        self.calls += 1
        return await self.call_raw(f"call-{self.calls}", tool, json.dumps(arguments))

    async def call_raw(self, call_id: str, tool: str, arguments_json: str) -> ToolResult:
        """One tool call through the bridge, reported as a started and a finished step."""
        self.transcript.record(self.state.turn_id, f"call:{tool}", arguments_json, call_id)
        await self.events.put(self.event(tool_step=agent_pb2.ToolStep(
            call_id=call_id, tool=tool, phase=agent_pb2.TOOL_STEP_PHASE_STARTED,
            status=agent_pb2.TOOL_STEP_STATUS_RUNNING)))
        begun_at = time.perf_counter()
        if self.budget_spent():  # refused before any work: the turn has had its refusals
            result = refused(call_id, tool, "TURN_BUDGET_SPENT", f"{MAX_REFUSALS} calls of this turn were refused; "
                             f"it takes no more", metadata("", bound=MAX_REFUSALS))
        else:
            result = await self.bridge.call(call_id, tool, arguments_json)
        if result is None or self.record.cancel_requested:
            # The turn was cancelled (its bridge closed, or the call cut short): nothing more reaches the model.
            raise asyncio.CancelledError
        if not result.ok and result.error_code not in _NOT_THE_MODELS and not _unavailable(result.error_code):
            self.state.refusals += 1
            self.state.last_refusal = f"{result.error_code} at {result.pointer or 'the call'}: {result.error_message}"
        status, approval_id = _step_status(result)
        if status == agent_pb2.TOOL_STEP_STATUS_UNAVAILABLE:
            self.state.mark_unavailable(tool, f"{result.error_code.lower()}: {result.error_message}"[:200])
        await self.events.put(self.event(tool_step=agent_pb2.ToolStep(
            call_id=call_id, tool=tool, phase=agent_pb2.TOOL_STEP_PHASE_FINISHED, status=status,
            elapsed=_duration(time.perf_counter() - begun_at), summary=_summary(result), approval_id=approval_id)))
        await self._report_state()
        self.transcript.record(self.state.turn_id, f"result:{tool}", model_message(result), call_id)
        for committed in self.state.commit_events:
            await self.events.put(self.event(surface_committed=agent_pb2.SurfaceCommitted(
                surface_id=self.state.surface_id, revision_id=committed.revision_id,
                content_hash=committed.content_hash, diagnostics=committed.diagnostics)))
        self.state.commit_events.clear()
        return result

    def budget_spent(self) -> bool:
        return self.state.refusals >= MAX_REFUSALS

    async def _report_state(self) -> None:
        """What the call changed for the whole turn: tools now unavailable, giving up on repairs and the refusal
        budget spent (each once)."""
        for unavailable, reason in self.state.new_notices:
            await self.events.put(self.event(degraded=agent_pb2.DegradedNotice(
                tool=unavailable, reason="TOOL_UNAVAILABLE", message=reason)))
        self.state.new_notices.clear()
        if self.state.gave_up and not self.reported_give_up:
            self.reported_give_up = True
            await self.events.put(self.event(error=agent_pb2.TurnError(
                reason="REPAIR_LIMIT_REACHED", retryable=False,
                message=f"the proposal still had errors after {MAX_REPAIRS} repairs; the last good surface stays")))
        if self.budget_spent() and not self.reported_spent:
            self.reported_spent = True
            await self.events.put(self.event(error=agent_pb2.TurnError(
                reason="TURN_BUDGET_SPENT", retryable=False, message=self._spent_words())))

    def _spent_words(self) -> str:
        return f"the model's calls were refused {MAX_REFUSALS} times, so the turn stopped (the last: " \
               f"{self.state.last_refusal})"[:500]

    async def _answered(self, plan: Plan) -> AsyncIterator[agent_pb2.StartTurnResponse]:
        state = self.state
        self.transcript.record(state.turn_id, "answer", plan.answer)
        answer = plan.answer
        if state.gave_up:
            answer = f"{answer} I could not produce a valid display after {MAX_REPAIRS} repairs.".strip()
        if self.budget_spent():  # the person is told why the turn stopped, whatever the model wrote
            answer = f"{answer} I stopped: {self._spent_words()}.".strip()
        answer = _with_unavailable(answer, state.degraded)
        if plan.answered and not state.gave_up and not self.budget_spent():
            outcome = common_pb2.TURN_OUTCOME_ANSWERED
        elif state.gave_up or self.budget_spent():
            outcome = common_pb2.TURN_OUTCOME_FAILED
        else:
            outcome = common_pb2.TURN_OUTCOME_NOT_ANSWERABLE
        yield self.event(answer_delta=agent_pb2.AnswerDelta(text=answer))
        yield self.event(done=agent_pb2.TurnDone(
            outcome=outcome, answer=answer, revision_ids=state.revisions, degraded=bool(state.degraded),
            tainted=state.tainted, flagged=state.flagged, elapsed=self.elapsed(),
            suggested_questions=plan.suggestions[:3]))

    async def _cancelled(self) -> AsyncIterator[agent_pb2.StartTurnResponse]:
        # What it asked for must not be approved and run later: asked whatever this process saw, since a
        # request cut short by the cancel may have reached the broker without its approval id coming back.
        answer = "The turn was cancelled." + await _cancel_requests(self.peers.capabilities, self.state)
        yield self.event(done=agent_pb2.TurnDone(outcome=common_pb2.TURN_OUTCOME_CANCELLED,
                                                 revision_ids=self.state.revisions, answer=answer,
                                                 elapsed=self.elapsed()))

    async def _failed(self, exc: Exception) -> AsyncIterator[agent_pb2.StartTurnResponse]:
        if isinstance(exc, ChatError):
            error = agent_pb2.TurnError(reason=f"MODEL_{exc.code}", message=exc.message[:500],
                                        retryable=exc.code in ("STREAM_BROKEN", "HTTP_429", "HTTP_503"))
        else:  # what failed goes to the log; the person is told the turn could not go on
            logger.error("the planner failed", exc_info=exc, extra={"fields": {"turn_id": self.state.turn_id}})
            error = agent_pb2.TurnError(reason="PLANNER_FAILED", message=(
                "the turn failed inside Tessera's agent; try again, and tell whoever runs Tessera if it keeps "
                "happening"))
        yield self.event(error=error)
        state = self.state
        yield self.event(done=agent_pb2.TurnDone(
            outcome=common_pb2.TURN_OUTCOME_FAILED, answer=f"The question failed: {error.message}",
            revision_ids=state.revisions, degraded=bool(state.degraded), tainted=state.tainted, flagged=state.flagged,
            elapsed=self.elapsed()))


def _step_status(result: ToolResult) -> tuple[int, str]:
    """A finished step's status, and the approval it waits for (if any)."""
    if result.ok and isinstance(result.content, dict) and result.content.get("status") == "awaiting-approval":
        return agent_pb2.TOOL_STEP_STATUS_AWAITING_APPROVAL, result.content["approval_id"]
    if result.ok:
        return agent_pb2.TOOL_STEP_STATUS_OK, ""
    if _unavailable(result.error_code):
        return agent_pb2.TOOL_STEP_STATUS_UNAVAILABLE, ""
    return agent_pb2.TOOL_STEP_STATUS_FAILED, ""
