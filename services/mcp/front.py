"""The MCP front's tools: exactly the agent's six data tools, for the person the front authenticated.

Tool descriptions and input schemas are the agent's own (agent.ListDataTools), so an outside model is
offered what the built-in one is; annotations say honestly that only present_ui changes anything.
Every call goes to the agent's turn for that person and client (turns.py) and comes back as the
result a model gets there: slices, opaque ids and descriptors, never rows, SQL or physical names.
A client that speaks MCP Apps also gets the answer frame's two app-only tools (answer_app.py), which
read the person's surface from the host; no other client is offered or served them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import time
from dataclasses import dataclass

import grpc
import mcp_types as types

from services.mcp.answer_app import (
    APP_TOOLS,
    COMMAND_TOOL,
    AnswerJournal,
    Viewer,
    app_tools,
    with_answer_frame,
)
from services.mcp.turns import QUESTION_OPENERS, OutsideTurn, TurnUnavailable, question_of
from shared.data.caches import bounded_lru
from shared.identity.actors import assert_actor
from shared.logs import log
from shared.rpc.errors import error_details
from shared.rpc.next_steps import metadata
from shared.rpc.refusals import Refusal
from shared.tools.tool_results import refused
from tessera.agent.v1 import agent_pb2
from tessera.host.v1 import host_pb2

logger = logging.getLogger("tessera.mcp")
# Arguments larger than this are refused here, before any work. Smaller ones go to the agent, whose bridge
# refuses anything over its own bound (256 KiB) exactly as it does for the built-in model.
MAX_ARGUMENT_BYTES = 1024 * 1024
# The host session outside agents commit to, one per person: web opens the same one for /?surface=mcp.
SESSION_REQUEST_ID = "mcp"
ASSERTION_LIFETIME = dt.timedelta(hours=1)
# A turn carries the assertion it was opened with: the next call after this long begins a new turn.
MAX_TURN_SECONDS = ASSERTION_LIFETIME.total_seconds() - 600
MAX_REMEMBERED_SESSIONS = 4096  # people whose host session is remembered (a memo: forgotten, it is asked again)


@dataclass(frozen=True)
class Person:
    actor_id: str
    tenant_id: str
    display_name: str
    client: str  # which outside agent (an OAuth client id, or "stdio")
    conversation: str = ""  # the client's MCP session, when its transport has one: each its own turn


def tool_result(ok: bool, message: dict, text: str | None = None) -> types.CallToolResult:
    """`message` as structured content, and as text: itself in JSON unless `text` says it in a line."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text or json.dumps(message))],
                                structured_content=message, is_error=not ok)


def refusal(reason: str, message: str, **taught) -> types.CallToolResult:
    """The front's own refusal (about the call as a whole), shaped as the agent's are, with its next step."""
    return tool_result(False, refused("", "", reason, message, metadata(**taught)).refusal())


class Front:
    """Tools offered to outside agents, and each person-and-client's current turn."""

    def __init__(self, agent, host, signing_key, web_url: str, idle_seconds: float,
                 apps_clients: frozenset[str] = frozenset()) -> None:
        self._agent, self._host, self._key = agent, host, signing_key
        self._apps_clients = apps_clients
        self._web_url = web_url.rstrip("/")
        self._idle_seconds = idle_seconds
        self._tools: list[types.Tool] | None = None
        self._turns: dict[Person, OutsideTurn] = {}
        self._locks: dict[Person, asyncio.Lock] = {}
        self._sessions = bounded_lru(MAX_REMEMBERED_SESSIONS)  # person → their host session and its surface
        self._journal = AnswerJournal(host)

    def shows_apps(self, person: Person | None, negotiated: bool) -> bool:
        """Whether this client gets the answer frame: it negotiated MCP Apps, and the operator names it as a client
        that keeps app-only tools and their results from its model."""
        return negotiated and person is not None and person.client in self._apps_clients

    async def tools(self, apps: bool = False) -> list[types.Tool]:
        """The six data tools; for a client that speaks MCP Apps, present_ui names the answer frame and the
        frame's own tools follow (hidden from the model by the client)."""
        tools = await self._data_tools()
        if not apps:
            return tools
        return [with_answer_frame(tool) if tool.name == "present_ui" else tool for tool in tools] + app_tools()

    async def _data_tools(self) -> list[types.Tool]:
        if self._tools is None:
            try:
                reply = await self._agent.ListDataTools(agent_pb2.ListDataToolsRequest(), timeout=10)
            except grpc.aio.AioRpcError as exc:  # the client gets this as the request's error, and may retry
                raise RuntimeError(f"Tessera's agent did not list its tools ({exc.code().name}); try again shortly") \
                    from None
            self._tools = [types.Tool(
                name=tool.name, description=tool.description, input_schema=json.loads(tool.input_schema_json),
                output_schema=json.loads(tool.output_schema_json),
                annotations=types.ToolAnnotations(read_only_hint=tool.read_only, destructive_hint=False,
                                                  idempotent_hint=tool.read_only, open_world_hint=False))
                for tool in reply.tools]
        return self._tools

    def assertion(self, person: Person):
        return assert_actor(self._key, person.actor_id, person.tenant_id, person.display_name,
                            lifetime=ASSERTION_LIFETIME)

    async def call(self, person: Person, tool: str, arguments: dict | None, apps: bool = False) -> types.CallToolResult:
        arguments_json = json.dumps(arguments or {})
        if len(arguments_json.encode()) > MAX_ARGUMENT_BYTES:
            return refusal("ARGUMENTS_TOO_LARGE", f"arguments exceed {MAX_ARGUMENT_BYTES} bytes",
                           bound=MAX_ARGUMENT_BYTES)
        if tool in APP_TOOLS:
            if not apps:  # as the agent refuses a tool it does not offer, without opening a turn for it
                offered = ", ".join(t.name for t in await self._data_tools())
                return refusal("UNKNOWN_TOOL", f"no tool {tool!r} is offered here; available: {offered}")
            return await self._app_call(person, tool, arguments or {})
        lock = self._locks.setdefault(person, asyncio.Lock())
        async with lock:  # one conversation's calls in order: the turn state is that conversation's
            try:
                turn = await self._turn_for(person, tool, arguments or {})
                outcome = await turn.call(tool, arguments_json)
            except TurnUnavailable as exc:
                await self._end(person)
                return refusal(exc.reason, exc.message)
        message = outcome.model_message
        if tool == "present_ui" and message.get("revision"):  # committed: the person sees it there
            message = {**message, "link": f"{self._web_url}/?surface={SESSION_REQUEST_ID}"}
        return tool_result(outcome.ok, message)

    async def _turn_for(self, person: Person, tool: str, arguments: dict) -> OutsideTurn:
        turn = self._turns.get(person)
        now = time.monotonic()
        stale = turn is not None and (now - turn.last_used > self._idle_seconds
                                      or now - turn.opened_at > MAX_TURN_SECONDS  # before its assertion expires
                                      or ((turn.answered or turn.spent) and tool in QUESTION_OPENERS))
        if stale:
            await self._end(person)
            turn = None
        if turn is None:
            turn = OutsideTurn(self._agent)
            await turn.open(self.assertion(person), await self._session(person),
                            question_of(tool, arguments, person.client))
            self._turns[person] = turn
            log(logger, logging.INFO, "turn begun", turn_id=turn.turn_id, client=person.client)
        return turn

    async def _app_call(self, person: Person, tool: str, arguments: dict) -> types.CallToolResult:
        """A call of the answer frame: the person's surface read, or a block's command, at the host."""
        try:
            session_id, surface_id = await self._opened(person)
            viewer = Viewer(self.assertion(person), session_id, surface_id)
            log(logger, logging.INFO, "frame call", tool=tool, client=person.client)
            answered = await (self._journal.command if tool == COMMAND_TOOL else self._journal.read)(viewer, arguments)
            # The data once, as structured content: a read carries up to 2 MiB.
            return tool_result(True, answered, text=f"{tool}: in structured content")
        except Refusal as exc:  # the frame's own refusal, or the session's
            return refusal(exc.reason, exc.message)
        except grpc.aio.AioRpcError as exc:  # the host's refusal (its reason), or a host nobody reached
            details = error_details(exc, "host")
            return refusal(details.reason, details.message)

    async def _session(self, person: Person) -> str:
        return (await self._opened(person))[0]

    async def _opened(self, person: Person) -> tuple[str, str]:
        remembered = self._sessions.get(person)
        if remembered is None:  # opened again when forgotten: the same request id gives the same session
            try:
                opened = await self._host.OpenSession(host_pb2.OpenSessionRequest(
                    actor=self.assertion(person), request_id=SESSION_REQUEST_ID), timeout=10)
            except grpc.aio.AioRpcError as exc:  # the host's refusal, or a host nobody reached, in words
                details = error_details(exc, "host")
                raise TurnUnavailable(details.reason, f"the session could not be opened: {details.message}") \
                    from None
            remembered = self._sessions[person] = (opened.session_id, opened.surface_id)
        return remembered

    async def _end(self, person: Person) -> None:
        turn = self._turns.pop(person, None)
        if turn is not None:
            await turn.end()

    async def end_idle(self) -> None:
        """End turns nobody called a tool in for the idle time (their streams hold agent resources), and forget
        the locks of people with no turn and no call under way (their sessions are a bounded memo)."""
        now = time.monotonic()
        for person, turn in list(self._turns.items()):
            if now - turn.last_used > self._idle_seconds and not self._locks[person].locked():
                await self._end(person)
        for person in [p for p, lock in self._locks.items() if p not in self._turns and not lock.locked()]:
            del self._locks[person]

    async def close(self) -> None:
        for person in list(self._turns):
            await self._end(person)

