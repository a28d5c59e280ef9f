"""gRPC servicer of the capabilities service (contract: proto/tessera/capabilities/v1/)."""

from __future__ import annotations

from shared.runtime import Registration, ServiceContext, registration_for, service_info
from tessera.capabilities.v1 import capabilities_pb2, capabilities_pb2_grpc


class CapabilityBrokerService(capabilities_pb2_grpc.CapabilityBrokerServiceServicer):
    def __init__(self, context: ServiceContext) -> None:
        self._info = service_info(context)

    async def GetInfo(self, request, context):
        return capabilities_pb2.GetInfoResponse(info=self._info)


def build(context: ServiceContext) -> list[Registration]:
    return [registration_for("capabilities", CapabilityBrokerService(context))]
