"""The compiler service over gRPC, as the host calls it."""

from __future__ import annotations

import json

import grpc
import pytest

from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from shared.rpc.errors import error_details
from tessera.compiler.v1 import compiler_pb2
from tests.fixtures.ui import full_proposal


@pytest.fixture(scope="module")
def as_host(running_set, credentials):
    with sync_channel(running_set.handles["compiler"].address, credentials("host"), "compiler") as channel:
        yield lambda method, request: invoke(channel, "compiler", method, request, timeout=30)


def test_compile_and_present_ui_schema(as_host, frozen, ids, a2ui_check):
    reply = as_host("Compile", compiler_pb2.CompileRequest(slice=frozen, proposal_json=json.dumps(full_proposal(ids)),
                                                           surface_id="surface-9"))
    assert reply.outcome == compiler_pb2.COMPILE_OUTCOME_COMPILED and not reply.diagnostics
    messages = [json.loads(m) for m in reply.a2ui_messages_json]
    a2ui_check(messages)
    assert messages[0]["createSurface"]["surfaceId"] == "surface-9"
    assert json.loads(reply.document_json)["id"] == "answer" and len(reply.content_hash) == 64
    assert {b.kind for b in reply.bindings} >= {compiler_pb2.BINDING_KIND_RESOURCE}

    schema = as_host("PresentUiSchema", compiler_pb2.PresentUiSchemaRequest(slice=frozen))
    assert schema.slice_hash == frozen.slice_hash and '"$ref"' not in schema.input_schema_json
    assert json.loads(schema.input_schema_json)["$schema"].startswith("http://json-schema.org/draft-07")


def test_partial_and_rejected_outcomes_carry_diagnostics(as_host, frozen, ids):
    proposal = full_proposal(ids)
    proposal["blocks"][2]["data"]["text"] = "<script>x</script>"
    reply = as_host("Compile", compiler_pb2.CompileRequest(slice=frozen, proposal_json=json.dumps(proposal)))
    assert reply.outcome == compiler_pb2.COMPILE_OUTCOME_PARTIAL
    assert [(d.code, d.location) for d in reply.diagnostics] == [("component.prop-invalid", "/blocks/2/data/text")]
    rejected = as_host("Compile", compiler_pb2.CompileRequest(slice=frozen, proposal_json="[1, 2"))
    assert rejected.outcome == compiler_pb2.COMPILE_OUTCOME_REJECTED and not rejected.document_json
    assert rejected.diagnostics[0].code == "proposal.not-json"


def test_a_tampered_slice_is_refused(as_host, frozen, ids):
    tampered = compiler_pb2.CatalogSlice()
    tampered.CopyFrom(frozen)
    tampered.resources[0].offer_hash = "00" * 32  # a forged offer, keeping the old slice hash
    with pytest.raises(grpc.RpcError) as refused:
        as_host("Compile", compiler_pb2.CompileRequest(slice=tampered, proposal_json=json.dumps(full_proposal(ids))))
    details = error_details(refused.value)
    assert (details.code, details.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "SLICE_HASH_MISMATCH")
