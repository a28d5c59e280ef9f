"""gRPC servicer of the Data Agent runtime (contract: proto/tessera/agent/v1/)."""

from __future__ import annotations

import grpc

from services.agent.cancels import cancel_elsewhere, running_here, stop, wait_within
from services.agent.contracts import TOOL_NAMES
from services.agent.served_turns import data_tools, serve_tools
from services.agent.suggestions import suggest
from services.agent.turn import run_turn
from services.agent.wiring import AgentParts
from shared.rpc.errors import error_details
from shared.rpc.refusals import Denied, Unavailable
from tessera.agent.v1 import agent_pb2, agent_pb2_grpc
from tessera.common.v1 import common_pb2
from tessera.resources.v1 import resources_pb2


class AgentService(agent_pb2_grpc.AgentServiceServicer):
    """Turns and the catalog's description, over the parts it is given (wiring.build connects the real ones)."""

    def __init__(self, parts: AgentParts) -> None:
        self._info, self._actors, self._peers = parts.info, parts.actors, parts.peers
        self._chat, self._transcript, self._running = parts.chat, parts.transcript, parts.running
        self._model = f"{parts.chat.wire.name}:{parts.chat.config.model}" if parts.chat else "embedded"

    async def GetInfo(self, request, context):
        return agent_pb2.GetInfoResponse(info=self._info, model=self._model, tools=list(TOOL_NAMES))

    async def Outline(self, request, context):
        self._actors.require(request.actor)
        try:
            outline = await self._peers.resources.Outline(resources_pb2.OutlineRequest(), timeout=10)
        except grpc.aio.AioRpcError as exc:
            raise Unavailable("RESOURCES_UNAVAILABLE", "the catalog's outline could not be "
                              f"read: {error_details(exc, 'resources').message}") from None
        return agent_pb2.OutlineResponse(
            dataset_label=outline.dataset_label, suggested_questions=suggest(outline),
            entities=[agent_pb2.OutlineEntity(label=e.label, description=e.description, measures=list(e.measures),
                                              dimensions=[*e.dimensions, *e.time_fields]) for e in outline.entities])

    async def StartTurn(self, request, context):
        # Cancelling the call (the client went away) cancels the turn and its running tool calls.
        actor = self._actors.require(request.actor)
        async for event in run_turn(request, self._peers, actor, self._running, self._chat, self._transcript):
            yield event

    async def ListDataTools(self, request, context):
        return agent_pb2.ListDataToolsResponse(tools=data_tools())

    async def ServeTools(self, request_iterator, context):
        # Cancelling the call (the front went away) ends the turn; its running tool call is cancelled.
        async for response in serve_tools(request_iterator, self._actors, self._peers, self._transcript):
            yield response

    async def CancelTurn(self, request, context):
        actor = self._actors.require(request.actor)
        turn = running_here(self._running, request.turn_id)
        if turn is None:  # another replica runs it (or none does): through the host
            remaining = context.time_remaining() if context is not None else None
            return await cancel_elsewhere(self._peers.host, request, wait_within(remaining))
        if (turn.actor_id, turn.tenant_id) != (actor.actor_id, actor.tenant_id):
            raise Denied("TURN_NOT_YOURS", "the turn belongs to another actor")
        stop(turn)
        self._running.pop(request.turn_id, None)
        return agent_pb2.CancelTurnResponse(cancelled=True, outcome=common_pb2.TURN_OUTCOME_CANCELLED)

