"""An outside agent's turns, held open at the agent (agent.ServeTools) on the person's behalf.

An MCP client has no notion of a Tessera turn: it just calls tools. A turn begins at the first call,
and a new one begins where the built-in model begins a question (inspect_current_context or
inspect_catalog) once the turn has presented an answer, or after the turn sat idle. Probe and repair
budgets are a turn's, exactly as for the built-in model.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass

import grpc

from shared.rpc.errors import error_details
from shared.rpc.field_rules import max_chars
from shared.rpc.refusals import Refusal
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tessera.rules.v1 import rules_pb2

# The tools the built-in model opens a question with: after an answer, they begin a new turn.
QUESTION_OPENERS = frozenset({"inspect_current_context", "inspect_catalog"})
MAX_QUESTION_CHARS = max_chars(rules_pb2.TEXT_KIND_QUESTION)  # the contract's (rules.proto)


class TurnUnavailable(Refusal):
    """The agent refused or could not serve the turn: a reason and a message an outside model can read."""


@dataclass
class CallOutcome:
    ok: bool
    model_message: dict  # exactly what the agent hands a model


def question_of(tool: str, arguments: dict, client: str) -> str:
    """What the turn is about: the question the outside model asked the catalog, or who asked."""
    question = arguments.get("question") if tool == "inspect_catalog" else None
    if isinstance(question, str) and 0 < len(question) <= MAX_QUESTION_CHARS:
        return question
    return f"(asked through {client})"[:MAX_QUESTION_CHARS]


class OutsideTurn:
    """One ServeTools stream: opened with the person's assertion, then one call at a time."""

    def __init__(self, agent) -> None:
        self._agent = agent
        self._call = None
        self.turn_id = ""
        self.calls = 0
        self.answered = False  # a revision was committed and the last proposal needs no repair
        self.spent = False  # the agent refuses every further call of this turn (its refusal budget is spent)
        self.opened_at = self.last_used = time.monotonic()

    async def open(self, actor: common_pb2.ActorAssertion, session_id: str, question: str) -> None:
        self._call = self._agent.ServeTools()
        try:
            await self._call.write(agent_pb2.ServeToolsRequest(open=agent_pb2.OpenToolTurn(
                actor=actor, session_id=session_id, question=question, request_id=f"mcp-{secrets.token_hex(8)}")))
            started = await self._read()
        except grpc.aio.AioRpcError as exc:
            raise _unavailable(exc) from None
        self.turn_id = started.turn_event.started.turn_id

    async def call(self, tool: str, arguments_json: str) -> CallOutcome:
        self.calls += 1
        self.last_used = time.monotonic()
        call_id = f"mcp-{self.calls}"
        try:
            await self._call.write(agent_pb2.ServeToolsRequest(call=agent_pb2.ToolCall(
                call_id=call_id, tool=tool, arguments_json=arguments_json)))
            response = await self._read()
            while response.WhichOneof("event") != "result":  # the call's steps and commits come first
                response = await self._read()
        except grpc.aio.AioRpcError as exc:
            raise _unavailable(exc) from None
        message = json.loads(response.result.model_message_json)
        if tool == "present_ui" and response.result.ok and "outcome" in message:  # a proposal, not the freeze
            self.answered = bool(message.get("revision")) and "repairs_left" not in message
        self.spent = self.spent or message.get("error") == "TURN_BUDGET_SPENT"
        return CallOutcome(response.result.ok, message)

    async def end(self) -> None:
        """Close the stream: the agent ends the turn (nothing more reaches a model)."""
        if self._call is None:
            return
        try:
            await self._call.done_writing()
            while await self._call.read() is not grpc.aio.EOF:
                pass
        except grpc.aio.AioRpcError:
            pass  # the turn is over either way
        finally:
            self._call.cancel()

    async def _read(self) -> agent_pb2.ServeToolsResponse:
        response = await self._call.read()
        if response is grpc.aio.EOF:
            status = await self._call.code()
            raise TurnUnavailable("TURN_ENDED", f"the agent ended the turn ({status.name})")
        return response


def _unavailable(exc: grpc.aio.AioRpcError) -> TurnUnavailable:
    """The agent's refusal as it gave it; an agent nobody reached, in words (shared.rpc.errors)."""
    details = error_details(exc, "agent")
    return TurnUnavailable(details.reason, details.message or "Tessera's agent could not serve this call")
