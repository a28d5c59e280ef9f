"""The person's surface journal for a client that shows it: envelopes as JSON objects, cursors as text, and the
client's commands from JSON.

Web (the browser's stream) and mcp (an outside agent's MCP Apps frame) hand the same envelopes to the same
renderer and take the same commands from it, so they are shaped here once: A2UI messages parsed, host events as
JSON objects, a position in the journal written `<epoch>:<sequence>` as the stream's event ids are, and a
command parsed with what the server sets refused.
"""

from __future__ import annotations

import json
import re

from google.protobuf.json_format import MessageToDict, ParseDict, ParseError

from shared.rpc.refusals import Denied, Invalid
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


def client_command(body: dict) -> host_pb2.SendCommandRequest:
    """A command a person's client sent as JSON; the actor, session and surface are the server's to set, and one
    the client set (in either spelling) is refused."""
    try:
        command = ParseDict(body, host_pb2.SendCommandRequest())
    except ParseError as exc:
        raise Invalid("COMMAND_INVALID", str(exc)[:300]) from None
    filled = [name for name, given in (("actor", command.HasField("actor")), ("session_id", command.session_id),
                                       ("surface_id", command.surface_id)) if given]
    if filled:
        raise Denied("FIELD_NOT_ALLOWED", f"{filled[0]} is set by the server, not the client")
    return command
