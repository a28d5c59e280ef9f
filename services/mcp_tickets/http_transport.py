"""The tickets server over streamable HTTP: how its own pod serves it on Kubernetes (shared.rpc.mcp_http)."""

from __future__ import annotations

import uvicorn
from mcp.server.mcpserver import MCPServer

from shared.rpc.mcp_http import MCP_PATH, transport_security


def serve_http(server: MCPServer, host: str, port: int, allowed_hosts: list[str]) -> None:
    """Serve until SIGTERM (uvicorn stops taking requests and lets the open ones finish)."""
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                     transport_security=transport_security(allowed_hosts))
    uvicorn.run(app, host=host, port=port, log_level="info", access_log=False)
