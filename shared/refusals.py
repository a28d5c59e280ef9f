"""Refusals decided below the servicer: stores and domain modules raise these, never gRPC statuses.

A refusal carries a stable reason (UPPER_SNAKE, the same one clients branch on) and a message for a
person; its class says what kind of refusal it is. The one mapping from these classes to gRPC status
codes is `shared.errors.status_of`, applied by the shared interceptor for every service, so a store
imports neither grpc nor protobuf and reads the same from a servicer, the CLI or a test.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Refusal(Exception):
    reason: str
    message: str
    metadata: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


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
