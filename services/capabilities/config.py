"""Settings of the capability broker (TESSERA_CAPABILITIES_*)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, model_validator

from shared.config import ServiceSettings
from shared.identity.public_url import follow_public_url
from shared.paths import DEMO_ACTIONS, DEMO_SEMANTIC_MODEL, REPO_ROOT, default_warehouse, var_dir


class CapabilitiesSettings(ServiceSettings):
    database_url: str = ""  # default: sqlite:///<var>/capabilities/broker.sqlite
    actions_file: Path = DEMO_ACTIONS
    # The semantic model the set's gateway reads: an action is offered only for records it models.
    semantic_model: Path = DEMO_SEMANTIC_MODEL
    tools_file: Path = REPO_ROOT / "deploy" / "policy" / "tools.yaml"
    # Where each MCP server's own stderr goes (mcp-<server>.log).
    mcp_log_dir: Path | None = None
    # The write credential for data changes, held only here (default: the demo warehouse file).
    # On PostgreSQL it is the tessera_writer role, limited to the declared columns.
    changes_url: SecretStr = SecretStr("")
    # Approvals expire after this (expiry counts as rejection); §7 caps it at 10 minutes.
    approval_ttl_seconds: float = Field(default=600, gt=0, le=600)
    # How long a replica answers for an effect it runs without renewing (it renews every third of this);
    # a running intent whose lease ran out is taken up by another replica.
    lease_seconds: float = Field(default=30, ge=1, le=600)
    # Mutations are replaced by recording stubs: they are still approved, never auto-approved.
    dry_run: bool = False
    # WebAuthn relying party of people's passkeys: the domain web is served on (a passkey works only there),
    # and the page origins allowed to use them (empty: https://<rp id> on any port, and http://localhost).
    # Unset, they follow TESSERA_PUBLIC_URL: its host, and its origin alone.
    webauthn_rp_id: str = Field(default="localhost", min_length=1, max_length=253, pattern=r"^[a-z0-9.-]+$")
    webauthn_origins: list[str] = Field(default_factory=list, max_length=20)
    # How long a person's web sign-in lasts before they sign in again (at most a week: web refuses older cookies).
    web_session_seconds: float = Field(default=12 * 3600, ge=60, le=7 * 86400)
    # Prometheus /metrics on this port (0 = off).
    metrics_port: int = Field(default=0, ge=0, le=65535)

    @model_validator(mode="after")
    def _follow_public_url(self) -> CapabilitiesSettings:
        return follow_public_url(self, lambda url: {"webauthn_rp_id": url.host, "webauthn_origins": [url.origin]})

    @model_validator(mode="after")
    def _defaults(self) -> CapabilitiesSettings:
        object.__setattr__(self, "database_url",
                           self.database_url or f"sqlite:///{var_dir() / 'capabilities' / 'broker.sqlite'}")
        object.__setattr__(self, "mcp_log_dir", self.mcp_log_dir or var_dir() / "capabilities")
        if not self.changes_url.get_secret_value():
            object.__setattr__(self, "changes_url", SecretStr(f"sqlite:///{default_warehouse()}"))
        return self
