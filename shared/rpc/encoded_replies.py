"""Replies a servicer hands over already in their wire form.

A unary servicer normally returns its response message and gRPC serialises it. A servicer whose reply is mostly
bytes it encoded once and keeps (a window's rows: see services/resources/window_rows.py) returns an EncodedReply
instead, so those bytes are not parsed into messages only to be serialised back. A servicer method that
may do so says it with `@answers_encoded`; the interceptor (CallGuard) gives that method's handler a serializer
that passes an EncodedReply through and serialises anything else as before; every other handler keeps the
message's own serializer, with no Python call added per reply (a surface stream sends many). The access log, the
caller check and the error mapping see the call exactly as they would a message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EncodedReply:
    """`data` is the serialised form of the RPC's own response message: the servicer vouches for it (decoding it
    with the response class must give the message it stands for)."""

    data: bytes


def answers_encoded(method: Callable) -> Callable:
    """Marks a unary servicer method whose reply may be an EncodedReply."""
    method.answers_encoded = True
    return method


def accepting_encoded(serialize: Callable[[object], bytes] | None) -> Callable[[object], bytes] | None:
    """`serialize`, except that an EncodedReply is sent as it is (None stays None: gRPC then sends bytes)."""
    if serialize is None:
        return None

    def serialize_reply(reply: object) -> bytes:
        return reply.data if type(reply) is EncodedReply else serialize(reply)

    return serialize_reply


def length_delimited(field_number: int, data: bytes) -> bytes:
    """`data` as a length-delimited field (a message, bytes or a string; one element of a repeated one) in wire
    form: the tag, the length as a varint, the bytes. Joined such fields make the message that holds them."""
    if not 1 <= field_number <= 15:  # a one-byte tag; larger numbers take a varint tag this does not write
        raise ValueError(f"field number {field_number} is not 1 to 15")
    head, size = bytearray([field_number << 3 | 2]), len(data)
    while size > 0x7F:
        head.append(size & 0x7F | 0x80)
        size >>= 7
    head.append(size)
    return bytes(head) + data
