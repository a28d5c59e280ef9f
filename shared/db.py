"""Small database helpers every stateful service uses."""

from __future__ import annotations

import sqlalchemy as sa


def ping(engine: sa.Engine, what: str) -> str | None:
    """None when `engine` answers a trivial query, else one line saying why not (for readiness)."""
    try:
        with engine.connect() as connection:
            connection.execute(sa.select(1))
    except sa.exc.DBAPIError as exc:
        return f"{what} unreachable: {str(exc.orig).splitlines()[0][:200]}"
    return None
