"""The answer inside an outside agent's chat: the MCP Apps extension (`io.modelcontextprotocol/ui`).

present_ui names a `ui://` resource: Tessera's own renderer bundle, which a client that speaks MCP Apps
draws in a sandboxed frame when present_ui is called. The frame gets present_ui's result (a revision id,
no rows) and asks for the answer itself through two tools only the app may call (`_meta.ui.visibility`
["app"]): one reads the person's surface journal from the host, rows included, and one sends what a block
asks for (a window of rows, an offered action, a state choice) as the host's revision-bound command. The
host checks each as it does web's; an offered action raises an approval the person signs in Tessera.

These two tools are listed only to clients that negotiated MCP Apps, and refused to any other: a client
without the extension would hand them to its model, and their results carry rows. A client that did
negotiate promises to keep app-only tools and their results from its model (the extension's contract).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import grpc
import mcp_types as types
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from mcp.server.apps import APP_MIME_TYPE

from shared.surface_envelopes import CursorInvalid, cursor_text, envelope_dict, parse_cursor
from tessera.host.v1 import host_pb2

ANSWER_URI = "ui://tessera/answer.html"
READ_TOOL = "read_answer"
COMMAND_TOOL = "send_answer_command"
APP_TOOLS = frozenset({READ_TOOL, COMMAND_TOOL})
BUNDLE = Path(__file__).resolve().parent / "static" / "answer.html"  # `make frontend` builds it
# A read waits at most this long for something new (the frame then asks again), and returns at most about
# this much JSON (the first batch always, so every read makes progress; `more` says to ask again at once).
MAX_WAIT_SECONDS = 25.0
MAX_READ_BYTES = 2 * 1024 * 1024
ENVELOPES_PER_RESPONSE = 64
# What a block of the frame may ask: the commands its blocks dispatch. An approval is decided with the
# person's passkey in Tessera's own page, which a sandboxed frame cannot use.
FRAME_COMMANDS = ("resource_window", "action_trigger", "state_write")
HOST_FILLS = ("actor", "session_id", "surface_id")


class AppRefusal(Exception):
    """A call of an app tool that cannot be served: a reason and the words for it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def _app_meta() -> dict:
    return {"ui": {"resourceUri": ANSWER_URI, "visibility": ["app"]}}


def app_tools() -> list[types.Tool]:
    """The frame's two tools: hidden from the model by every client that speaks MCP Apps."""
    return [
        types.Tool(name=READ_TOOL, meta=_app_meta(), description=(
            "For Tessera's answer frame only: the person's surface journal after `after` (absent: from a "
            "snapshot), waiting up to wait_seconds for something new."),
            input_schema={"type": "object", "additionalProperties": False, "properties": {
                "after": {"type": "string", "maxLength": 41, "description": "<epoch>:<sequence> of the last read"},
                "wait_seconds": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS}}},
            annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                              open_world_hint=False)),
        types.Tool(name=COMMAND_TOOL, meta=_app_meta(), description=(
            "For Tessera's answer frame only: what a block of the answer asks for (rows, an offered action, "
            "a state choice), as a revision-bound command."),
            input_schema={"type": "object", "additionalProperties": False, "required": ["command"],
                          "properties": {"command": {"type": "object"}}},
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                              open_world_hint=False)),
    ]


def with_answer_frame(tool: types.Tool) -> types.Tool:
    """present_ui, naming the frame that shows what it committed (for the model and the app alike)."""
    return tool.model_copy(update={"meta": {**(tool.meta or {}), "ui": {"resourceUri": ANSWER_URI}}})


class AnswerBundle:
    """The `ui://` resource: the renderer bundle as one self-contained HTML document (read once)."""

    def __init__(self, path: Path = BUNDLE) -> None:
        self.path = path
        self._html: str | None = None

    def resource(self) -> types.Resource:
        return types.Resource(uri=ANSWER_URI, name="tessera-answer", title="Tessera answer",
                              description="The answer Tessera committed for the person, drawn by its own renderer.",
                              mime_type=APP_MIME_TYPE, meta={"ui": {"prefersBorder": True}})

    def read(self) -> types.ReadResourceResult:
        if self._html is None:
            try:
                self._html = self.path.read_text(encoding="utf-8")
            except OSError as exc:  # a deployment without the built frontend: say what to run
                raise RuntimeError(f"the answer frame's bundle {self.path} is missing ({exc.strerror}); "
                                   "run 'make frontend'") from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=ANSWER_URI, mime_type=APP_MIME_TYPE, text=self._html)])


@dataclass(frozen=True)
class Viewer:
    """Who reads: the person's assertion and their MCP session on the host."""

    actor: object  # common_pb2.ActorAssertion
    session_id: str
    surface_id: str


class AnswerJournal:
    """The host's side of the frame: reads of the person's surface journal, and their blocks' commands."""

    def __init__(self, host) -> None:
        self._host = host

    async def read(self, viewer: Viewer, arguments: dict) -> dict:
        after = self._after(arguments.get("after"))
        wait = arguments.get("wait_seconds", MAX_WAIT_SECONDS)
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait <= MAX_WAIT_SECONDS:
            raise AppRefusal("WAIT_INVALID", f"wait_seconds: a number from 0 to {MAX_WAIT_SECONDS:g}")
        head = await self._host.AuthorizeViewer(host_pb2.AuthorizeViewerRequest(
            actor=viewer.actor, session_id=viewer.session_id, surface_id=viewer.surface_id), timeout=10)
        # Caught up: nothing after `after` yet (or an empty journal): wait for what comes next.
        caught_up = (after.epoch == head.head.epoch and after.sequence >= head.head.sequence) if after is not None \
            else head.head.sequence == 0
        request = host_pb2.SubscribeRequest(actor=viewer.actor, session_id=viewer.session_id,
                                            surface_id=head.surface_id, max_envelopes=ENVELOPES_PER_RESPONSE)
        if after is not None:
            request.resume_after.CopyFrom(after)
        stream = self._host.Subscribe(request, timeout=wait + 10)
        try:
            if caught_up:
                envelopes, more = await self._next_batch(stream, wait)
            else:
                envelopes, more = await self._until(stream, head.head)
        finally:
            stream.cancel()
        cursor = cursor_text(envelopes[-1]) if envelopes else arguments.get("after", "")
        return {"surface_id": head.surface_id, "cursor": cursor, "more": more,
                "envelopes": [envelope_dict(envelope) for envelope in envelopes]}

    @staticmethod
    def _after(text: object) -> host_pb2.Cursor | None:
        if text is None or text == "":
            return None
        try:
            return parse_cursor(text if isinstance(text, str) else "")
        except CursorInvalid as exc:
            raise AppRefusal("CURSOR_INVALID", f"after: {exc}") from None

    @staticmethod
    async def _next_batch(stream, wait: float) -> tuple[list, bool]:
        try:
            response = await asyncio.wait_for(stream.read(), wait)
        except TimeoutError:
            return [], False
        if response is grpc.aio.EOF:
            return [], False
        return [response.envelope, *response.following], False

    @staticmethod
    async def _until(stream, head: host_pb2.Cursor) -> tuple[list, bool]:
        """Envelopes up to the head the host named when asked (what is there now), within the reply bound."""
        envelopes, size = [], 0
        while True:
            response = await stream.read()
            if response is grpc.aio.EOF:
                return envelopes, False
            batch = [response.envelope, *response.following]
            envelopes += batch
            size += sum(envelope.ByteSize() for envelope in batch)
            last = envelopes[-1]
            if last.epoch != head.epoch or last.sequence >= head.sequence:
                return envelopes, False
            if size >= MAX_READ_BYTES:
                return envelopes, True

    async def command(self, viewer: Viewer, arguments: dict) -> dict:
        body = arguments.get("command")
        if not isinstance(body, dict):
            raise AppRefusal("COMMAND_INVALID", "command: an object, as a block of the answer dispatches it")
        filled = sorted(set(HOST_FILLS) & set(body))
        if filled:
            raise AppRefusal("FIELD_NOT_ALLOWED", f"command.{filled[0]} is set by Tessera, not the frame")
        try:
            command = ParseDict(body, host_pb2.SendCommandRequest())
        except ParseError as exc:
            raise AppRefusal("COMMAND_INVALID", f"command: {str(exc)[:300]}") from None
        kind = command.WhichOneof("command")
        if kind not in FRAME_COMMANDS:
            raise AppRefusal("COMMAND_NOT_FROM_FRAME", "an approval is decided in Tessera with the person's passkey; "
                                                       "the frame sends only what its blocks ask for")
        command.actor.CopyFrom(viewer.actor)
        command.session_id, command.surface_id = viewer.session_id, viewer.surface_id
        reply = await self._host.SendCommand(command, timeout=30)
        return MessageToDict(reply, preserving_proto_field_name=True)

