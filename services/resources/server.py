"""gRPC servicer of the resources service (contract: proto/tessera/resources/v1/)."""

from __future__ import annotations

from shared.runtime import Registration, ServiceContext, registration_for, service_info
from tessera.resources.v1 import resources_pb2, resources_pb2_grpc


class ResourceGatewayService(resources_pb2_grpc.ResourceGatewayServiceServicer):
    def __init__(self, context: ServiceContext) -> None:
        self._info = service_info(context)

    async def GetInfo(self, request, context):
        return resources_pb2.GetInfoResponse(info=self._info)


def build(context: ServiceContext) -> list[Registration]:
    return [registration_for("resources", ResourceGatewayService(context))]
