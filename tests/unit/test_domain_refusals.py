"""Domain refusals (raised by stores, no gRPC there) become one status each, in one place."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from shared import refusals
from shared.errors import status_of
from shared.interceptor import _CallScope


@pytest.mark.parametrize(("kind", "code"), [
    (refusals.NotFound, grpc.StatusCode.NOT_FOUND),
    (refusals.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (refusals.Conflict, grpc.StatusCode.FAILED_PRECONDITION),
    (refusals.Denied, grpc.StatusCode.PERMISSION_DENIED),
    (refusals.Exhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (refusals.Unavailable, grpc.StatusCode.UNAVAILABLE),
])
def test_each_kind_of_refusal_has_its_status_and_keeps_reason_message_and_metadata(kind, code):
    error = status_of(kind("SOME_REASON", "what happened", {"approval_id": "apr_1"}))
    assert (error.code, error.reason, error.message, error.metadata) == (
        code, "SOME_REASON", "what happened", {"approval_id": "apr_1"})


def test_a_narrower_refusal_answers_with_its_kinds_status():
    class LinkUsed(refusals.Conflict):
        pass

    assert status_of(LinkUsed("LINK_USED", "used")).code == grpc.StatusCode.FAILED_PRECONDITION


def test_the_stores_import_no_grpc():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for store in ["services/resources/store.py", "services/capabilities/passkey_store.py", "shared/refusals.py",
                  "services/capabilities/store.py"]:
        tree = ast.parse((root / store).read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not {name for name in imported if name.startswith("grpc")}, store


def test_the_interceptor_answers_a_refusal_raised_below_a_servicer_with_its_status():
    class Context:
        aborted = None

        async def abort_with_status(self, status):
            self.aborted = status
            raise grpc.aio.AbortError()

    context = Context()
    scope = _CallScope("/tessera.capabilities.v1.CapabilityBrokerService/Decide", None, None, context)
    scope.started, scope.request_id, scope.caller = time.perf_counter(), "r1", None
    refusal = refusals.Conflict("APPROVAL_ALREADY_DECIDED", "decided already", {"approval_state": "approved"})

    async def end():
        with pytest.raises(grpc.aio.AbortError):
            await scope._end(type(refusal), refusal, None, None)

    asyncio.run(end())
    sent = status_pb2.Status.FromString(dict(context.aborted.trailing_metadata)["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    sent.details[0].Unpack(info)
    assert (context.aborted.code, context.aborted.details) == (grpc.StatusCode.FAILED_PRECONDITION, "decided already")
    assert (info.reason, dict(info.metadata)) == ("APPROVAL_ALREADY_DECIDED", {"approval_state": "approved"})
