"""gRPC error mapping: status code + google.rpc.ErrorInfo (domain tessera.dev).

Tessera's code raises refusals (shared/rpc/refusals.py); `status_of` is the one mapping of a refusal to a gRPC
status, whose ErrorInfo carries its stable UPPER_SNAKE reason clients branch on. A `TesseraError` is that
status before it is sent: made by `status_of`, or by `relayed` for a peer's refusal passed on as it came. A
refusal a model may receive carries its next step too (shared.rpc.next_steps), filled in so no raising site can
forget it.

A failed call is told to people and models in one way (`error_details`): a peer's own refusal as it gave
it; a call nobody answered (the peer is down, restarting or cut off) as one of the reasons below with a
plain sentence. gRPC core's transport text (socket paths, addresses, "failed to connect to all
addresses", "Socket closed" ...) goes to the log only, never into what anyone is shown.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from shared.logs import log
from shared.rpc import refusals
from shared.rpc.next_steps import fill

logger = logging.getLogger("tessera.errors")
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


# The one place a domain refusal becomes a gRPC status (the interceptor applies it to every service).
_STATUS_OF_REFUSAL: dict[type[refusals.Refusal], grpc.StatusCode] = {
    refusals.Invalid: grpc.StatusCode.INVALID_ARGUMENT,
    refusals.NotFound: grpc.StatusCode.NOT_FOUND,
    refusals.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    refusals.Conflict: grpc.StatusCode.FAILED_PRECONDITION,
    refusals.Denied: grpc.StatusCode.PERMISSION_DENIED,
    refusals.Exhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    refusals.Unavailable: grpc.StatusCode.UNAVAILABLE,
    refusals.Contended: grpc.StatusCode.ABORTED,
    refusals.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    refusals.TimedOut: grpc.StatusCode.DEADLINE_EXCEEDED,
    refusals.Unsupported: grpc.StatusCode.UNIMPLEMENTED,
}


def status_of(refusal: refusals.Refusal) -> TesseraError:
    """The status a client receives for a refusal raised by a store or a domain module."""
    code = next((_STATUS_OF_REFUSAL[kind] for kind in type(refusal).__mro__ if kind in _STATUS_OF_REFUSAL),
                grpc.StatusCode.FAILED_PRECONDITION)
    return TesseraError(code, refusal.reason, refusal.message, dict(refusal.metadata))


def relayed(error: grpc.RpcError, service: str, what: str = "", with_metadata: bool = True) -> TesseraError:
    """A peer's refusal passed on to this call's caller as the peer gave it: its code, reason and (unless
    `with_metadata` is False: the peer's details stay behind) metadata; for a peer nobody reached, the shared
    sentence naming `service`. `what`, when given, says what was being done."""
    details = error_details(error, service)
    message = f"{what}: {details.message}" if what else details.message
    return TesseraError(error.code(), details.reason, message, dict(details.metadata) if with_metadata else {})


# A call that got no Tessera answer (no ErrorInfo): the peer is not answering (or not in time), it stopped
# while answering, or the call failed on the way without the peer saying why.
SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
SERVICE_STOPPED = "SERVICE_STOPPED"
SERVICE_FAILED = "SERVICE_FAILED"
# Each service as a person reads its name; the service's own name in brackets, for whoever runs it.
SERVICE_NAMES = {
    "resources": "Tessera's data service (resources)",
    "host": "Tessera's display service (host)",
    "compiler": "Tessera's display compiler (compiler)",
    "capabilities": "Tessera's action broker (capabilities)",
    "agent": "Tessera's agent (agent)",
    "web": "Tessera's web service (web)",
    "mcp": "Tessera's service for outside agents (mcp)",
}
_SOME_SERVICE = "a Tessera service this needs"
_AGAIN = "try again in a few seconds"
_OPERATOR = "try again, and tell whoever runs Tessera if it keeps happening"
# What a person is told of a failure without a Tessera reason, by status code ({who}: the service).
_TOLD: dict[grpc.StatusCode, tuple[str, str]] = {
    grpc.StatusCode.UNAVAILABLE: (SERVICE_UNAVAILABLE, "{who} is not answering right now (it may be restarting); "
                                                       + _AGAIN),
    grpc.StatusCode.DEADLINE_EXCEEDED: (SERVICE_UNAVAILABLE, "{who} did not answer in time (it may be busy or "
                                                             "restarting); " + _AGAIN),
    grpc.StatusCode.CANCELLED: (SERVICE_STOPPED, "{who} stopped while answering (it may be restarting); " + _AGAIN),
    grpc.StatusCode.RESOURCE_EXHAUSTED: (SERVICE_FAILED, "{who} could not take this request (too large, or too "
                                                         "busy now); try again shortly, or ask for less"),
    grpc.StatusCode.UNIMPLEMENTED: (SERVICE_FAILED, "{who} does not offer this (it may run another version of "
                                                    "Tessera); tell whoever runs Tessera"),
    grpc.StatusCode.UNAUTHENTICATED: (SERVICE_FAILED, "{who} did not accept the connection (its certificates or "
                                                      "settings may be wrong); tell whoever runs Tessera"),
    grpc.StatusCode.PERMISSION_DENIED: (SERVICE_FAILED, "{who} did not accept the connection (its certificates or "
                                                        "settings may be wrong); tell whoever runs Tessera"),
}
_FAILED = (SERVICE_FAILED, "{who} failed while answering; " + _OPERATOR)
# A model that asked too much is told so: a timed-out call may go through when it asks for less.
_TIMED_OUT_STEP = ("Try once more asking for less (a narrower filter, fewer dimensions); if it fails again, tell "
                   "the person this step timed out and answer without it.")


@dataclass(frozen=True)
class ErrorDetails:
    """What a client learns from a failed call: what may be shown (code, reason, message, metadata) and, for
    the log only, gRPC's own text of a failure no Tessera service explained (`transport`)."""

    code: grpc.StatusCode
    message: str
    reason: str
    domain: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    transport: str = ""
    from_peer: bool = True  # the peer said why (ErrorInfo); False: nobody answered, or the call broke on the way


def error_details(error: grpc.RpcError, service: str | None = None) -> ErrorDetails:
    """Decode code, message and ErrorInfo from a sync or aio RpcError. Without ErrorInfo (nobody answered,
    or the call broke on the way) the reason and sentence are ours, naming `service` (a key of SERVICE_NAMES)
    where the caller knows which it called, and gRPC's text is logged here and shown nowhere."""
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
    reason, sentence = _TOLD.get(code, _FAILED)
    who = SERVICE_NAMES.get(service or "", _SOME_SERVICE)
    metadata = {"next_step": _TIMED_OUT_STEP} if code == grpc.StatusCode.DEADLINE_EXCEEDED else {}
    # INFO: a command-line tool without logging configured prints nothing of it (Python's last-resort
    # handler would print a WARNING to the person's terminal).
    log(logger, logging.INFO, "a call got no Tessera answer", code=code.name, peer=service or "",
        reason=reason, transport=message[:1000])
    return ErrorDetails(code, sentence.format(who=who), reason, None, fill(reason, metadata), message, False)
