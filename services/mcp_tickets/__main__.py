"""python -m services.mcp_tickets: the demo ticketing MCP server (TICKETS_DB names its file).

Over stdio by default (the broker starts it as a child); with --http-port it serves streamable HTTP
at /mcp and readiness at /healthz, as its own pod does on Kubernetes.
"""

import argparse

from services.mcp_tickets.server import build_server


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m services.mcp_tickets", description=__doc__)
    parser.add_argument("--http-port", type=int, help="serve streamable HTTP on this port instead of stdio")
    parser.add_argument("--http-host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME:PORT",
                        help="a Host header the MCP endpoint accepts besides localhost's (repeatable)")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _arguments()
    if arguments.http_port is None:
        build_server().run("stdio")
    else:  # imported here: the stdio server's box holds only this package, not shared/ (deploy/policy/tools.yaml)
        from services.mcp_tickets.http_transport import serve_http

        serve_http(build_server(), arguments.http_host, arguments.http_port, arguments.allowed_host)
