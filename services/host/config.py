"""Settings of the HostServer (TESSERA_HOST_*)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from shared.config import ServiceSettings
from shared.identity.certs import signing_key_path, verify_key_path
from shared.paths import var_dir


class HostSettings(ServiceSettings):
    database_url: str = ""  # default: sqlite:///<var>/host/host.sqlite
    signing_key: Path | None = None  # the host's Ed25519 key (grants)
    resources_verify_key: Path | None = None  # to verify resource offers
    # Journal entries kept per surface; past it a new epoch starts with a snapshot.
    journal_retention: int = Field(default=10_000, ge=10, le=1_000_000)
    # Watched surfaces are re-read this often even without a wake-up: a lost NOTIFY costs this much latency.
    safety_reread_seconds: float = Field(default=5.0, gt=0, le=3_600)
    # Subscribers of a surface are woken at most once per this many milliseconds: a change after a quiet
    # spell is sent at once, a burst goes out in batches (0: every change wakes them).
    wake_interval_ms: float = Field(default=50.0, ge=0, le=1_000)

    @model_validator(mode="after")
    def _defaults(self) -> HostSettings:
        object.__setattr__(self, "database_url", self.database_url or f"sqlite:///{var_dir() / 'host' / 'host.sqlite'}")
        object.__setattr__(self, "signing_key", self.signing_key or signing_key_path(self.cert_dir, "host"))
        object.__setattr__(self, "resources_verify_key",
                           self.resources_verify_key or verify_key_path(self.cert_dir, "resources"))
        return self
