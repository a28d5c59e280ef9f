"""python -m services.mcp: the MCP front over streamable HTTP; with --stdio, for one local MCP client."""

from services.mcp.app import main

if __name__ == "__main__":
    main()
