"""Where Tessera keeps its local files unless the environment says otherwise."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# The demo's semantic model and its actions (which change the demo's orders: they go with that model only), and the
# action policy of a set that reads another model until its operator writes one.
DEMO_SEMANTIC_MODEL = REPO_ROOT / "deploy" / "semantic-models" / "retail.yaml"
DEMO_ACTIONS = REPO_ROOT / "deploy" / "policy" / "actions.yaml"
NO_ACTIONS = REPO_ROOT / "deploy" / "policy" / "no-actions.yaml"


def var_dir() -> Path:
    """Local state (certs, databases, logs, run files); TESSERA_VAR_DIR overrides."""
    return Path(os.environ.get("TESSERA_VAR_DIR") or REPO_ROOT / "var")


# What a database file's engine keeps beside it: SQLite's rollback journal, WAL and shared memory; DuckDB's WAL.
DATABASE_SIDE_FILES = ("-journal", "-wal", "-shm", ".wal")


def default_warehouse() -> Path:
    """The demo warehouse when no URL names another (SQLite). In a folder of its own, not loose in var/: run
    as root, each service has a user of its own, and the warehouse's owner (resources) and the broker (data
    changes) must be able to create SQLite's journal beside it while var/ stays closed to both."""
    return var_dir() / "warehouse" / "warehouse.sqlite"


def cert_dir() -> Path:
    """Deployment CA and per-principal keys; TESSERA_CERT_DIR overrides."""
    return Path(os.environ.get("TESSERA_CERT_DIR") or var_dir() / "certs")


def cli_dir() -> Path:
    """The operator CLI's own keys, outside every folder a service is handed: $XDG_CONFIG_HOME/tessera
    (~/.config/tessera when unset or not absolute, as the XDG base directory specification says)."""
    configured = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(configured) if os.path.isabs(configured) else Path.home() / ".config"
    return base / "tessera"
