"""The answer inside an outside agent's chat: the MCP Apps extension (`io.modelcontextprotocol/ui`).

present_ui names a `ui://` resource: Tessera's own renderer bundle, which a client that speaks MCP Apps
draws in a sandboxed frame when present_ui is called. The frame gets present_ui's result (a revision id,
no rows) and asks for the answer itself through two tools only the app may call (`_meta.ui.visibility`
["app"]): one reads the person's surface journal from the host, rows included, and one sends what a block
asks for (a window of rows, an offered action, a state choice) as the host's revision-bound command. The
host checks each as it does web's; an offered action raises an approval the person signs in Tessera.

These two tools are listed only to clients that negotiated MCP Apps and that the operator names as
honouring it (TESSERA_MCP_APPS_CLIENTS), and refused to any other: a client that hands every tool to its
model would give it rows. A read returns only the part of the journal the frame's revision shows: its
messages, windows of the results it binds, and the host's events about what its blocks started; never
another answer of the person's.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

import grpc
import mcp_types as types
from cachetools import LRUCache
from google.protobuf.json_format import MessageToDict
from mcp.server.apps import APP_MIME_TYPE

from shared.data.caches import bounded_lru
from shared.rpc.field_rules import max_chars
from shared.rpc.refusals import Denied, Exhausted, Invalid
from shared.ui.surface_envelopes import CursorInvalid, client_command, cursor_text, envelope_dict, parse_cursor
from shared.ui.windows import resource_of_window
from tessera.host.v1 import host_pb2
from tessera.rules.v1 import rules_pb2

MAX_ID_CHARS = max_chars(rules_pb2.TEXT_KIND_ID)  # a revision id, as the host's contract bounds it

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
MAX_READS_PER_SESSION = 8  # a chat's frames each follow their answer: more at once is refused, not queued
MAX_SHOWN_KEPT = 256  # revisions whose bound results are remembered
MAX_SESSIONS_KEPT = 4096  # sessions whose reads under way are counted
MAX_STARTED_KEPT = 4096  # intents and commands of frames whose events are shown
# What a block of the frame may ask: the commands its blocks dispatch. An approval is decided with the
# person's passkey in Tessera's own page, which a sandboxed frame cannot use.
FRAME_COMMANDS = ("resource_window", "action_trigger", "state_write")


def _app_meta() -> dict:
    return {"ui": {"resourceUri": ANSWER_URI, "visibility": ["app"]}}


def app_tools() -> list[types.Tool]:
    """The frame's two tools: hidden from the model by every client that speaks MCP Apps."""
    return [
        types.Tool(name=READ_TOOL, meta=_app_meta(), description=(
            "For Tessera's answer frame only: what the frame's revision shows, from the person's surface journal "
            "after `after` (absent: from the start), waiting up to wait_seconds for something new."),
            input_schema={"type": "object", "additionalProperties": False, "required": ["revision"], "properties": {
                "revision": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS,
                             "description": "the revision present_ui committed"},
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


def _about(event: dict, started: LRUCache) -> bool:
    """A host event (as JSON) about an intent or command in `started`."""
    ids = (event.get("intent_id"), event.get("command_id"), (event.get("receipt") or {}).get("intent_id"))
    return any(found in started for found in ids if found)


@dataclass(frozen=True)
class Shown:
    """What one revision's frame shows: the revision's own messages, and windows of the results it binds."""

    revision_id: str
    resources: frozenset[str]  # data-model paths of the results it binds ("/resources/<id>")

    def keeps(self, envelope: dict, started: LRUCache) -> bool:
        """An envelope (as `envelope_dict` shapes it) this frame shows."""
        kind = envelope["kind"]
        if kind == "snapshot_required":
            return True
        if kind != "a2ui":  # about what its blocks started; or stamped with it, the head when it was published (an
            # approval the broker publishes before the command's reply has named its intent here)
            return envelope["revision_id"] == self.revision_id or _about(envelope["event"], started)
        path = str((envelope["message"].get("updateDataModel") or {}).get("path", ""))
        resource = resource_of_window(path)
        if resource is not None:  # stamped with the head when it was read: known by its result
            return resource in self.resources
        return envelope["revision_id"] == self.revision_id


def _bound_resources(messages_json) -> frozenset[str]:
    paths = (str((json.loads(text).get("updateDataModel") or {}).get("path", "")) for text in messages_json)
    return frozenset(path for path in paths if path.startswith("/resources/") and resource_of_window(path) is None)


class AnswerJournal:
    """The host's side of the frames: reads of one revision's part of the person's surface journal, and the
    commands its blocks send."""

    def __init__(self, host) -> None:
        self._host = host
        self._shown = bounded_lru(MAX_SHOWN_KEPT)  # (surface, revision) → what its frame shows
        self._reads = bounded_lru(MAX_SESSIONS_KEPT)  # session → its reads under way
        self._started = bounded_lru(MAX_STARTED_KEPT)  # intents and commands frames started → None

    async def read(self, viewer: Viewer, arguments: dict) -> dict:
        after = self._after(arguments.get("after"))
        wait = arguments.get("wait_seconds", MAX_WAIT_SECONDS)
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait <= MAX_WAIT_SECONDS:
            raise Invalid("WAIT_INVALID", f"wait_seconds: a number from 0 to {MAX_WAIT_SECONDS:g}")
        revision = arguments.get("revision")
        if not isinstance(revision, str) or not 1 <= len(revision) <= MAX_ID_CHARS:
            raise Invalid("REVISION_REQUIRED", f"revision: the id present_ui returned (1-{MAX_ID_CHARS} characters)")
        reads = self._reads.setdefault(viewer.session_id, asyncio.Semaphore(MAX_READS_PER_SESSION))
        if reads.locked():
            raise Exhausted("TOO_MANY_READS", f"at most {MAX_READS_PER_SESSION} reads at once per person; "
                                               "ask again when one returns")
        async with reads:
            return await self._read(viewer, revision, after, float(wait))

    async def _read(self, viewer: Viewer, revision: str, after: host_pb2.Cursor | None, wait: float) -> dict:
        shown = await self._shown_of(viewer, revision)
        head = await self._host.AuthorizeViewer(host_pb2.AuthorizeViewerRequest(
            actor=viewer.actor, session_id=viewer.session_id, surface_id=viewer.surface_id), timeout=10)
        current = await self._host.GetRevision(host_pb2.GetRevisionRequest(
            actor=viewer.actor, session_id=viewer.session_id, surface_id=viewer.surface_id), timeout=10)
        # Caught up: nothing after `after` yet (or an empty journal): wait for what comes next.
        caught_up = (after.epoch == head.head.epoch and after.sequence >= head.head.sequence) if after is not None \
            else head.head.sequence == 0
        request = host_pb2.SubscribeRequest(actor=viewer.actor, session_id=viewer.session_id,
                                            surface_id=head.surface_id, max_envelopes=ENVELOPES_PER_RESPONSE)
        if after is not None:
            request.resume_after.CopyFrom(after)
        stream = self._host.Subscribe(request, timeout=wait + 10)
        try:  # caught up: the first batch to come within the wait; else what is there, up to the head
            envelopes, more = await self._until(stream, head.head, wait if caught_up else max(wait, 1.0))
        finally:
            stream.cancel()
        shaped = (envelope_dict(envelope) for envelope in envelopes)
        return {"revision": revision, "replaced": current.revision.revision_id != revision, "more": more,
                "cursor": cursor_text(envelopes[-1]) if envelopes else "",
                "envelopes": [envelope for envelope in shaped if shown.keeps(envelope, self._started)]}

    async def _shown_of(self, viewer: Viewer, revision: str) -> Shown:
        """The revision's bound results, from its own messages (no rows); NOT_FOUND for one not on this surface."""
        key = (viewer.surface_id, revision)
        shown = self._shown.get(key)
        if shown is None:
            reply = await self._host.GetRevision(host_pb2.GetRevisionRequest(
                actor=viewer.actor, session_id=viewer.session_id, surface_id=viewer.surface_id,
                revision_id=revision), timeout=10)
            shown = self._shown[key] = Shown(revision, _bound_resources(reply.revision.a2ui_messages_json))
        return shown

    @staticmethod
    def _after(text: object) -> host_pb2.Cursor | None:
        if text is None or text == "":
            return None
        try:
            return parse_cursor(text if isinstance(text, str) else "")
        except CursorInvalid as exc:
            raise Invalid("CURSOR_INVALID", f"after: {exc}") from None

    @staticmethod
    async def _until(stream, head: host_pb2.Cursor, wait: float) -> tuple[list, bool]:
        """Envelopes up to the head the host named when asked (what is there now; past it, the next batch), within
        the reply bound and the wait: what was read by then goes out, `more` saying to ask again at once."""
        envelopes, size = [], 0
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            try:
                response = await asyncio.wait_for(stream.read(), max(remaining, 0.0))
            except TimeoutError:
                return envelopes, bool(envelopes)  # nothing by then: nothing new; some: the rest is still coming
            if response is grpc.aio.EOF:
                return envelopes, False
            batch = [response.envelope, *response.following]
            envelopes += batch
            size += sum(envelope.ByteSize() for envelope in batch)
            last = envelopes[-1]
            if last.epoch != head.epoch:  # compacted meanwhile: the new epoch's snapshot is still to come
                return envelopes, True
            if last.sequence >= head.sequence:
                return envelopes, False
            if size >= MAX_READ_BYTES:
                return envelopes, True

    async def command(self, viewer: Viewer, arguments: dict) -> dict:
        body = arguments.get("command")
        if not isinstance(body, dict):
            raise Invalid("COMMAND_INVALID", "command: an object, as a block of the answer dispatches it")
        command = client_command(body)
        kind = command.WhichOneof("command")
        if kind not in FRAME_COMMANDS:
            raise Denied("COMMAND_NOT_FROM_FRAME", "an approval is decided in Tessera with the person's passkey; "
                                                       "the frame sends only what its blocks ask for")
        command.actor.CopyFrom(viewer.actor)
        command.session_id, command.surface_id = viewer.session_id, viewer.surface_id
        self._started[command.command_id] = None
        reply = await self._host.SendCommand(command, timeout=30)
        if reply.receipt.intent_id:
            self._started[reply.receipt.intent_id] = None
        return MessageToDict(reply, preserving_proto_field_name=True)
