"""The web process: an HTTP status page over the services web talks to.

It holds web's own mTLS identity and checks the health of the services it
is allowed to call (host, agent, capabilities), so the page shows what a
browser session would really reach.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import os
import signal
import socket
import time
from pathlib import Path

import grpc
import uvicorn
from grpc_health.v1 import health_pb2, health_pb2_grpc
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from services.web.api import ApiError, WebApi, api_error
from services.web.config import WebSettings
from services.web.headers import SecurityHeaders
from services.web.session import COOKIE, Assertions, SessionCookies, SessionSecretError, cookie_key
from shared import __version__
from shared.certs import CredentialError, Credentials, load_signing_key, signing_key_path
from shared.channels import aio_channel
from shared.config import peer_target
from shared.logs import log, setup_logging
from shared.runtime import fail_startup, load_process_credentials, write_ready_file
from tessera.agent.v1 import agent_pb2_grpc
from tessera.capabilities.v1 import capabilities_pb2_grpc
from tessera.host.v1 import host_pb2_grpc

logger = logging.getLogger("tessera.web")
UPSTREAMS = ("host", "agent", "capabilities")
HEALTH_TIMEOUT_SECONDS = 2.0
SIGN_IN_HINT = ("Sign in with the one-time link your operator gives you "
                "(they make one with: tessera persons enroll <your id>).")


async def _upstream_health(name: str, credentials: Credentials) -> dict:
    target = peer_target(name)
    async with aio_channel(target, credentials, name) as channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=HEALTH_TIMEOUT_SECONDS
            )
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        except grpc.aio.AioRpcError as exc:
            status = f"UNREACHABLE ({exc.code().name})"
    return {"name": name, "address": target, "health": status}


def create_app(settings: WebSettings, credentials: Credentials) -> Starlette:
    started = time.time()

    async def upstreams() -> list[dict]:
        return list(await asyncio.gather(*(_upstream_health(n, credentials) for n in UPSTREAMS)))

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "SERVING"})

    def signed_in(request: Request) -> bool:
        return cookies.verify(request.cookies.get(COOKIE)) is not None

    async def info(request: Request) -> JSONResponse:
        if not signed_in(request):  # identities and addresses are for people of this deployment
            return JSONResponse({"reason": "NO_SESSION", "message": SIGN_IN_HINT}, status_code=401)
        return JSONResponse({
            "name": "web", "version": __version__, "identity": credentials.identity,
            "started_at": started, "upstreams": await upstreams(),
        })

    bundle = Path(__file__).parent / "static"

    async def page(request: Request) -> HTMLResponse:
        """The browser app when its bundle was built (make does), else the status page saying so."""
        built = bundle / "index.html"
        if built.exists():
            return HTMLResponse(built.read_text(), headers={"Cache-Control": "no-store"})
        return await index(request)

    async def status(request: Request) -> HTMLResponse:
        if not signed_in(request):
            return HTMLResponse(f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Tessera</title>"
                                f"</head><body><main><h1>Tessera</h1><p>{html.escape(SIGN_IN_HINT)}</p></main>"
                                f"</body></html>", status_code=401)
        return await index(request)

    async def index(request: Request) -> HTMLResponse:
        rows = "".join(
            f"<tr><td>{html.escape(u['name'])}</td><td>{html.escape(u['address'])}</td>"
            f"<td>{html.escape(u['health'])}</td></tr>"
            for u in await upstreams()
        )
        page = (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Tessera</title></head>"
            "<body><main><h1>Tessera</h1><p>The browser bundle is not built (run <code>make</code>). "
            "Services this gateway reaches:</p>"
            "<table><caption>Upstream services</caption><thead><tr><th scope='col'>service</th>"
            "<th scope='col'>address</th><th scope='col'>health</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></main></body></html>"
        )
        return HTMLResponse(page)

    signing_key = load_signing_key(signing_key_path(settings.cert_dir, "web"))  # a missing key stops startup
    secret, shared = cookie_key(settings.session_secret.get_secret_value())
    if not shared:
        log(logger, logging.WARNING, "TESSERA_WEB_SESSION_SECRET is not set: cookies are signed with a key of "
            "this process only, so browser sessions will not survive a restart of web and will not work across "
            "web replicas; give every replica the same secret to keep them")
    cookies = SessionCookies(secret)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        # gRPC channels belong to the server's event loop: made here, closed on the way out.
        channels = {name: aio_channel(peer_target(name), credentials, name) for name in UPSTREAMS}
        api = WebApi(host_pb2_grpc.HostServiceStub(channels["host"]),
                     agent_pb2_grpc.AgentServiceStub(channels["agent"]),
                     capabilities_pb2_grpc.CapabilityBrokerServiceStub(channels["capabilities"]),
                     cookies, Assertions(signing_key), settings.keepalive_seconds, SIGN_IN_HINT,
                     settings.secure_cookies)
        app.router.routes.extend(api.routes())
        try:
            yield
        finally:
            for channel in channels.values():
                await channel.close()

    # The page signs people in itself (/sign-in reads a link's token from its fragment), so both are the app.
    routes = [Route("/", page), Route("/sign-in", page), Route("/status", status), Route("/healthz", healthz),
              Route("/info", info)]
    if (bundle / "assets").is_dir():
        routes.append(Mount("/assets", app=StaticFiles(directory=bundle / "assets"), name="assets"))
    return Starlette(routes=routes, lifespan=lifespan, exception_handlers={ApiError: api_error},
                     middleware=[Middleware(SecurityHeaders, strict_transport=settings.secure_cookies),
                                 Middleware(TrustedHostMiddleware, allowed_hosts=list(settings.allowed_hosts))])


def main() -> None:
    settings, credentials = load_process_credentials("web", WebSettings)
    setup_logging("web", settings.log_level)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A restart after a crash must not wait out the old connections' TIME-WAIT.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((settings.listen_host, settings.port))
    except OSError as exc:
        fail_startup("web", f"TESSERA_WEB_PORT={settings.port}: cannot listen on "
                            f"{settings.listen_host}:{settings.port}: {exc.strerror}")
    sock.listen(128)
    port = sock.getsockname()[1]
    try:
        app = create_app(settings, credentials)
    except (CredentialError, SessionSecretError) as exc:
        fail_startup("web", str(exc))
    config = uvicorn.Config(app, log_config=None, access_log=False,
                            timeout_graceful_shutdown=int(settings.grace_seconds))
    server = uvicorn.Server(config)
    address = f"{settings.listen_host}:{port}"

    # uvicorn stops gracefully on SIGTERM/SIGINT, then re-raises the signal to
    # the handler that was installed before it; a no-op there makes a clean
    # stop exit 0 instead of dying by the signal.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)

    async def run() -> None:
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        if server.started:
            log(logger, logging.INFO, "serving", address=address, url=f"http://{address}/")
            if settings.ready_file:
                write_ready_file(settings.ready_file, {
                    "name": "web", "pid": os.getpid(), "address": address, "port": port,
                    "identity": credentials.identity, "url": f"http://{address}/",
                })
        await serving

    asyncio.run(run())
