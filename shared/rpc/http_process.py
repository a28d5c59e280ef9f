"""Serving an ASGI app as one Tessera process (web, the MCP front): listen, announce readiness, stop cleanly.

The socket is bound before the app is built, so a port in use fails startup with the variable to change; the
ready file is written once uvicorn serves; SIGTERM/SIGINT stop gracefully and the process exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Callable

import uvicorn

from shared.config import ServiceSettings
from shared.logs import log
from shared.rpc.runtime import fail_startup, write_ready_file

logger = logging.getLogger("tessera.http")


def listening_socket(name: str, settings: ServiceSettings) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A restart after a crash must not wait out the old connections' TIME-WAIT.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((settings.listen_host, settings.port))
    except OSError as exc:
        fail_startup(name, f"TESSERA_{name.upper()}_PORT={settings.port}: cannot listen on "
                           f"{settings.listen_host}:{settings.port}: {exc.strerror}")
    sock.listen(128)
    return sock


def serve_app(name: str, settings: ServiceSettings, sock: socket.socket, app, identity: str,
              url_path: Callable[[str], str] = lambda address: f"http://{address}/") -> None:
    """Run `app` on `sock` until SIGTERM/SIGINT; the ready file names the address, identity and URL."""
    config = uvicorn.Config(app, log_config=None, access_log=False,
                            timeout_graceful_shutdown=int(settings.grace_seconds))
    server = uvicorn.Server(config)
    port = sock.getsockname()[1]
    address = f"{settings.listen_host}:{port}"
    # uvicorn stops gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler that was installed
    # before it; a no-op there makes a clean stop exit 0 instead of dying by the signal.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)

    async def run() -> None:
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        if server.started:
            log(logger, logging.INFO, "serving", address=address, url=url_path(address))
            if settings.ready_file:
                write_ready_file(settings.ready_file, {"name": name, "pid": os.getpid(), "address": address,
                                                       "port": port, "identity": identity,
                                                       "url": url_path(address)})
        await serving

    asyncio.run(run())
