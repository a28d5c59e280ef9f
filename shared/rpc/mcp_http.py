"""How Tessera's own MCP servers serve streamable HTTP in a pod of their own (§8, §10a).

Only the broker reaches such a pod (a NetworkPolicy admits nothing else), yet the MCP endpoint still
checks the Host header against the names it is reached by, so a page in some browser that resolves a name
of its own to this address (DNS rebinding) is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the SDK takes about a second to import; the CLI reads only the paths below
    from mcp.server.transport_security import TransportSecuritySettings

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")


def transport_security(allowed_hosts: list[str]) -> TransportSecuritySettings:
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = [*LOCAL_HOSTS, *allowed_hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"http://{host}" for host in hosts])
