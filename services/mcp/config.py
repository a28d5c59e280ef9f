"""Settings of the MCP front (TESSERA_MCP_*)."""

from __future__ import annotations

from pydantic import Field, model_validator

from shared.config import ServiceSettings
from shared.identity.public_url import follow_public_url
from shared.rpc.mcp_http import LOCAL_HOSTS, MCP_PATH

LOCAL_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*")


class McpSettings(ServiceSettings):
    # resource_url, web_url, allowed_hosts and allowed_origins follow TESSERA_PUBLIC_URL where they are not set
    # (shared/identity/public_url.py): <public url>/mcp, the public URL, its host and its origin beside the local ones.
    # Remote clients (streamable HTTP) present OAuth 2.1 bearer tokens from this authorization server (the
    # MCP authorization spec): JWT access tokens (RFC 9068), checked against its published keys. Empty: the
    # HTTP front refuses every MCP request (503 with the reason) and only local stdio use works.
    oauth_issuer: str = Field(default="", max_length=500)
    # This server's resource URL as clients reach it (e.g. https://tessera.example.com/mcp): the audience a
    # token must be issued for, and what the protected-resource metadata names.
    resource_url: str = Field(default="", max_length=500)
    # Scopes every token must carry (space-separated); empty: none beyond a valid token for this resource.
    oauth_scopes: str = "tessera.data"
    # The person and their tenant, from the token's claims: `oauth_tenant_claim`, or one fixed tenant.
    oauth_person_claim: str = "sub"
    oauth_tenant_claim: str = ""
    oauth_tenant: str = ""
    oauth_name_claim: str = "name"
    # A token signed with a key id the issuer's key set lacks fetches the set again (the issuer may have
    # rotated its keys), but at most once per this many seconds: unverifiable tokens cannot make this server
    # flood the issuer. A rotated key is accepted at the latest this long after its first token.
    oauth_keys_refetch_seconds: float = Field(default=60, gt=0, le=3600)
    # Local stdio use (`tessera mcp`): the person the process acts for, the operator who started it on
    # their own machine, as the operator CLI does.
    stdio_person: str = "operator"
    stdio_tenant: str = "local"
    # Where people open web, for the link present_ui returns (e.g. https://tessera.example.com).
    web_url: str = "http://localhost:8080"  # (the name the sign-in cookie is set for, not 127.0.0.1)
    # Host names the HTTP front answers to (DNS rebinding protection), and the browser origins it accepts.
    allowed_hosts: list[str] = Field(default_factory=lambda: list(LOCAL_HOSTS))
    allowed_origins: list[str] = Field(default_factory=lambda: list(LOCAL_ORIGINS))
    # Clients that get the answer frame (MCP Apps) when they negotiate the extension: OAuth client ids, and
    # "stdio" for the local one. Each must keep app-only tools and their results (rows) from its model, as the
    # extension asks; a client that hands every tool to its model must not be named. Empty: none.
    apps_clients: list[str] = Field(default_factory=list, max_length=100)
    # A turn nobody called a tool in for this long ends (the next call begins a new one).
    idle_turn_seconds: float = Field(default=600, gt=0, le=86_400)

    @model_validator(mode="after")
    def _follow_public_url(self) -> McpSettings:
        return follow_public_url(self, lambda url: {
            "resource_url": f"{url.origin}{MCP_PATH}", "web_url": url.origin,
            "allowed_hosts": [url.host, *LOCAL_HOSTS], "allowed_origins": [url.origin, *LOCAL_ORIGINS]})

    @model_validator(mode="after")
    def _oauth_is_complete(self) -> McpSettings:
        if self.oauth_issuer:
            if not self.oauth_issuer.startswith(("https://", "http://")):
                raise ValueError("TESSERA_MCP_OAUTH_ISSUER must be an http(s) URL")
            if not self.resource_url.startswith(("https://", "http://")):
                raise ValueError("set TESSERA_MCP_RESOURCE_URL to this server's URL as clients reach it "
                                 "(tokens must be issued for it)")
            if bool(self.oauth_tenant_claim) == bool(self.oauth_tenant):
                raise ValueError("set one of TESSERA_MCP_OAUTH_TENANT_CLAIM (a claim naming each person's tenant) "
                                 "or TESSERA_MCP_OAUTH_TENANT (one tenant for everyone)")
        return self
