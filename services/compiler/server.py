"""gRPC servicer of the proposal compiler (contract: proto/tessera/compiler/v1/)."""

from __future__ import annotations

import asyncio
import hashlib
from functools import partial

from services.compiler.compile import CompileResult, SliceRefused
from services.compiler.wiring import CompilerParts
from shared.data.bounded_json import BoundedJsonError, canonical, parse
from shared.rpc.refusals import Conflict, Invalid, Refusal
from shared.ui.slice import present_ui_schema
from tessera.compiler.v1 import compiler_pb2, compiler_pb2_grpc

_OUTCOMES = {"compiled": compiler_pb2.COMPILE_OUTCOME_COMPILED, "partial": compiler_pb2.COMPILE_OUTCOME_PARTIAL,
             "rejected": compiler_pb2.COMPILE_OUTCOME_REJECTED}
_KINDS = {"resource": compiler_pb2.BINDING_KIND_RESOURCE, "evidence": compiler_pb2.BINDING_KIND_EVIDENCE,
          "state": compiler_pb2.BINDING_KIND_STATE, "action": compiler_pb2.BINDING_KIND_ACTION}


def _refused(error: SliceRefused) -> Refusal:
    return Conflict(error.reason, str(error))


def to_response(result: CompileResult) -> compiler_pb2.CompileResponse:
    return compiler_pb2.CompileResponse(
        outcome=_OUTCOMES[result.outcome],
        document_json=canonical(result.document) if result.document is not None else "",
        content_hash=result.content_hash,
        a2ui_messages_json=[canonical(m) for m in result.messages],
        bindings=[compiler_pb2.Binding(block_id=b.block_id, prop=b.prop, kind=_KINDS[b.kind], slice_id=b.slice_id,
                                       column_ids=b.column_ids, row=b.row, first_offset=b.first_offset,
                                       first_rows=b.first_rows) for b in result.bindings],
        diagnostics=[d.to_proto() for d in result.diagnostics])


class CompilerService(compiler_pb2_grpc.CompilerServiceServicer):
    def __init__(self, parts: CompilerParts) -> None:
        self._info = parts.info
        self._compiler = parts.compiler
        self._pool = parts.pool

    async def GetInfo(self, request, context):
        return compiler_pb2.GetInfoResponse(info=self._info, catalog_ids=[self._compiler.catalog.catalog_id])

    def _compile(self, request: compiler_pb2.CompileRequest) -> compiler_pb2.CompileResponse:
        base = None
        if request.base_document_json:
            try:
                base = parse(request.base_document_json)
            except BoundedJsonError as exc:
                raise Invalid("BASE_DOCUMENT_INVALID", f"base_document_json: {exc}") from None
        try:
            result = self._compiler.compile(request.slice, request.proposal_json, base_document=base,
                                            base_revision_id=request.base_revision_id,
                                            surface_id=request.surface_id or "surface")
        except SliceRefused as exc:
            raise _refused(exc) from None
        return to_response(result)

    async def Compile(self, request, context):
        # CPU-bound: on the pool, so one large proposal never stalls the event loop.
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(self._compile, request))

    async def PresentUiSchema(self, request, context):
        try:
            self._compiler.check_slice(request.slice)
        except SliceRefused as exc:
            raise _refused(exc) from None
        schema = canonical(present_ui_schema(self._compiler.catalog, request.slice))
        return compiler_pb2.PresentUiSchemaResponse(input_schema_json=schema,
                                                    schema_hash=hashlib.sha256(schema.encode()).hexdigest(),
                                                    slice_hash=request.slice.slice_hash)

