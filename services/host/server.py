"""gRPC servicer of the host service (contract: proto/tessera/host/v1/)."""

from __future__ import annotations

from shared.runtime import Registration, ServiceContext, registration_for, service_info
from tessera.host.v1 import host_pb2, host_pb2_grpc


class HostService(host_pb2_grpc.HostServiceServicer):
    def __init__(self, context: ServiceContext) -> None:
        self._info = service_info(context)

    async def GetInfo(self, request, context):
        return host_pb2.GetInfoResponse(info=self._info)


def build(context: ServiceContext) -> list[Registration]:
    return [registration_for("host", HostService(context))]
