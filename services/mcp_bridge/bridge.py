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
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from shared.mcp_http import HEALTH_PATH, MCP_PATH, transport_security

if TYPE_CHECKING:
    from mcp import Client

logger = logging.getLogger("tessera.mcp_bridge")
CONNECT_TIMEOUT_SECONDS = 15.0


class Child:
    """The stdio server, held open in a task of its own (the SDK's contexts live in one task)."""

    def __init__(self, command: list[str], timeout_seconds: float) -> None:
        self.command = command
        self.timeout_seconds = timeout_seconds
        self._client: Client | None = None
        self._task: asyncio.Task | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._lock = asyncio.Lock()

    async def client(self) -> Client:
        """The live client, (re)starting the child when there is none."""
        async with self._lock:
            if self._client is None:
                await self._start()
            if self._client is None:
                raise ConnectionError(f"the tool server {self.command[0]} did not start; see this pod's log")
            return self._client

    async def _start(self) -> None:
        self._ready, self._stop = asyncio.Event(), asyncio.Event()
        self._task = asyncio.create_task(self._hold(), name="mcp-bridge-child")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), CONNECT_TIMEOUT_SECONDS)

    async def _hold(self) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        # The pod's environment is the server's: its declared settings and its own credentials, nothing else.
        parameters = StdioServerParameters(command=self.command[0], args=self.command[1:], env=dict(os.environ))
        try:
            async with Client(stdio_client(parameters, errlog=sys.stderr), cache=None,
                              read_timeout_seconds=self.timeout_seconds) as client:
                self._client = client
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - the next request starts it again; the log says why it ended
            logger.error("tool server %s ended: %s: %s", self.command[0], type(exc).__name__, exc)
        finally:
            self._client = None
            self._ready.set()

    async def forget(self, client: Client) -> None:
        """The child behind `client` failed a request: end it, so the next request starts a fresh one."""
        async with self._lock:
            if self._client is client:
                self._stop.set()
                self._client = None



def build_app(command: list[str], host: str, allowed_hosts: list[str], timeout_seconds: float = 30.0):
    """The bridge's ASGI app: the MCP endpoint at MCP_PATH, readiness (the child answers) at HEALTH_PATH."""
    child = Child(command, timeout_seconds)

    async def forwarded(work):
        client = await child.client()
        try:
            return await work(client)
        except Exception:
            await child.forget(client)
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
