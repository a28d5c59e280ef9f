"""The MCP front process: the six data tools for outside agents, under the front's own identity, and for
clients that speak MCP Apps the frame that shows the answer in their chat (answer_app.py).

- `python -m services.mcp`          streamable HTTP at /mcp for remote clients, each request with an OAuth 2.1
                                    bearer token (oauth.py); /healthz for launchers and probes;
- `python -m services.mcp --stdio`  one local client on stdin/stdout (an assistant on the person's own
                                    machine starts it), acting for the configured local person, as the CLI does.

It holds the front's certificate and the key it signs people's actor assertions with; it calls only the
agent (tools) and the host (the person's session, and for the frame their surface and its commands), as the
caller table allows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys

import anyio
import mcp_types as types
from mcp.server.apps import EXTENSION_ID, client_supports_apps
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from services.mcp.answer_app import ANSWER_URI, AnswerBundle
from services.mcp.config import McpSettings
from services.mcp.front import MAX_ARGUMENT_BYTES, Front, Person, refusal
from services.mcp.issuer_keys import IssuerKeys
from services.mcp.oauth import JwtAccessTokens, TokenPolicy, person_of
from services.mcp.wiring import McpParts, build
from shared import __version__
from shared.config import peer_target
from shared.identity.certs import CredentialError
from shared.logs import setup_logging
from shared.rpc.channels import aio_channel
from shared.rpc.http_process import listening_socket, serve_app
from shared.rpc.runtime import fail_startup, load_process_credentials
from tessera.agent.v1 import agent_pb2_grpc
from tessera.host.v1 import host_pb2_grpc

logger = logging.getLogger("tessera.mcp")
INSTRUCTIONS = ("Tessera answers questions about your organisation's data by composing a live display for the "
                "person. Explore with inspect_current_context, inspect_catalog and describe_data, ask for data "
                "with run_analysis (you get a descriptor, never rows), then present_ui: call it without a "
                "proposal to get the offered components, then with one. A refused call says where (pointer) and "
                "what to do next (next_step). The person sees the numbers in the frame present_ui opens (in "
                "clients that show MCP Apps) or at the link it returns; you never do.")
IDLE_SWEEP_SECONDS = 30


def _policy(settings: McpSettings) -> TokenPolicy:
    return TokenPolicy(settings.oauth_issuer, settings.resource_url, tuple(settings.oauth_scopes.split()),
                       settings.oauth_person_claim, settings.oauth_tenant_claim, settings.oauth_tenant,
                       settings.oauth_name_claim)


class FrontHolder:
    """The Front, made once the event loop runs (gRPC channels belong to it)."""

    def __init__(self, parts: McpParts) -> None:
        self.parts = parts
        self.front: Front | None = None

    @contextlib.asynccontextmanager
    async def running(self):
        parts, settings = self.parts, self.parts.settings
        channels = {name: aio_channel(peer_target(name), parts.credentials, name) for name in ("agent", "host")}
        self.front = Front(agent_pb2_grpc.AgentServiceStub(channels["agent"]),
                           host_pb2_grpc.HostServiceStub(channels["host"]), parts.signing_key,
                           settings.web_url, settings.idle_turn_seconds, frozenset(settings.apps_clients))
        sweeper = asyncio.create_task(self._sweep())
        try:
            yield self.front
        finally:
            sweeper.cancel()
            await self.front.close()
            for channel in channels.values():
                await channel.close()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(IDLE_SWEEP_SECONDS)
            await self.front.end_idle()


def build_server(holder: FrontHolder, person_of_request, bundle: AnswerBundle | None = None) -> Server:
    """The MCP server: tools/list and tools/call, for the person `person_of_request(conversation)` names (None:
    refuse); a conversation is the client's MCP session id, where its transport has one. The answer frame's
    `ui://` resource is listed to every client; its tools only to clients that negotiated MCP Apps."""
    bundle = bundle or AnswerBundle()

    def shows_apps(ctx, person) -> bool:
        return holder.front.shows_apps(person, client_supports_apps(ctx))

    async def list_tools(ctx, params) -> types.ListToolsResult:
        person = person_of_request(_conversation(ctx))
        return types.ListToolsResult(tools=await holder.front.tools(apps=shows_apps(ctx, person)))

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        person = person_of_request(_conversation(ctx))
        if person is None:
            return refusal("PERSON_UNKNOWN", "the access token does not name a person and tenant this deployment "
                                             "accepts")
        return await holder.front.call(person, params.name, params.arguments, apps=shows_apps(ctx, person))

    async def list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[bundle.resource()])

    async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if params.uri != ANSWER_URI:
            raise MCPError(INVALID_PARAMS, f"no resource {params.uri[:200]!r}; this server has {ANSWER_URI}")
        return bundle.read()

    # The version an MCP client shows for this server (its `serverInfo`): Tessera's own.
    server = Server("tessera", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                    on_call_tool=call_tool, on_list_resources=list_resources, on_read_resource=read_resource)
    server.extensions[EXTENSION_ID] = {}  # MCP Apps: clients that speak it draw the answer in a frame
    return server


def _conversation(ctx) -> str:
    """The client's MCP session id (the streamable HTTP header), or "" where the transport has none."""
    headers = getattr(ctx.request, "headers", None)
    return headers.get("mcp-session-id", "")[:128] if headers is not None else ""


def http_app(settings: McpSettings, holder: FrontHolder) -> Starlette:
    policy = _policy(settings)

    def person_of_request(conversation: str) -> Person | None:
        token = get_access_token()
        found = person_of(policy, token.claims or {}) if token else None
        return Person(*found, client=token.client_id or "an MCP client", conversation=conversation) \
            if found else None

    server = build_server(holder, person_of_request)

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "SERVING"})

    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=settings.allowed_hosts,
                                         allowed_origins=settings.allowed_origins)
    if settings.oauth_issuer:
        inner = server.streamable_http_app(
            # A request body past twice the arguments' bound is refused (413) before it is parsed.
            transport_security=security, token_verifier=JwtAccessTokens(
                policy, IssuerKeys(policy.issuer, settings.oauth_keys_refetch_seconds)),
            max_request_body_size=2 * MAX_ARGUMENT_BYTES,
            auth=AuthSettings(issuer_url=settings.oauth_issuer, resource_server_url=settings.resource_url,
                              required_scopes=list(policy.scopes) or None, validate_token_resource=False))
        mcp_routes = [Mount("/", app=inner)]
    else:  # remote use needs authentication: without an authorization server there is none to check
        async def unconfigured(request: Request) -> JSONResponse:
            return JSONResponse({"reason": "OAUTH_NOT_CONFIGURED", "message": "remote MCP use needs an "
                                 "authorization server: set TESSERA_MCP_OAUTH_ISSUER (and TESSERA_PUBLIC_URL, or "
                                 "TESSERA_MCP_RESOURCE_URL); for local use run 'tessera mcp' (stdio)"},
                                status_code=503)
        inner = None
        mcp_routes = [Route("/mcp", unconfigured, methods=["GET", "POST", "DELETE"])]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        async with holder.running():
            if inner is None:
                yield
            else:
                async with server.session_manager.run():
                    yield

    return Starlette(routes=[Route("/healthz", healthz), *mcp_routes], lifespan=lifespan)


async def serve_stdio(settings: McpSettings, holder: FrontHolder) -> None:
    person = Person(settings.stdio_person, settings.stdio_tenant, settings.stdio_person, "stdio")
    server = build_server(holder, lambda conversation: person)  # one client: one conversation
    async with holder.running(), stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    settings, credentials = load_process_credentials("mcp", McpSettings)
    try:
        holder = FrontHolder(build(settings, credentials))
    except CredentialError as exc:
        fail_startup("mcp", str(exc))
    if "--stdio" in sys.argv[1:]:
        setup_logging("mcp", settings.log_level)  # logs go to stderr; stdout is the protocol's
        anyio.run(serve_stdio, settings, holder)
        return
    serve_http(settings, holder)


def serve_http(settings: McpSettings, holder: FrontHolder) -> None:
    setup_logging("mcp", settings.log_level)
    sock = listening_socket("mcp", settings)
    serve_app("mcp", settings, sock, http_app(settings, holder), holder.parts.credentials.identity,
              lambda address: f"http://{address}/mcp")
