"""The server interceptor every Tessera RPC passes through.

Per call, in one wrapper: the contract-declared caller check (before any
servicer code runs), correlation ids, error mapping (`TesseraError` →
status + ErrorInfo; anything unexpected → INTERNAL without leaking its
text) and an access log line.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import re
import secrets
import time

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from shared.authz import EXEMPT_PREFIXES, CallerTable, check_caller
from shared.errors import TesseraError
from shared.identity import principal_for_spiffe
from shared.logs import correlated, log

logger = logging.getLogger("tessera.rpc")

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,64}$")


class CallGuard(grpc.aio.ServerInterceptor):
    """Wraps every non-health handler: caller check, correlation, errors, access log.

    Handlers are static for a server's lifetime, so each method's wrapped
    handler is built once and reused.
    """

    def __init__(self, table: CallerTable) -> None:
        self._table = table
        self._wrapped: dict[str, grpc.RpcMethodHandler] = {}

    async def intercept_service(self, continuation, details):
        method = details.method
        if method.startswith(EXEMPT_PREFIXES):
            return await continuation(details)
        wrapped = self._wrapped.get(method)
        if wrapped is None:
            handler = await continuation(details)
            if handler is None:
                # Unknown method: the same denial as an undeclared one, so an
                # undeclared caller learns nothing about which methods exist.
                return _wrap(grpc.unary_unary_rpc_method_handler(_unknown_method), method, self._table)
            wrapped = self._wrapped[method] = _wrap(handler, method, self._table)
        return wrapped


async def _unknown_method(request, context):
    raise TesseraError(grpc.StatusCode.UNIMPLEMENTED, "METHOD_UNKNOWN", "no such method")


def _request_id(context: grpc.aio.ServicerContext) -> str:
    """The caller's x-request-id when well-formed, else a fresh one."""
    for key, value in context.invocation_metadata() or ():
        if key == "x-request-id" and isinstance(value, str) and _REQUEST_ID.match(value):
            return value
    return secrets.token_hex(8)


def _wrap(handler, method: str, table: CallerTable):
    def finished(caller: str | None, code: str, started: float) -> None:
        level = logging.WARNING if code == "PERMISSION_DENIED" else logging.INFO
        if not logger.isEnabledFor(level):
            return
        # The access log is written after the current step, once the response
        # is on its way: logging inline measurably delayed every reply.
        asyncio.get_running_loop().call_soon(functools.partial(
            log, logger, level, "rpc", method=method, caller=principal_for_spiffe(caller or "") or caller,
            code=code, ms=round((time.perf_counter() - started) * 1000, 3)))

    async def fail(context, error: TesseraError, caller, started) -> None:
        finished(caller, error.code.name, started)
        await context.abort_with_status(error.to_status())

    async def crash(context, caller, started, request_id) -> None:
        logger.exception("unhandled error in %s", method)
        await fail(context, TesseraError(grpc.StatusCode.INTERNAL, "INTERNAL",
                                         f"internal error (request {request_id})",
                                         {"request_id": request_id}), caller, started)

    async def unary_response(inner, request, context):
        started, caller = time.perf_counter(), None
        request_id = _request_id(context)
        with correlated(request_id=request_id):
            try:
                caller = check_caller(table, method, context)
                result = inner(request, context)
                if inspect.isawaitable(result):
                    result = await result
                finished(caller, "OK", started)
                return result
            except TesseraError as error:
                await fail(context, error, caller, started)
            except (grpc.aio.AbortError, asyncio.CancelledError):
                finished(caller, context.code().name if context.code() else "CANCELLED", started)
                raise
            except Exception:
                await crash(context, caller, started, request_id)

    async def stream_response(inner, request, context):
        started, caller = time.perf_counter(), None
        request_id = _request_id(context)
        with correlated(request_id=request_id):
            try:
                caller = check_caller(table, method, context)
                result = inner(request, context)
                if hasattr(result, "__aiter__"):
                    async for item in result:
                        yield item
                elif inspect.isawaitable(result):
                    await result
                finished(caller, "OK", started)
            except TesseraError as error:
                await fail(context, error, caller, started)
            except (grpc.aio.AbortError, asyncio.CancelledError):
                finished(caller, context.code().name if context.code() else "CANCELLED", started)
                raise
            except Exception:
                await crash(context, caller, started, request_id)

    kinds = (
        ("unary_unary", unary_response, grpc.unary_unary_rpc_method_handler),
        ("stream_unary", unary_response, grpc.stream_unary_rpc_method_handler),
        ("unary_stream", stream_response, grpc.unary_stream_rpc_method_handler),
        ("stream_stream", stream_response, grpc.stream_stream_rpc_method_handler),
    )
    for attribute, wrapper, make in kinds:
        inner = getattr(handler, attribute)
        if inner is None:
            continue
        if wrapper is stream_response:
            async def bound(request, context, _inner=inner):
                async for item in stream_response(_inner, request, context):
                    yield item
        else:
            async def bound(request, context, _inner=inner):
                return await unary_response(_inner, request, context)
        return make(bound, request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer)
    raise RuntimeError(f"handler for {method} has no behaviour")


def not_implemented_yet(servicer: object, descriptor: ServiceDescriptor, base: type) -> object:
    """Make every RPC the servicer does not override fail precisely.

    The generated base class answers a bare UNIMPLEMENTED; ours says which
    declared RPC is missing, with a machine-readable reason.
    """
    for method in descriptor.methods:
        if getattr(type(servicer), method.name) is not getattr(base, method.name):
            continue
        full = f"{descriptor.full_name}/{method.name}"

        async def missing(request, context, _full=full):
            raise TesseraError(grpc.StatusCode.UNIMPLEMENTED, "NOT_IMPLEMENTED",
                               f"{_full} is declared in the contract but not implemented yet",
                               {"method": _full})

        setattr(servicer, method.name, missing)
    return servicer
