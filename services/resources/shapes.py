"""A draft's shape, the hidden values it searches and the literals it searches with: what threshold-search detection
counts (§5, information budget).

A model never sees a measure's value, but the row count of a draft that keeps only rows whose measure passes a
bound says on which side of the bound the value lies. Asking again and again with only the bound changed is a
binary search for the hidden value. This module names the parts of such a draft:

- the **targets**: what a searched literal is compared with, and how: the canonical definition of a measure (its
  aggregation and field, however the draft names or spells it) or calculation tested in `having`, or a filter-only
  field, each with the comparison family (ordered: gt … between; equal: eq, neq, in; null). A target does not
  depend on the rest of the draft, so a search disguised as new drafts (conditions doubled, never-true filters
  added, `between` for gt and lt, `in` of one value for eq, outputs renamed, items reordered) still searches the
  same target. Threshold-search detection counts per target.
- the **variant**: the draft in canonical form with its literals, except the values that only say *which rows*
  (equality on a field the model may see, a text dimension): a question asked again for another channel is the
  same variant, a question with another bound, another period or another structure is another.
- the **asked** key: the same with those values too; the session's searches count these.
- the **shape**: the canonical form with every searched literal replaced by a placeholder (fingerprint for the
  audit of budget refusals). Output ids are replaced by what they define, so renaming does not make a new shape;
  conditions inside all/any are sorted and de-duplicated; a `not` around a bound, a group of one and `in` of one
  value collapse; gt/gte/lt/lte read as one "ordered" comparison; what does not decide which rows come back
  (order, limit, output kind, measures and calculations no `having` tests) is left out.

Searched literals are those a search moves: the numbers in `having` (every measure's value is hidden from the
model), the values of ordered comparisons (gt … between) and relative-period counts, and any value compared with a
filter-only field (whose values are never shown). Equality on a bounded-values field or a text dimension selects
which rows a question is about (values the model may see).

A draft is **oracle-prone** when its row count can depend on a value the model is never shown: it tests a measure
or calculation against a number in `having`, or compares a filter-only field; it then has at least one target.
Only those are counted; any other draft's row count tells counts of what the model may see anyway.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

from services.resources.draft import (
    ORDERED_OPS,
    Calculation,
    Comparison,
    Dimension,
    Draft,
    Group,
    Has,
    Measure,
    OutputCondition,
    RelativePeriod,
    SameRow,
)
from shared.data.bounded_json import canonical
from shared.semantic import expressions

PLACEHOLDER = "?"
SELECTION = "="  # which rows: values the model may see, kept in the shape, masked in the variant
BOUNDS = frozenset({"gt", "gte", "lt", "lte"})  # one side or the other of a bound: the same search
EQUALITY = frozenset({"eq", "neq", "in"})
_NEGATED = {"eq": "neq", "neq": "eq"}
# Calculations whose values are values of the measure itself (cumulative over one period is the total, prior
# is the measure in another period): a bound tested on them searches the measure's target.
_SAME_QUANTITY = frozenset({"cumulative", "prior"})


@dataclass(frozen=True)
class DraftShape:
    fingerprint: str  # SHA-256 of the shape's canonical JSON (no literal in it: safe to log)
    variant: str  # SHA-256 of the draft with its searched literals, selections masked (kept in the store only)
    asked: str  # SHA-256 of the whole canonical draft (kept in the store only)
    targets: tuple[str, ...] = ()  # SHA-256 of each searched target (no literal in it: safe to log), sorted

    @property
    def oracle_prone(self) -> bool:
        return bool(self.targets)


@dataclass(frozen=True)
class _Node:
    skeleton: object  # JSON-able, placeholders where searched literals were, {"=": values} for selections
    literals: tuple  # the searched literals, in skeleton order
    targets: frozenset[str] = frozenset()  # canonical JSON of each hidden value a literal here is compared with

    @property
    def searched(self) -> bool:
        return bool(self.targets)

    @property
    def key(self) -> str:
        return canonical([self.skeleton, list(self.literals)])


def shape_of(draft: Draft) -> DraftShape:
    names = _OutputNames(draft)
    parts: dict[str, object] = {"mode": draft.mode}
    nodes = []
    if draft.mode == "records":
        parts["entity"] = draft.records_entity.id
    else:
        parts["dimensions"] = sorted(canonical(_dimension(d)) for d in draft.dimensions)
        if draft.having is not None:
            having = _having(draft.having, names)
            parts["having"] = having.skeleton
            nodes.append(having)
    if draft.filter is not None:
        predicate = _predicate(draft.filter)
        parts["filter"] = predicate.skeleton
        nodes.append(predicate)
    literals = [literal for node in nodes for literal in node.literals]
    targets = sorted({_digest(target) for node in nodes for target in node.targets})
    return DraftShape(_digest(canonical(parts)), _digest(canonical([_masked(parts), literals])),
                      _digest(canonical([parts, literals])), tuple(targets))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _masked(skeleton: object) -> object:
    """The skeleton with each selection's values hidden: which rows a question is about is not another search."""
    if isinstance(skeleton, dict):
        if SELECTION in skeleton:
            return SELECTION
        return {key: _masked(value) for key, value in skeleton.items()}
    if isinstance(skeleton, list):
        return [_masked(item) for item in skeleton]
    return skeleton


def _family(op: str) -> str:
    if op in BOUNDS or op == "between":
        return "ordered"
    return "equal" if op in EQUALITY else "null" if op == "is_null" else op


def _target(of: object, op: str) -> frozenset[str]:
    return frozenset({canonical({"of": of, "compare": _family(op)})})


class _OutputNames:
    """Each output id → what it defines (so renaming an output is no new shape), and for each measure and
    calculation the hidden value a bound on it searches (its target)."""

    def __init__(self, draft: Draft) -> None:
        self.defined: dict[str, object] = {m.id: _measure(m) for m in draft.measures}
        self.defined.update({d.id: _dimension(d) for d in draft.dimensions})
        self.searched: dict[str, object] = {m.id: _definition(m) for m in draft.measures}
        for calculation in draft.calculations:  # computed from measures and dimensions, never other calculations
            self.defined[calculation.id] = self._calculation(calculation)
            self.searched[calculation.id] = self._searched(calculation)

    def _calculation(self, c: Calculation) -> object:
        return {"kind": c.kind, "of": self.defined[c.of], "descending": c.descending, "against": c.against,
                "within": sorted(canonical(self.defined[name]) for name in c.within),
                "time": self.defined.get(c.time), "to": self.defined.get(c.to)}

    def _searched(self, c: Calculation) -> object:
        """What a bound on a calculation searches: the measure itself for the calculations whose values are the
        measure's; otherwise the kind and the measures, whatever partition or period it runs along."""
        if c.kind in _SAME_QUANTITY:
            return self.searched[c.of]
        return {"kind": c.kind, "of": self.searched[c.of], "to": self.searched.get(c.to)}


def _measure(m: Measure) -> object:
    if m.metric is not None:
        return {"metric": m.metric.id}
    if m.field is not None:
        return {"aggregation": m.aggregation, "field": m.field.id}
    return {"count": m.entity.id}


def _definition(m: Measure) -> object:
    """What a measure computes, however the draft spells it: a metric that aggregates one field (or counts rows)
    is that aggregation of that field; any other metric is its parsed expression."""
    if m.metric is None:
        of = [m.field.entity, m.field.name] if m.field is not None else [m.entity.name]
        return {"aggregate": m.aggregation, "of": of}
    expression = m.metric.expression
    if not m.metric.derived and isinstance(expression, expressions.Aggregate) and expression.where is None:
        if expression.argument is None:
            return {"aggregate": expression.function, "of": [m.metric.entity]}
        if isinstance(expression.argument, expressions.Ref):
            ref = expression.argument
            return {"aggregate": expression.function, "of": [ref.entity or m.metric.entity, ref.name]}
    return {"expression": repr(expression), "entity": m.metric.entity}


def _dimension(d: Dimension) -> object:
    return {"field": d.field.id, "grain": d.grain, "via": [r.id for r in d.via]}


def _literal(value) -> object:
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)  # 100 and 100.0 ask the same
    return value


def _group(op: str, items: list[_Node]) -> _Node:
    """all/any with their items sorted and de-duplicated (order and repetition say nothing); a group of one is its
    item; `not` around a bound is the bound (the other side of it answers the same question), around eq or neq the
    other one."""
    if op == "not":
        inner = items[0].skeleton
        if isinstance(inner, dict) and inner.get("op") == "ordered":
            return items[0]
        if isinstance(inner, dict) and inner.get("op") in _NEGATED:
            return _Node({**inner, "op": _NEGATED[inner["op"]]}, items[0].literals, items[0].targets)
    else:
        items = list({node.key: node for node in items}.values())
        if len(items) == 1:
            return items[0]
    items = sorted(items, key=lambda node: node.key)
    return _Node({op: [node.skeleton for node in items]}, tuple(x for node in items for x in node.literals),
                 frozenset().union(*(node.targets for node in items)))


def _values(op: str, values: tuple) -> tuple[str, tuple]:
    """`in` of one value is eq; a value repeated is the value once."""
    distinct = tuple(sorted(set(values), key=canonical)) if op in EQUALITY else values
    return ("eq" if op == "in" and len(distinct) == 1 else op), distinct


def _having(condition: Group | OutputCondition, names: _OutputNames) -> _Node:
    if isinstance(condition, Group):
        return _group(condition.op, [_having(item, names) for item in condition.items])
    output = names.defined[condition.output]
    if condition.op == "is_null":
        return _Node({"output": output, "op": "is_null"}, ())
    op, values = _values(condition.op, tuple(_literal(v) for v in condition.values))
    if all(isinstance(v, str) for v in values):  # a text dimension: which rows, not a search
        return _Node({"output": output, "op": op, "values": {SELECTION: list(values)}}, ())
    shaped = "ordered" if op in BOUNDS else op
    return _Node({"output": output, "op": shaped, "values": PLACEHOLDER}, values,
                 _target(names.searched[condition.output], op))


def _predicate(predicate) -> _Node:
    if isinstance(predicate, Group):
        return _group(predicate.op, [_predicate(item) for item in predicate.items])
    if isinstance(predicate, Has):
        inner = _predicate(predicate.predicate)
        return _Node({"has": inner.skeleton, "via": [r.id for r in predicate.via]}, inner.literals, inner.targets)
    if isinstance(predicate, SameRow):
        return _Node({"same": predicate.entity.id, "roles": sorted([r.id for r in role] for role in predicate.roles)},
                     ())
    if isinstance(predicate, RelativePeriod):
        return _Node({"field": predicate.field.id, "relative": predicate.relative, "unit": predicate.unit,
                      "via": [r.id for r in predicate.via], "count": PLACEHOLDER}, (predicate.count,))
    return _comparison(predicate)


def _comparison(c: Comparison) -> _Node:
    skeleton = {"field": c.field.id, "via": [r.id for r in c.via]}
    hidden = c.field.spec.exposure == "filter-only"
    if c.other is not None:  # two fields compared: no literal; a hidden one is searched against the other
        compared = sorted(f.id for f in (c.field, c.other) if f.spec.exposure == "filter-only")
        return _Node({**skeleton, "op": c.op, "compare_to": c.other.id, "other_via": [r.id for r in c.other_via]},
                     (), _target({"fields": compared}, c.op) if compared else frozenset())
    target = _target({"field": c.field.id}, c.op) if hidden else frozenset()
    if c.op == "is_null":
        return _Node({**skeleton, "op": c.op}, (), target)
    op, values = _values(c.op, tuple(_literal(v) for v in c.values))
    if hidden or op in ORDERED_OPS:
        shaped = "ordered" if op in BOUNDS else op
        return _Node({**skeleton, "op": shaped, "values": PLACEHOLDER}, values, target)
    return _Node({**skeleton, "op": op, "values": {SELECTION: list(values)}}, ())
