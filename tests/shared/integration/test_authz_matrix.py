"""Every (caller identity, RPC) pair against real processes over mTLS.

Declared callers must get past authorization (any outcome but the authz
denial); everyone else must get PERMISSION_DENIED with CALLER_NOT_ALLOWED.
"""

from __future__ import annotations

import re

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from shared.identity.principals import PRINCIPAL_NAMES
from shared.rpc.authz import declared_callers
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import SERVICES, invoke
from shared.rpc.errors import DOMAIN, error_details
from tests.fixtures.waiting import wait_until

PAIRS = [
    pytest.param(principal, service, method.name, id=f"{principal}->{service}.{method.name}")
    for service, (descriptor, _) in SERVICES.items()
    for method in descriptor.methods
    for principal in PRINCIPAL_NAMES
]


@pytest.fixture(scope="module")
def channels(running_set, credentials):
    opened = {}

    def channel(principal: str, service: str) -> grpc.Channel:
        key = (principal, service)
        if key not in opened:
            opened[key] = sync_channel(running_set.handles[service].address, credentials(principal), service)
        return opened[key]

    yield channel
    for ch in opened.values():
        ch.close()


@pytest.mark.parametrize("principal,service,method", PAIRS)
def test_caller_matrix(channels, principal, service, method):
    declared = principal in declared_callers(SERVICES[service][0].methods_by_name[method])
    try:
        invoke(channels(principal, service), service, method, timeout=10)
        outcome = None
    except grpc.RpcError as exc:
        outcome = error_details(exc)
    denied_by_authz = outcome is not None and outcome.reason == "CALLER_NOT_ALLOWED"
    if declared:
        assert not denied_by_authz, outcome
        # Proof that the call reached the servicer: a real answer or a precise refusal.
        assert outcome is None or outcome.from_peer, outcome
    else:
        assert outcome is not None, "undeclared caller got an answer"
        assert outcome.code == grpc.StatusCode.PERMISSION_DENIED
        assert outcome.reason == "CALLER_NOT_ALLOWED" and outcome.domain == DOMAIN
        assert outcome.metadata["caller"].endswith("/" + principal)


def test_get_info_describes_the_serving_process(channels):
    from shared.rpc.contracts import contract_hash

    for service in SERVICES:
        reply = invoke(channels("cli", service), service, "GetInfo")
        assert reply.info.name == service
        assert reply.info.identity == f"spiffe://tessera.local/svc/{service}"
        assert reply.info.contract_hash == contract_hash()
        assert reply.info.services == [SERVICES[service][0].full_name]


@pytest.mark.parametrize("principal", PRINCIPAL_NAMES)
def test_health_is_the_only_exemption(channels, principal):
    for service in SERVICES:
        reply = health_pb2_grpc.HealthStub(channels(principal, service)).Check(
            health_pb2.HealthCheckRequest(service=SERVICES[service][0].full_name), timeout=5
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


@pytest.mark.parametrize("principal", PRINCIPAL_NAMES)
def test_reflection_only_for_the_operator(channels, principal):
    stub = reflection_pb2_grpc.ServerReflectionStub(channels(principal, "host"))
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    if principal == "cli":
        reply = next(iter(stub.ServerReflectionInfo(iter([request]), timeout=5)))
        names = {s.name for s in reply.list_services_response.service}
        assert "tessera.host.v1.HostService" in names
    else:
        with pytest.raises(grpc.RpcError) as denied:
            next(iter(stub.ServerReflectionInfo(iter([request]), timeout=5)))
        assert error_details(denied.value).reason == "CALLER_NOT_ALLOWED"


def test_unknown_method_is_denied_without_revealing_anything(channels):
    call = channels("agent", "host").unary_unary("/tessera.host.v1.HostService/DropEverything")
    with pytest.raises(grpc.RpcError) as denied:
        call(b"", timeout=5)
    details = error_details(denied.value)
    assert details.code == grpc.StatusCode.PERMISSION_DENIED and details.reason == "CALLER_NOT_ALLOWED"


# "I1202 01:42:50.914443   11920 ssl_transport_security.cc:2563] Handshake failed ...": a gRPC core log line.
GRPC_CORE_LINE = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\] ")


def test_every_log_line_is_json(running_set):
    """After the whole matrix (allowed, denied, streaming, unknown), logs stay clean JSON."""
    import json

    def logs_at_a_line_end() -> dict[str, str] | None:  # no batch half-written: every line can be read
        texts = {name: handle.log_path.read_text() for name, handle in running_set.handles.items()}
        return texts if all(text.endswith("\n") for text in texts.values()) else None

    texts = wait_until(logs_at_a_line_end, 30, what="every service's log to end with a whole line",
                       detail=lambda: [name for name, h in running_set.handles.items()
                                       if not h.log_path.read_text().endswith("\n")])
    for handle in running_set.handles.values():
        complete = texts[handle.name].split("\n")[:-1]
        assert complete, f"{handle.name} wrote no log"
        for line in complete:
            if GRPC_CORE_LINE.match(line):  # gRPC's C core logs on its own (e.g. a handshake another test refused)
                continue
            entry = json.loads(line)  # raises on a traceback or stray print
            assert entry["service"] == handle.name and "level" in entry
