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

from dataclasses import dataclass, field

import grpc
import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from services.resources import expressions, formats
from services.resources.catalog import Catalog, CatalogField, CatalogMetric, Edge
from services.resources.draft import GRAINS, Comparison, Dimension, Draft, Group, Measure, Predicate, invalid
from shared.errors import TesseraError

MAX_CACHED_JOINS = 1024
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


@dataclass
class Plan:
    statement: sa.Select
    columns: list[OutputColumn]
    row_cap: int


@dataclass
class _Atom:
    """One aggregate evaluated at its home entity's grain."""

    key: str
    home: str
    type: str
    fan_safe: bool
    build: object  # Callable[[dict[str, sa.FromClause]], ColumnElement]
    additive: bool = False  # a count or a sum: no rows means 0, not unknown


@dataclass
class _GroupQuery:
    home: str
    atoms: list[_Atom] = field(default_factory=list)


def output_name(output_id: str) -> sa.sql.quoted_name:
    """An output id as a SQL label, always quoted: ids are the model's words, and any of them may be a
    reserved word of some backend (DuckDB's `at`, say) that SQLAlchemy's dialect does not know to quote."""
    return sa.sql.quoted_name(output_id, quote=True)


def time_bucket(column: ColumnElement, grain: str, dialect: str) -> ColumnElement:
    """Truncate to a grain; weeks start on Monday on every backend."""
    if grain not in GRAINS:
        raise ValueError(f"unknown grain {grain!r}")
    if dialect in ("postgresql", "duckdb"):
        # The grain is one of six fixed words, rendered inline: PostgreSQL only
        # accepts `GROUP BY date_trunc(...)` when both sides are the same literal.
        return sa.func.date_trunc(sa.literal_column(f"'{grain}'"), column)
    if dialect != "sqlite":
        raise TesseraError(grpc.StatusCode.FAILED_PRECONDITION, "DIALECT_UNSUPPORTED", f"no time grains for {dialect}")
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


class Planner:
    def __init__(self, catalog: Catalog, dialect: str) -> None:
        self.catalog = catalog
        self.dialect = dialect
        self._aliases: dict[tuple[str, str], sa.FromClause] = {}
        self._atom_cache: dict[tuple[str, str], ColumnElement] = {}
        self._joins: dict[tuple, tuple] = {}
        self._buckets: dict[tuple[str, str, str], ColumnElement] = {}

    def _alias(self, entity: str, name: str) -> sa.FromClause:
        """Aliases are immutable, so one per (entity, name) serves every plan; building
        their column collections anew was most of the compile time."""
        key = (entity, name)
        if key not in self._aliases:
            self._aliases[key] = self.catalog.entities[entity].table.alias(name)
        return self._aliases[key]

    # --- measures → atoms -------------------------------------------------

    def _metric_atom(self, metric: CatalogMetric) -> _Atom:
        entity = self.catalog.entities[metric.entity]

        def build(aliases):
            table = aliases[metric.entity]
            return expressions.to_sql(metric.expression,
                                      lambda ref: table.c[entity.fields[ref.name].column.name])

        aggregates = expressions.aggregates_in(metric.expression)
        safe = all(a.function in expressions.FAN_OUT_SAFE for a in aggregates)
        additive = isinstance(metric.expression, expressions.Aggregate) and metric.expression.function in (
            "count", "count_distinct", "sum")
        return _Atom(f"metric:{metric.id}", metric.entity, metric.spec.type, safe, build, additive)

    def _measure_atoms(self, measure: Measure) -> list[_Atom]:
        if measure.metric is not None and measure.metric.derived:
            return [self._metric_atom(self.catalog.metric(ref.entity, ref.name))
                    for ref in expressions.walk(measure.metric.expression) if isinstance(ref, expressions.Ref)]
        if measure.metric is not None:
            return [self._metric_atom(measure.metric)]
        if measure.field is not None:
            fld, agg = measure.field, measure.aggregation

            def build(aliases, fld=fld, agg=agg):
                column = aliases[fld.entity].c[fld.column.name]
                return sa.func.count(sa.distinct(column)) if agg == "count_distinct" else getattr(sa.func, agg)(column)

            kind = {"count": "integer", "count_distinct": "integer", "avg": "float"}.get(agg, fld.spec.type)
            return [_Atom(f"{agg}:{fld.id}", fld.entity, kind, agg in expressions.FAN_OUT_SAFE, build,
                          agg in ("count", "count_distinct", "sum"))]
        entity = measure.entity
        return [_Atom(f"count:{entity.id}", entity.name, "integer", False, lambda aliases: sa.func.count(), True)]

    def _measure_type(self, measure: Measure, atoms: list[_Atom]) -> str:
        return measure.metric.spec.type if measure.metric is not None else atoms[0].type

    # --- joins ------------------------------------------------------------

    def _joined(self, home: str, context: list[tuple[str, str, bool]], fan_safe: bool, what: str):
        """FROM clause rooted at `home` reaching every context entity; refuse fan-out.

        A join depends only on its root, the entities it must reach and the fan-out rule,
        so each accepted one is built once and reused (its parts are immutable).
        """
        key = (home, tuple((entity, is_filter) for entity, _, is_filter in context), fan_safe)
        cached = self._joins.get(key)
        if cached is not None:
            return cached
        result = self._build_join(home, context, fan_safe, what)
        if len(self._joins) >= MAX_CACHED_JOINS:  # bounded: distinct joins are few in practice
            self._joins.clear()
        self._joins[key] = result
        return result

    def _build_join(self, home: str, context: list[tuple[str, str, bool]], fan_safe: bool, what: str):
        aliases: dict[str, sa.FromClause] = {home: self._alias(home, "t0")}
        joined = aliases[home]
        for entity_name, pointer, is_filter in context:
            if entity_name in aliases and not is_filter:
                continue
            route: list[Edge] | None = self.catalog.path(home, entity_name)
            if route is None:
                raise invalid("NO_JOIN_PATH", f"{self._label(entity_name)} is not related to "
                                              f"{self._label(home)}", pointer)
            unsafe = [edge for edge in route if not edge.safe]
            if unsafe and is_filter:
                # "where <many-side field> …" would test each joined row, not the record as a
                # whole (a negation would then mean "some row differs"): refuse rather than mislead.
                edge = unsafe[0]
                raise TesseraError(
                    grpc.StatusCode.INVALID_ARGUMENT, "FILTER_THROUGH_FAN_OUT",
                    f"a filter on {self._label(entity_name)} cannot apply to {self._label(home)} records, which "
                    f"have many of them through '{edge.relationship.spec.label}'; filter on "
                    f"{self._label(home)} or on entities it belongs to (at {pointer})",
                    {"path": pointer, "relationship": edge.relationship.id})
            if unsafe and not fan_safe:
                edge = unsafe[0]
                raise TesseraError(
                    grpc.StatusCode.INVALID_ARGUMENT, "FAN_OUT",
                    f"{what} is counted per {self._label(home)}; joining it to {self._label(entity_name)} "
                    f"through '{edge.relationship.spec.label}' would repeat rows and inflate it. Use a metric "
                    f"defined on {self._label(edge.end)}, or a count_distinct measure (at {pointer})",
                    {"path": pointer, "relationship": edge.relationship.id})
            for edge in route:
                if edge.end in aliases:
                    continue
                start, end_entity = aliases[edge.start], self.catalog.entities[edge.end]
                end = self._alias(edge.end, f"t{len(aliases)}")
                start_col = start.c[self.catalog.entities[edge.start].fields[edge.start_field].column.name]
                end_col = end.c[end_entity.fields[edge.end_field].column.name]
                joined = joined.outerjoin(end, start_col == end_col)
                aliases[edge.end] = end
        return joined, aliases

    def _atom_sql(self, atom: _Atom, home_alias: sa.FromClause) -> ColumnElement:
        """An atom's aggregate over its (cached) home alias; built once, reused by every plan."""
        key = (atom.key, home_alias.name)
        if key not in self._atom_cache:
            self._atom_cache[key] = atom.build({atom.home: home_alias})
        return self._atom_cache[key]

    def _label(self, entity: str) -> str:
        return self.catalog.entities[entity].spec.label

    # --- expressions over aliases -------------------------------------------

    def _column(self, fld: CatalogField, aliases) -> ColumnElement:
        return aliases[fld.entity].c[fld.column.name]

    def _dimension_sql(self, dimension: Dimension, aliases) -> ColumnElement:
        column = self._column(dimension.field, aliases)
        if not dimension.grain:
            return column
        key = (dimension.field.id, dimension.grain, aliases[dimension.field.entity].name)
        if key not in self._buckets:
            self._buckets[key] = time_bucket(column, dimension.grain, self.dialect)
        return self._buckets[key]

    def _predicate_sql(self, predicate: Predicate, aliases) -> ColumnElement:
        if isinstance(predicate, Group):
            parts = [self._predicate_sql(p, aliases) for p in predicate.items]
            return sa.and_(*parts) if predicate.op == "all" else sa.or_(*parts) if predicate.op == "any" \
                else sa.not_(parts[0])
        column = self._column(predicate.field, aliases)
        values, op = predicate.values, predicate.op
        if op == "is_null":
            return column.is_(None)
        if op == "in":
            return column.in_(values)
        if op == "between":
            return column.between(values[0], values[1])
        if op == "contains":
            return sa.func.lower(column).contains(values[0].lower(), autoescape=True)
        return {"eq": column == values[0], "neq": column != values[0], "gt": column > values[0],
                "gte": column >= values[0], "lt": column < values[0], "lte": column <= values[0]}[op]

    def _filter_entities(self, predicate: Predicate | None, pointer: str = "/filter") -> list[tuple[str, str, bool]]:
        if predicate is None:
            return []
        if isinstance(predicate, Comparison):
            return [(predicate.field.entity, pointer, True)]
        found = []
        for i, item in enumerate(predicate.items):
            found += self._filter_entities(item, f"{pointer}/{predicate.op}" + ("" if predicate.op == "not"
                                                                                else f"/{i}"))
        return found

    # --- plans ------------------------------------------------------------

    def plan(self, draft: Draft, row_cap: int) -> Plan:
        if draft.mode == "records":
            return self._records(draft, row_cap)
        return self._aggregate(draft, row_cap)

    def _aggregate(self, draft: Draft, row_cap: int) -> Plan:
        measure_atoms = [(m, self._measure_atoms(m)) for m in draft.measures]
        groups: dict[str, _GroupQuery] = {}
        atom_index: dict[str, int] = {}
        for _, atoms in measure_atoms:
            for atom in atoms:
                if atom.key not in atom_index:
                    atom_index[atom.key] = len(atom_index)
                    groups.setdefault(atom.home, _GroupQuery(atom.home)).atoms.append(atom)
        context = [(d.field.entity, f"/dimensions/{i}", False) for i, d in enumerate(draft.dimensions)]
        context += self._filter_entities(draft.filter)
        atoms_by_key = {a.key: a for g in groups.values() for a in g.atoms}

        selects = []
        for group in groups.values():
            fan_safe = all(a.fan_safe for a in group.atoms)
            measure_names = ", ".join(m.id for m, atoms in measure_atoms if any(a.home == group.home for a in atoms))
            joined, aliases = self._joined(group.home, context, fan_safe, f"measure {measure_names!r}")
            dim_exprs = [self._dimension_sql(d, aliases) for d in draft.dimensions]
            dims = [expr.label(f"d{i}") for i, expr in enumerate(dim_exprs)]
            cols = []
            for key, index in atom_index.items():
                atom = atoms_by_key[key]
                if atom.home == group.home:
                    cols.append(self._atom_sql(atom, aliases[group.home]).label(f"a{index}"))
                else:
                    cols.append(sa.cast(sa.null(), _SA_TYPES[atom.type]).label(f"a{index}"))
            select = sa.select(*dims, *cols).select_from(joined)
            if draft.filter is not None:
                select = select.where(self._predicate_sql(draft.filter, aliases))
            if dims:
                select = select.group_by(*dim_exprs)
            selects.append(select)

        single = len(selects) == 1 and all(len(atoms) == 1 and not (m.metric and m.metric.derived)
                                           for m, atoms in measure_atoms)
        outputs: dict[str, ColumnElement] = {}
        if single:
            inner = selects[0].subquery("g")
            statement = sa.select(
                *[inner.c[f"d{i}"].label(output_name(d.id)) for i, d in enumerate(draft.dimensions)],
                *[inner.c[f"a{atom_index[atoms[0].key]}"].label(output_name(m.id)) for m, atoms in measure_atoms])
        else:
            union = sa.union_all(*selects).subquery("u")
            dims = [union.c[f"d{i}"].label(output_name(d.id)) for i, d in enumerate(draft.dimensions)]
            measures = [self._combine(m, atoms, union, atom_index).label(output_name(m.id))
                        for m, atoms in measure_atoms]
            statement = sa.select(*dims, *measures)
            if dims:
                statement = statement.group_by(*[union.c[f"d{i}"] for i in range(len(draft.dimensions))])
        for column in statement.selected_columns:
            outputs[column.name] = column
        statement = self._order(statement, draft, outputs).limit(row_cap + 1)
        columns = [self._dimension_output(d) for d in draft.dimensions]
        columns += [OutputColumn(m.id, self._measure_label(m), self._measure_type(m, atoms), "measure",
                                 self._measure_semantic_id(m), formats.of_measure(m, self._measure_type(m, atoms)),
                                 additive=self._adds_up(m))
                    for m, atoms in measure_atoms]
        return Plan(statement, columns, row_cap)

    def _combine(self, measure: Measure, atoms: list[_Atom], union, atom_index) -> ColumnElement:
        if measure.metric is not None and measure.metric.derived:
            def resolve(ref):
                return self._combined_atom(self._metric_atom(self.catalog.metric(ref.entity, ref.name)), union,
                                           atom_index)
            return expressions.to_sql(measure.metric.expression, resolve)
        return self._combined_atom(atoms[0], union, atom_index)

    @staticmethod
    def _combined_atom(atom: _Atom, union, atom_index) -> ColumnElement:
        """One atom's value per group; counts and sums of a group with no rows at their grain are 0."""
        value = sa.func.max(union.c[f"a{atom_index[atom.key]}"])
        return sa.func.coalesce(value, 0) if atom.additive else value

    def _order(self, statement: sa.Select, draft: Draft, outputs: dict[str, ColumnElement]) -> sa.Select:
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

    def _records(self, draft: Draft, row_cap: int) -> Plan:
        home = draft.records_entity.name
        context = [(f.field.entity, f"/fields/{i}", False) for i, f in enumerate(draft.record_fields)]
        context += self._filter_entities(draft.filter)
        joined, aliases = self._joined(home, context, False, f"each {self._label(home)} record")
        selected = [self._column(f.field, aliases).label(output_name(f.id)) for f in draft.record_fields]
        statement = sa.select(*selected).select_from(joined)
        if draft.filter is not None:
            statement = statement.where(self._predicate_sql(draft.filter, aliases))
        outputs = {c.name: c for c in statement.selected_columns}
        statement = self._order(statement, draft, outputs)
        primary = aliases[home].c[self.catalog.entities[home].primary_key.column.name]
        statement = statement.order_by(primary.asc()).limit(row_cap + 1)
        columns = [OutputColumn(f.id, f.field.spec.label, f.field.spec.type, "attribute", f.field.id,
                                formats.of_dimension(f.field, None)) for f in draft.record_fields]
        return Plan(statement, columns, row_cap)

    def _dimension_output(self, dimension: Dimension) -> OutputColumn:
        label = dimension.field.spec.label + (f" ({dimension.grain})" if dimension.grain else "")
        return OutputColumn(dimension.id, label, dimension.field.spec.type, "time" if dimension.grain else
                            "dimension", dimension.field.id, formats.of_dimension(dimension.field, dimension.grain))

    @staticmethod
    def _adds_up(measure: Measure) -> bool:
        """Counts and sums add up across the rows of a breakdown; distinct counts, averages and ratios do not."""
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
