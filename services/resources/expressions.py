"""The metric expression grammar: parsed with Python's own parser, whitelisted.

Expressions use a small, familiar syntax — `sum(quantity * unit_price * (1 - discount))`,
`count_distinct(order_id)`, `returned_units / units_sold`, `a if x > 0 else b`.
The text is parsed by `ast.parse` and then only a closed set of node types is
accepted (arithmetic, comparisons, and/or/not, conditional, aggregate calls,
names, numeric and string literals). Nothing is ever evaluated as Python or
rendered as SQL text: accepted trees compile to SQLAlchemy expressions.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

AGGREGATES = ("sum", "count", "count_distinct", "avg", "min", "max")
# Aggregations that give the same answer when a join repeats rows.
FAN_OUT_SAFE = frozenset({"count_distinct", "min", "max"})
MAX_EXPRESSION_CHARS = 500


class ExpressionError(ValueError):
    """The expression is not in the grammar; the message says where."""


@dataclass(frozen=True)
class Num:
    value: int | float


@dataclass(frozen=True)
class Text:
    value: str


@dataclass(frozen=True)
class Ref:
    """A field name (entity metrics) or a metric name (derived metrics)."""

    name: str
    entity: str | None = None


@dataclass(frozen=True)
class Binary:
    op: str  # + - * /
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Negate:
    operand: Expr


@dataclass(frozen=True)
class Compare:
    op: str  # == != < <= > >=
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Logical:
    op: str  # and / or / not
    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class Conditional:
    condition: Expr
    then: Expr
    otherwise: Expr


@dataclass(frozen=True)
class Aggregate:
    function: str
    argument: Expr | None  # None: count(*)


Expr = Num | Text | Ref | Binary | Negate | Compare | Logical | Conditional | Aggregate

_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def parse(text: str, *, dotted_refs: bool = False) -> Expr:
    """Parse one expression; `dotted_refs` allows `entity.metric` references."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error at column {exc.offset}: {exc.msg}") from None
    return _convert(tree.body, dotted_refs)


def _convert(node: ast.AST, dotted: bool) -> Expr:
    where = f" at column {getattr(node, 'col_offset', 0) + 1}"
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float | str):
            raise ExpressionError(f"literal {node.value!r} is not a number or string{where}")
        return Text(node.value) if isinstance(node.value, str) else Num(node.value)
    if isinstance(node, ast.Name):
        return Ref(node.id)
    if isinstance(node, ast.Attribute) and dotted and isinstance(node.value, ast.Name):
        return Ref(node.attr, entity=node.value.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return Binary(_BINARY[type(node.op)], _convert(node.left, dotted), _convert(node.right, dotted))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return Negate(_convert(node.operand, dotted))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return Logical("not", (_convert(node.operand, dotted),))
    if isinstance(node, ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        return Logical(op, tuple(_convert(v, dotted) for v in node.values))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        return Compare(_COMPARE[type(node.ops[0])], _convert(node.left, dotted), _convert(node.comparators[0], dotted))
    if isinstance(node, ast.IfExp):
        return Conditional(_convert(node.test, dotted), _convert(node.body, dotted), _convert(node.orelse, dotted))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in AGGREGATES:
        if node.keywords:
            raise ExpressionError(f"{node.func.id}() takes no keyword arguments{where}")
        if node.func.id == "count" and not node.args:
            return Aggregate("count", None)
        if len(node.args) != 1:
            raise ExpressionError(f"{node.func.id}() takes exactly one argument{where}")
        return Aggregate(node.func.id, _convert(node.args[0], dotted))
    if isinstance(node, ast.Call):
        name = repr(node.func.id) if isinstance(node.func, ast.Name) else "(computed)"
        raise ExpressionError(f"unknown function {name}{where}; allowed: {', '.join(AGGREGATES)}")
    raise ExpressionError(f"{type(node).__name__} is not allowed in expressions{where}")


def walk(expr: Expr):
    yield expr
    for child in _children(expr):
        yield from walk(child)


def _children(expr: Expr) -> tuple[Expr, ...]:
    if isinstance(expr, Binary | Compare):
        return (expr.left, expr.right)
    if isinstance(expr, Negate):
        return (expr.operand,)
    if isinstance(expr, Logical):
        return expr.operands
    if isinstance(expr, Conditional):
        return (expr.condition, expr.then, expr.otherwise)
    if isinstance(expr, Aggregate):
        return () if expr.argument is None else (expr.argument,)
    return ()


def check_entity_metric(expr: Expr, fields: set[str]) -> None:
    """An entity metric: every field reference sits inside exactly one aggregate."""

    def visit(node: Expr, inside: bool) -> bool:
        if isinstance(node, Aggregate):
            if inside:
                raise ExpressionError(f"aggregate {node.function}() is nested inside another aggregate")
            for child in _children(node):
                visit(child, True)
            return True
        if isinstance(node, Ref):
            if node.name not in fields:
                raise ExpressionError(f"unknown field {node.name!r}")
            if not inside:
                raise ExpressionError(f"field {node.name!r} is used outside an aggregate")
            return False
        return any([visit(child, inside) for child in _children(node)])

    if not visit(expr, False):
        raise ExpressionError("a metric needs at least one aggregate such as sum(...) or count()")


def check_derived_metric(expr: Expr, metrics: set[tuple[str, str]]) -> None:
    """A derived metric: arithmetic over `entity.metric` references only."""
    for node in walk(expr):
        if isinstance(node, Aggregate):
            raise ExpressionError("a derived metric combines metrics; it cannot aggregate fields")
        if isinstance(node, Ref):
            if node.entity is None or (node.entity, node.name) not in metrics:
                raise ExpressionError(f"unknown metric {node.entity + '.' if node.entity else ''}{node.name!r}; "
                                      "write entity.metric")


def aggregates_in(expr: Expr) -> list[Aggregate]:
    return [node for node in walk(expr) if isinstance(node, Aggregate)]


def to_sql(expr: Expr, resolve: Callable[[Ref], ColumnElement]) -> ColumnElement:
    """Compile to SQLAlchemy; `resolve` maps a reference to a column expression."""
    # Constants come from the reviewed semantic model, never from a draft; rendering
    # them inline (still escaped by the dialect) lets engines fold them, which
    # bound parameters prevent (measurably slower on DuckDB).
    if isinstance(expr, Num):
        return sa.literal(expr.value, literal_execute=True)
    if isinstance(expr, Text):
        return sa.literal(expr.value, sa.String, literal_execute=True)
    if isinstance(expr, Ref):
        return resolve(expr)
    if isinstance(expr, Negate):
        return -to_sql(expr.operand, resolve)
    if isinstance(expr, Binary):
        left, right = to_sql(expr.left, resolve), to_sql(expr.right, resolve)
        if expr.op == "/":
            # Always real division, and NULL instead of an error for x / 0.
            return sa.cast(left, sa.Double) / sa.func.nullif(sa.cast(right, sa.Double), 0)
        return {"+": left + right, "-": left - right, "*": left * right}[expr.op]
    if isinstance(expr, Compare):
        left, right = to_sql(expr.left, resolve), to_sql(expr.right, resolve)
        return {"==": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
                ">": left > right, ">=": left >= right}[expr.op]
    if isinstance(expr, Logical):
        parts = [to_sql(o, resolve) for o in expr.operands]
        return {"and": lambda: sa.and_(*parts), "or": lambda: sa.or_(*parts), "not": lambda: sa.not_(parts[0])}[
            expr.op]()
    if isinstance(expr, Conditional):
        return sa.case((to_sql(expr.condition, resolve), to_sql(expr.then, resolve)),
                       else_=to_sql(expr.otherwise, resolve))
    if isinstance(expr, Aggregate):
        if expr.argument is None:
            return sa.func.count()
        inner = to_sql(expr.argument, resolve)
        if expr.function == "count_distinct":
            return sa.func.count(sa.distinct(inner))
        return getattr(sa.func, expr.function)(inner)
    raise TypeError(f"not an expression: {expr!r}")
