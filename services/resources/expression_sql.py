"""Metric expressions (shared/semantic/expressions.py) compiled to SQLAlchemy: nothing is rendered as SQL text."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from services.resources.grains import time_bucket
from shared.semantic.expressions import (
    DATE_PARTS,
    TEXT_MATCHES,
    Aggregate,
    Binary,
    Compare,
    Conditional,
    Expr,
    ExpressionError,
    Function,
    Logical,
    Membership,
    Negate,
    Num,
    Ref,
    Text,
)


def to_sql(expr: Expr, resolve: Callable[[Ref], ColumnElement], dialect: str = "") -> ColumnElement:
    """Compile to SQLAlchemy; `resolve` maps a reference to a column expression. Date functions need
    the `dialect` (sqlite, postgresql or duckdb)."""
    return _Compiler(resolve, dialect).sql(expr)


class _Compiler:
    def __init__(self, resolve: Callable[[Ref], ColumnElement], dialect: str) -> None:
        self.resolve = resolve
        self.dialect = dialect

    def sql(self, expr: Expr) -> ColumnElement:
        # Constants come from the reviewed semantic model, never from a draft; rendering
        # them inline (still escaped by the dialect) lets engines fold them, which
        # bound parameters prevent (measurably slower on DuckDB).
        if isinstance(expr, Num):
            return sa.literal(expr.value, literal_execute=True)
        if isinstance(expr, Text):
            return sa.literal(expr.value, sa.String, literal_execute=True)
        if isinstance(expr, Ref):
            return self.resolve(expr)
        if isinstance(expr, Negate):
            return -self.sql(expr.operand)
        if isinstance(expr, Binary):
            left, right = self.sql(expr.left), self.sql(expr.right)
            if expr.op == "/":
                # Always real division, and NULL instead of an error for x / 0.
                return sa.cast(left, sa.Double) / sa.func.nullif(sa.cast(right, sa.Double), 0)
            return {"+": left + right, "-": left - right, "*": left * right}[expr.op]
        if isinstance(expr, Compare):
            left, right = self.sql(expr.left), self.sql(expr.right)
            return {"==": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
                    ">": left > right, ">=": left >= right}[expr.op]
        if isinstance(expr, Logical):
            parts = [self.sql(o) for o in expr.operands]
            return {"and": lambda: sa.and_(*parts), "or": lambda: sa.or_(*parts),
                    "not": lambda: sa.not_(parts[0])}[expr.op]()
        if isinstance(expr, Conditional):
            return sa.case((self.sql(expr.condition), self.sql(expr.then)), else_=self.sql(expr.otherwise))
        if isinstance(expr, Membership):
            operand = self.sql(expr.operand)
            values = [value.value for value in expr.values]
            return operand.not_in(values) if expr.negated else operand.in_(values)
        if isinstance(expr, Function):
            return self._function(expr)
        if isinstance(expr, Aggregate):
            return self._aggregate(expr)
        raise TypeError(f"not an expression: {expr!r}")

    def _aggregate(self, expr: Aggregate) -> ColumnElement:
        if expr.argument is None:
            inner = sa.literal(1, literal_execute=True) if expr.where is not None else None
        else:
            inner = self.sql(expr.argument)
        if expr.where is not None:
            # Rows that fail the condition become NULL, which every aggregate skips: measures with
            # different conditions on one entity still share one scan.
            inner = sa.case((self.sql(expr.where), inner))
        if inner is None:
            return sa.func.count()
        if expr.function == "count_distinct":
            return sa.func.count(sa.distinct(inner))
        return getattr(sa.func, expr.function)(inner)

    def _function(self, expr: Function) -> ColumnElement:
        name = expr.name
        if name in TEXT_MATCHES:
            column, pattern = self.sql(expr.arguments[0]), expr.arguments[1].value
            if name == "like":  # the model author's own pattern: % and _ are wildcards
                return column.like(pattern)
            # The literal is matched as it is: % and _ in it are escaped, not wildcards.
            method = {"starts_with": column.startswith, "ends_with": column.endswith, "contains": column.contains}
            return method[name](pattern, autoescape=True)
        if name in ("lower", "upper"):
            return getattr(sa.func, name)(self.sql(expr.arguments[0]))
        if name in DATE_PARTS:
            return self._date_part(name, self.sql(expr.arguments[0]))
        if name == "date_trunc":
            return self._truncate(expr.arguments[0].value, self.sql(expr.arguments[1]))
        return self._days_between(self.sql(expr.arguments[0]), self.sql(expr.arguments[1]))

    def _date_part(self, part: str, value: ColumnElement) -> ColumnElement:
        if self.dialect == "sqlite":
            if part == "quarter":
                return (sa.cast(sa.func.strftime("%m", value), sa.Integer) + 2) // 3
            code = {"year": "%Y", "month": "%m", "day": "%d"}[part]
            return sa.cast(sa.func.strftime(code, value), sa.Integer)
        self._need_dialect()
        return sa.cast(sa.extract(part, value), sa.Integer)

    def _truncate(self, grain: str, value: ColumnElement) -> ColumnElement:
        self._need_dialect()
        return time_bucket(value, grain, self.dialect)

    def _days_between(self, start: ColumnElement, end: ColumnElement) -> ColumnElement:
        """Whole days from `start` to `end` (negative when end is earlier), by calendar day."""
        if self.dialect == "sqlite":
            return sa.cast(sa.func.julianday(sa.func.date(end)) - sa.func.julianday(sa.func.date(start)),
                           sa.Integer)
        if self.dialect == "postgresql":
            return sa.cast(end, sa.Date) - sa.cast(start, sa.Date)
        self._need_dialect()
        return sa.func.date_diff(sa.literal_column("'day'"), sa.cast(start, sa.Date), sa.cast(end, sa.Date))

    def _need_dialect(self) -> None:
        if self.dialect not in ("sqlite", "postgresql", "duckdb"):
            raise ExpressionError(f"date functions are not available on {self.dialect or 'this backend'}")
