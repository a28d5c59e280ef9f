"""Domain refusals (raised by stores, no gRPC there) become one status each, in one place."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from shared.rpc import refusals
from shared.rpc.errors import status_of
from shared.rpc.interceptor import _CallScope


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


def _imports(path: str) -> set[str]:
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).resolve().parents[3] / path).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return imported | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


_STORES = ["services/resources/store.py", "services/capabilities/passkey_store.py", "services/host/store.py",
           "services/capabilities/store.py"]


@pytest.mark.parametrize("store", [*_STORES, "shared/rpc/refusals.py"])
def test_the_stores_import_no_grpc(store):
    assert not {name for name in _imports(store) if name.startswith("grpc")}


@pytest.mark.parametrize("store", _STORES)
def test_the_stores_build_no_messages(store):
    """What a store keeps is its own: the messages on the wire are built by the servicer's modules. The
    broker's store may name the intent statuses (enum values of the common contract), and nothing else."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).resolve().parents[3] / store).read_text())
    assert {name for name in _imports(store) if name.startswith("tessera.")} <= {"tessera.common.v1"}
    used = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "common_pb2"}
    assert all(name.startswith("INTENT_STATUS_") or name == "IntentStatus" for name in used), used


def test_the_interceptor_answers_a_refusal_raised_below_a_servicer_with_its_status():
    class Context:
        aborted = None

        def invocation_metadata(self):
            return ()

        async def abort_with_status(self, status):
            self.aborted = status
            raise grpc.aio.AbortError()

    context = Context()
    refusal = refusals.Conflict("APPROVAL_ALREADY_DECIDED", "decided already", {"approval_state": "approved"})

    async def end():
        scope = _CallScope("/tessera.capabilities.v1.CapabilityBrokerService/Decide", context)
        with pytest.raises(grpc.aio.AbortError):
            await scope.failed(refusal)

    asyncio.run(end())
    sent = status_pb2.Status.FromString(dict(context.aborted.trailing_metadata)["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    sent.details[0].Unpack(info)
    assert (context.aborted.code, context.aborted.details) == (grpc.StatusCode.FAILED_PRECONDITION, "decided already")
    assert (info.reason, dict(info.metadata)) == ("APPROVAL_ALREADY_DECIDED", {"approval_state": "approved"})
