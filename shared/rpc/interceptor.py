"""The server interceptor every Tessera RPC passes through.

Per call, in one wrapper: the contract-declared caller check and field rules (before any servicer code runs;
shared/rpc/field_rules.py checks each message of a request stream as it arrives), correlation ids, error mapping (a
refusal, shared/rpc/refusals.py, or a peer's refusal passed on as a `TesseraError` → status + ErrorInfo; anything
unexpected → INTERNAL without leaking its text) and an access log line. A unary reply of a method marked
`@answers_encoded` may come already serialised (shared/rpc/encoded_replies.py): it is sent as it is.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import re
import time

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from shared.identity.principals import principal_for_spiffe
from shared.logs import add_correlation, end_correlation, log_rpc
from shared.rpc.authz import EXEMPT_PREFIXES, CallerTable, DirectIssuer, check_caller
from shared.rpc.encoded_replies import accepting_encoded
from shared.rpc.errors import TesseraError, status_of
from shared.rpc.field_rules import RequestRules
from shared.rpc.refusals import Refusal, Unsupported

logger = logging.getLogger("tessera.rpc")

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,64}$")
# How long a stream whose write failed waits for gRPC to report the client's cancel (it comes within
# milliseconds when the client went away) before the failure counts as an error.
CANCEL_NOTICE_SECONDS = 5.0


class CallGuard(grpc.aio.ServerInterceptor):
    """Wraps every non-health handler: caller check, field rules, correlation, errors, access log.

    Handlers are static for a server's lifetime, so each method's wrapped
    handler is built once and reused.
    """

    def __init__(self, table: CallerTable, rules: RequestRules, issuer: DirectIssuer | None = None) -> None:
        self._table = table
        self._rules = rules
        self._issuer = issuer
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
                return _wrap(grpc.unary_unary_rpc_method_handler(_unknown_method), method, self._table,
                             self._rules, self._issuer)
            wrapped = self._wrapped[method] = _wrap(handler, method, self._table, self._rules, self._issuer)
        return wrapped


async def _unknown_method(request, context):
    raise Unsupported("METHOD_UNKNOWN", "no such method")


def _request_id(context: grpc.aio.ServicerContext) -> str:
    """The caller's x-request-id when well-formed, else a fresh one."""
    for key, value in context.invocation_metadata() or ():
        if key == "x-request-id" and isinstance(value, str) and _REQUEST_ID.match(value):
            return value
    # A correlation id, not a secret: no system call on every RPC for it.
    return f"{random.getrandbits(64):016x}"


class _CallScope:
    """One RPC's guarded scope: correlation and the caller check when it opens; the outcome's mapping and the
    access line when it closes. Plain calls on the success path: this runs on every RPC."""

    __slots__ = ("method", "context", "caller", "started", "request_id", "_correlation")

    def __init__(self, method: str, context: grpc.aio.ServicerContext) -> None:
        self.method, self.context, self.caller = method, context, None
        self.started = time.perf_counter()
        self.request_id = _request_id(context)
        self._correlation = add_correlation(request_id=self.request_id)

    def denial(self, table: CallerTable, issuer: DirectIssuer | None) -> TesseraError | None:
        try:
            self.caller = check_caller(table, self.method, self.context, issuer)
        except Refusal as refusal:
            return status_of(refusal)
        return None

    def succeeded(self) -> None:
        try:
            self._access_log("OK")
        finally:
            end_correlation(self._correlation)

    async def failed(self, exc: BaseException | None, denial: TesseraError | None = None) -> None:
        """Map what ended the call to its status (aborting with it) and write the access line; returns only when
        the call already ended (aborted by the servicer, cancelled by the client) and `exc` should propagate."""
        try:
            await self._end(exc, denial)
        finally:
            end_correlation(self._correlation)

    async def _end(self, exc: BaseException | None, denial: TesseraError | None) -> None:
        if isinstance(exc, Refusal):  # raised by a store or a domain module: mapped here, once for all services
            exc = status_of(exc)
        error = denial or (exc if isinstance(exc, TesseraError) else None)
        if isinstance(exc, (grpc.aio.AbortError, asyncio.CancelledError)):
            # The servicer aborted itself, or the client went away.
            code = self.context.code()
            self._access_log(code.name if code else "CANCELLED")
            return
        if error is None:
            logger.error("unhandled error in %s", self.method, exc_info=exc)
            error = TesseraError(grpc.StatusCode.INTERNAL, "INTERNAL",
                                 f"internal error (request {self.request_id})", {"request_id": self.request_id})
        self._access_log(error.code.name)
        await self.context.abort_with_status(error.to_status())  # raises

    def _access_log(self, code: str) -> None:
        log_rpc(logger, logging.WARNING if code == "PERMISSION_DENIED" else logging.INFO, method=self.method,
                caller=principal_for_spiffe(self.caller or "") or self.caller, code=code,
                ms=round((time.perf_counter() - self.started) * 1000, 3))


def _wrap(handler: grpc.RpcMethodHandler, method: str, table: CallerTable, rules: RequestRules,
          issuer: DirectIssuer | None) -> grpc.RpcMethodHandler:
    """The same handler, run inside a _CallScope; the servicer runs only if the caller is declared and, with a
    single request, only if the request keeps the contract's field rules (a stream's, as each is read)."""

    def guard(inner, finish):
        async def guarded(request, context):
            scope = _CallScope(method, context)
            if (denial := scope.denial(table, issuer)) is not None:
                await scope.failed(None, denial)  # aborts (raises): the servicer never runs
            try:
                if handler.request_streaming:
                    request = rules.each_checked(method, request)
                else:
                    rules.check(method, request)  # a refusal ends the call here
                response = await finish(inner(request, context), context)
            except BaseException as exc:
                await scope.failed(exc)
                raise
            scope.succeeded()
            return response
        return guarded

    kinds = (
        ("unary_unary", _answer, grpc.unary_unary_rpc_method_handler),
        ("stream_unary", _answer, grpc.stream_unary_rpc_method_handler),
        ("unary_stream", _stream, grpc.unary_stream_rpc_method_handler),
        ("stream_stream", _stream, grpc.stream_stream_rpc_method_handler),
    )
    for attribute, finish, make in kinds:
        inner = getattr(handler, attribute)
        if inner is not None:
            serializer = handler.response_serializer
            if getattr(inner, "answers_encoded", False):
                serializer = accepting_encoded(serializer)
            return make(guard(inner, finish), request_deserializer=handler.request_deserializer,
                        response_serializer=serializer)
    raise RuntimeError(f"handler for {method} has no behaviour")


async def _answer(result, context: grpc.aio.ServicerContext):
    """A unary servicer's reply (its coroutine's, or a plain function's)."""
    return await result if inspect.isawaitable(result) else result


async def _stream(result, context: grpc.aio.ServicerContext) -> None:
    """A streaming servicer's replies, written here rather than drained by gRPC: a write that fails because the
    client went away then ends inside the call's scope, never in gRPC's own error log."""
    if hasattr(result, "__aiter__"):
        await _send_each(result, context)
    elif inspect.isawaitable(result):
        await result  # a handler that writes with context.write()


async def _send_each(responses, context: grpc.aio.ServicerContext) -> None:
    """Write every response of a streaming servicer, then close it in this task (its `finally` runs here)."""
    try:
        async for response in responses:
            try:
                await context.write(response)
            except grpc.aio.InternalError:
                # The transport refused the write: the client cancelled or disconnected, and gRPC cancels this
                # task as soon as core reports it. A failure gRPC does not report as a cancel is a real error.
                await asyncio.sleep(CANCEL_NOTICE_SECONDS)
                raise
    finally:
        close = getattr(responses, "aclose", None)
        if close is not None:
            await close()


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
            raise Unsupported("NOT_IMPLEMENTED",
                              f"{_full} is declared in the contract but not implemented yet",
                              {"method": _full})

        setattr(servicer, method.name, missing)
    return servicer
