"""gRPC error mapping: status code + google.rpc.ErrorInfo (domain tessera.dev).

Servers raise `TesseraError`; the runtime turns it into a rich status whose
ErrorInfo carries a stable UPPER_SNAKE reason clients can branch on. A refusal a
model may receive carries its next step too (shared.next_steps), filled in here
so no raising site can forget it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from shared import refusals
from shared.next_steps import fill

DOMAIN = "tessera.dev"
_STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass
class TesseraError(Exception):
    code: grpc.StatusCode
    reason: str
    message: str
    metadata: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.metadata = fill(self.reason, self.metadata)

    def __str__(self) -> str:
        return f"{self.code.name} {self.reason}: {self.message}"

    def to_status(self) -> grpc.Status:
        info = error_details_pb2.ErrorInfo(reason=self.reason, domain=DOMAIN, metadata=self.metadata)
        detail = any_pb2.Any()
        detail.Pack(info)
        return rpc_status.to_status(
            status_pb2.Status(code=self.code.value[0], message=self.message, details=[detail])
        )


def refuse(code: grpc.StatusCode, reason: str, message: str, metadata: dict[str, str] | None = None) -> TesseraError:
    """A servicer's own refusal (bad input, a caller's mistake): raise what this returns."""
    return TesseraError(code, reason, message, metadata or {})


# The one place a domain refusal becomes a gRPC status (the interceptor applies it to every service).
_STATUS_OF_REFUSAL: dict[type[refusals.Refusal], grpc.StatusCode] = {
    refusals.NotFound: grpc.StatusCode.NOT_FOUND,
    refusals.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    refusals.Conflict: grpc.StatusCode.FAILED_PRECONDITION,
    refusals.Denied: grpc.StatusCode.PERMISSION_DENIED,
    refusals.Exhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    refusals.Unavailable: grpc.StatusCode.UNAVAILABLE,
}


def status_of(refusal: refusals.Refusal) -> TesseraError:
    """The status a client receives for a refusal raised by a store or a domain module."""
    code = next((_STATUS_OF_REFUSAL[kind] for kind in type(refusal).__mro__ if kind in _STATUS_OF_REFUSAL),
                grpc.StatusCode.FAILED_PRECONDITION)
    return TesseraError(code, refusal.reason, refusal.message, dict(refusal.metadata))


@dataclass(frozen=True)
class ErrorDetails:
    """What a client learns from a failed call."""

    code: grpc.StatusCode
    message: str
    reason: str | None = None
    domain: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


def error_details(error: grpc.RpcError) -> ErrorDetails:
    """Decode code, message and ErrorInfo from a sync or aio RpcError."""
    code = error.code()
    message = error.details() or ""
    trailers = error.trailing_metadata() or ()
    for key, value in trailers:
        if key != _STATUS_DETAILS_KEY:
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                return ErrorDetails(code, status.message or message, info.reason, info.domain, dict(info.metadata))
    return ErrorDetails(code, message)
