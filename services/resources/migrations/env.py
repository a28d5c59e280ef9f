"""Alembic environment of the gateway's result store: migrations run on the connection the gateway passes in."""

from __future__ import annotations

from alembic import context

# Replicas start together: on PostgreSQL the first one migrates while the others wait here (the lock
# ends with the migration's transaction), then find the schema at head and do nothing.
MIGRATION_LOCK = 0x7E55E7A_0003

connection = context.config.attributes["connection"]
if connection.dialect.name == "postgresql":
    connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
context.configure(connection=connection, target_metadata=None, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
