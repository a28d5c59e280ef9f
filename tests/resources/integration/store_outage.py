"""Take a PostgreSQL database away from its clients and give it back, as an outage does."""

from __future__ import annotations

import sqlalchemy as sa

from tests.fixtures.postgres import PG_ADMIN_URL


def allow_connections(database: str, allowed: bool) -> None:
    """Refuse (and cut) every connection to `database`, or let them in again."""
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            connection.execute(sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                       "WHERE datname = :name AND pid <> pg_backend_pid()"), {"name": database})
    admin.dispose()
