"""Where Tessera keeps its local files unless the environment says otherwise."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def var_dir() -> Path:
    """Local state (certs, databases, logs, run files); TESSERA_VAR_DIR overrides."""
    return Path(os.environ.get("TESSERA_VAR_DIR") or REPO_ROOT / "var")


def cert_dir() -> Path:
    """Deployment CA and per-principal keys; TESSERA_CERT_DIR overrides."""
    return Path(os.environ.get("TESSERA_CERT_DIR") or var_dir() / "certs")
