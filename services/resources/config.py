"""Settings of the Resource Gateway (TESSERA_RESOURCES_*)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from shared.config import ServiceSettings
from shared.identity.certs import secret_path, signing_key_path, verify_key_path
from shared.paths import DEMO_SEMANTIC_MODEL, default_warehouse, var_dir
from shared.rpc.field_rules import stated
from tessera.host.v1 import host_pb2

# Policy bounds: the model never picks a row limit; operators pick within these.
MAX_ROW_CAP = 20_000
# The most rows a window has: the host's contract bounds what a person may ask for (host.proto); a window's own limit
# is checked per window, so one bad window of a ResolveWindows batch is refused alone (resources.proto).
MAX_WINDOW_ROWS = stated(host_pb2.ResourceWindowCommand, "limit", "max")


class ResourcesSettings(ServiceSettings):
    warehouse_url: str = ""  # default: sqlite:///<var>/warehouse/warehouse.sqlite
    semantic_model: Path = DEMO_SEMANTIC_MODEL
    store_url: str = ""  # default: sqlite:///<var>/resources/results.sqlite
    row_cap: int = Field(default=1_000, ge=1, le=MAX_ROW_CAP)
    statement_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    probes_per_turn: int = Field(default=2, ge=0, le=10)
    # Analyses run per turn (a refused draft costs nothing): what a model may learn in one turn is bounded.
    analyses_per_turn: int = Field(default=10, ge=1, le=100)
    # Analyses per session (per period, below): a long working session of 20-30 questions at the 1-3 analyses a
    # question takes, while a model cannot spend six turns' full budgets on one conversation.
    analyses_per_session: int = Field(default=60, ge=1, le=100_000)
    # A session's budget and the shapes it asked are forgotten this long after they began (web sign-ins last 12 h;
    # the MCP front keeps one session per person, which gets a new budget each period).
    session_budget_lifetime_seconds: float = Field(default=43_200.0, ge=60, le=30 * 86_400)
    # Threshold search (docs/information-budget.md): distinct variants a session may ask that compare one hidden
    # value (a searched target: a measure's definition or a filter-only field, and the comparison family), however
    # the rest of each draft is disguised; 5 answers narrow a value known within a factor of two to no less than
    # 4.7% of it (1.5 / 2^5). (The setting kept the name it had when variants were counted per draft shape.)
    oracle_variants_per_shape: int = Field(default=5, ge=1, le=1_000)
    # ... and distinct oracle-prone drafts of all targets together.
    oracle_searches_per_session: int = Field(default=20, ge=1, le=100_000)
    # A turn's budgets are forgotten this long after their last use (turns last minutes).
    probe_budget_lifetime_seconds: float = Field(default=86_400.0, ge=60, le=30 * 86_400)
    signing_key: Path | None = None
    host_verify_key: Path | None = None
    capability_secret: Path | None = None
    query_workers: int = Field(default=4, ge=1, le=32)
    # How long a replica relies on the store's "not revoked" for a window grant (seconds): a grant revoked on any
    # replica stops reading windows on every replica within this (on the revoking one at once). 0: the store is
    # asked on every window.
    revocation_check_seconds: float = Field(default=2.0, ge=0, le=30)
    # Reuse a result read before for the same draft and data, as long as the semantic model's
    # `freshness.cache_seconds` allows; false: every analysis reads the warehouse (docs/semantic-model.md).
    result_cache: bool = True

    @model_validator(mode="after")
    def _defaults(self) -> ResourcesSettings:
        directory = self.cert_dir
        fill = {
            "warehouse_url": self.warehouse_url or f"sqlite:///{default_warehouse()}",
            "store_url": self.store_url or f"sqlite:///{var_dir() / 'resources' / 'results.sqlite'}",
            "signing_key": self.signing_key or signing_key_path(directory, "resources"),
            "host_verify_key": self.host_verify_key or verify_key_path(directory, "host"),
            "capability_secret": self.capability_secret or secret_path(directory, "resources"),
        }
        for key, value in fill.items():
            object.__setattr__(self, key, value)
        return self
