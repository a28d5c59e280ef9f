"""How the agent is put together (§3): its peers' channels, its model, its transcript and the turns this replica
runs; server.py serves over them, tests build AgentParts over fakes."""

from __future__ import annotations

from dataclasses import dataclass, field

from grpc_health.v1 import health_pb2_grpc

from services.agent.cancels import stop_requested_turns
from services.agent.chat import ChatAdapter, ChatConfig
from services.agent.config import WIRES, AgentSettings
from services.agent.peers import PEER_NAMES, Peers, health_readiness
from services.agent.turn import ModelTranscript, RunningTurn
from shared.config import peer_target
from shared.identity.actors import ActorVerifier
from shared.rpc.channels import aio_channel
from shared.rpc.runtime import Lifecycle, ServiceContext, service_info
from tessera.capabilities.v1 import capabilities_pb2_grpc
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2_grpc
from tessera.resources.v1 import resources_pb2_grpc


@dataclass(frozen=True, kw_only=True)
class AgentParts:
    info: common_pb2.ServiceInfo
    actors: ActorVerifier
    peers: Peers
    chat: ChatAdapter | None = None  # None: the built-in planner
    transcript: ModelTranscript = field(default_factory=lambda: ModelTranscript(""))
    # The turns this replica runs, by turn id: the servicer starts and stops them, the background stops those
    # someone asked another replica to stop.
    running: dict[str, RunningTurn] = field(default_factory=dict)
    lifecycle: Lifecycle = field(default_factory=Lifecycle)


def chat_adapter(settings: AgentSettings) -> ChatAdapter | None:
    """The configured model's adapter, or None for the embedded planner."""
    if not settings.model_url:
        return None
    return ChatAdapter(ChatConfig(base_url=settings.model_url, model=settings.model_name,
                                  api_key=settings.model_api_key.get_secret_value(),
                                  parameters=tuple(settings.model_parameters.items()),
                                  max_response_chars=settings.model_max_response_chars),
                       wire=WIRES[settings.model_protocol])


def build(context: ServiceContext) -> AgentParts:
    """The one place the agent connects: its peers' channels, its model, its transcript."""
    settings: AgentSettings = context.settings
    channels = {peer: aio_channel(peer_target(peer), context.credentials, peer) for peer in PEER_NAMES}
    peers = Peers(resources=resources_pb2_grpc.ResourceGatewayServiceStub(channels["resources"]),
                  host=host_pb2_grpc.HostServiceStub(channels["host"]),
                  capabilities=capabilities_pb2_grpc.CapabilityBrokerServiceStub(channels["capabilities"]),
                  ready=health_readiness({peer: health_pb2_grpc.HealthStub(channel)
                                          for peer, channel in channels.items()}))
    running: dict[str, RunningTurn] = {}
    return AgentParts(info=service_info(context), actors=ActorVerifier.from_cert_dir(settings.cert_dir), peers=peers,
                      chat=chat_adapter(settings), transcript=ModelTranscript(settings.model_transcript),
                      running=running,
                      lifecycle=Lifecycle(background=(lambda: stop_requested_turns(running, peers.host),)))
