"""Every RPC of every Tessera contract declares who may call it."""

from __future__ import annotations

import pytest

from shared.rpc.authz import declared_callers
from shared.rpc.contracts import SERVICES, file_descriptors
from tessera.authz.v1 import authz_pb2


def all_rpcs():
    for file in file_descriptors():
        for service in file.services_by_name.values():
            for method in service.methods:
                yield pytest.param(method, id=f"{service.full_name}/{method.name}")


def test_every_contract_service_is_served_by_a_process():
    declared = {s.full_name for f in file_descriptors() for s in f.services_by_name.values()}
    served = {descriptor.full_name for descriptor, _ in SERVICES.values()}
    assert declared == served


def test_the_contracts_sketch_the_whole_surface():
    expected = {
        "agent": {"GetInfo", "StartTurn", "CancelTurn"},
        "compiler": {"GetInfo", "Compile", "PresentUiSchema"},
        "resources": {"GetInfo", "InspectContext", "InspectCatalog", "Describe", "Probe", "Analyze", "ResolveWindow",
                      "ResolveWindows"},
        "capabilities": {"GetInfo", "ListTools", "CallTool", "SubmitIntent", "ListApprovals", "GetApproval",
                         "Decide", "GetReceipt"},
        "host": {"GetInfo", "OpenSession", "BeginTurn", "FreezeSlice", "SubmitProposal", "Subscribe",
                 "SendCommand", "GetRevision"},
    }
    for name, methods in expected.items():
        declared = {m.name for m in SERVICES[name][0].methods}
        assert methods <= declared, f"{name} lacks {methods - declared}"
    assert SERVICES["agent"][0].methods_by_name["StartTurn"].server_streaming
    assert SERVICES["host"][0].methods_by_name["Subscribe"].server_streaming


@pytest.mark.parametrize("method", list(all_rpcs()))
def test_rpc_declares_callers(method):
    options = method.GetOptions()
    assert options.HasExtension(authz_pb2.callers), "no (tessera.authz.v1.callers) option"
    policy = options.Extensions[authz_pb2.callers]
    assert policy.allow, "empty caller list"
    assert authz_pb2.PRINCIPAL_UNSPECIFIED not in policy.allow
    assert len(set(policy.allow)) == len(policy.allow), "duplicate principal"
    assert declared_callers(method)


def test_enums_start_with_unspecified_zero():
    def enums(file):
        yield from file.enum_types_by_name.values()
        stack = list(file.message_types_by_name.values())
        while stack:
            message = stack.pop()
            yield from message.enum_types
            stack.extend(message.nested_types)

    for file in file_descriptors():
        for enum in enums(file):
            zero = enum.values_by_number[0]
            assert zero.name.endswith("_UNSPECIFIED"), f"{enum.full_name}: {zero.name}"
