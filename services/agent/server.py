"""gRPC servicer of the Data Agent runtime (contract: proto/tessera/agent/v1/)."""

from __future__ import annotations

from services.agent.tools import TOOL_NAMES
from services.agent.turn import run_turn
from shared.channels import aio_channel
from shared.config import peer_target
from shared.runtime import Registration, ServiceContext, registration_for, service_info
from tessera.agent.v1 import agent_pb2, agent_pb2_grpc
from tessera.host.v1 import host_pb2_grpc
from tessera.resources.v1 import resources_pb2_grpc


class AgentService(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, context: ServiceContext) -> None:
        self._info = service_info(context)
        self._resources = resources_pb2_grpc.ResourceGatewayServiceStub(
            aio_channel(peer_target("resources"), context.credentials))
        self._host = host_pb2_grpc.HostServiceStub(aio_channel(peer_target("host"), context.credentials))

    async def GetInfo(self, request, context):
        return agent_pb2.GetInfoResponse(info=self._info, model="embedded", tools=list(TOOL_NAMES))

    async def StartTurn(self, request, context):
        # Cancelling the call (client gone, CancelTurn later) cancels the turn and its tool calls.
        async for event in run_turn(request, self._resources, self._host):
            yield event


def build(context: ServiceContext) -> list[Registration]:
    return [registration_for("agent", AgentService(context))]
