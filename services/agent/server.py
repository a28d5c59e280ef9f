"""gRPC servicer of the agent service (contract: proto/tessera/agent/v1/)."""

from __future__ import annotations

from shared.runtime import Registration, ServiceContext, registration_for, service_info
from tessera.agent.v1 import agent_pb2, agent_pb2_grpc


class AgentService(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, context: ServiceContext) -> None:
        self._info = service_info(context)

    async def GetInfo(self, request, context):
        return agent_pb2.GetInfoResponse(info=self._info)


def build(context: ServiceContext) -> list[Registration]:
    return [registration_for("agent", AgentService(context))]
