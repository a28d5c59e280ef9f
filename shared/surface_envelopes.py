"""The person's surface journal for a client that shows it: envelopes as JSON objects, and cursors as text.

Web (the browser's stream) and mcp (an outside agent's MCP Apps frame) hand the same envelopes to the same
renderer, so they are shaped here once: A2UI messages parsed, host events as JSON objects, and a position in
the journal written `<epoch>:<sequence>` as the stream's event ids are.
"""

from __future__ import annotations

import json
import re

from google.protobuf.json_format import MessageToDict

from tessera.host.v1 import host_pb2

_CURSOR = re.compile(r"([0-9]{1,20}):([0-9]{1,20})")


class CursorInvalid(ValueError):
    """Text that is not a cursor this journal writes."""


def envelope_dict(envelope: host_pb2.SurfaceEnvelope) -> dict:
    """An envelope for a renderer: A2UI messages parsed, host events as JSON objects."""
    kind = envelope.WhichOneof("payload")
    out = {"surface_id": envelope.surface_id, "epoch": envelope.epoch, "sequence": envelope.sequence,
           "revision_id": envelope.revision_id, "payload_hash": envelope.payload_hash, "kind": kind}
    if kind == "a2ui":
        out["message"] = json.loads(envelope.a2ui.message_json)
    else:
        out["event"] = MessageToDict(getattr(envelope, kind), preserving_proto_field_name=True)
    return out


def cursor_text(envelope: host_pb2.SurfaceEnvelope) -> str:
    return f"{envelope.epoch}:{envelope.sequence}"


def parse_cursor(text: str) -> host_pb2.Cursor:
    """`<epoch>:<sequence>`, two unsigned 64-bit decimals, or CursorInvalid."""
    match = _CURSOR.fullmatch(text)
    if match is None or max(int(match[1]), int(match[2])) >= 2**64:
        raise CursorInvalid("a cursor is <epoch>:<sequence>, as the stream's event ids")
    return host_pb2.Cursor(epoch=int(match[1]), sequence=int(match[2]))
