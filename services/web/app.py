"""The web process: the browser app and its API in front of the services web talks to.

It holds web's own mTLS identity and calls only the services it is allowed to
(host, agent, capabilities); people sign in with a one-time link or the
organisation's OpenID provider, and every response carries the security headers.
"""

from __future__ import annotations

import contextlib
import logging

from sse_starlette.sse import AppStatus
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse

from services.web.api import ApiError, WebApi, api_error, body_invalid
from services.web.bodies import BodyInvalid
from services.web.config import WebSettings
from services.web.headers import SecurityHeaders
from services.web.oidc import OidcSignIn
from services.web.pages import UPSTREAMS, Pages
from services.web.session import SessionSecretError
from services.web.session_records import SessionRecords, SessionRefused
from services.web.surface_feeds import ServerSend
from services.web.wiring import WebParts, build
from shared.config import peer_target
from shared.identity.certs import CredentialError
from shared.logs import setup_logging
from shared.rpc.channels import aio_channel
from shared.rpc.http_process import listening_socket, serve_app
from shared.rpc.runtime import fail_startup, load_process_credentials
from tessera.agent.v1 import agent_pb2_grpc
from tessera.capabilities.v1 import capabilities_pb2_grpc
from tessera.host.v1 import host_pb2_grpc

logger = logging.getLogger("tessera.web")
SIGN_IN_HINT = ("Sign in with the one-time link your operator gives you "
                "(they make one with: tessera persons enroll <your id>).")


def create_app(parts: WebParts) -> ServerSend:
    settings, credentials, assertions, cookies, oidc = (parts.settings, parts.credentials, parts.assertions,
                                                        parts.cookies, parts.oidc)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        # gRPC channels belong to the server's event loop: made here, closed on the way out.
        channels = {name: aio_channel(peer_target(name), credentials, name) for name in UPSTREAMS}
        broker = capabilities_pb2_grpc.CapabilityBrokerServiceStub(channels["capabilities"])
        sessions = SessionRecords(broker, cookies, assertions, settings.session_check_seconds, SIGN_IN_HINT)
        api = WebApi(host_pb2_grpc.HostServiceStub(channels["host"]),
                     agent_pb2_grpc.AgentServiceStub(channels["agent"]), broker,
                     sessions, assertions, settings.keepalive_seconds, SIGN_IN_HINT,
                     settings.secure_cookies,
                     {"url": "/auth/oidc/login", "provider": settings.oidc_provider_name} if oidc else None,
                     settings.viewer_access_seconds, settings.wake_interval_ms / 1000)
        app.router.routes.extend(Pages(credentials, sessions).routes() + api.routes())
        if oidc:
            app.router.routes.extend(OidcSignIn(oidc, cookies, lambda person, request, response: api.start_session(
                person, "oidc", request, response), settings.secure_cookies).routes())
        try:
            yield
        finally:
            await api.feeds.close()
            for channel in channels.values():
                await channel.close()

    # ServerSend wraps the whole application, outside Starlette's own ServerErrorMiddleware (which every
    # middleware listed here sits inside), so a stream's body writes reach the server's `send` directly.
    return ServerSend(Starlette(lifespan=lifespan,
                                exception_handlers={ApiError: api_error, BodyInvalid: body_invalid,
                                                    SessionRefused: _session_refused},
                                middleware=[Middleware(SecurityHeaders, strict_transport=settings.secure_cookies),
                                            Middleware(TrustedHostMiddleware,
                                                       allowed_hosts=list(settings.allowed_hosts))]))


async def _session_refused(request: Request, exc: SessionRefused) -> JSONResponse:
    return JSONResponse({"reason": exc.reason, "message": exc.message}, status_code=exc.status)


def main() -> None:
    settings, credentials = load_process_credentials("web", WebSettings)
    setup_logging("web", settings.log_level)
    sock = listening_socket("web", settings)
    try:
        app = create_app(build(settings, credentials))
    except (CredentialError, SessionSecretError) as exc:
        fail_startup("web", str(exc))
    # A stopping web gives its streams uvicorn's grace period, then closes them; sse-starlette would otherwise
    # end them all at the first SIGTERM, cutting short the turns they carry. (Process-wide: set here, by the
    # process that serves, not by whoever imports the API.)
    AppStatus.disable_automatic_graceful_drain()
    serve_app("web", settings, sock, app, credentials.identity)
