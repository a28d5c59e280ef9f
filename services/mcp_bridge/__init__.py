"""A stdio MCP server served over streamable HTTP, for a pod of its own (§8, §10a)."""
