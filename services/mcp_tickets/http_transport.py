"""The tickets server over streamable HTTP: how its own pod serves it on Kubernetes.

Only the broker reaches it there (a NetworkPolicy admits nothing else), yet the MCP endpoint
still checks the Host header against the names it is reached by, so a page in some browser that
resolves a name of its own to this address (DNS rebinding) is refused.
"""

from __future__ import annotations

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

MCP_PATH = "/mcp"
LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")


def transport_security(allowed_hosts: list[str]) -> TransportSecuritySettings:
    hosts = [*LOCAL_HOSTS, *allowed_hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"http://{host}" for host in hosts])


def serve_http(server: MCPServer, host: str, port: int, allowed_hosts: list[str]) -> None:
    """Serve until SIGTERM (uvicorn stops taking requests and lets the open ones finish)."""
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                     transport_security=transport_security(allowed_hosts))
    uvicorn.run(app, host=host, port=port, log_level="info", access_log=False)
