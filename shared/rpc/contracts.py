"""The Tessera contracts as loaded descriptors: one place that lists them."""

from __future__ import annotations

import hashlib
from types import ModuleType

import grpc
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor, ServiceDescriptor

from tessera.agent.v1 import agent_pb2, agent_pb2_grpc
from tessera.authz.v1 import authz_pb2
from tessera.capabilities.v1 import capabilities_pb2, capabilities_pb2_grpc
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2, compiler_pb2_grpc
from tessera.host.v1 import host_pb2, host_pb2_grpc
from tessera.resources.v1 import resources_pb2, resources_pb2_grpc
from tessera.rules.v1 import rules_pb2

FILE_MODULES: tuple[ModuleType, ...] = (
    common_pb2, authz_pb2, rules_pb2, agent_pb2, compiler_pb2, resources_pb2, capabilities_pb2, host_pb2,
)

# Process name → (service descriptor, generated grpc module, service class name).
SERVICES: dict[str, tuple[ServiceDescriptor, ModuleType]] = {
    "agent": (agent_pb2.DESCRIPTOR.services_by_name["AgentService"], agent_pb2_grpc),
    "compiler": (compiler_pb2.DESCRIPTOR.services_by_name["CompilerService"], compiler_pb2_grpc),
    "resources": (resources_pb2.DESCRIPTOR.services_by_name["ResourceGatewayService"], resources_pb2_grpc),
    "capabilities": (capabilities_pb2.DESCRIPTOR.services_by_name["CapabilityBrokerService"], capabilities_pb2_grpc),
    "host": (host_pb2.DESCRIPTOR.services_by_name["HostService"], host_pb2_grpc),
}


def file_descriptors() -> list[FileDescriptor]:
    return [module.DESCRIPTOR for module in FILE_MODULES]


def contract_hash() -> str:
    """SHA-256 over the serialized descriptors, in a fixed order."""
    digest = hashlib.sha256()
    for descriptor in file_descriptors():
        proto = descriptor_pb2.FileDescriptorProto()
        descriptor.CopyToProto(proto)
        data = proto.SerializeToString(deterministic=True)
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def method_descriptor(service: str, method: str):
    descriptor, _ = SERVICES[service]
    try:
        return descriptor.methods_by_name[method]
    except KeyError:
        known = ", ".join(m.name for m in descriptor.methods)
        raise KeyError(f"{descriptor.full_name} has no RPC {method!r}; it has: {known}") from None


def _bound(service: str, method: str, request):
    """(path, request class, response class, request message) of a contract RPC."""
    from google.protobuf.message_factory import GetMessageClass

    rpc = method_descriptor(service, method)
    request_class = GetMessageClass(rpc.input_type)
    response_class = GetMessageClass(rpc.output_type)
    path = f"/{rpc.containing_service.full_name}/{rpc.name}"
    return rpc, path, request_class, response_class, request if request is not None else request_class()


def invoke_stream(channel, service: str, method: str, request=None, timeout: float = 5.0):
    """Start a server-streaming contract RPC by name over a sync channel: iterate the call for its
    messages; `cancel()` ends it early."""
    rpc, path, request_class, response_class, message = _bound(service, method, request)
    if not rpc.server_streaming:
        raise ValueError(f"{path} is unary; use invoke()")
    return channel.unary_stream(path, request_serializer=request_class.SerializeToString,
                                response_deserializer=response_class.FromString)(message, timeout=timeout)


def invoke_future(channel, service: str, method: str, request=None, timeout: float = 5.0) -> grpc.Future:
    """Start a unary contract RPC by name over a sync channel without waiting: `result(timeout)` waits for its
    answer (a caller that says how long it has been waiting), `cancel()` ends it."""
    rpc, path, request_class, response_class, message = _bound(service, method, request)
    if rpc.client_streaming or rpc.server_streaming:
        raise ValueError(f"{path} streams; use invoke() or invoke_stream()")
    return channel.unary_unary(path, request_serializer=request_class.SerializeToString,
                               response_deserializer=response_class.FromString).future(message, timeout=timeout)


def invoke(channel, service: str, method: str, request=None, timeout: float = 5.0):
    """Call any contract RPC over a sync channel, by name.

    Server-streaming RPCs return the first message (or None when the stream
    ends without one); a client-streaming one is sent `request` as its only
    message. Tests and the CLI use this to reach every RPC without a
    hand-written stub per method.
    """
    rpc, path, request_class, response_class, message = _bound(service, method, request)
    if rpc.client_streaming:  # one request on the stream, then the first answer
        call = channel.stream_stream(path, request_serializer=request_class.SerializeToString,
                                     response_deserializer=response_class.FromString)(iter([message]), timeout=timeout)
        try:
            return next(iter(call), None)
        finally:
            call.cancel()
    if rpc.server_streaming:
        call = invoke_stream(channel, service, method, message, timeout)
        try:
            return next(iter(call), None)
        finally:
            call.cancel()
    return channel.unary_unary(path, request_serializer=request_class.SerializeToString,
                               response_deserializer=response_class.FromString)(message, timeout=timeout)
