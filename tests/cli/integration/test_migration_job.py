"""Migrations as a Job: `python -m services.<service> migrate` brings a database to this release's schema as a
role that may change it; a service with TESSERA_<SERVICE>_MIGRATIONS=await only checks it, waiting alive and not
ready until the schema is there, so its own role needs no DDL (deploy/postgres/service-roles.sql)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from cli.deploy_objects import setting_file
from cli.launcher import free_ports
from shared.data import db
from shared.paths import REPO_ROOT
from shared.rpc.runtime import LIVENESS_SERVICE
from tests.cli.integration.test_dependency_wait import _status
from tests.fixtures.postgres import PG_ADMIN_URL, postgres_database
from tests.fixtures.waiting import wait_until

STATEFUL = ("host", "capabilities", "resources")
ROLES_SQL = REPO_ROOT / "deploy" / "postgres" / "service-roles.sql"


def _migrate(name: str, url: str, *arguments: str) -> subprocess.CompletedProcess:
    env = {**os.environ, f"TESSERA_{name.upper()}_MIGRATOR_URL": url}
    return subprocess.run([sys.executable, "-m", f"services.{name}", *(arguments or ("migrate",))], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


def _migrated_here(name: str, url: str) -> None:
    """What `migrate` does, in this process (its own entry is tested above): where a test needs a schema, not the
    command, this spares a process start per service and role."""
    engine = db.engine_for(url)
    try:
        db.migrate(engine, REPO_ROOT / "services" / name / "migrations")
    finally:
        engine.dispose()


def _awaiting_host(cert_dir: Path, tmp_path: Path, url: str, migrations: str = "await"):
    health_port, port = free_ports(2)
    log = tmp_path / "host.log"
    env = {**os.environ, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_VAR_DIR": str(tmp_path),
           "TESSERA_HOST_PORT": str(port), "TESSERA_HOST_HEALTH_PORT": str(health_port),
           "TESSERA_HOST_DEPENDENCY_WAIT_SECONDS": "120", "TESSERA_HOST_MIGRATIONS": migrations,
           "TESSERA_HOST_DATABASE_URL": url}
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "services.host"], cwd=REPO_ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    return process, log, health_port


def _stop(process: subprocess.Popen) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()


def test_an_awaiting_service_waits_not_ready_for_the_migration_then_serves(cert_dir, tmp_path):
    url = f"sqlite:///{tmp_path / 'host.sqlite'}"
    process, log, health_port = _awaiting_host(cert_dir, tmp_path, url)
    try:
        wait_until(lambda: "waiting for a dependency" in log.read_text(), 60,
                   what="the host saying it waits for its schema", detail=log.read_text)
        assert "the schema is at version none (empty), this release needs" in log.read_text()
        assert _status(health_port, LIVENESS_SERVICE) == "SERVING" and _status(health_port) == "NOT_SERVING"
        assert not sqlite3.connect(tmp_path / "host.sqlite").execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall(), "an awaiting service created tables"
        migrated = _migrate("host", url)
        assert migrated.returncode == 0, migrated.stderr
        assert '"schema migrated"' in migrated.stderr and '"before": null' in migrated.stderr
        wait_until(lambda: _status(health_port) == "SERVING", 60, what="the host ready once migrated",
                   detail=lambda: log.read_text()[-2000:])
        again = _migrate("host", url)
        assert again.returncode == 0 and "already at this release's version" in again.stderr
    finally:
        assert _stop(process) == 0


def _stamped(tmp_path: Path, version: str) -> str:
    """A host database migrated, then marked as at `version`."""
    url = f"sqlite:///{tmp_path / 'host.sqlite'}"
    _migrated_here("host", url)
    with sqlite3.connect(tmp_path / "host.sqlite") as connection:
        connection.execute("UPDATE alembic_version SET version_num = ?", (version,))
    return url


@pytest.mark.parametrize("migrations", ["await", "run"])
def test_a_later_releases_schema_is_served_as_it_is_with_a_warning(cert_dir, tmp_path, migrations):
    """A release's migrations keep the previous release working, so its pods may restart mid-update (or be rolled
    back to) on the later schema: they serve, say so once, and change nothing."""
    url = _stamped(tmp_path, "9999")
    process, log, health_port = _awaiting_host(cert_dir, tmp_path, url, migrations)
    try:
        wait_until(lambda: _status(health_port) == "SERVING", 60, what="the host serving on the later schema",
                   detail=lambda: log.read_text()[-2000:])
        assert "the schema is at a later release's version" in log.read_text()
    finally:
        assert _stop(process) == 0
    with sqlite3.connect(tmp_path / "host.sqlite") as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [("9999",)]


def test_a_schema_of_no_release_of_this_service_stops_it_with_one_line(cert_dir, tmp_path):
    url = _stamped(tmp_path, "a1b2c3d4")
    process, log, _ = _awaiting_host(cert_dir, tmp_path, url)
    assert process.wait(60) == 2
    assert log.read_text().strip().splitlines()[-1] == (
        "tessera-host: error: TESSERA_HOST_DATABASE_URL: cannot prepare the host database: the schema is at version "
        "a1b2c3d4, which is neither this release's (0007) nor a later one of this service: is this the service's "
        "own database?")


def test_revisions_are_numbered_in_order_so_a_later_release_is_told_apart():
    """prepare_schema tells a later release's schema by its number: each service's revisions are 0001, 0002 ...
    each following the one before."""
    from alembic.script import ScriptDirectory

    for name in STATEFUL:
        scripts = ScriptDirectory(str(REPO_ROOT / "services" / name / "migrations"))
        chain = [script.revision for script in reversed(list(scripts.walk_revisions()))]
        assert chain == [f"{number:04d}" for number in range(1, len(chain) + 1)], name


def test_the_migrator_reads_its_url_from_the_file_its_secret_holds(tmp_path):
    """As the migrate Job runs it: no URL in the environment, the file `tessera_host_migrator_url` (the Secret's
    key, docs/deploy-kubernetes.md) in TESSERA_SECRETS_DIR."""
    secrets = tmp_path / "secret"
    secrets.mkdir()
    (secrets / setting_file("host", "migrator_url")).write_text(f"sqlite:///{tmp_path / 'host.sqlite'}")
    env = {key: value for key, value in os.environ.items() if key != "TESSERA_HOST_MIGRATOR_URL"}
    result = subprocess.run([sys.executable, "-m", "services.host", "migrate"], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=120, env={**env, "TESSERA_SECRETS_DIR": str(secrets)})
    assert result.returncode == 0 and '"schema migrated"' in result.stderr, result.stderr


@pytest.mark.parametrize("arguments, says", [
    ((), "TESSERA_HOST_MIGRATOR_URL is not set (an environment variable, or the file tessera_host_migrator_url in "
         "TESSERA_SECRETS_DIR)"),
    (("migrate", "--now"), "unexpected arguments 'migrate --now'"),
])
def test_the_migrator_refuses_what_it_cannot_use_with_one_line(arguments, says):
    env = {key: value for key, value in os.environ.items() if key != "TESSERA_HOST_MIGRATOR_URL"}
    result = subprocess.run([sys.executable, "-m", "services.host", *(arguments or ("migrate",))], cwd=REPO_ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and says in result.stderr.strip().splitlines()[-1], result.stderr


@pytest.mark.parametrize("password, says", [
    ("s3cret-tail9z", "cannot migrate the host database:"),
    # Unencoded, the @ would leave "tail9z" in the host name, which the driver's error prints.
    ("s3cret@tail9z", "the database URL's password must be percent-encoded (an @ in it is written %40)"),
])
def test_a_migrator_that_cannot_use_its_database_says_so_without_the_password(password, says):
    (port,) = free_ports(1)
    result = _migrate("host", f"postgresql+psycopg://migrator:{password}@127.0.0.1:{port}/tessera_host")
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("tessera-host: error: TESSERA_HOST_MIGRATOR_URL: ") and says in last, last
    assert "s3cret" not in result.stderr and "tail9z" not in result.stderr


def _psql(*arguments: str) -> subprocess.CompletedProcess:
    admin = sa.make_url(PG_ADMIN_URL)
    return subprocess.run(["psql", "-X", "-q", "-h", admin.host or "127.0.0.1", "-p", str(admin.port or 5432),
                           "-U", admin.username or "postgres", "-d", admin.database or "postgres", *arguments],
                          capture_output=True, text=True, timeout=120)


def _roles(request, script: str, prepare=None) -> tuple[str, str, str]:
    """Run deploy/postgres/`script` for fresh role and database names (`prepare(names)` first makes what it
    expects to find); (migrator URL, service URL, service role), dropped when the test ends."""
    postgres_database(request, "roles_probe")  # skips, visibly, when no PostgreSQL answers
    if shutil.which("psql") is None:
        pytest.skip("psql is missing: the roles scripts are psql scripts")
    tag = uuid.uuid4().hex[:8]
    service, migrator, database = f"t_service_{tag}", f"t_migrator_{tag}", f"t_roles_{tag}"

    def drop() -> None:
        _psql("-c", f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        _psql("-c", f'DROP ROLE IF EXISTS "{service}"', "-c", f'DROP ROLE IF EXISTS "{migrator}"')

    request.addfinalizer(drop)
    base = sa.make_url(PG_ADMIN_URL).set(database=database, password=None)
    urls = (base.set(username=migrator).render_as_string(hide_password=False),
            base.set(username=service).render_as_string(hide_password=False), service)
    if prepare is not None:
        prepare(service, database, urls[1])
    made = _psql("-v", f"service={service}", "-v", f"migrator={migrator}", "-v", f"database={database}",
                 "-f", str(ROLES_SQL.with_name(script)))
    assert made.returncode == 0, made.stderr
    return urls


def _service_owning_its_tables(name: str):
    def prepare(service: str, database: str, service_url: str) -> None:
        """An install from before: service `name`'s own role owns its database, and migrated it itself."""
        for statement in (f'CREATE ROLE "{service}" LOGIN', f'CREATE DATABASE "{database}" OWNER "{service}"'):
            assert _psql("-c", statement).returncode == 0
        _migrated_here(name, service_url)

    return prepare


@pytest.fixture(params=["new", "upgraded"])
def role_pair(request):
    """A database made by service-roles.sql, or one whose service role owned it (migrated by the test's service),
    moved by the upgrade script."""
    if request.param == "new":
        return _roles(request, "service-roles.sql")
    name = getattr(request.node, "callspec", None) and request.node.callspec.params.get("name") or "host"
    return _roles(request, "service-roles-upgrade.sql", _service_owning_its_tables(name))


@pytest.mark.parametrize("name", STATEFUL)
def test_the_services_role_uses_every_table_the_migrator_made_and_changes_none(role_pair, name):
    """Each service's migrations as the migrator (on an upgraded install, a no-op after the move), then the
    service's role: every privilege on every table of the service, no table of its own, no DDL."""
    migrator_url, service_url, service = role_pair
    _migrated_here(name, migrator_url)
    engine = sa.create_engine(service_url)
    try:
        with engine.connect() as connection:
            tables = connection.execute(sa.text(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars().all()
            assert "alembic_version" in tables and len(tables) > 2
            for table in tables:
                for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE"):
                    assert connection.execute(sa.text("SELECT has_table_privilege(:role, :table, :privilege)"),
                                              {"role": service, "table": f"public.{table}",
                                               "privilege": privilege}).scalar(), (table, privilege)
            owners = set(connection.execute(sa.text(
                "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'")).scalars())
            assert service not in owners
        for ddl in ("CREATE TABLE intruder (id int)", f"DROP TABLE {tables[0]}",
                    f"ALTER TABLE {tables[0]} ADD COLUMN intruder int"):
            with engine.connect() as connection, pytest.raises(sa.exc.ProgrammingError,
                                                               match="(?i)permission denied|must be owner"):
                connection.execute(sa.text(ddl))
    finally:
        engine.dispose()


def test_an_awaiting_host_serves_with_a_role_without_ddl(role_pair, cert_dir, tmp_path):
    migrator_url, service_url, _ = role_pair
    _migrated_here("host", migrator_url)
    process, log, health_port = _awaiting_host(cert_dir, tmp_path, service_url)
    try:
        wait_until(lambda: _status(health_port) == "SERVING", 60, what="the host serving as the DML-only role",
                   detail=lambda: log.read_text()[-2000:])
    finally:
        assert _stop(process) == 0
