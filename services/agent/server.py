"""gRPC servicer of the Data Agent runtime (contract: proto/tessera/agent/v1/)."""

from __future__ import annotations

import asyncio

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.agent.chat import ChatAdapter, ChatConfig
from services.agent.config import AgentSettings
from services.agent.suggestions import suggest
from services.agent.tools import TOOL_NAMES
from services.agent.turn import ModelTranscript, RunningTurn, run_turn
from shared.actors import ActorVerifier
from shared.channels import aio_channel
from shared.config import peer_target
from shared.errors import TesseraError
from shared.runtime import Registration, ServiceContext, registration_for, service_info
from tessera.agent.v1 import agent_pb2, agent_pb2_grpc
from tessera.capabilities.v1 import capabilities_pb2_grpc
from tessera.host.v1 import host_pb2_grpc
from tessera.resources.v1 import resources_pb2, resources_pb2_grpc


class AgentService(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, context: ServiceContext) -> None:
        self._info = service_info(context)
        self._actors = ActorVerifier.from_cert_dir(context.settings.cert_dir)
        self._running: dict[str, RunningTurn] = {}
        channels = {peer: aio_channel(peer_target(peer), context.credentials, peer)
                    for peer in ("resources", "host", "capabilities")}
        self._resources = resources_pb2_grpc.ResourceGatewayServiceStub(channels["resources"])
        self._host = host_pb2_grpc.HostServiceStub(channels["host"])
        self._capabilities = capabilities_pb2_grpc.CapabilityBrokerServiceStub(channels["capabilities"])
        self._health = {peer: health_pb2_grpc.HealthStub(channel) for peer, channel in channels.items()}
        settings: AgentSettings = context.settings
        self._transcript = ModelTranscript(settings.model_transcript)
        self._chat = None
        if settings.model_url:
            self._chat = ChatAdapter(ChatConfig(
                base_url=settings.model_url, model=settings.model_name,
                api_key=settings.model_api_key.get_secret_value(),
                max_response_chars=settings.model_max_response_chars))
        self._model = f"openai-compatible:{settings.model_name}" if self._chat else "embedded"

    async def GetInfo(self, request, context):
        return agent_pb2.GetInfoResponse(info=self._info, model=self._model, tools=list(TOOL_NAMES))

    async def _peers_ready(self) -> dict[str, str]:
        """Each peer's own health answer, asked afresh for every turn (1 s each, concurrently)."""

        async def check(stub) -> str:
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
            except grpc.aio.AioRpcError as exc:
                return "UNREACHABLE" if exc.code() in (grpc.StatusCode.UNAVAILABLE,
                                                       grpc.StatusCode.DEADLINE_EXCEEDED) else exc.code().name
            return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)

        statuses = await asyncio.gather(*(check(stub) for stub in self._health.values()))
        return dict(zip(self._health, statuses, strict=True))

    async def DescribeCatalog(self, request, context):
        self._actors.require(request.actor)
        try:
            outline = await self._resources.Outline(resources_pb2.OutlineRequest(), timeout=10)
        except grpc.aio.AioRpcError as exc:
            raise TesseraError(grpc.StatusCode.UNAVAILABLE, "RESOURCES_UNAVAILABLE",
                               f"the Resource Gateway did not describe its catalog ({exc.code().name})") from None
        return agent_pb2.DescribeCatalogResponse(
            dataset_label=outline.dataset_label, suggested_questions=suggest(outline),
            entries=[agent_pb2.CatalogEntry(label=e.label, description=e.description, measures=list(e.measures),
                                            breakdowns=[*e.breakdowns, *e.time_fields]) for e in outline.entities])

    async def StartTurn(self, request, context):
        # Cancelling the call (the client went away) cancels the turn and its running tool calls.
        actor = self._actors.require(request.actor)
        async for event in run_turn(request, self._resources, self._host, self._capabilities, actor, self._running,
                                    self._peers_ready, self._chat, self._transcript):
            yield event

    async def CancelTurn(self, request, context):
        actor = self._actors.require(request.actor)
        turn = self._running.get(request.turn_id)
        if turn is None or turn.task is None or turn.task.done():
            return agent_pb2.CancelTurnResponse(cancelled=False)
        if (turn.actor_id, turn.tenant_id) != (actor.actor_id, actor.tenant_id):
            raise TesseraError(grpc.StatusCode.PERMISSION_DENIED, "TURN_NOT_YOURS", "the turn belongs to another actor")
        turn.cancel_requested = True
        turn.task.cancel()
        self._running.pop(request.turn_id, None)
        return agent_pb2.CancelTurnResponse(cancelled=True, outcome=agent_pb2.TURN_OUTCOME_CANCELLED)


def build(context: ServiceContext) -> list[Registration]:
    return [registration_for("agent", AgentService(context))]
