"""The agent's peers as the servicer receives them: the stubs it calls and how it asks whether they serve.

`build()` opens the channels and hands them over; tests hand over fakes with the same async methods.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2

from services.agent.tools import PeerReadiness
from tessera.capabilities.v1 import capabilities_pb2_grpc
from tessera.host.v1 import host_pb2_grpc
from tessera.resources.v1 import resources_pb2_grpc

PEER_NAMES = ("resources", "host", "capabilities")
HEALTH_CHECK_SECONDS = 1.0


@dataclass(frozen=True, kw_only=True)
class Peers:
    """The services the agent calls, by the names the trust graph gives them (§2); tests hand fakes with the
    same async methods."""

    resources: resources_pb2_grpc.ResourceGatewayServiceStub
    host: host_pb2_grpc.HostServiceStub
    capabilities: capabilities_pb2_grpc.CapabilityBrokerServiceStub
    ready: PeerReadiness  # each peer's serving status, asked afresh


def health_readiness(health: Mapping[str, object]) -> PeerReadiness:
    """Readiness from the peers' own health answers (HealthStub each), asked concurrently for every turn."""

    async def check(stub) -> str:
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=HEALTH_CHECK_SECONDS)
        except grpc.aio.AioRpcError as exc:
            return "UNREACHABLE" if exc.code() in (grpc.StatusCode.UNAVAILABLE,
                                                   grpc.StatusCode.DEADLINE_EXCEEDED) else exc.code().name
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)

    async def ready() -> dict[str, str]:
        statuses = await asyncio.gather(*(check(stub) for stub in health.values()))
        return dict(zip(health, statuses, strict=True))

    return ready
