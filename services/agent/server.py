"""gRPC servicer of the Data Agent runtime (contract: proto/tessera/agent/v1/)."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2_grpc

from services.agent.cancels import cancel_elsewhere, running_here, stop, stop_requested_turns, wait_within
from services.agent.chat import ChatAdapter, ChatConfig
from services.agent.config import WIRES, AgentSettings
from services.agent.contracts import TOOL_NAMES
from services.agent.peers import PEER_NAMES, Peers, health_readiness
from services.agent.served_turns import data_tools, serve_tools
from services.agent.suggestions import suggest
from services.agent.turn import ModelTranscript, RunningTurn, run_turn
from shared.actors import ActorVerifier
from shared.channels import aio_channel
from shared.config import peer_target
from shared.errors import error_details
from shared.refusals import Denied, Unavailable
from shared.runtime import Registration, ServiceContext, registration_for, service_info
from tessera.agent.v1 import agent_pb2, agent_pb2_grpc
from tessera.capabilities.v1 import capabilities_pb2_grpc
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2_grpc
from tessera.resources.v1 import resources_pb2, resources_pb2_grpc


class AgentService(agent_pb2_grpc.AgentServiceServicer):
    """Turns and the catalog's description, over peers it is given (build() connects the real ones)."""

    def __init__(self, info: common_pb2.ServiceInfo, actors: ActorVerifier, peers: Peers,
                 chat: ChatAdapter | None = None, transcript: ModelTranscript | None = None) -> None:
        self._info = info
        self._actors = actors
        self._peers = peers
        self._chat = chat
        self._transcript = transcript or ModelTranscript("")
        self._running: dict[str, RunningTurn] = {}
        self._model = f"{chat.wire.name}:{chat.config.model}" if chat else "embedded"

    async def GetInfo(self, request, context):
        return agent_pb2.GetInfoResponse(info=self._info, model=self._model, tools=list(TOOL_NAMES))

    async def DescribeCatalog(self, request, context):
        self._actors.require(request.actor)
        try:
            outline = await self._peers.resources.Outline(resources_pb2.OutlineRequest(), timeout=10)
        except grpc.aio.AioRpcError as exc:
            raise Unavailable("RESOURCES_UNAVAILABLE", "the catalog could not be "
                              f"described: {error_details(exc, 'resources').message}") from None
        return agent_pb2.DescribeCatalogResponse(
            dataset_label=outline.dataset_label, suggested_questions=suggest(outline),
            entries=[agent_pb2.CatalogEntry(label=e.label, description=e.description, measures=list(e.measures),
                                            breakdowns=[*e.breakdowns, *e.time_fields]) for e in outline.entities])

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

    async def stop_requested_turns(self) -> None:
        await stop_requested_turns(self._running, self._peers.host)


def chat_adapter(settings: AgentSettings) -> ChatAdapter | None:
    """The configured model's adapter, or None for the embedded planner."""
    if not settings.model_url:
        return None
    return ChatAdapter(ChatConfig(base_url=settings.model_url, model=settings.model_name,
                                  api_key=settings.model_api_key.get_secret_value(),
                                  parameters=tuple(settings.model_parameters.items()),
                                  max_response_chars=settings.model_max_response_chars),
                       wire=WIRES[settings.model_protocol])


def build(context: ServiceContext) -> list[Registration]:
    """The one place the agent connects: its peers' channels, its model, its transcript."""
    settings: AgentSettings = context.settings
    channels = {peer: aio_channel(peer_target(peer), context.credentials, peer) for peer in PEER_NAMES}
    peers = Peers(resources=resources_pb2_grpc.ResourceGatewayServiceStub(channels["resources"]),
                  host=host_pb2_grpc.HostServiceStub(channels["host"]),
                  capabilities=capabilities_pb2_grpc.CapabilityBrokerServiceStub(channels["capabilities"]),
                  ready=health_readiness({peer: health_pb2_grpc.HealthStub(channel)
                                          for peer, channel in channels.items()}))
    service = AgentService(service_info(context), ActorVerifier.from_cert_dir(settings.cert_dir), peers,
                           chat_adapter(settings), ModelTranscript(settings.model_transcript))
    return [registration_for("agent", service, background=[service.stop_requested_turns])]
