"""Time grains per dialect: truncating a date or time to an hour, day, week, month, quarter or year.

Used for time dimensions in drafts and for `date_trunc` in metric expressions, so both
agree on what a week or a quarter is on every backend.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from shared.data.analysis_draft import GRAINS
from shared.rpc.refusals import Conflict


def time_bucket(column: ColumnElement, grain: str, dialect: str) -> ColumnElement:
    """Truncate to a grain; weeks start on Monday on every backend."""
    if grain not in GRAINS:
        raise ValueError(f"unknown grain {grain!r}")
    if dialect in ("postgresql", "duckdb"):
        # The grain is one of six fixed words, rendered inline: PostgreSQL only
        # accepts `GROUP BY date_trunc(...)` when both sides are the same literal.
        return sa.func.date_trunc(sa.literal_column(f"'{grain}'"), column)
    if dialect != "sqlite":
        raise Conflict("DIALECT_UNSUPPORTED", f"no time grains for {dialect}")
    formats = {"hour": "%Y-%m-%d %H:00:00", "day": "%Y-%m-%d 00:00:00", "month": "%Y-%m-01 00:00:00",
               "year": "%Y-01-01 00:00:00"}
    if grain in formats:
        return sa.func.strftime(formats[grain], column, type_=sa.String)
    if grain == "week":
        return sa.func.strftime("%Y-%m-%d 00:00:00", column, "-6 days", "weekday 1", type_=sa.String)
    month = sa.cast(sa.func.strftime("%m", column), sa.Integer)
    first_month = ((month - 1) // 3) * 3 + 1
    return (sa.func.strftime("%Y-", column, type_=sa.String)
            .concat(sa.func.printf("%02d", first_month, type_=sa.String)).concat("-01 00:00:00"))
