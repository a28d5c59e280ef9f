"""A small ticketing system behind an MCP server: the demo's external tool (not a Tessera service).

It stands in for a third-party server the capability broker talks to, so it
shares nothing with Tessera: its own SQLite file, its own prose. Some seeded
tickets carry instruction-like text, as real tickets do.
"""
