"""Compile a checked draft to one SQLAlchemy Core statement (§5).

Joins follow the semantic relationships. **Fan-out protection**: every
measure is aggregated at its own grain — in a subquery rooted at the entity
it belongs to, joined only along edges that cannot repeat that entity's rows
— and the per-grain results are combined afterwards. A measure that could
only be reached through a row-multiplying join is refused with `FAN_OUT`
unless its aggregation is immune to repetition (count_distinct, min, max).
No text SQL is built from any input: values are bound parameters.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from services.resources import expression_sql, formats, periods
from services.resources.catalog import Catalog, CatalogField, CatalogMetric, CatalogRelationship, Edge
from services.resources.draft import (
    Calculation,
    Comparison,
    Dimension,
    Draft,
    Group,
    Has,
    Measure,
    OutputCondition,
    Predicate,
    RelativePeriod,
    SameRow,
    entities_of,
    invalid,
    role_words,
)
from services.resources.grains import time_bucket
from shared.data.caches import SharedMemo, bounded_lru
from shared.rpc.refusals import Refusal
from shared.semantic import expressions

MAX_CACHED_JOINS = 1024
MAX_CACHED_PLANS = 256
_SA_TYPES = {"integer": sa.BigInteger, "decimal": sa.Numeric, "float": sa.Double, "string": sa.String,
             "boolean": sa.Boolean, "date": sa.Date, "timestamp": sa.DateTime}


@dataclass(frozen=True)
class OutputColumn:
    id: str
    label: str
    type: str  # semantic type: integer, decimal, float, string, boolean, date, timestamp
    role: str  # dimension, time, measure, attribute
    semantic_id: str
    format: dict | None = None  # display format (formats.py); None in results pinned before formats existed
    additive: bool = False  # a count or a sum: rows may be totalled (a chart's "Other")


# Hidden columns after the outputs (names no output id can take: ids start with a letter). Each row carries
# the same values, so the first row says them and the answer's rows need no second statement to be counted
# or dated.
FIRST, LAST, TOTAL = "_first", "_last", "_total"
_CARRIED = frozenset({FIRST, LAST})


@dataclass
class Plan:
    statement: sa.Select
    columns: list[OutputColumn]
    row_cap: int  # rows kept at most: the policy cap, or the draft's own (smaller) limit
    limited: bool = False  # the draft asked for its top rows: more rows are not "left out"
    # The time field whose earliest and latest value (over every row the filter reached, before having and the
    # limit) follow the outputs as two hidden columns; None when the statement cannot carry them (the gateway
    # then asks for the span on its own, or states none).
    span: CatalogField | None = None
    # The number of rows before the cap (after having) follows as the last hidden column.
    counted: bool = False
    # The result has a span the statement cannot carry (see QueryCompiler._span_field): a statement of its own asks it.
    span_apart: bool = False

    @property
    def hidden(self) -> int:
        """How many trailing columns of each row are not the result's."""
        return (2 if self.span is not None else 0) + (1 if self.counted else 0)


def coverage_draft(draft: Draft, field: CatalogField) -> Draft:
    """The draft whose one row is the span of `field` over the rows `draft` filters: its earliest and latest
    value, with the same filter reached from the field's own entity (the span the caption has always stated)."""
    return Draft(mode="aggregate", output="scalar", filter=draft.filter,
                 measures=(Measure("first", aggregation="min", field=field),
                           Measure("last", aggregation="max", field=field)))


@dataclass
class _Atom:
    """One aggregate evaluated at its home entity's grain."""

    key: str
    home: str
    type: str
    fan_safe: bool
    build: object  # Callable[[Callable[[str], sa.FromClause]], ColumnElement]: the alias of an entity → SQL
    additive: bool = False  # a count or a sum: no rows means 0, not unknown
    reaches: tuple[str, ...] = ()  # other entities whose fields it reads (each row belongs to one of them)


@dataclass(frozen=True)
class _Use:
    """An entity a draft reaches: for a dimension, a filter or a record field, with its role."""

    entity: str
    via: tuple[CatalogRelationship, ...]
    pointer: str
    is_filter: bool
    exists: bool = False  # the rows a `has` condition looks for: reached in a subquery, not joined
    required: bool = False  # the filter keeps only rows that reach it: an inner join says so

    @property
    def role_key(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.via)

    @property
    def join_key(self) -> tuple:
        return self.entity, self.role_key, self.is_filter, self.required, self.pointer if self.exists else ""


@dataclass(frozen=True)
class _Join:
    from_clause: sa.FromClause
    home: sa.FromClause
    reached: dict  # (entity, role key) → the alias that path reached

    def at(self, entity: str, via: tuple[CatalogRelationship, ...]) -> sa.FromClause:
        return self.reached[(entity, tuple(r.name for r in via))]


def _path_key(route) -> tuple:
    return tuple((edge.relationship.name, edge.end) for edge in route)


@dataclass
class _GroupQuery:
    home: str
    atoms: list[_Atom] = field(default_factory=list)


def output_name(output_id: str) -> sa.sql.quoted_name:
    """An output id as a SQL label, always quoted: ids are the model's words, and any of them may be a
    reserved word of some backend (DuckDB's `at`, say) that SQLAlchemy's dialect does not know to quote."""
    return sa.sql.quoted_name(output_id, quote=True)


def _fan_out(use, edge, reason: str, message: str, end_id: str) -> Refusal:
    """A join refused because it would multiply rows, naming where in the draft, which relationship and the entity
    a measure would have to be defined on."""
    return invalid(reason, message, use.pointer, relationship=edge.relationship.id, measure_entity=end_id)


class QueryCompiler:
    def __init__(self, catalog: Catalog, dialect: str) -> None:
        self.catalog = catalog
        self.dialect = dialect
        self._aliases: dict[tuple[str, str], sa.FromClause] = {}
        # Memos shared by the gateway's worker threads (shared/data/caches.py): least recently used go first.
        self._atoms = SharedMemo(bounded_lru(MAX_CACHED_JOINS))
        self._joins = SharedMemo(bounded_lru(MAX_CACHED_JOINS))
        self._buckets: dict[tuple[str, str, str], ColumnElement] = {}
        self._plans = SharedMemo(bounded_lru(MAX_CACHED_PLANS))

    def _alias(self, entity: str, name: str) -> sa.FromClause:
        """Aliases are immutable, so one per (entity, name) serves every plan; building
        their column collections anew was most of the compile time."""
        key = (entity, name)
        alias = self._aliases.get(key)
        if alias is None:  # setdefault: two threads building it at once end up with the same one
            alias = self._aliases.setdefault(key, self.catalog.entities[entity].table.alias(name))
        return alias

    # --- measures → atoms -------------------------------------------------

    def _metric_atom(self, metric: CatalogMetric) -> _Atom:
        def build(alias_of):
            def resolve(ref):
                owner = ref.entity or metric.entity
                return alias_of(owner).c[self.catalog.entities[owner].fields[ref.name].column.name]
            return expression_sql.to_sql(metric.expression, resolve, self.dialect)

        aggregates = expressions.aggregates_in(metric.expression)
        safe = all(a.function in expressions.FAN_OUT_SAFE for a in aggregates)
        additive = isinstance(metric.expression, expressions.Aggregate) and metric.expression.function in (
            "count", "count_distinct", "sum")
        return _Atom(f"metric:{metric.id}", metric.entity, metric.spec.type, safe, build, additive,
                     self.catalog.related_entities(metric))

    def _measure_atoms(self, measure: Measure) -> list[_Atom]:
        if measure.metric is not None and measure.metric.derived:
            return [self._metric_atom(self.catalog.metric(ref.entity, ref.name))
                    for ref in expressions.walk(measure.metric.expression) if isinstance(ref, expressions.Ref)]
        if measure.metric is not None:
            return [self._metric_atom(measure.metric)]
        if measure.field is not None:
            fld, agg = measure.field, measure.aggregation

            def build(alias_of, fld=fld, agg=agg):
                column = alias_of(fld.entity).c[fld.column.name]
                return sa.func.count(sa.distinct(column)) if agg == "count_distinct" else getattr(sa.func, agg)(column)

            kind = {"count": "integer", "count_distinct": "integer", "avg": "float"}.get(agg, fld.spec.type)
            return [_Atom(f"{agg}:{fld.id}", fld.entity, kind, agg in expressions.FAN_OUT_SAFE, build,
                          agg in ("count", "count_distinct", "sum"))]
        entity = measure.entity
        return [_Atom(f"count:{entity.id}", entity.name, "integer", False, lambda alias_of: sa.func.count(), True)]

    def _measure_type(self, measure: Measure, atoms: list[_Atom]) -> str:
        return measure.metric.spec.type if measure.metric is not None else atoms[0].type

    # --- joins ------------------------------------------------------------

    def _joined(self, home: str, uses: list[_Use], fan_safe: bool, what: str) -> _Join:
        """FROM clause rooted at `home` reaching every entity the draft uses; refuse fan-out.

        A join depends only on its root, the entities it must reach (with their roles) and the
        fan-out rule, so each accepted one is built once and reused (its parts are immutable).
        """
        key = (home, tuple(use.join_key for use in uses), fan_safe)
        return self._joins.get_or_build(key, lambda: self._build_join(home, uses, fan_safe, what))

    def _build_join(self, home: str, uses: list[_Use], fan_safe: bool, what: str) -> _Join:
        # Aliases are keyed by the path that reached them, not by entity: a nation reached
        # through the customer and one reached through the supplier are two different rows.
        by_path: dict[tuple, sa.FromClause] = {(): self._alias(home, "t0")}
        joined = by_path[()]
        reached: dict[tuple[str, tuple], sa.FromClause] = {}
        routes = [self._route(home, use) for use in uses]
        # A step every kept row must take (a condition on what it leads to, which no missing row passes)
        # is an inner join: the same rows as an outer one, and plainer for the reader and the optimiser.
        inner = {_path_key(route[:depth]) for use, route in zip(uses, routes, strict=True)
                 if use.required and not use.exists for depth in range(1, len(route) + 1)}
        for use, route in zip(uses, routes, strict=True):
            if use.exists:
                # Join the part of the path each record has one of; the rest is the semi-join's.
                cut = next((i for i, edge in enumerate(route) if not edge.safe), None)
                if cut is None:
                    raise invalid("HAS_NOT_MANY", f"each {self._label(home)} has at most one "
                                                  f"{self._label(use.entity)}: filter on it without has",
                                  use.pointer)
                route, rest = route[:cut], route[cut:]
            unsafe = [edge for edge in route if not edge.safe]
            if unsafe and use.is_filter:
                # "where <many-side field> …" would test each joined row, not the record as a
                # whole (a negation would then mean "some row differs"): refuse rather than mislead.
                edge = unsafe[0]
                raise _fan_out(use, edge, "FILTER_THROUGH_FAN_OUT",
                               f"a filter on {self._label(use.entity)} cannot apply to {self._label(home)} records, "
                               f"which have many of them through '{edge.relationship.spec.label}'; filter on "
                               f"{self._label(home)} or on entities it belongs to", self.catalog.entities[edge.end].id)
            if unsafe and not fan_safe:
                edge = unsafe[0]
                raise _fan_out(use, edge, "FAN_OUT",
                               f"{what} is counted per {self._label(home)}; joining it to {self._label(use.entity)} "
                               f"through '{edge.relationship.spec.label}' would repeat rows and inflate it. Use a "
                               f"metric defined on {self._label(edge.end)}, or a count_distinct measure",
                               self.catalog.entities[edge.end].id)
            for depth, edge in enumerate(route, start=1):
                step = _path_key(route[:depth])
                if step in by_path:
                    continue
                start = by_path[_path_key(route[:depth - 1])]
                end = self._alias(edge.end, f"t{len(by_path)}")
                condition = self._matches(start, end, edge)
                joined = joined.join(end, condition) if step in inner else joined.outerjoin(end, condition)
                by_path[step] = end
            if use.exists:
                reached[("has", use.pointer)] = (by_path[_path_key(route)], rest)
            else:
                reached[(use.entity, use.role_key)] = by_path[_path_key(route)]
        return _Join(joined, by_path[()], reached)

    def _route(self, home: str, use: _Use) -> tuple[Edge, ...]:
        """The one path from `home` to the entity a field belongs to; several without a role → refuse."""
        if use.via:
            routes = self.catalog.routes_through(home, use.entity, use.via)
            if not routes:
                roles = ", ".join(f"'{r.spec.label}'" for r in use.via)
                raise invalid("ROLE_NOT_ON_PATH", f"{roles} does not lead from {self._label(home)} to "
                                                  f"{self._label(use.entity)}", f"{use.pointer}/via")
        else:
            routes = self.catalog.routes(home, use.entity)
            if not routes:
                raise invalid("NO_JOIN_PATH", f"{self._label(use.entity)} is not related to "
                                              f"{self._label(home)}", use.pointer)
        if len(routes) > 1:
            raise self._ambiguous(home, use, routes)
        return routes[0]

    def _ambiguous(self, home: str, use: _Use, routes: list[tuple[Edge, ...]]) -> Refusal:
        """AMBIGUOUS_PATH, listing each path by the relationship (role) that tells it apart, shortest first."""
        routes = sorted(routes, key=len)
        roles = []
        for route in routes:
            others = [{e.relationship.name for e in other} for other in routes if other is not route]
            telling = [e.relationship for e in route if all(e.relationship.name not in o for o in others)]
            chosen = telling[-1:] or [e.relationship for e in route]  # the step nearest the field reads best
            roles.append(chosen)
        listed = " or ".join(" then ".join(f"'{r.spec.label}' ({r.id})" for r in role) for role in roles)
        return invalid(
            "AMBIGUOUS_PATH",
            f"{self._label(use.entity)} is reached from {self._label(home)} in {len(routes)} ways, each meaning "
            f"something else: {listed}; name one with via", use.pointer,
            allowed=[[r.id for r in role] for role in roles])

    def _atom_sql(self, atom: _Atom, joined: _Join) -> ColumnElement:
        """An atom's aggregate over its (cached) aliases; built once per set of aliases, reused by every plan."""
        def alias_of(entity: str) -> sa.FromClause:
            return joined.home if entity == atom.home else joined.at(entity, ())

        key = (atom.key, joined.home.name, *(alias_of(entity).name for entity in atom.reaches))
        return self._atoms.get_or_build(key, lambda: atom.build(alias_of))

    def _label(self, entity: str) -> str:
        return self.catalog.entities[entity].spec.label

    # --- expressions over aliases -------------------------------------------

    def _column(self, fld: CatalogField, via, joined: _Join) -> ColumnElement:
        return joined.at(fld.entity, via).c[fld.column.name]

    def _dimension_sql(self, dimension: Dimension, joined: _Join) -> ColumnElement:
        column = self._column(dimension.field, dimension.via, joined)
        if not dimension.grain:
            return column
        key = (dimension.field.id, dimension.grain, joined.at(dimension.field.entity, dimension.via).name)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = time_bucket(column, dimension.grain, self.dialect)
        return bucket

    def _predicate_sql(self, predicate: Predicate, joined: _Join) -> ColumnElement:
        if isinstance(predicate, Group):
            parts = [self._predicate_sql(p, joined) for p in predicate.items]
            return sa.and_(*parts) if predicate.op == "all" else sa.or_(*parts) if predicate.op == "any" \
                else sa.not_(parts[0])
        if isinstance(predicate, Has):
            return self._exists_sql(predicate, joined)
        if isinstance(predicate, SameRow):
            first, second = (joined.at(predicate.entity.name, role) for role in predicate.roles)
            if first is second:
                raise invalid("SAME_ROLE", "both roles lead along one path: a row would be compared with itself",
                              f"{predicate.pointer}/via")
            return sa.and_(*[first.c[f.column.name] == second.c[f.column.name] for f in predicate.entity.key])
        if isinstance(predicate, RelativePeriod):
            column, span = self._column(predicate.field, predicate.via, joined), predicate.span
            if span is None:  # the gateway resolves every period before planning
                raise ValueError("a relative period reached the query compiler unresolved")
            return sa.and_(column >= span.start, column <= span.end if span.end_inclusive else column < span.end)
        column = self._column(predicate.field, predicate.via, joined)
        values, op = predicate.values, predicate.op
        if predicate.other is not None:
            values = (self._column(predicate.other, predicate.other_via, joined),)
        if op == "is_null":
            return column.is_(None)
        if op == "in":
            return column.in_(values)
        if op == "between":
            return column.between(values[0], values[1])
        if op in ("contains", "starts_with", "ends_with"):
            # Case-insensitive, and the value's % and _ are characters, not wildcards.
            method = {"contains": "contains", "starts_with": "startswith", "ends_with": "endswith"}[op]
            return getattr(sa.func.lower(column), method)(values[0].lower(), autoescape=True)
        return {"eq": column == values[0], "neq": column != values[0], "gt": column > values[0],
                "gte": column >= values[0], "lt": column < values[0], "lte": column <= values[0]}[op]

    def _exists_sql(self, has: Has, joined: _Join) -> ColumnElement:
        """EXISTS over the rows a record has many of, correlated with the record's part of the path.

        Inside the subquery rows may repeat freely: existence does not count them.
        """
        anchor, rest = joined.reached[("has", f"{has.pointer}/has")]
        tag = "h" + re.sub(r"\W", "_", has.pointer) + "_"  # unique per has, and the same on every replica
        names = (f"{tag}{n}" for n in itertools.count())  # one alias name per joined step
        chain = [self._alias(edge.end, next(names)) for edge in rest]
        from_clause = chain[0]
        for i, edge in enumerate(rest[1:], start=1):
            from_clause = from_clause.join(chain[i], self._matches(chain[i - 1], chain[i], edge))
        correlation = self._matches(anchor, chain[0], rest[0])
        # Fields inside may also belong to what the sought rows belong to (an order's customer, say):
        # the draft checked that one path, repeating no rows, leads to each.
        sought = rest[-1].end
        reached = {(sought, ()): chain[-1]}
        for entity in sorted(entities_of(has.predicate) - {sought}):
            alias = chain[-1]
            for edge in self.catalog.routes(sought, entity)[0]:
                end = self._alias(edge.end, next(names))
                from_clause = from_clause.join(end, self._matches(alias, end, edge))
                alias = end
            reached[(entity, ())] = alias
        inner = _Join(from_clause, chain[-1], reached)
        return sa.exists(sa.select(sa.literal(1)).select_from(from_clause)
                         .where(correlation, self._predicate_sql(has.predicate, inner)))

    def _matches(self, start: sa.FromClause, end: sa.FromClause, edge: Edge) -> ColumnElement:
        """The join condition of one step: every key field of the start equals its partner at the end."""
        start_fields = self.catalog.entities[edge.start].fields
        end_fields = self.catalog.entities[edge.end].fields
        return sa.and_(*[start.c[start_fields[a].column.name] == end.c[end_fields[b].column.name]
                         for a, b in zip(edge.start_fields, edge.end_fields, strict=True)])

    def _filter_entities(self, predicate: Predicate | None, pointer: str = "/filter",
                         conjunctive: bool = True) -> list[_Use]:
        """The entities a filter reaches; `required` where a row must reach them to pass (a condition
        that is not under any/not and that a missing row, all NULL, fails)."""
        if predicate is None:
            return []
        if isinstance(predicate, Has):  # the sought rows, in their role; the rest hang off them
            return [_Use(predicate.sought, predicate.via, f"{predicate.pointer}/has", True, exists=True)]
        if isinstance(predicate, SameRow):
            return [_Use(predicate.entity.name, role, pointer, True, required=conjunctive)
                    for role in predicate.roles]
        if isinstance(predicate, RelativePeriod):
            return [_Use(predicate.field.entity, predicate.via, pointer, True, required=conjunctive)]
        if isinstance(predicate, Comparison):
            required = conjunctive and predicate.op != "is_null"
            uses = [_Use(predicate.field.entity, predicate.via, pointer, True, required=required)]
            if predicate.other is not None:
                uses.append(_Use(predicate.other.entity, predicate.other_via, f"{pointer}/compare_to", True,
                                 required=required))
            return uses
        found = []
        for i, item in enumerate(predicate.items):
            found += self._filter_entities(item, f"{pointer}/{predicate.op}" + ("" if predicate.op == "not"
                                                                                else f"/{i}"),
                                           conjunctive and predicate.op == "all")
        return found

    # --- plans ------------------------------------------------------------

    def plan(self, draft: Draft, row_cap: int, carry: bool = True) -> Plan:
        """The statement for a checked draft. Equal drafts (the same items, values and periods) get the same
        plan, built once: a person refreshing an answer, or many asking the same question, compile nothing.

        With `carry`, the statement also carries the result's time span and its row count before the cap in
        hidden trailing columns (Plan.hidden), so one statement answers, dates and counts."""
        key = (draft, row_cap, carry)
        return self._plans.get_or_build(key, lambda: self._plan(draft, row_cap, carry))

    def _plan(self, draft: Draft, row_cap: int, carry: bool) -> Plan:
        if draft.limit is not None and draft.limit > row_cap:
            raise invalid("LIMIT_OVER_CAP", f"at most {row_cap:,} rows can be kept (the row cap); ask for fewer",
                          "/limit", bound=row_cap)
        span, apart = self._span_field(draft) if carry else (None, False)
        plan = self._records(draft, row_cap, span, carry) if draft.mode == "records" else \
            self._aggregate(draft, row_cap, span, carry)
        plan.span_apart = apart or (span is not None and plan.span is None)
        return plan

    def span_home(self, draft: Draft) -> str:
        """The entity whose rows a result is dated by: the listed one, or the first measure's."""
        return draft.records_entity.name if draft.mode == "records" else draft.measures[0].home

    def _span_field(self, draft: Draft) -> tuple[CatalogField | None, bool]:
        """The time field the statement can date its rows by (or None), and whether a span it cannot carry
        is to be asked apart.

        The span stated has always been the one of coverage_draft, which reaches the filter from the time
        field's own entity: where that draft is refused (a filter on rows the field's entity has many of, say),
        no span is stated, and the statement carries none either. The field's entity must be reached from the
        rows' own by one path of many-to-one steps, so joining it repeats no row and changes no value; where
        several paths or none such lead there, the span is asked apart.
        """
        home = self.span_home(draft)
        field = self.catalog.time_field(home)
        if field is None:
            return None, False
        try:  # what coverage_draft's statement joins and filters, without planning the rest of it
            joined = self._joined(field.entity, self._filter_entities(draft.filter), True, "the time span")
            if draft.filter is not None:
                self._predicate_sql(draft.filter, joined)
        except (Refusal, ValueError):
            return None, False
        if field.entity != home:
            routes = self.catalog.routes(home, field.entity)
            if len(routes) != 1 or not all(edge.safe for edge in routes[0]):
                return None, True
        return field, False

    def _span_use(self, home: str, field: CatalogField) -> list[_Use]:
        """The join that reaches the time field from the rows' entity (none when it is theirs)."""
        return [] if field.entity == home else [_Use(field.entity, (), "/coverage", False)]

    @staticmethod
    def _span_column(field: CatalogField, home: str, joined: _Join) -> ColumnElement:
        """The time field in a join rooted at `home` (its own alias when the field is the rows' own)."""
        return (joined.home if field.entity == home else joined.at(field.entity, ())).c[field.column.name]

    def _aggregate(self, draft: Draft, row_cap: int, span: CatalogField | None, carry: bool) -> Plan:
        statement, measure_atoms, span = self._aggregated(draft, span)
        statement = self._post_aggregation(statement, draft)
        outputs = {column.name: column for column in statement.selected_columns if column.name not in _CARRIED}
        if carry:  # the groups kept, after having and before the limit: what the cap or a top-N left out of
            statement = statement.add_columns(sa.func.count().over().label(TOTAL))
        keep = draft.limit or row_cap
        statement = self._order(statement, draft, outputs).limit(keep if draft.limit else keep + 1)
        columns = [self._dimension_output(d) for d in draft.dimensions]
        columns += [OutputColumn(m.id, self._measure_label(m), self._measure_type(m, atoms), "measure",
                                 self._measure_semantic_id(m), formats.of_measure(m, self._measure_type(m, atoms)),
                                 additive=self._adds_up(m))
                    for m, atoms in measure_atoms]
        columns += [self._calculation_output(c, columns, draft) for c in draft.calculations]
        return Plan(statement, columns, keep, limited=draft.limit is not None, span=span, counted=carry)

    def _aggregated(self, draft: Draft, span: CatalogField | None = None) -> tuple[sa.Select, list,
                                                                                   CatalogField | None]:
        """One row per group, with every measure: the statement the calculations and the order build on.

        With `span`, two more columns follow the measures: the earliest and latest value of that field over
        every group of the first measure's entity (window aggregates over its grouped rows, so every row the
        filter reached counts, whatever having or the limit keep). The field is returned when carried."""
        measure_atoms = [(m, self._measure_atoms(m)) for m in draft.measures]
        groups: dict[str, _GroupQuery] = {}
        atom_index: dict[str, int] = {}
        for _, atoms in measure_atoms:
            for atom in atoms:
                if atom.key not in atom_index:
                    atom_index[atom.key] = len(atom_index)
                    groups.setdefault(atom.home, _GroupQuery(atom.home)).atoms.append(atom)
        context = [_Use(d.field.entity, d.via, f"/dimensions/{i}", False) for i, d in enumerate(draft.dimensions)]
        context += self._filter_entities(draft.filter)
        atoms_by_key = {a.key: a for g in groups.values() for a in g.atoms}
        home = draft.measures[0].home
        if home not in groups:  # a derived metric none of whose parts is counted at its own entity
            span = None

        selects, built = [], []
        for group in groups.values():
            fan_safe = all(a.fan_safe for a in group.atoms)
            measure_names = ", ".join(m.id for m, atoms in measure_atoms if any(a.home == group.home for a in atoms))
            # The entities the group's metrics read fields of are joined like a dimension would be.
            reads = [_Use(entity, (), "/measures", False) for atom in group.atoms for entity in atom.reaches]
            # Last, so the joins before it keep their aliases (and the statement its shape).
            reads += self._span_use(home, span) if span is not None and group.home == home else []
            joined = self._joined(group.home, context + reads, fan_safe, f"measure {measure_names!r}")
            dim_exprs = [self._dimension_sql(d, joined) for d in draft.dimensions]
            dims = [expr.label(f"d{i}") for i, expr in enumerate(dim_exprs)]
            cols = []
            for key, index in atom_index.items():
                atom = atoms_by_key[key]
                if atom.home == group.home:
                    cols.append(self._atom_sql(atom, joined).label(f"a{index}"))
                else:
                    cols.append(sa.cast(sa.null(), _SA_TYPES[atom.type]).label(f"a{index}"))
            if span is not None:  # per group here; over every group in the select that combines them
                time = self._span_column(span, home, joined) if group.home == home else None
                kind = _SA_TYPES[span.spec.type]
                cols += [(sa.func.min(time) if time is not None else sa.cast(sa.null(), kind)).label(FIRST),
                         (sa.func.max(time) if time is not None else sa.cast(sa.null(), kind)).label(LAST)]
            select = sa.select(*dims, *cols).select_from(joined.from_clause)
            if draft.filter is not None:
                select = select.where(self._predicate_sql(draft.filter, joined))
            if dims:
                select = select.group_by(*dim_exprs)
            selects.append(select)
            built.append((joined, dim_exprs))

        return self._output_statement(draft, measure_atoms, atom_index, selects, built, span), measure_atoms, span

    def _output_statement(self, draft: Draft, measure_atoms: list, atom_index: dict[str, int], selects: list,
                          built: list, span: CatalogField | None) -> sa.Select:
        """The groups' selects as one statement with the outputs' names: the one group query itself, or their
        union combined per group (span, when carried, over every group)."""
        home = draft.measures[0].home
        single = len(selects) == 1 and all(len(atoms) == 1 and not (m.metric and m.metric.derived)
                                           for m, atoms in measure_atoms)
        if single:  # one grain: the group query itself, with the outputs' names (no subquery around it)
            joined, dim_exprs = built[0]
            statement = sa.select(
                *[expr.label(output_name(d.id)) for expr, d in zip(dim_exprs, draft.dimensions, strict=True)],
                *[self._zero_if_none(self._atom_sql(atoms[0], joined), atoms[0]).label(output_name(m.id))
                  for m, atoms in measure_atoms]).select_from(joined.from_clause)
            if span is not None:
                time = self._span_column(span, home, joined)
                statement = statement.add_columns(*_span_over_groups(sa.func.min(time), sa.func.max(time)))
            if draft.filter is not None:
                statement = statement.where(self._predicate_sql(draft.filter, joined))
            if dim_exprs:
                statement = statement.group_by(*dim_exprs)
        else:
            union = sa.union_all(*selects).subquery("u")
            dims = [union.c[f"d{i}"].label(output_name(d.id)) for i, d in enumerate(draft.dimensions)]
            measures = [self._combine(m, atoms, union, atom_index).label(output_name(m.id))
                        for m, atoms in measure_atoms]
            statement = sa.select(*dims, *measures)
            if span is not None:
                statement = statement.add_columns(*_span_over_groups(sa.func.min(union.c[FIRST]),
                                                                     sa.func.max(union.c[LAST])))
            if dims:
                statement = statement.group_by(*[union.c[f"d{i}"] for i in range(len(draft.dimensions))])
        return statement

    @staticmethod
    def _zero_if_none(value: ColumnElement, atom: _Atom) -> ColumnElement:
        """A count or a sum over no rows is 0 on every plan (the combined plan gives 0 for a group too)."""
        return sa.func.coalesce(value, 0) if atom.additive else value

    # --- after aggregation: calculations, having ---------------------------

    def _post_aggregation(self, statement: sa.Select, draft: Draft) -> sa.Select:
        """Shares and ranks over the aggregated rows, then the having conditions (which may test them).

        Each step wraps the previous one: a window function cannot sit in the WHERE of its own SELECT.
        Shares and ranks are of all groups, before having and the limit drop any.
        """
        if draft.calculations:
            base = statement.subquery("r")
            source, earlier = base, {}
            for against in sorted({c.against for c in draft.calculations if c.against}):
                # The same groups one period (or one year) earlier, side by side with their own.
                time = next(c.time for c in draft.calculations if c.against == against)
                prior = self._prior_statement(draft, against, time).subquery(f"p_{against}")
                source = source.outerjoin(prior, self._aligned(draft, base, prior, time, against))
                earlier[against] = prior
            shown = [c for c in base.c if c.name not in _CARRIED]
            carried = [c for c in base.c if c.name in _CARRIED]  # the span stays last, after the calculations
            statement = sa.select(*shown, *[self._calculation_sql(c, base, earlier, draft).label(output_name(c.id))
                                            for c in draft.calculations], *carried).select_from(source)
        if draft.having is not None:
            base = statement.subquery("h")
            statement = sa.select(*base.c).where(self._having_sql(draft.having, base))
        return statement

    def _calculation_sql(self, calculation: Calculation, base: sa.Subquery, earlier: dict, draft: Draft):
        value = base.c[calculation.of]
        partition = [base.c[name] for name in calculation.within] or None
        if calculation.kind == "share_of_total":
            real = sa.cast(value, sa.Double)
            return real / sa.func.nullif(sa.func.sum(real).over(partition_by=partition), 0)
        if calculation.kind == "ratio":
            return sa.cast(value, sa.Double) / sa.func.nullif(sa.cast(base.c[calculation.to], sa.Double), 0)
        if calculation.kind == "rank":
            order = (value.desc() if calculation.descending else value.asc()).nulls_last()
            return sa.func.rank().over(partition_by=partition, order_by=order)
        others = [base.c[d.id] for d in draft.dimensions if d.id != calculation.time] or None
        if calculation.kind == "cumulative":  # a running total along time, within every other dimension
            return sa.func.sum(value).over(partition_by=others, order_by=base.c[calculation.time].asc().nulls_last(),
                                           rows=(None, 0))
        before = earlier[calculation.against].c[calculation.of]
        if calculation.kind == "prior":
            return before
        if calculation.kind == "change":
            return value - before
        return sa.cast(value, sa.Double) / sa.func.nullif(sa.cast(before, sa.Double), 0) - 1

    # --- period over period ---------------------------------------------------

    def _step(self, draft: Draft, time: str, against: str) -> dict[str, int]:
        """How far back the compared period is, as arguments of periods.add."""
        grain = next(d.grain for d in draft.dimensions if d.id == time)
        if against == "same_period_last_year":  # 52 weeks keep weekly periods on Mondays
            return periods.offset("week", 52) if grain == "week" else periods.offset("year", 1)
        return periods.offset(grain, 1)

    def _prior_statement(self, draft: Draft, against: str, time: str) -> sa.Select:
        """The draft's groups computed over the earlier period: conditions on the time field move back by
        the step, so "2024" compares with 2023 (the rest of the filter stays as it is)."""
        dimension = next(d for d in draft.dimensions if d.id == time)
        back = {unit: -amount for unit, amount in self._step(draft, time, against).items()}
        moved = shift_filter(draft.filter, dimension, back)
        earlier = Draft(mode="aggregate", measures=draft.measures, dimensions=draft.dimensions, filter=moved)
        return self._aggregated(earlier)[0]

    def _aligned(self, draft: Draft, base, prior, time: str, against: str) -> ColumnElement:
        """A group and its earlier self: the same other dimensions, and the period one step on."""
        step = self._step(draft, time, against)
        parts = [base.c[time] == self._later(prior.c[time], step)]
        parts += [base.c[d.id].is_not_distinct_from(prior.c[d.id]) for d in draft.dimensions if d.id != time]
        return sa.and_(*parts)

    def _later(self, bucket: ColumnElement, step: dict[str, int]) -> ColumnElement:
        """A period's start moved forward by `step`. Starts of periods are whole units, so adding
        months never meets a short month."""
        unit, amount = next(iter(step.items()))
        if self.dialect == "sqlite":  # buckets are 'YYYY-MM-DD HH:MM:SS' text
            return sa.func.strftime("%Y-%m-%d %H:%M:%S", bucket, f"+{amount} {unit}", type_=sa.String)
        return bucket + sa.literal_column(f"INTERVAL '{amount} {unit}'")

    def _having_sql(self, condition: Group | OutputCondition, base: sa.Subquery) -> ColumnElement:
        if isinstance(condition, Group):
            parts = [self._having_sql(item, base) for item in condition.items]
            return sa.and_(*parts) if condition.op == "all" else sa.or_(*parts) if condition.op == "any" \
                else sa.not_(parts[0])
        column, values = base.c[condition.output], condition.values
        if condition.op == "is_null":
            return column.is_(None)
        if condition.op == "between":
            return column.between(values[0], values[1])
        if condition.op == "in":
            return column.in_(values)
        return {"eq": column == values[0], "neq": column != values[0], "gt": column > values[0],
                "gte": column >= values[0], "lt": column < values[0], "lte": column <= values[0]}[condition.op]

    def _calculation_output(self, calculation: Calculation, columns: list[OutputColumn],
                            draft: Draft) -> OutputColumn:
        source = next(c for c in columns if c.id == calculation.of)
        within = [c.label for name in calculation.within for c in columns if c.id == name]
        per = f" within each {' and '.join(within)}" if within else ""
        if calculation.kind in ("prior", "change", "growth", "cumulative"):
            return self._over_time_output(calculation, source, columns, draft)
        if calculation.kind == "share_of_total":
            # Shares of one total add up (a chart's "Other" is their sum); across partitions they do not.
            return OutputColumn(calculation.id, f"Share of {source.label}{per}", "float", "measure",
                                source.semantic_id, {"style": "percent", "decimals": 1}, additive=not within)
        if calculation.kind == "ratio":
            divisor = next(c for c in columns if c.id == calculation.to)
            # Money per count stays money (revenue per order); anything else is a plain number.
            money = (source.format or {}).get("style") == "currency" and divisor.type == "integer"
            return OutputColumn(calculation.id, f"{source.label} \u00f7 {divisor.label}", "float", "measure",
                                source.semantic_id, source.format if money else {"style": "decimal", "decimals": 2})
        order = "highest" if calculation.descending else "lowest"
        return OutputColumn(calculation.id, f"Rank by {source.label} ({order} first){per}", "integer", "measure",
                            source.semantic_id, {"style": "integer"})

    def _over_time_output(self, calculation: Calculation, source: OutputColumn, columns: list[OutputColumn],
                          draft: Draft) -> OutputColumn:
        time = next(c for c in columns if c.id == calculation.time)
        if calculation.kind == "cumulative":
            if not source.additive:
                raise invalid("CALCULATION_NOT_ADDITIVE", f"a running total adds up {source.label!r}, which does "
                                                          "not add up (only counts and sums do)",
                              f"/calculations/{draft.calculations.index(calculation)}/of")
            # Counted over every period the filter matched, before having or a limit keep some of them.
            return OutputColumn(calculation.id, f"Running total of {source.label} from the earliest {time.label} "
                                f"matched", source.type, "measure", source.semantic_id, source.format)
        period = "the previous period" if calculation.against == "previous_period" else "the same period last year"
        if calculation.kind == "prior":
            return OutputColumn(calculation.id, f"{source.label} in {period}", source.type, "measure",
                                source.semantic_id, source.format, additive=source.additive)
        if calculation.kind == "change":
            return OutputColumn(calculation.id, f"Change in {source.label} from {period}", source.type, "measure",
                                source.semantic_id, source.format)
        return OutputColumn(calculation.id, f"Growth in {source.label} from {period}", "float", "measure",
                            source.semantic_id, {"style": "percent", "decimals": 1})

    def _combine(self, measure: Measure, atoms: list[_Atom], union, atom_index) -> ColumnElement:
        if measure.metric is not None and measure.metric.derived:
            def resolve(ref):
                return self._combined_atom(self._metric_atom(self.catalog.metric(ref.entity, ref.name)), union,
                                           atom_index)
            return expression_sql.to_sql(measure.metric.expression, resolve)
        return self._combined_atom(atoms[0], union, atom_index)

    @staticmethod
    def _combined_atom(atom: _Atom, union, atom_index) -> ColumnElement:
        """One atom's value per group; counts and sums of a group with no rows at their grain are 0."""
        value = sa.func.max(union.c[f"a{atom_index[atom.key]}"])
        return sa.func.coalesce(value, 0) if atom.additive else value

    def _order(self, statement: sa.Select, draft: Draft, outputs: dict[str, ColumnElement]) -> sa.Select:
        if draft.mode == "aggregate" and not draft.dimensions:
            return statement  # one row: nothing to order
        keys = []
        for order in draft.order_by:
            column = outputs[order.output]
            keys.append((column.desc() if order.descending else column.asc()).nulls_last())
        named = {o.output for o in draft.order_by}
        # Tie-breakers make every result, and so its content hash, deterministic.
        for name, column in outputs.items():
            if name not in named:
                keys.append(column.asc().nulls_last())
        return statement.order_by(*keys)

    def _records(self, draft: Draft, row_cap: int, span: CatalogField | None, carry: bool) -> Plan:
        home = draft.records_entity.name
        context = [_Use(f.field.entity, f.via, f"/fields/{i}", False) for i, f in enumerate(draft.record_fields)]
        context += self._filter_entities(draft.filter)
        # Last, so the joins before it keep their aliases (and the statement its shape).
        context += self._span_use(home, span) if span is not None else []
        joined = self._joined(home, context, False, f"each {self._label(home)} record")
        selected = [self._column(f.field, f.via, joined).label(output_name(f.id)) for f in draft.record_fields]
        statement = sa.select(*selected).select_from(joined.from_clause)
        if draft.filter is not None:
            statement = statement.where(self._predicate_sql(draft.filter, joined))
        outputs = {c.name: c for c in statement.selected_columns}
        if span is not None:  # over every record the filter kept, before the limit
            time = self._span_column(span, home, joined)
            statement = statement.add_columns(*_span_over_groups(time, time))
        if carry:
            statement = statement.add_columns(sa.func.count().over().label(TOTAL))
        statement = self._order(statement, draft, outputs)
        key = [joined.home.c[f.column.name].asc() for f in self.catalog.entities[home].key]
        keep = draft.limit or row_cap
        statement = statement.order_by(*key).limit(keep if draft.limit else keep + 1)
        columns = [OutputColumn(f.id, f.field.spec.label + role_words(f.via), f.field.spec.type, "attribute",
                                f.field.id, formats.of_dimension(f.field, None)) for f in draft.record_fields]
        return Plan(statement, columns, keep, limited=draft.limit is not None, span=span, counted=carry)

    def _dimension_output(self, dimension: Dimension) -> OutputColumn:
        label = dimension.field.spec.label + role_words(dimension.via) + \
            (f" ({dimension.grain})" if dimension.grain else "")
        return OutputColumn(dimension.id, label, dimension.field.spec.type, "time" if dimension.grain else
                            "dimension", dimension.field.id, formats.of_dimension(dimension.field, dimension.grain))

    @staticmethod
    def _adds_up(measure: Measure) -> bool:
        """Counts and sums add up across the groups of a dimension; distinct counts, averages and ratios do not."""
        if measure.metric is not None:
            expression = measure.metric.expression
            return not measure.metric.derived and isinstance(expression, expressions.Aggregate) and \
                expression.function in ("count", "sum")
        return measure.aggregation in ("count", "sum")

    def _measure_label(self, measure: Measure) -> str:
        if measure.metric is not None:
            return measure.metric.spec.label
        if measure.field is not None:
            return f"{measure.aggregation.replace('_', ' ')} of {measure.field.spec.label}"
        return f"Number of {measure.entity.spec.label.lower()} rows"

    def _measure_semantic_id(self, measure: Measure) -> str:
        if measure.metric is not None:
            return measure.metric.id
        return measure.field.id if measure.field is not None else measure.entity.id


def _span_over_groups(first: ColumnElement, last: ColumnElement) -> list[ColumnElement]:
    """The earliest of `first` and the latest of `last` over every row of the select (window aggregates), untyped:
    a value that is no date reaches the gateway as it is, which then drops the span, not the answer (a typed
    column would fail the whole fetch on SQLite)."""
    return [sa.func.min(first, type_=sa.types.NullType()).over().label(FIRST),
            sa.func.max(last, type_=sa.types.NullType()).over().label(LAST)]


def shift_filter(predicate: Predicate | None, dimension: Dimension, step: dict[str, int]) -> Predicate | None:
    """The filter with every condition on the time dimension's field (reached the same way) moved by `step`;
    conditions inside a has test other rows and stay."""
    if predicate is None:
        return None
    if isinstance(predicate, Group):
        return Group(predicate.op, tuple(shift_filter(item, dimension, step) for item in predicate.items))
    same = isinstance(predicate, Comparison | RelativePeriod) and predicate.field.id == dimension.field.id and \
        {r.name for r in predicate.via} == {r.name for r in dimension.via}
    if isinstance(predicate, RelativePeriod) and same and predicate.span is not None:
        span = predicate.span
        return replace(predicate, span=periods.Span(periods.add(span.start, **step), periods.add(span.end, **step),
                                                    span.end_inclusive))
    if isinstance(predicate, Comparison) and same and predicate.other is None:
        return replace(predicate, values=tuple(periods.add(value, **step) for value in predicate.values))
    return predicate
