"""`python -m services.<service> migrate`: bring a service's database schema to this release's version, then exit.

What the Kubernetes migrate Jobs run before the services start (docs/deploy-kubernetes.md): the URL is the
migrator's, a role that may change the schema (TESSERA_<SERVICE>_MIGRATOR_URL, a file in TESSERA_SECRETS_DIR
there, never an argument), so the service itself can run with TESSERA_<SERVICE>_MIGRATIONS=await and a role
without DDL. Replicas of the Job (or a service in "run" mode) starting together take turns on the migration lock.
Exit 0 with one log line saying from which version to which; 2 with one error line.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NoReturn

from pydantic import SecretStr

from shared.config import ConfigError, ServiceSettings, load_settings
from shared.data import db
from shared.logs import log, setup_logging, stop_logging
from shared.rpc.runtime import fail_startup

logger = logging.getLogger("tessera.migrator")


class MigratorSettings(ServiceSettings):
    migrator_url: SecretStr


def main(name: str, migrations: Path, arguments: list[str]) -> NoReturn:
    """A stateful service started with arguments: `migrate` runs the migrations; anything else is a usage
    error (without arguments the service serves)."""
    if arguments != ["migrate"]:
        fail_startup(name, f"unexpected arguments {' '.join(arguments)!r}: run with none to serve, or with "
                           f"'migrate' to bring the database schema to this release's version")
    try:
        settings = load_settings(name, MigratorSettings)
    except ConfigError as exc:
        fail_startup(name, str(exc))
    setup_logging(f"{name}-migrate", settings.log_level)
    variable = f"TESSERA_{name.upper()}_MIGRATOR_URL"
    try:
        engine = db.engine_for(settings.migrator_url.get_secret_value())
        try:
            before = db.schema_version(engine)
            db.migrate(engine, migrations)
            after = db.schema_version(engine)
        finally:
            engine.dispose()
    except Exception as exc:  # one line, without the URL (it holds the password)
        fail_startup(name, f"{variable}: cannot migrate the {name} database: {str(exc).splitlines()[0][:300]}")
    log(logger, logging.INFO, "schema migrated" if before != after else "schema already at this release's version",
        before=before, after=after)
    stop_logging()
    raise SystemExit(0)
