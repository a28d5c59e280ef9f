"""The embedded defaults a benchmark runs the services on: a seeded SQLite warehouse and one SQLite file per
service's own state, all under one work folder (names start with `prefix`, so benchmarks can share it)."""

from __future__ import annotations

from pathlib import Path

from cli.seed import seed


def seeded_environment(work: Path, prefix: str, rows: int) -> dict[str, str]:
    warehouse = f"sqlite:///{work / f'{prefix}warehouse.sqlite'}"
    seed(warehouse, rows, progress=False)
    return {"TESSERA_RESOURCES_WAREHOUSE_URL": warehouse, "TESSERA_VAR_DIR": str(work / f"{prefix}var"),
            "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{work / f'{prefix}results.sqlite'}",
            "TESSERA_HOST_DATABASE_URL": f"sqlite:///{work / f'{prefix}host.sqlite'}",
            "TESSERA_CAPABILITIES_DATABASE_URL": f"sqlite:///{work / f'{prefix}broker.sqlite'}",
            # The broker's write credential: the same warehouse file (data change proposals).
            "TESSERA_CAPABILITIES_CHANGES_URL": warehouse, "TESSERA_LOG_LEVEL": "WARNING"}
