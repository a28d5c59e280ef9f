"""The services the host calls (compiler, resources, capabilities) and how their failures read here."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from shared.config import peer_target
from shared.rpc.channels import aio_channel
from shared.rpc.errors import TesseraError, error_details, relayed
from shared.rpc.refusals import Conflict, Unavailable
from tessera.capabilities.v1 import capabilities_pb2_grpc
from tessera.compiler.v1 import compiler_pb2_grpc
from tessera.resources.v1 import resources_pb2_grpc


@dataclass(frozen=True)
class Peers:
    compiler: compiler_pb2_grpc.CompilerServiceStub
    resources: resources_pb2_grpc.ResourceGatewayServiceStub
    broker: capabilities_pb2_grpc.CapabilityBrokerServiceStub

    @classmethod
    def connect(cls, credentials) -> Peers:
        return cls(compiler_pb2_grpc.CompilerServiceStub(
                       aio_channel(peer_target("compiler"), credentials, "compiler")),
                   resources_pb2_grpc.ResourceGatewayServiceStub(
                       aio_channel(peer_target("resources"), credentials, "resources")),
                   capabilities_pb2_grpc.CapabilityBrokerServiceStub(
                       aio_channel(peer_target("capabilities"), credentials, "capabilities")))


async def peer(name: str, call):
    """Await a call to another service; its failure becomes a precise status here, never INTERNAL: the peer's
    own reason when it gave one, else the shared sentence naming it (never gRPC's socket-level text)."""
    try:
        return await call
    except grpc.aio.AioRpcError as exc:
        details = error_details(exc, name)
        unavailable = exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        message = details.message if not details.from_peer else f"{name}: {details.message}"
        refusal = Unavailable if unavailable else Conflict
        raise refusal(details.reason, message, {"peer": name, "peer_code": exc.code().name}) from None


def broker_refusal(exc: grpc.aio.AioRpcError, what: str) -> TesseraError:
    """The broker's own status and reason, so a person sees e.g. APPROVAL_EXPIRED, not a generic failure (its
    metadata, which can name callers, stays behind)."""
    return relayed(exc, "capabilities", what, with_metadata=False)
