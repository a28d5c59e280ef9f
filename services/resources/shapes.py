"""A draft's shape and the literals it searches with: what threshold-search detection counts (§5, information budget).

A model never sees a measure's value, but the row count of a draft that keeps only rows whose measure passes a
bound says on which side of the bound the value lies. Asking the same draft again and again with only the bound
changed is a binary search for the hidden value. This module names the two halves of such a draft:

- the **shape**: the draft in canonical form with every *searched* literal replaced by a placeholder. Output ids are
  replaced by what they define (a measure by its metric, aggregation and field …), so renaming does not make a new
  shape; conditions inside all/any are sorted; a `not` around a bound and a group of one collapse; gt/gte/lt/lte read
  as one "ordered" comparison (a bound searched from either side is the same search); what does not decide which
  rows come back (order, limit, output kind, measures and calculations no `having` tests) is left out.
- the **variant**: the searched literals themselves, in the shape's order.

Searched literals are those a search moves: the numbers in `having` (every measure's value is hidden from the
model), the values of ordered comparisons (gt … between) and relative-period counts, and any value compared with a
filter-only field (whose values are never shown). Equality on a bounded-values field or a text breakdown selects
which rows a question is about (values the model may see): it stays in the shape, so two channels are two shapes.

A draft is **oracle-prone** when its row count can depend on a value the model is never shown: it tests a measure
or calculation against a number in `having`, or compares a filter-only field. Only those are counted; any other
draft's row count tells counts of what the model may see anyway.
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
from shared.bounded_json import canonical

PLACEHOLDER = "?"
BOUNDS = frozenset({"gt", "gte", "lt", "lte"})  # one side or the other of a bound: the same search


@dataclass(frozen=True)
class DraftShape:
    fingerprint: str  # SHA-256 of the shape's canonical JSON (no literal in it: safe to log)
    variant: str  # SHA-256 of the searched literals (kept in the store only, never logged)
    oracle_prone: bool


@dataclass(frozen=True)
class _Node:
    skeleton: object  # JSON-able, placeholders where searched literals were
    literals: tuple  # the searched literals, in skeleton order
    searched: bool = False  # holds a literal that tests a hidden value

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
    return DraftShape(_digest(canonical(parts)), _digest(canonical(literals)), any(node.searched for node in nodes))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class _OutputNames:
    """Each output id → what it defines (so renaming an output is no new shape)."""

    def __init__(self, draft: Draft) -> None:
        self.defined: dict[str, object] = {m.id: _measure(m) for m in draft.measures}
        self.defined.update({d.id: _dimension(d) for d in draft.dimensions})
        for calculation in draft.calculations:  # computed from measures and breakdowns, never other calculations
            self.defined[calculation.id] = self._calculation(calculation)

    def _calculation(self, c: Calculation) -> object:
        return {"kind": c.kind, "of": self.defined[c.of], "descending": c.descending, "against": c.against,
                "within": sorted(canonical(self.defined[name]) for name in c.within),
                "time": self.defined.get(c.time), "to": self.defined.get(c.to)}


def _measure(m: Measure) -> object:
    if m.metric is not None:
        return {"metric": m.metric.id}
    if m.field is not None:
        return {"aggregation": m.aggregation, "field": m.field.id}
    return {"count": m.entity.id}


def _dimension(d: Dimension) -> object:
    return {"field": d.field.id, "grain": d.grain, "via": [r.id for r in d.via]}


def _literal(value) -> object:
    return value.isoformat() if isinstance(value, dt.date | dt.datetime) else value


def _group(op: str, items: list[_Node]) -> _Node:
    """all/any with their items sorted (order says nothing); a group of one is its item; `not` around a bound
    is the bound (the other side of it answers the same question)."""
    if op != "not" and len(items) == 1:
        return items[0]
    if op == "not" and isinstance(items[0].skeleton, dict) and items[0].skeleton.get("op") == "ordered":
        return items[0]
    items = sorted(items, key=lambda node: node.key)
    return _Node({op: [node.skeleton for node in items]}, tuple(x for node in items for x in node.literals),
                 any(node.searched for node in items))


def _having(condition: Group | OutputCondition, names: _OutputNames) -> _Node:
    if isinstance(condition, Group):
        return _group(condition.op, [_having(item, names) for item in condition.items])
    output = names.defined[condition.output]
    if condition.op == "is_null":
        return _Node({"output": output, "op": "is_null"}, ())
    if all(isinstance(v, str) for v in condition.values):  # a text breakdown: which rows, not a search
        return _Node({"output": output, "op": condition.op, "values": sorted(condition.values)}, ())
    op = "ordered" if condition.op in BOUNDS else condition.op
    return _Node({"output": output, "op": op, "values": PLACEHOLDER}, tuple(condition.values), searched=True)


def _predicate(predicate) -> _Node:
    if isinstance(predicate, Group):
        return _group(predicate.op, [_predicate(item) for item in predicate.items])
    if isinstance(predicate, Has):
        inner = _predicate(predicate.predicate)
        return _Node({"has": inner.skeleton, "via": [r.id for r in predicate.via]}, inner.literals, inner.searched)
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
    if c.other is not None:  # two fields compared: no literal
        return _Node({**skeleton, "op": c.op, "compare_to": c.other.id, "other_via": [r.id for r in c.other_via]},
                     (), searched=hidden or c.other.spec.exposure == "filter-only")
    if c.op == "is_null":
        return _Node({**skeleton, "op": c.op}, (), searched=hidden)
    values = tuple(_literal(v) for v in c.values)
    if hidden or c.op in ORDERED_OPS:
        op = "ordered" if c.op in BOUNDS else c.op
        return _Node({**skeleton, "op": op, "values": PLACEHOLDER}, values, searched=hidden)
    return _Node({**skeleton, "op": c.op, "values": sorted(values, key=canonical)}, ())
