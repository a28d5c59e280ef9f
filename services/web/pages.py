"""Web's own pages: the browser app, its health, and for signed-in people what web is and what it reaches.

The app (/ and /sign-in: the page signs people in itself, reading a link's token from its fragment) and
/healthz are for anyone; /info and /status say which identity web holds and which services it reaches, so
only signed-in people see them.
"""

from __future__ import annotations

import asyncio
import html
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from services.web.session import cookie_of
from services.web.session_records import SessionRecords, SessionRefused
from shared import __version__
from shared.config import peer_target
from shared.identity.certs import Credentials
from shared.rpc.channels import aio_channel

UPSTREAMS = ("host", "agent", "capabilities")
HEALTH_TIMEOUT_SECONDS = 2.0
BUNDLE = Path(__file__).parent / "static"


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


def _document(body: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Tessera</title></head>"
                        f"<body><main><h1>Tessera</h1>{body}</main></body></html>", status_code=status_code)


class Pages:
    def __init__(self, credentials: Credentials, sessions: SessionRecords) -> None:
        self.credentials = credentials
        self.sessions = sessions
        self.started = time.time()

    async def _not_signed_in(self, request: Request) -> SessionRefused | None:
        """Why this request has no open session (401, or 503 when the broker cannot tell); None: it has one."""
        try:
            await self.sessions.check(request.cookies.get(cookie_of(request)))
        except SessionRefused as refused:
            return refused
        return None

    async def _upstreams(self) -> list[dict]:
        return list(await asyncio.gather(*(_upstream_health(n, self.credentials) for n in UPSTREAMS)))

    async def healthz(self, request: Request) -> JSONResponse:
        return JSONResponse({"status": "SERVING"})

    async def info(self, request: Request) -> JSONResponse:
        refused = await self._not_signed_in(request)
        if refused:  # identities and addresses are for people of this deployment
            return JSONResponse({"reason": refused.reason, "message": refused.message}, status_code=refused.status)
        return JSONResponse({"name": "web", "version": __version__, "identity": self.credentials.identity,
                             "started_at": self.started, "upstreams": await self._upstreams()})

    async def app(self, request: Request) -> HTMLResponse:
        """The browser app when its bundle was built (make does), else the status page saying so."""
        built = BUNDLE / "index.html"
        if built.exists():
            return HTMLResponse(built.read_text(), headers={"Cache-Control": "no-store"})
        return await self.status(request)

    async def status(self, request: Request) -> HTMLResponse:
        refused = await self._not_signed_in(request)
        if refused:
            return _document(f"<p>{html.escape(refused.message)}</p>", status_code=refused.status)
        rows = "".join(f"<tr><td>{html.escape(u['name'])}</td><td>{html.escape(u['address'])}</td>"
                       f"<td>{html.escape(u['health'])}</td></tr>" for u in await self._upstreams())
        built = "" if (BUNDLE / "index.html").exists() else \
            "<p>The browser bundle is not built (run <code>make</code>).</p>"
        return _document(f"{built}<p>Services this gateway reaches:</p><table><caption>Upstream services</caption>"
                         "<thead><tr><th scope='col'>service</th><th scope='col'>address</th>"
                         f"<th scope='col'>health</th></tr></thead><tbody>{rows}</tbody></table>")

    def routes(self) -> list:
        routes = [Route("/", self.app), Route("/sign-in", self.app), Route("/status", self.status),
                  Route("/healthz", self.healthz), Route("/info", self.info)]
        if (BUNDLE / "assets").is_dir():
            routes.append(Mount("/assets", app=StaticFiles(directory=BUNDLE / "assets"), name="assets"))
        return routes
