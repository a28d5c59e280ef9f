"""The analysis draft: the only way to ask for data (§5).

A draft is model-authored JSON, parsed by the bounded parser, checked
against the published JSON Schema (draft-07, jsonschema), then checked
against the catalog and the model's capability: ids must be in scope and
of the right kind, fields must be exposed for their use, operators must fit
the field type. Every refusal is INVALID_ARGUMENT (or PERMISSION_DENIED for
ids out of scope) with a reason and a JSON Pointer; a schema refusal also
names the JSON path and the failed keyword (`$.mode must be a string, got
array`): no value of the wrong type reaches the code after the schema check.
Nothing is executed for an invalid draft. There is no row limit in a draft:
caps come from policy.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

import jsonschema

from services.resources import periods
from services.resources.catalog import Catalog, CatalogEntity, CatalogField, CatalogMetric, CatalogRelationship
from shared.data.analysis_draft import (
    DRAFT_07,
    DRAFT_SCHEMA,
    GRAINS,
    MAX_DRAFT_BYTES,
    MAX_DRAFT_VALUES,
    MAX_PREDICATE_DEPTH,
    MODES,
    OVER_TIME,
    TEXT_OPS,
    mode_schema,
)
from shared.data.bounded_json import BoundedJsonError, Limits, parse
from shared.data.schema_check import compile_check
from shared.data.schema_errors import explain
from shared.rpc.next_steps import metadata
from shared.rpc.refusals import Invalid, Refusal

NUMERIC = frozenset({"integer", "decimal", "float"})
TEMPORAL = frozenset({"date", "timestamp"})
ORDERED_OPS = frozenset({"gt", "gte", "lt", "lte", "between"})

# One validator per mode gives errors that point into the draft, not "matches neither mode".
_VALIDATORS = {mode: jsonschema.Draft7Validator(mode_schema(mode)) for mode in MODES}
# What picks one of them: checked first, so no value of the wrong type decides anything.
_ENVELOPE = jsonschema.Draft7Validator({"$schema": DRAFT_07, "type": "object", "required": ["mode"],
                                        "properties": {"mode": {"type": "string", "enum": list(MODES)}}})
# The same schemas compiled with fastjsonschema: about ten times faster on valid drafts; the
# jsonschema validators above then explain an invalid one with the most relevant error.
_FAST_CHECKS = {mode: compile_check(validator.schema) for mode, validator in _VALIDATORS.items()}


def invalid(reason: str, message: str, pointer: str, **detail) -> Refusal:
    """A refusal of the draft at `pointer` (into the draft), with the allowed values or bound where given."""
    return Invalid(reason, f"{message} (at {pointer or '/'})", metadata(pointer, **detail))


# --- the typed, checked draft --------------------------------------------


@dataclass(frozen=True)
class Measure:
    id: str
    metric: CatalogMetric | None = None
    aggregation: str | None = None
    field: CatalogField | None = None
    entity: CatalogEntity | None = None  # count() of an entity

    @property
    def home(self) -> str:
        if self.metric is not None:
            return self.metric.entity
        return self.field.entity if self.field is not None else self.entity.name


@dataclass(frozen=True)
class Dimension:
    id: str
    field: CatalogField
    grain: str | None
    via: tuple[CatalogRelationship, ...] = ()  # the role, where several paths lead to the field's entity


@dataclass(frozen=True)
class Comparison:
    field: CatalogField
    op: str
    values: tuple  # typed python values (datetime for temporal fields)
    via: tuple[CatalogRelationship, ...] = ()
    other: CatalogField | None = None  # compared with another field (`compare_to`) instead of values
    other_via: tuple[CatalogRelationship, ...] = ()


@dataclass(frozen=True)
class Has:
    """"has at least one": records kept when one or more of the related rows they have many of
    passes the condition (a semi-join, EXISTS), rather than testing each joined row."""

    predicate: Comparison | Group
    pointer: str  # where it sits in the draft: joins are keyed by it
    sought: str = ""  # the entity whose rows are looked for; every other field inside belongs to them
    sought_label: str = ""
    via: tuple[CatalogRelationship, ...] = ()  # the role those rows are reached in, when there are several


@dataclass(frozen=True)
class Group:
    op: str  # all / any / not
    items: tuple


@dataclass(frozen=True)
class RelativePeriod:
    """"the last 12 months", "the previous quarter", "year to date" of a date or time field, resolved
    against today or against the latest value of that field in the data, as the semantic model's
    `time_anchor` says (the gateway fills `span`, `reference` and `anchor`)."""

    field: CatalogField
    relative: str  # trailing / to_date / previous
    unit: str
    count: int
    via: tuple[CatalogRelationship, ...] = ()
    pointer: str = ""
    span: periods.Span | None = None
    reference: periods.Moment | None = None
    anchor: str = ""  # what `reference` is: "today" or "latest_data"


@dataclass(frozen=True)
class SameRow:
    """Two roles reach the same row of an entity ("the supplier is in the customer's nation"): compared
    by the entity's key, which the model never sees."""

    entity: CatalogEntity
    roles: tuple[tuple[CatalogRelationship, ...], tuple[CatalogRelationship, ...]]
    pointer: str


Predicate = Comparison | Group | Has | RelativePeriod | SameRow


@dataclass(frozen=True)
class OutputCondition:
    """A condition on a computed output (HAVING): kept rows are groups whose value passes."""

    output: str
    op: str
    values: tuple


@dataclass(frozen=True)
class Calculation:
    """A value computed over the aggregated rows: a share of the total, a rank, a ratio of two measures, or a
    comparison along time."""

    id: str
    kind: str  # one of CALCULATIONS
    of: str  # the measure output it is computed from
    within: tuple[str, ...] = ()  # dimension outputs that partition the total (or the ranking)
    descending: bool = True  # rank 1 is the highest value unless asked otherwise
    against: str | None = None  # prior, change, growth: the period compared with
    time: str | None = None  # prior, change, growth, cumulative: the time dimension they run along
    to: str | None = None  # ratio: the measure output it is divided by


def role_words(via: tuple[CatalogRelationship, ...]) -> str:
    """" (Nation of the supplier)": the role a field was reached through, for labels and captions."""
    return f" ({', '.join(r.spec.label for r in via)})" if via else ""


@dataclass(frozen=True)
class Order:
    output: str
    descending: bool


@dataclass(frozen=True)
class Draft:
    mode: str
    measures: tuple[Measure, ...] = ()
    dimensions: tuple[Dimension, ...] = ()
    records_entity: CatalogEntity | None = None
    record_fields: tuple[Dimension, ...] = ()
    filter: Predicate | None = None
    order_by: tuple[Order, ...] = ()
    output: str = "table"
    calculations: tuple[Calculation, ...] = ()
    having: Group | OutputCondition | None = None
    limit: int | None = None  # top-N: at most this many rows, after ordering (within the policy cap)

    def referenced_ids(self) -> dict[str, str]:
        """Every catalog id in the draft → its JSON Pointer (for scope checks)."""
        return dict(self._ids)

    _ids: tuple = ()


_LIMITS = Limits(max_raw_bytes=MAX_DRAFT_BYTES, max_depth=32, max_values=MAX_DRAFT_VALUES,
                 max_utf16_units=MAX_DRAFT_BYTES)
# The bound each size refusal of the parser broke.
_BOUND_OF = {"json.too-large": MAX_DRAFT_BYTES, "json.too-many-values": MAX_DRAFT_VALUES,
             "json.too-deep": _LIMITS.max_depth}


def parse_draft(text: str) -> object:
    try:
        return parse(text, _LIMITS)
    except BoundedJsonError as exc:
        if exc.code in _BOUND_OF:  # refused before anything else is looked at
            raise invalid("DRAFT_TOO_LARGE", exc.detail, exc.pointer, bound=_BOUND_OF[exc.code]) from None
        raise invalid("DRAFT_NOT_JSON", exc.detail, exc.pointer) from None


def schema_check(raw: object) -> str:
    """Structure only (draft-07); returns the mode.

    The envelope (an object whose mode is one of the two strings) is checked by schema first:
    the mode picks the validator, so a mode of the wrong type must be refused before it is used.
    """
    _refuse_first(_ENVELOPE.iter_errors(raw))
    mode = raw["mode"]
    if _FAST_CHECKS[mode](raw) is None:  # valid drafts take the compiled fast path
        return mode
    _refuse_first(_VALIDATORS[mode].iter_errors(raw))
    return mode


def _refuse_first(errors) -> None:
    problems = explain(errors, DRAFT_SCHEMA, limit=1)
    if problems:
        first = problems[0]
        raise invalid("DRAFT_SCHEMA", first.message, first.pointer, keyword=first.keyword,
                      allowed=first.allowed or None, bound=first.bound)


# What each exposure lets a draft do with a field (never-to-model fields are not in the catalog at all).
_USES = {"bounded-values": {"aggregate", "filter", "dimension", "record field"}, "aggregate-only": {"aggregate"},
         "filter-only": {"filter"}}


class _Resolver:
    """Catalog lookups that record every id used, with its pointer."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.seen: dict[str, str] = {}

    def get(self, item_id: str, kind: type, pointer: str):
        self.seen.setdefault(item_id, pointer)
        found = self.catalog.by_id.get(item_id)
        if found is None:
            raise invalid("UNKNOWN_ID", f"{item_id} is not an id of the current catalog", pointer)
        if not isinstance(found, kind):
            raise invalid("WRONG_ID_KIND", f"{item_id} is not a {kind.__name__.removeprefix('Catalog').lower()}",
                          pointer)
        return found

    def roles(self, raw: dict, pointer: str) -> tuple[CatalogRelationship, ...]:
        return tuple(self.get(item, CatalogRelationship, f"{pointer}/via/{i}") for i, item in
                     enumerate(raw.get("via", ())))

    def field(self, item_id: str, pointer: str, *, use: str) -> CatalogField:
        found: CatalogField = self.get(item_id, CatalogField, pointer)
        exposure = found.spec.exposure
        if exposure == "never-to-model":
            raise invalid("UNKNOWN_ID", f"{item_id} is not an id of the current catalog", pointer)
        if use not in _USES[exposure]:
            allowed = "be filtered on" if exposure == "filter-only" else "be used inside an aggregation"
            raise invalid("FIELD_NOT_EXPOSED", f"{found.spec.label!r} may only {allowed}, not used as a "
                                               f"{'measure' if use == 'aggregate' else use}", pointer)
        return found


def build_draft(raw: dict, catalog: Catalog) -> Draft:
    mode = schema_check(raw)
    resolve = _Resolver(catalog)
    if mode == "aggregate":
        measures = tuple(_measure(m, f"/measures/{i}", resolve) for i, m in enumerate(raw["measures"]))
        dimensions = tuple(_dimension(d, f"/dimensions/{i}", resolve, use="dimension")
                           for i, d in enumerate(raw.get("dimensions", [])))
        calculations = tuple(_calculation(c, f"/calculations/{i}", measures, dimensions)
                             for i, c in enumerate(raw.get("calculations", [])))
        output = raw.get("output", "table")
        computed = {m.id for m in measures} | {c.id for c in calculations}
        texts = {d.id for d in dimensions if d.grain is None and d.field.spec.type == "string"}
        having = _having(raw["having"], "/having", computed, texts, 1) if "having" in raw else None
        draft_fields = {"calculations": calculations, "having": having}
    else:
        entity = resolve.get(raw["entity"], CatalogEntity, "/entity")
        record_fields = tuple(_dimension(f, f"/fields/{i}", resolve, use="record field")
                              for i, f in enumerate(raw["fields"]))
        draft_fields = {"records_entity": entity, "record_fields": record_fields}
        measures, dimensions, output = (), (), "table"
    outputs = _output_ids(raw)
    order = []
    for i, item in enumerate(raw.get("order_by", [])):
        _require_output(item["output"], outputs, f"/order_by/{i}/output", "order_by names an output")
        order.append(Order(item["output"], item.get("direction", "asc") == "desc"))
    limit = raw.get("limit")
    predicate = _predicate(raw["filter"], "/filter", resolve, 1) if "filter" in raw else None
    return Draft(mode=mode, measures=measures, dimensions=dimensions, filter=predicate, order_by=tuple(order),
                 output=output, limit=limit, _ids=tuple(resolve.seen.items()), **draft_fields)


def _output_ids(raw: dict) -> list[str]:
    """The draft's output ids, each used once (the schema cannot say so across lists)."""
    seen: list[str] = []
    for key in ("measures", "dimensions", "calculations", "fields"):
        for i, item in enumerate(raw.get(key, [])):
            if item["id"] in seen:
                raise invalid("DUPLICATE_OUTPUT", f"output id {item['id']!r} is used twice", f"/{key}/{i}/id")
            seen.append(item["id"])
    return seen


def _measure(raw: dict, pointer: str, resolve: _Resolver) -> Measure:
    """One of the schema's three shapes: a metric, an aggregation of a field, or count of an entity."""
    if "metric" in raw:
        return Measure(raw["id"], metric=resolve.get(raw["metric"], CatalogMetric, f"{pointer}/metric"))
    aggregation = raw["aggregation"]
    if "field" in raw:
        field = resolve.field(raw["field"], f"{pointer}/field", use="aggregate")
        if aggregation in ("min", "max") and field.spec.exposure == "aggregate-only":
            # min/max return one row's value as it is: that would expose the field.
            raise invalid("AGGREGATION_NOT_ALLOWED", f"{aggregation} would reveal single values of "
                                                     f"{field.spec.label!r}; use sum, avg or a count",
                          f"{pointer}/aggregation")
        if aggregation in ("sum", "avg") and field.spec.type not in NUMERIC:
            raise invalid("AGGREGATION_TYPE", f"{aggregation} needs a numeric field; {field.spec.label!r} is "
                                              f"{field.spec.type}", f"{pointer}/aggregation")
        return Measure(raw["id"], aggregation=aggregation, field=field)
    entity = resolve.get(raw["entity"], CatalogEntity, f"{pointer}/entity")
    return Measure(raw["id"], aggregation="count", entity=entity)


def _dimension(raw: dict, pointer: str, resolve: _Resolver, *, use: str) -> Dimension:
    field = resolve.field(raw["field"], f"{pointer}/field", use=use)
    grain = raw.get("grain")
    grains = [g for g in GRAINS if field.spec.type == "timestamp" or field.spec.type == "date" and g != "hour"]
    if grain is not None and field.spec.type not in TEMPORAL:
        raise invalid("GRAIN_NOT_TEMPORAL", f"{field.spec.label!r} is not a date or time; drop the grain",
                      f"{pointer}/grain", allowed=grains)
    if grain == "hour" and field.spec.type == "date":
        raise invalid("GRAIN_NOT_TEMPORAL", f"{field.spec.label!r} is a date: it has no hours; use day or coarser",
                      f"{pointer}/grain", allowed=grains)
    if grain is None and field.spec.type == "timestamp" and use == "dimension":
        raise invalid("GRAIN_REQUIRED", f"grouping by {field.spec.label!r} needs a grain (hour … year)", pointer,
                      allowed=grains)
    return Dimension(raw["id"], field, grain, resolve.roles(raw, pointer))


def _calculation(raw: dict, pointer: str, measures, dimensions) -> Calculation:
    """One of the schema's shapes per kind (which keys go with which kind is the schema's to say); here, the
    outputs it names."""
    measure_ids = [m.id for m in measures]
    dimension_ids = [d.id for d in dimensions]
    _require_output(raw["of"], measure_ids, f"{pointer}/of", f"{raw['kind']} is computed from a measure")
    for i, name in enumerate(raw.get("within", [])):
        _require_output(name, dimension_ids, f"{pointer}/within/{i}", "within names a dimension")
    kind = raw["kind"]
    if kind == "ratio":
        _require_output(raw["to"], measure_ids, f"{pointer}/to", "a ratio divides by a measure")
    if kind not in OVER_TIME:
        return Calculation(raw["id"], kind, raw["of"], tuple(raw.get("within", [])),
                           raw.get("direction", "desc") == "desc", to=raw.get("to"))
    timed = [d.id for d in dimensions if d.grain is not None]
    time = raw.get("time") or (timed[0] if len(timed) == 1 else None)
    if time is None or time not in timed:
        raise invalid("CALCULATION_NEEDS_TIME", f"{kind} runs along a time dimension with a grain: add one, "
                                                "or name it with time", f"{pointer}/time" if "time" in raw else
                      pointer, allowed=timed)
    return Calculation(raw["id"], kind, raw["of"], (), True, raw.get("against"), time)


def _require_output(name: str, allowed: list[str], pointer: str, what: str) -> None:
    if name not in allowed:
        raise invalid("UNKNOWN_OUTPUT", f"{what}; {name!r} is not one of this draft's", pointer, allowed=allowed)


def _having(raw: dict, pointer: str, computed: set[str], texts: set[str], depth: int) -> Group | OutputCondition:
    if depth > MAX_PREDICATE_DEPTH:
        raise invalid("PREDICATE_TOO_DEEP", f"conditions nest at most {MAX_PREDICATE_DEPTH} levels", pointer)
    for op in ("all", "any"):
        if op in raw:
            return Group(op, tuple(_having(p, f"{pointer}/{op}/{i}", computed, texts, depth + 1)
                                   for i, p in enumerate(raw[op])))
    if "not" in raw:
        return Group("not", (_having(raw["not"], f"{pointer}/not", computed, texts, depth + 1),))
    values = () if raw["op"] == "is_null" else tuple(raw["values"]) if "values" in raw else (raw["value"],)
    textual = raw["op"] in ("eq", "neq", "in") and all(isinstance(v, str) for v in values)
    fitting = texts if textual else computed
    if raw["output"] not in fitting:
        raise invalid("UNKNOWN_OUTPUT", f"having tests a measure or calculation against a number, or a text "
                                        f"dimension against text; {raw['output']!r} is not one here "
                                        "(filter on dimensions before aggregation with filter)", f"{pointer}/output",
                      allowed=sorted(fitting))
    return OutputCondition(raw["output"], raw["op"], values)


def _predicate(raw: dict, pointer: str, resolve: _Resolver, depth: int) -> Predicate:
    if depth > MAX_PREDICATE_DEPTH:
        raise invalid("PREDICATE_TOO_DEEP", f"predicates nest at most {MAX_PREDICATE_DEPTH} levels", pointer)
    for op in ("all", "any"):
        if op in raw:
            return Group(op, tuple(_predicate(p, f"{pointer}/{op}/{i}", resolve, depth + 1)
                                   for i, p in enumerate(raw[op])))
    if "not" in raw:
        return Group("not", (_predicate(raw["not"], f"{pointer}/not", resolve, depth + 1),))
    if "same" in raw:
        entity = resolve.get(raw["same"], CatalogEntity, f"{pointer}/same")
        roles = tuple(tuple(resolve.get(item, CatalogRelationship, f"{pointer}/via/{i}/{j}")
                            for j, item in enumerate(role)) for i, role in enumerate(raw["via"]))
        if {r.name for r in roles[0]} == {r.name for r in roles[1]}:
            raise invalid("SAME_ROLE", "same compares two different roles; both name the same relationships",
                          f"{pointer}/via")
        return SameRow(entity, roles, pointer)
    if "has" in raw:
        inner = _predicate(raw["has"], f"{pointer}/has", resolve, depth + 1)  # no has, same or via: the schema's
        sought = _sought_rows(inner, resolve.catalog, f"{pointer}/has")
        return Has(inner, pointer, sought.name, sought.spec.label, resolve.roles(raw, pointer))
    field = resolve.field(raw["field"], f"{pointer}/field", use="filter")
    via = resolve.roles(raw, pointer)
    op = raw["op"]
    kind = field.spec.type
    if op not in operators_for(kind):
        needs = "a text" if op in TEXT_OPS else "a date or time" if op in periods.RELATIVE else \
            "a number, date or time"
        raise invalid("OPERATOR_TYPE", f"{op} needs {needs} field; {field.spec.label!r} is {kind}", f"{pointer}/op",
                      allowed=operators_for(kind))
    if "compare_to" in raw:
        return _field_comparison(field, via, op, raw["compare_to"], f"{pointer}/compare_to", resolve)
    if op in periods.RELATIVE:
        if field.spec.exposure == "filter-only":  # the caption would state its latest value
            raise invalid("FIELD_NOT_EXPOSED", f"{op} counts back from the latest {field.spec.label!r}, which a "
                                               "filter-only field never shows; filter it with dates instead",
                          f"{pointer}/op")
        return RelativePeriod(field, op, raw["unit"], raw.get("count", 1), via, pointer)
    raw_values = [] if op == "is_null" else raw["values"] if "values" in raw else [raw["value"]]
    values = tuple(_typed_value(v, kind, f"{pointer}/{'values/' + str(i) if 'values' in raw else 'value'}")
                   for i, v in enumerate(raw_values))
    return Comparison(field, op, values, via)


def operators_for(kind: str) -> tuple[str, ...]:
    """The operators a condition on a field of this type may use."""
    found = ["eq", "neq", "in", "is_null"]
    if kind in NUMERIC | TEMPORAL:
        found += sorted(ORDERED_OPS)
    if kind in TEMPORAL:
        found += periods.RELATIVE
    if kind == "string":
        found += TEXT_OPS
    return tuple(found)


def _sought_rows(inner: Predicate, catalog: Catalog, pointer: str) -> CatalogEntity:
    """The rows a has looks for: the one entity of its fields that every other belongs to (one path, no
    repeated rows), whatever the order the fields are written in."""
    entities = entities_of(inner)

    def owns(name: str) -> bool:
        return all(len(routes := catalog.routes(name, other)) == 1 and all(e.safe for e in routes[0])
                   for other in entities - {name})

    candidates = sorted(name for name in entities if owns(name))
    if not candidates:
        labels = " and ".join(sorted(catalog.entities[name].spec.label for name in entities))
        raise invalid("HAS_SHAPE", f"inside has, every field must belong to the rows looked for or to what each "
                                   f"of them belongs to; {labels} are not one such set", pointer)
    return catalog.entities[candidates[0]]


def _field_comparison(field: CatalogField, via, op: str, raw: dict, pointer: str,
                      resolve: _Resolver) -> Comparison:
    """`shipped_at > committed_at`: two fields of comparable types (numbers, dates and times, or the same type)."""
    other = resolve.field(raw["field"], f"{pointer}/field", use="filter")

    def family(kind: str) -> str:
        return "number" if kind in NUMERIC else "time" if kind in TEMPORAL else kind

    if family(field.spec.type) != family(other.spec.type):
        raise invalid("OPERATOR_TYPE", f"{field.spec.label!r} ({field.spec.type}) cannot be compared with "
                                       f"{other.spec.label!r} ({other.spec.type})", f"{pointer}/field")
    return Comparison(field, op, (), via, other, resolve.roles(raw, pointer))


def with_periods(predicate: Predicate | None, resolve_period) -> Predicate | None:
    """The same tree with every relative period replaced by `resolve_period(period)`."""
    if isinstance(predicate, RelativePeriod):
        return resolve_period(predicate)
    if isinstance(predicate, Group):
        return Group(predicate.op, tuple(with_periods(item, resolve_period) for item in predicate.items))
    if isinstance(predicate, Has):
        return replace(predicate, predicate=with_periods(predicate.predicate, resolve_period))
    return predicate


def nodes(predicate: Predicate):
    """Every node of a predicate tree, depth first."""
    yield predicate
    if isinstance(predicate, Group):
        for item in predicate.items:
            yield from nodes(item)
    elif isinstance(predicate, Has):
        yield from nodes(predicate.predicate)


def entities_of(predicate: Predicate) -> set[str]:
    """The entities whose fields a predicate's conditions test (both sides of a field comparison)."""
    found = set()
    for node in comparisons(predicate):
        found.add(node.field.entity)
        if getattr(node, "other", None) is not None:
            found.add(node.other.entity)
    return found


def comparisons(predicate: Predicate):
    """The conditions on a field (comparisons and relative periods) of a tree, in the order they are written."""
    return (node for node in nodes(predicate) if isinstance(node, Comparison | RelativePeriod))


_EXPECTED = {"string": "text", "boolean": "true or false", "integer": "a whole number", "decimal": "a number",
             "float": "a number", "date": "an ISO 8601 date ('2024-01-31')",
             "timestamp": "an ISO 8601 date or date-time ('2024-01-31T12:00:00Z')"}


def _typed_value(value, kind: str, pointer: str):
    """Values become typed bound parameters; text in them is never SQL. (NUL characters and numbers past 64 bits
    are the schema's to refuse.)"""
    def wrong(message: str) -> Refusal:
        return invalid("VALUE_TYPE", message, pointer, expected=_EXPECTED[kind])

    if kind == "string":
        if not isinstance(value, str):
            raise wrong("expected text")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise wrong("expected true or false")
        return value
    if kind in NUMERIC:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong(f"expected a number for a {kind} field")
        if kind == "integer" and isinstance(value, float) and not value.is_integer():
            raise wrong("expected a whole number")
        return value
    if not isinstance(value, str):
        raise wrong("expected an ISO 8601 date or date-time string")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise wrong(f"{value[:40]!r} is not an ISO 8601 date or date-time") from None
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
        except OverflowError:  # e.g. 0001-01-01T00:00+05:00 is before year 1 in UTC
            raise wrong(f"{value[:40]!r} is out of the supported date range") from None
    return parsed.date() if kind == "date" else parsed
