"""One stdio MCP server (a child process) offered over streamable HTTP, tools only.

On Kubernetes every MCP server runs in a pod of its own that only the broker reaches; most published
servers speak only stdio, so their pod runs them under this bridge. It keeps one long-lived child,
restarted after it fails, and forwards `tools/list` and `tools/call` unchanged: the broker's pins judge the
child's own descriptions and schemas, and drift shows through as it would over stdio. It offers nothing
else (no resources, prompts or sampling: the gate uses tools only). Stateless HTTP: the broker lists the
tools again before calls, so no session or change notice is kept here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from typing import TYPE_CHECKING

import mcp_types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from shared.rpc.mcp_http import HEALTH_PATH, MCP_PATH, transport_security

if TYPE_CHECKING:
    from mcp import Client

logger = logging.getLogger("tessera.mcp_bridge")
CONNECT_TIMEOUT_SECONDS = 15.0


class Child:
    """The stdio server, held open by one task at a time (the SDK's contexts live in one task).

    A slow start is waited for, never doubled: while a start is under way every request waits on it. Only
    a connection that ended (the server exited or its stream closed) or a server that stopped answering is
    replaced; an error the server answered with (an unknown tool, bad arguments) goes back to the caller
    and the server keeps running."""

    def __init__(self, command: list[str], timeout_seconds: float) -> None:
        self.command = command
        self.timeout_seconds = timeout_seconds
        self._connection: _Connection | None = None
        self._lock = asyncio.Lock()

    async def client(self) -> Client:
        """The live client, starting the child when none is running or starting."""
        async with self._lock:
            if self._connection is None or self._connection.ended:
                self._connection = _Connection(self.command, self.timeout_seconds)
            connection = self._connection
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(connection.ready.wait()), CONNECT_TIMEOUT_SECONDS)
        if connection.client is None:
            raise ConnectionError(f"the tool server {self.command[0]} has not started (yet); see this pod's log")
        return connection.client

    async def forget(self, client: Client, failure: BaseException) -> None:
        """A request on `client` failed: if the connection itself is gone (or hung), end it, so the next
        request starts a fresh child."""
        if isinstance(failure, MCPError) and failure.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
            return  # the server answered: it is alive
        async with self._lock:
            if self._connection is not None and self._connection.client is client:
                self._connection.end()


class _Connection:
    """One start of the child: its own task, its own events."""

    def __init__(self, command: list[str], timeout_seconds: float) -> None:
        self.command = command
        self.timeout_seconds = timeout_seconds
        self.client: Client | None = None
        self.ended = False
        self.ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._hold(), name="mcp-bridge-child")

    def end(self) -> None:
        self.ended = True
        self.client = None
        self._stop.set()

    async def _hold(self) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        # The pod's environment is the server's: its declared settings and its own credentials, nothing else.
        parameters = StdioServerParameters(command=self.command[0], args=self.command[1:], env=dict(os.environ))
        try:
            async with Client(stdio_client(parameters, errlog=sys.stderr), cache=None,
                              read_timeout_seconds=self.timeout_seconds) as client:
                if not self.ended:
                    self.client = client
                    self.ready.set()
                    await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - the next request starts it again; the log says why it ended
            logger.error("tool server %s ended: %s: %s", self.command[0], type(exc).__name__, exc)
        finally:
            self.end()
            self.ready.set()


def build_app(command: list[str], host: str, allowed_hosts: list[str], timeout_seconds: float = 30.0):
    """The bridge's ASGI app: the MCP endpoint at MCP_PATH, readiness (the child answers) at HEALTH_PATH."""
    child = Child(command, timeout_seconds)

    async def forwarded(work):
        client = await child.client()
        try:
            return await work(client)
        except Exception as exc:
            await child.forget(client, exc)
            raise

    async def list_tools(context, params: mcp_types.PaginatedRequestParams | None) -> mcp_types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        return await forwarded(lambda client: client.list_tools(cursor=cursor, cache_mode="bypass"))

    async def call_tool(context, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        return await forwarded(lambda client: client.call_tool(params.name, params.arguments or {}))

    async def health(request: Request) -> JSONResponse:
        try:
            await asyncio.wait_for(forwarded(lambda client: client.list_tools(cache_mode="bypass")),
                                   timeout_seconds)
        except Exception as exc:  # noqa: BLE001 - not ready, whatever the reason; the probe reads the status
            return JSONResponse({"status": "NOT_SERVING", "reason": type(exc).__name__}, status_code=503)
        return JSONResponse({"status": "SERVING"})

    # When the bridge exits, the child's stdin closes and a stdio server ends with it.
    server = Server(f"bridge:{os.path.basename(command[0])}", on_list_tools=list_tools, on_call_tool=call_tool)
    return server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True, host=host,
                                      transport_security=transport_security(allowed_hosts),
                                      custom_starlette_routes=[Route(HEALTH_PATH, health, methods=["GET"])])
