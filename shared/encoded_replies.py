"""Replies a servicer hands over already in their wire form.

A unary servicer normally returns its response message and gRPC serialises it. A servicer whose reply is mostly
bytes it encoded once and keeps (a window's rows: see services/resources/window_rows.py) returns an EncodedReply
instead, so those bytes are not parsed into messages only to be serialised back. The interceptor (CallGuard)
gives every handler a serializer that passes an EncodedReply through and serialises anything else as before:
the access log, the caller check and the error mapping see the call exactly as they would a message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EncodedReply:
    """`data` is the serialised form of the RPC's own response message: the servicer vouches for it (decoding it
    with the response class must give the message it stands for)."""

    data: bytes


def accepting_encoded(serialize: Callable[[object], bytes] | None) -> Callable[[object], bytes] | None:
    """`serialize`, except that an EncodedReply is sent as it is (None stays None: gRPC then sends bytes)."""
    if serialize is None:
        return None

    def serialize_reply(reply: object) -> bytes:
        return reply.data if type(reply) is EncodedReply else serialize(reply)

    return serialize_reply
