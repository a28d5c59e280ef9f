"""Settings of the compiler (TESSERA_COMPILER_*)."""

from __future__ import annotations

from pathlib import Path

from shared.config import ServiceSettings
from shared.ui.contracts import DEFAULT_CATALOG


class CompilerSettings(ServiceSettings):
    # The catalog directory: catalog.yaml plus components/*.yaml, one contract each.
    catalog_dir: Path = DEFAULT_CATALOG
