"""The metric expression grammar: parsed with Python's own parser, whitelisted.

Expressions use a small, familiar syntax — `sum(quantity * unit_price * (1 - discount))`,
`count_distinct(order_id)`, `returned_units / units_sold`, `a if x > 0 else b`,
`sum(revenue, where=promo == 1)`, `status in ('F', 'O')`, `starts_with(type, 'PROMO')`,
`avg(days_between(ordered_at, shipped_at))`, `sum(quantity * parts.retail_price)`.
The text is parsed by `ast.parse` and then only a closed set of node types is
accepted (arithmetic, comparisons, membership, and/or/not, conditional, aggregate
calls with an optional `where=`, a few named functions, names, numeric and string
literals). Nothing is ever evaluated as Python or rendered as SQL text: the Resource Gateway
compiles accepted trees to SQLAlchemy expressions (services/resources/expression_sql.py). The grammar
lives here so that the gateway and the `tessera semantic` commands read the same rules and limits.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

AGGREGATES = ("sum", "count", "count_distinct", "avg", "min", "max")
# Row-level functions: name → number of arguments. Text matching takes a literal pattern; the
# date parts and differences are compiled per dialect.
FUNCTIONS = {"starts_with": 2, "ends_with": 2, "contains": 2, "like": 2, "lower": 1, "upper": 1,
             "year": 1, "quarter": 1, "month": 1, "day": 1, "date_trunc": 2, "days_between": 2}
TEXT_MATCHES = ("starts_with", "ends_with", "contains", "like")
DATE_PARTS = ("year", "quarter", "month", "day")
TRUNC_GRAINS = ("day", "week", "month", "quarter", "year")
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
class Membership:
    operand: Expr
    values: tuple[Num | Text, ...]
    negated: bool = False


@dataclass(frozen=True)
class Function:
    name: str
    arguments: tuple[Expr, ...]


@dataclass(frozen=True)
class Aggregate:
    function: str
    argument: Expr | None  # None: count(*)
    where: Expr | None = None  # a filtered measure: only rows where this holds are aggregated


Expr = Num | Text | Ref | Binary | Negate | Compare | Logical | Conditional | Membership | Function | Aggregate

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
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn):
        return _membership(node, dotted, where)
    if isinstance(node, ast.IfExp):
        return Conditional(_convert(node.test, dotted), _convert(node.body, dotted), _convert(node.orelse, dotted))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in AGGREGATES:
        return _aggregate(node, dotted, where)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
        return _function(node, dotted, where)
    if isinstance(node, ast.Call):
        name = repr(node.func.id) if isinstance(node.func, ast.Name) else "(computed)"
        raise ExpressionError(f"unknown function {name}{where}; allowed: {', '.join((*AGGREGATES, *FUNCTIONS))}")
    raise ExpressionError(f"{type(node).__name__} is not allowed in expressions{where}")


def _aggregate(node: ast.Call, dotted: bool, where: str) -> Aggregate:
    name = node.func.id
    condition = None
    for keyword in node.keywords:
        if keyword.arg != "where" or condition is not None:
            raise ExpressionError(f"{name}() takes one keyword argument, where={where}")
        condition = _convert(keyword.value, dotted)
    if name == "count" and not node.args:
        return Aggregate("count", None, condition)
    if len(node.args) != 1:
        raise ExpressionError(f"{name}() takes exactly one argument{where}")
    return Aggregate(name, _convert(node.args[0], dotted), condition)


def _function(node: ast.Call, dotted: bool, where: str) -> Function:
    name = node.func.id
    if node.keywords or len(node.args) != FUNCTIONS[name]:
        raise ExpressionError(f"{name}() takes {FUNCTIONS[name]} argument{'s' if FUNCTIONS[name] > 1 else ''}{where}")
    arguments = tuple(_convert(arg, dotted) for arg in node.args)
    if name in TEXT_MATCHES and not isinstance(arguments[1], Text):
        raise ExpressionError(f"{name}() matches a quoted text literal{where}")
    if name == "date_trunc" and not (isinstance(arguments[0], Text) and arguments[0].value in TRUNC_GRAINS):
        raise ExpressionError(f"date_trunc() takes a grain first: one of {', '.join(TRUNC_GRAINS)}{where}")
    return Function(name, arguments)


def _membership(node: ast.Compare, dotted: bool, where: str) -> Membership:
    options = node.comparators[0]
    if not isinstance(options, ast.Tuple | ast.List) or not options.elts:
        raise ExpressionError(f"'in' takes a list of literals, e.g. status in ('F', 'O'){where}")
    values = tuple(_convert(item, dotted) for item in options.elts)
    if not all(isinstance(value, Num | Text) for value in values):
        raise ExpressionError(f"'in' takes literals only{where}")
    return Membership(_convert(node.left, dotted), values, isinstance(node.ops[0], ast.NotIn))


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
        return tuple(part for part in (expr.argument, expr.where) if part is not None)
    if isinstance(expr, Membership):
        return (expr.operand, *expr.values)
    if isinstance(expr, Function):
        return expr.arguments
    return ()


def check_entity_metric(expr: Expr, fields: set[str], related: Callable[[Ref], None] | None = None) -> None:
    """An entity metric: every field reference sits inside exactly one aggregate.

    `entity.field` names a field of a related entity; `related` checks it (and raises ExpressionError).
    """

    def visit(node: Expr, inside: bool) -> bool:
        if isinstance(node, Aggregate):
            if inside:
                raise ExpressionError(f"aggregate {node.function}() is nested inside another aggregate")
            for child in _children(node):
                visit(child, True)
            return True
        if isinstance(node, Ref):
            if node.entity is not None:
                if related is None:
                    raise ExpressionError(f"{node.entity}.{node.name}: fields of other entities are not "
                                          "allowed here")
                related(node)
            elif node.name not in fields:
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
        if isinstance(node, Function):
            raise ExpressionError(f"a derived metric combines metrics; {node.name}() belongs in an entity metric")
        if isinstance(node, Ref):
            if node.entity is None or (node.entity, node.name) not in metrics:
                raise ExpressionError(f"unknown metric {node.entity + '.' if node.entity else ''}{node.name!r}; "
                                      "write entity.metric")


def aggregates_in(expr: Expr) -> list[Aggregate]:
    return [node for node in walk(expr) if isinstance(node, Aggregate)]
