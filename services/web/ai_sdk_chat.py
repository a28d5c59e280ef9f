"""A turn as the AI SDK's UI message stream (POST /api/chat), so an app built on `useChat` can show Tessera.

One assistant message per turn. Its parts, from the agent's turn events and the host's surface stream:

- `start` (messageId = the turn id), then `data-surface`: the session, surface and the link that opens it;
- per tool step: `tool-input-start` and `tool-input-available` (the tool's name; its arguments are the model's
  and stay with the agent, so the input is empty), then `tool-output-available` with the step's status and
  summary, or `tool-output-error` with the summary when it failed, was unavailable or cancelled;
- `data-a2ui`: every envelope of the surface while the turn runs, its A2UI v0.9 message as the host published
  it (a snapshot first, then what the turn commits; `id` is the host's cursor); host events (approvals asked
  for, receipts) as `data-tessera-event`;
- the answer as `text-start` / `text-delta` / `text-end`; a degraded tool as `data-degraded`;
- `data-outcome` (outcome, revisions, degraded/tainted/flagged, suggested questions), then `finish`: "stop"
  when answered, "error" after an `error` part when it failed, "other" when it could not be answered or was
  cancelled. Numbers reach the app only inside A2UI data-model updates, as on Tessera's own page.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import grpc
from google.protobuf.json_format import MessageToDict

from shared.rpc.errors import error_details
from shared.ui.surface_envelopes import cursor_text
from shared.ui.windows import FIRST_WINDOWS_PATH, key_of_window
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2

HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
ANSWER_ID = "answer"
_FAILED_STEPS = {agent_pb2.TOOL_STEP_STATUS_FAILED, agent_pb2.TOOL_STEP_STATUS_UNAVAILABLE,
                 agent_pb2.TOOL_STEP_STATUS_CANCELLED}
_FINISH = {common_pb2.TURN_OUTCOME_ANSWERED: "stop", common_pb2.TURN_OUTCOME_FAILED: "error"}
# After the turn's `done`, how long the surface stream may take to deliver what the turn committed.
SURFACE_CATCH_UP_SECONDS = 10.0
DONE = "[DONE]"


def question_of(body: dict) -> str | None:
    """The text of the last user message of a `useChat` request ({messages: UIMessage[], ...}), or None."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("parts"), list):
            text = "".join(p["text"] for p in message["parts"]
                           if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
            return text.strip() or None
    return None


def _name(enum, value: int, prefix: str) -> str:
    return enum.Name(value).removeprefix(prefix).lower()


class TurnParts:
    """Turns the events of one turn and its surface's envelopes into UI message stream parts, in order."""

    def __init__(self, session_id: str, link: str) -> None:
        self.session_id, self.link = session_id, link
        self.text_open = False
        self.revisions: list[str] = []

    def turn_event(self, event: agent_pb2.StartTurnResponse) -> list[dict]:
        kind = event.WhichOneof("event")
        if kind == "started":
            return [{"type": "start", "messageId": event.started.turn_id},
                    {"type": "data-surface", "data": {"turnId": event.started.turn_id, "sessionId": self.session_id,
                                                      "surfaceId": event.started.surface_id, "link": self.link}}]
        if kind == "tool_step":
            return self._step(event.tool_step)
        if kind == "answer_delta":
            opening = [] if self.text_open else [{"type": "text-start", "id": ANSWER_ID}]
            self.text_open = True
            return [*opening, {"type": "text-delta", "id": ANSWER_ID, "delta": event.answer_delta.text}]
        if kind == "surface_committed":
            self.revisions.append(event.surface_committed.revision_id)
            return []  # its A2UI messages arrive from the surface stream
        if kind == "degraded":
            notice = event.degraded
            return [{"type": "data-degraded", "data": {"tool": notice.tool, "reason": notice.reason,
                                                       "message": notice.message}}]
        if kind == "error":
            return [self.error(event.error.reason, event.error.message)]
        if kind == "done":
            return self._done(event.done)
        return []

    def _step(self, step: agent_pb2.ToolStep) -> list[dict]:
        if step.phase == agent_pb2.TOOL_STEP_PHASE_STARTED:
            return [{"type": "start-step"},
                    {"type": "tool-input-start", "toolCallId": step.call_id, "toolName": step.tool, "dynamic": True},
                    {"type": "tool-input-available", "toolCallId": step.call_id, "toolName": step.tool,
                     "input": {}, "dynamic": True}]
        if step.status in _FAILED_STEPS:
            ended = {"type": "tool-output-error", "toolCallId": step.call_id, "errorText": step.summary or
                     _name(agent_pb2.ToolStepStatus, step.status, "TOOL_STEP_STATUS_"), "dynamic": True}
        else:
            output = {"status": _name(agent_pb2.ToolStepStatus, step.status, "TOOL_STEP_STATUS_"),
                      "summary": step.summary, "elapsedMs": round(step.elapsed.ToNanoseconds() / 1e6, 1)}
            if step.approval_id:
                output["approvalId"] = step.approval_id
            ended = {"type": "tool-output-available", "toolCallId": step.call_id, "output": output, "dynamic": True}
        return [ended, {"type": "finish-step"}]

    def envelope(self, envelope: host_pb2.SurfaceEnvelope) -> dict:
        kind = envelope.WhichOneof("payload")
        cursor = cursor_text(envelope)
        if kind == "a2ui":
            return {"type": "data-a2ui", "id": cursor, "data": {
                "cursor": cursor, "revisionId": envelope.revision_id,
                "message": json.loads(envelope.a2ui.message_json)}}
        return {"type": "data-tessera-event", "id": cursor, "data": {
            "cursor": cursor, "kind": kind, "event": MessageToDict(getattr(envelope, kind))}}

    def error(self, reason: str, message: str) -> dict:
        return {"type": "error", "errorText": f"{reason}: {message}" if message else reason}

    def _done(self, done: agent_pb2.TurnDone) -> list[dict]:
        parts = []
        if done.answer and not self.text_open:
            parts += [{"type": "text-start", "id": ANSWER_ID}, {"type": "text-delta", "id": ANSWER_ID,
                                                               "delta": done.answer}]
            self.text_open = True
        if self.text_open:
            parts.append({"type": "text-end", "id": ANSWER_ID})
        parts.append({"type": "data-outcome", "data": {
            "outcome": _name(common_pb2.TurnOutcome, done.outcome, "TURN_OUTCOME_"),
            "revisionIds": list(done.revision_ids), "degraded": done.degraded, "tainted": done.tainted,
            "flagged": done.flagged, "suggestedQuestions": list(done.suggested_questions)}})
        return parts

    @staticmethod
    def finish(outcome: int | None) -> dict:
        return {"type": "finish", "finishReason": _FINISH.get(outcome, "other")}


async def turn_parts(agent, host, turn: agent_pb2.StartTurnRequest, subscribe: host_pb2.SubscribeRequest,
                     parts: TurnParts) -> AsyncIterator[dict | str]:
    """The turn's parts, merged with its surface's envelopes, ending with `finish` and DONE. Leaving early (the
    client went away) cancels the turn and the subscription."""
    queue: asyncio.Queue[tuple[str, object]] = asyncio.Queue()
    turn_stream, surface_stream = agent.StartTurn(turn, timeout=300), host.Subscribe(subscribe)

    async def pump(kind: str, stream, items) -> None:
        try:
            async for reply in stream:
                for item in items(reply):
                    await queue.put((kind, item))
            await queue.put((f"{kind}-ended", None))
        except grpc.aio.AioRpcError as exc:
            await queue.put((f"{kind}-failed", exc))

    pumps = [asyncio.create_task(pump("turn", turn_stream, lambda event: [event])),
             asyncio.create_task(pump("surface", surface_stream, lambda reply: [reply.envelope, *reply.following]))]
    merged = _Merge(parts)
    try:
        while not merged.finished():
            try:
                kind, item = await asyncio.wait_for(queue.get(), SURFACE_CATCH_UP_SECONDS if merged.done else None)
            except TimeoutError:
                break  # the surface did not catch up: what it committed is on the surface stream all the same
            for part in merged.take(kind, item):
                yield part
        yield parts.finish(merged.outcome)
        yield DONE
    finally:
        for task in pumps:
            task.cancel()
        turn_stream.cancel()
        surface_stream.cancel()


class _Merge:
    """Which of the two streams' items become parts, and when the message is complete."""

    def __init__(self, parts: TurnParts) -> None:
        self.parts = parts
        self.started = self.done = self.surface_gone = False
        self.outcome: int | None = None
        self.pending: list[host_pb2.SurfaceEnvelope] = []  # envelopes that came before the turn started
        self.delivered: set[str] = set()  # revisions whose envelopes were sent
        # The first windows the host said it is sending (`/firstWindows`) and that have not arrived yet: the
        # message is complete only with the rows its tables open with.
        self.windows_coming: set[str] = set()

    def finished(self) -> bool:
        return self.done and (self.surface_gone or (set(self.parts.revisions) <= self.delivered
                                                    and not self.windows_coming))

    def take(self, kind: str, item) -> list[dict]:
        if kind == "turn":
            out = self.parts.turn_event(item)
            if item.WhichOneof("event") == "started":
                self.started = True
                out += [self._envelope(e) for e in self.pending]
                self.pending.clear()
            elif item.WhichOneof("event") == "done":
                self.done, self.outcome = True, item.done.outcome
            return out
        if kind == "surface":
            if not self.started:
                self.pending.append(item)
                return []
            return [self._envelope(item)]
        if kind in ("turn-failed", "turn-ended") and not self.done:  # no `done`: the turn could not run or broke
            # The agent's refusal as it gave it; an agent nobody reached, in words (shared.rpc.errors).
            told = error_details(item, "agent") if item is not None else None
            reason, message = (told.reason, told.message) if told else ("TURN_BROKEN", "the turn ended early")
            opening = [] if self.started else [{"type": "start"}]
            self.started = self.done = True
            self.outcome = common_pb2.TURN_OUTCOME_FAILED
            return [*opening, self.parts.error(reason, message)]
        if kind in ("surface-failed", "surface-ended"):
            self.surface_gone = True
        return []

    def _envelope(self, envelope: host_pb2.SurfaceEnvelope) -> dict:
        self.delivered.add(envelope.revision_id)
        part = self.parts.envelope(envelope)
        update = part["data"].get("message", {}).get("updateDataModel") if part["type"] == "data-a2ui" else None
        if update is not None:
            path, value = str(update.get("path", "")), update.get("value")
            if path == FIRST_WINDOWS_PATH and isinstance(value, list):  # what is coming now, and only that
                self.windows_coming = {str(key) for key in value}
            else:
                self.windows_coming.discard(key_of_window(path, value))
        return part
