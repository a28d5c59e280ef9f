"""How the MCP front is put together (§3, §9): its settings, its mTLS identity and the key it signs people's actor
assertions with; app.py serves MCP over them (the Front itself, whose gRPC channels belong to the server's event
loop, is made when the app starts)."""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric import ed25519

from services.mcp.config import McpSettings
from shared.identity.certs import Credentials, load_signing_key, signing_key_path


@dataclass(frozen=True, kw_only=True)
class McpParts:
    settings: McpSettings
    credentials: Credentials  # the front's own mTLS identity, for its channels to agent and host
    signing_key: ed25519.Ed25519PrivateKey  # signs the actor assertions of the people it authenticated


def build(settings: McpSettings, credentials: Credentials) -> McpParts:
    """The front's parts; a missing key raises CredentialError (the process does not start)."""
    return McpParts(settings=settings, credentials=credentials,
                    signing_key=load_signing_key(signing_key_path(settings.cert_dir, "mcp")))
