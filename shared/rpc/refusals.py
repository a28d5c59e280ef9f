"""Refusals: the one way Tessera's own code says no. Servicers, stores and domain modules raise these, never gRPC
statuses.

A refusal carries a stable reason (UPPER_SNAKE, the same one clients branch on), a message for a person and
ErrorInfo-style metadata with the reason's next step for a model (shared/rpc/next_steps.py); its class says what
kind of refusal it is. The one mapping from these classes to gRPC status codes is `shared.rpc.errors.status_of`,
applied by the shared interceptor for every service, so domain code imports neither grpc nor protobuf and
reads the same from a servicer, the CLI or a test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.rpc.next_steps import fill


@dataclass
class Refusal(Exception):
    reason: str
    message: str
    metadata: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:  # a model told of it learns its next step, wherever it was raised
        self.metadata = fill(self.reason, self.metadata)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


class Invalid(Refusal):
    """The request itself is wrong: a field out of its bounds, a malformed id, a document that does not parse."""


class NotFound(Refusal):
    """The thing named does not exist (or is not the caller's to know about)."""


class AlreadyExists(Refusal):
    """Creating something that is already there."""


class Conflict(Refusal):
    """The state does not allow it: already decided, used, expired, changed since it was read."""


class Denied(Refusal):
    """The caller may not do this, whatever the state."""


class Exhausted(Refusal):
    """A quota or a bound is used up."""


class Unavailable(Refusal):
    """A dependency (the database) is not answering; retrying later may succeed."""


class Contended(Refusal):
    """Another change got there first (a moved head, a command still running): read again, then retry."""


class Unauthenticated(Refusal):
    """Who is asking cannot be verified (an assertion that does not verify or has expired)."""


class TimedOut(Refusal):
    """The work ran past its time limit and was stopped; asking for less may succeed."""


class Unsupported(Refusal):
    """What was asked for is not offered here."""
