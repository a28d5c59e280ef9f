"""python -m services.mcp_tickets: the demo ticketing MCP server over stdio (TICKETS_DB names its file)."""

from services.mcp_tickets.server import build_server

if __name__ == "__main__":
    build_server().run("stdio")
