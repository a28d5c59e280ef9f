"""The MCP side of the tool trust gate (§8), with the official `mcp` SDK.

One long-lived client per allowlisted server (stdio subprocess or streamable
HTTP), restarted when it crashes or hangs. At every session start the tool
list is fetched afresh and each tool's description and input schema are hashed
and compared with the reviewed pins: unlisted → denied, changed → drifted
(denied, with an alert), missing or unreachable → unavailable. The model only
ever gets `server.tool` ids and our reviewed descriptions.

A session keeps the view surveyed at its start, with one exception: a tool
this process has seen drift (in any survey) is denied in every session from
then on, also in those surveyed before, until it is re-pinned (which takes a
restart). Each replica surveys its own servers and is not told of another's
findings: it sees a change at its next survey (a session start, ReviewTools,
an approved mutation about to run).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from services.capabilities.tool_policy import ServerRule, ToolPolicy, ToolRule, digest
from shared.tool_contracts import ToolContract, ToolSchemaError
from tessera.capabilities.v1 import capabilities_pb2 as cap

# The MCP SDK takes about a second to import: it is loaded when the first tool server is opened (after the
# broker serves), not at start, so a broker restarted after a crash answers that much sooner.
if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

logger = logging.getLogger("tessera.broker.mcp")
MAX_SESSIONS = 1_000  # snapshots kept; an older session re-surveys on its next call
CONNECT_TIMEOUT_SECONDS = 15.0
# The SDK winds a stdio server down itself, every step bounded: close stdin, wait 2 s, SIGTERM the process
# group, wait 2 s, SIGKILL, reap (≤ ~7 s for a server that ignores everything). Interrupting that with a
# plain task.cancel() can leave the server process alive and its pipe reader waiting forever, so it is only
# a last resort after this long.
SHUTDOWN_SECONDS = 8.0


class ToolCallFailed(Exception):
    """A call that did not produce a result: the server crashed, hung or refused the request."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class ToolState:
    tool_id: str
    rule: ToolRule | None
    availability: int
    reason: str = ""
    description: str = ""  # the server's, as offered now
    input_schema: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    contract: ToolContract | None = None  # our description + the pinned (== current) schema

    @property
    def available(self) -> bool:
        return self.availability == cap.TOOL_AVAILABILITY_AVAILABLE


def _offered(tool_id: str, rule: ToolRule | None, tool: mcp_types.Tool) -> ToolState:
    """A tool as its server offers it now: available as far as the server goes; the judge decides."""
    return ToolState(tool_id, rule, cap.TOOL_AVAILABILITY_AVAILABLE if rule else cap.TOOL_AVAILABILITY_DENIED,
                     "" if rule else "NOT_IN_POLICY", tool.description or "", tool.input_schema,
                     tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {})


class ServerConnection:
    """A client to one server, kept open in its own task (the SDK's contexts live in one task)."""

    def __init__(self, name: str, rule: ServerRule, policy: ToolPolicy, log_dir: Path) -> None:
        self.name = name
        self.rule = rule
        self.policy = policy
        self.log_dir = log_dir
        self._client: Client | None = None
        self._task: asyncio.Task | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._failure: BaseException | None = None
        self._lock = asyncio.Lock()
        self._abort: anyio.CancelScope | None = None  # ends a connection still in its handshake
        self._closed = False  # the broker is stopping: no new connection

    def _transport(self, errlog):
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        if self.rule.transport == "stdio":
            command = self.policy.command(self.rule)
            return stdio_client(StdioServerParameters(command=command[0], args=command[1:],
                                                      env=self.policy.server_env(self.rule)), errlog=errlog)
        http = create_mcp_http_client(headers=self.policy.headers(self.rule))
        return streamable_http_client(self.rule.url, http_client=http)

    async def _hold(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"mcp-{self.name}.log", "a", encoding="utf-8") as errlog:
            try:
                from mcp import Client

                # An anyio scope, not task.cancel(): cancelling it honours the SDK's shielded wind-down, so an
                # aborted handshake still ends with the server process stopped and reaped.
                with anyio.CancelScope() as self._abort:
                    async with Client(self._transport(errlog), cache=None,
                                      read_timeout_seconds=self.rule.timeout_seconds) as client:
                        self._client = client
                        self._ready.set()
                        await self._stop.wait()
                if self._abort.cancelled_caught:
                    self._failure = ConnectionAbortedError("the connection was closed during its handshake")
            except BaseException as exc:  # noqa: BLE001 - whatever ended the connection, callers see it
                self._failure = exc
            finally:
                self._client = None
                self._abort = None
                self._ready.set()

    async def client(self) -> Client:
        async with self._lock:
            if self._client is None:
                await self._restart()
            if self._client is None:
                failure = self._failure
                raise ToolCallFailed("SERVER_UNREACHABLE",
                                     f"server {self.name} did not start: {type(failure).__name__}: {failure}"[:300])
            return self._client

    async def _restart(self) -> None:
        await self._shutdown()
        if self._closed:
            self._failure = ConnectionAbortedError("the broker is stopping")
            return
        await asyncio.to_thread(_load_sdk)  # the first time only: off the event loop, which keeps serving
        self._ready, self._stop, self._failure = asyncio.Event(), asyncio.Event(), None
        self._task = asyncio.create_task(self._hold(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), CONNECT_TIMEOUT_SECONDS)
        except TimeoutError:
            await self._shutdown()  # aborts the handshake (which records its own, less telling, failure)
            self._failure = TimeoutError(f"no handshake within {CONNECT_TIMEOUT_SECONDS:.0f} s")

    async def _shutdown(self) -> None:
        """End the current connection: a live one winds down (the SDK stops the server); one still in its
        handshake is aborted at once — a server that never answered has nothing to finish."""
        task = self._task
        if task is not None:
            self._stop.set()
            if self._client is None and self._abort is not None:
                self._abort.cancel()
            done, _ = await asyncio.wait({task}, timeout=SHUTDOWN_SECONDS)
            if not done:  # the SDK's own bounds were overrun: cancel, and do not wait on it for long
                logger.error("tool server %s did not stop within %.0f s; abandoning it", self.name, SHUTDOWN_SECONDS)
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)
        if self._task is task:
            self._task = None
            self._client = None

    async def _timed(self, what: str, work):
        client = await self.client()
        try:
            return await asyncio.wait_for(work(client), self.rule.timeout_seconds)
        except TimeoutError:
            async with self._lock:  # a hung server is restarted before anyone uses it again (unless already)
                if self._client is client:
                    await self._shutdown()
            raise ToolCallFailed("SERVER_TIMEOUT", f"{self.name} did not answer {what} within "
                                                   f"{self.rule.timeout_seconds:g} s") from None
        except ToolCallFailed:
            raise
        except Exception as exc:  # the connection broke (the server crashed) or the server refused
            async with self._lock:
                if self._client is client:
                    await self._shutdown()
            raise ToolCallFailed("SERVER_FAILED", f"{self.name}: {type(exc).__name__}: {exc}"[:300]) from None

    async def list_tools(self) -> list[mcp_types.Tool]:
        async def fetch(client: Client) -> list[mcp_types.Tool]:
            tools, cursor = [], None
            for _ in range(100):  # a paginator that never ends cannot hang the broker
                page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    break
            return tools
        return await self._timed("tools/list", fetch)

    async def call(self, tool: str, arguments: dict) -> mcp_types.CallToolResult:
        return await self._timed(f"{tool}", lambda client: client.call_tool(tool, arguments))

    async def close(self) -> None:
        """Stop for good. Not behind the lock: a restart waiting for a hung handshake holds it for up to
        CONNECT_TIMEOUT_SECONDS, and the abort below is what releases it."""
        self._closed = True
        await self._shutdown()


def _load_sdk() -> None:
    import mcp.client.stdio  # noqa: F401 - imported for its side effect: loaded, so later imports are free
    import mcp.client.streamable_http  # noqa: F401
    import mcp_types  # noqa: F401


def result_text(result: mcp_types.CallToolResult) -> str:
    """Everything a tool returned, as text: text blocks, and structured content as JSON."""
    import mcp_types

    parts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
    others = [block.type for block in result.content if not isinstance(block, mcp_types.TextContent)]
    if result.structured_content is not None and not parts:
        parts.append(json.dumps(result.structured_content, sort_keys=True))
    if others:
        parts.append(f"[{len(others)} non-text block(s) omitted: {', '.join(sorted(set(others)))}]")
    return "\n".join(parts)


class ToolGate:
    def __init__(self, policy: ToolPolicy, log_dir: Path,
                 on_drift: Callable[[str, str], None] = lambda tool_id, what: None) -> None:
        self.policy = policy
        self.on_drift = on_drift
        self.connections = {name: ServerConnection(name, rule, policy, log_dir)
                            for name, rule in policy.policy.servers.items()}
        self._sessions: OrderedDict[str, dict[str, ToolState]] = OrderedDict()
        self._alerted: set[tuple[str, str]] = set()
        self._unlisted: dict[str, ToolState] = {}
        # Tools any survey of this process found changed since review. Without this, a session surveyed
        # before the change kept its "available" view and went on calling the changed tool, while the same
        # process denied it (and alerted) for every session started after.
        self._drifted: set[str] = set()

    def _judge(self, server: str, rule: ServerRule, offered: dict[str, mcp_types.Tool]) -> dict[str, ToolState]:
        states = {}
        for name, tool_rule in rule.tools.items():
            tool_id = f"{server}.{name}"
            tool = offered.get(name)
            if tool is None:
                states[tool_id] = ToolState(tool_id, tool_rule, cap.TOOL_AVAILABILITY_UNREACHABLE, "TOOL_MISSING")
                continue
            state = _offered(tool_id, tool_rule, tool)
            pin = tool_rule.pin
            changed = [] if pin is None else [what for what, now, then in (
                ("description", digest(state.description), pin.description_sha256),
                ("input schema", digest(state.input_schema), pin.input_schema_sha256)) if now != then]
            if pin is None:
                state.availability, state.reason = cap.TOOL_AVAILABILITY_DENIED, "NOT_REVIEWED"
            elif changed:
                state.availability, state.reason = cap.TOOL_AVAILABILITY_DRIFTED, "DRIFT"
                self._drifted.add(tool_id)
                key = (tool_id, digest([state.description, state.input_schema]))
                if key not in self._alerted:
                    self._alerted.add(key)
                    self.on_drift(tool_id, " and ".join(changed))
            else:
                try:
                    state.contract = ToolContract(tool_id, tool_rule.description, pin.input_schema)
                except ToolSchemaError:
                    state.availability, state.reason = cap.TOOL_AVAILABILITY_DENIED, "SCHEMA_UNSUPPORTED"
            states[tool_id] = state
        return states

    async def survey(self) -> tuple[dict[str, ToolState], list[str]]:
        """Fetch every server's tool list now and judge each tool; (states, unlisted tool ids)."""
        async def one(server: str, connection: ServerConnection):
            try:
                offered = {tool.name: tool for tool in await connection.list_tools()}
            except ToolCallFailed as exc:
                logger.warning("tool server %s unreachable: %s", server, exc)
                return {f"{server}.{name}": ToolState(f"{server}.{name}", rule, cap.TOOL_AVAILABILITY_UNREACHABLE,
                                                      exc.reason) for name, rule in connection.rule.tools.items()}, []
            unlisted = [f"{server}.{name}" for name in sorted(offered) if name not in connection.rule.tools]
            for tool_id in unlisted:  # kept for a reviewer to read in full (ReviewTools), never offered
                self._unlisted[tool_id] = _offered(tool_id, None, offered[tool_id.partition(".")[2]])
            return self._judge(server, connection.rule, offered), unlisted

        results = await asyncio.gather(*(one(name, c) for name, c in self.connections.items()))
        states: dict[str, ToolState] = {}
        unlisted: list[str] = []
        for found, extra in results:
            states.update(found)
            unlisted += extra
        return self._deny_drifted(states), unlisted

    def unlisted_offers(self, tool_ids: list[str]) -> list[ToolState]:
        """Unlisted tools as the last survey found them (denied; a reviewer reads them in full)."""
        return [self._unlisted[tool_id] for tool_id in tool_ids if tool_id in self._unlisted]

    def _deny_drifted(self, states: dict[str, ToolState]) -> dict[str, ToolState]:
        """`states` with every tool this process has seen drift marked drifted: drift, once seen, holds for
        every session (and survey) until re-pinned, even if the server changes back. Only ever denies."""
        if not self._drifted.intersection(states):
            return states
        return {tool_id: replace(state, availability=cap.TOOL_AVAILABILITY_DRIFTED, reason="DRIFT", contract=None)
                if tool_id in self._drifted and state.available else state for tool_id, state in states.items()}

    async def start_session(self, session_id: str) -> dict[str, ToolState]:
        """A session's view of the tools: fetched and hashed afresh, never from an earlier session."""
        states, _ = await self.survey()
        self._sessions[session_id] = states
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return states

    async def session(self, session_id: str) -> dict[str, ToolState]:
        found = self._sessions.get(session_id)
        return self._deny_drifted(found) if found is not None else await self.start_session(session_id)

    async def call(self, tool_id: str, arguments: dict) -> mcp_types.CallToolResult:
        server, _, tool = tool_id.partition(".")
        return await self.connections[server].call(tool, arguments)

    async def close(self) -> None:
        """Stop every server at once: the slowest bounds the stop, not the sum of them."""
        results = await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)
        for name, result in zip(self.connections, results, strict=True):
            if isinstance(result, BaseException):
                logger.error("closing tool server %s failed: %s", name, result)
