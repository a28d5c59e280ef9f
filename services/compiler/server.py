"""gRPC servicer of the compiler service (contract: proto/tessera/compiler/v1/)."""

from __future__ import annotations

from shared.runtime import Registration, ServiceContext, registration_for, service_info
from tessera.compiler.v1 import compiler_pb2, compiler_pb2_grpc


class CompilerService(compiler_pb2_grpc.CompilerServiceServicer):
    def __init__(self, context: ServiceContext) -> None:
        self._info = service_info(context)

    async def GetInfo(self, request, context):
        return compiler_pb2.GetInfoResponse(info=self._info)


def build(context: ServiceContext) -> list[Registration]:
    return [registration_for("compiler", CompilerService(context))]
