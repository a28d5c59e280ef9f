"""python -m services.mcp_bridge --port PORT [--host H] [--allowed-host NAME:PORT] -- COMMAND [ARGS...]

Serves the stdio MCP server COMMAND over streamable HTTP at /mcp, readiness at /healthz: how a server
that speaks only stdio runs in its own pod on Kubernetes (tessera deploy render).
"""

import argparse
import sys

import uvicorn

from services.mcp_bridge.bridge import build_app


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m services.mcp_bridge", description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="port to serve streamable HTTP on")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME:PORT",
                        help="a Host header the MCP endpoint accepts besides localhost's (repeatable)")
    parser.add_argument("--timeout-seconds", type=float, default=30.0, help="bound on each forwarded request")
    parser.add_argument("command", nargs="+", help="the stdio server's command (after --)")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _arguments()
    app = build_app(arguments.command, arguments.host, arguments.allowed_host, arguments.timeout_seconds)
    uvicorn.run(app, host=arguments.host, port=arguments.port, log_level="info", access_log=False)
    sys.exit(0)
