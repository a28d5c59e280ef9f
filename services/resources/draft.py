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

import grpc
import jsonschema

from services.resources import periods
from services.resources.catalog import Catalog, CatalogEntity, CatalogField, CatalogMetric, CatalogRelationship
from services.resources.grains import GRAINS
from shared.bounded_json import BoundedJsonError, Limits, parse
from shared.errors import TesseraError
from shared.schema_check import compile_check

MAX_DRAFT_BYTES = 64 * 1024
MAX_PREDICATE_DEPTH = 8
MAX_NUMBER = 2**63 - 1  # what every backend binds as a 64-bit integer
MODES = ("aggregate", "records")
AGGREGATIONS = ("count", "count_distinct", "sum", "avg", "min", "max")
NUMERIC = frozenset({"integer", "decimal", "float"})
TEMPORAL = frozenset({"date", "timestamp"})
ORDERED_OPS = frozenset({"gt", "gte", "lt", "lte", "between"})
COMPARISONS = ("eq", "neq", "gt", "gte", "lt", "lte")
TEXT_OPS = ("contains", "starts_with", "ends_with")  # case-insensitive; the value is matched as it is
CALCULATIONS = ("share_of_total", "rank", "ratio", "prior", "change", "growth", "cumulative")
OVER_TIME = frozenset({"prior", "change", "growth", "cumulative"})  # computed along a time breakdown
AGAINST = ("previous_period", "same_period_last_year")
MAX_LIMIT = 20_000  # the schema's bound; the gateway's row cap (policy) is the real one

_OUTPUT_ID = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,31}$"}
_SCALAR = {"type": ["string", "number", "boolean"], "maxLength": 200}
_NUMBER = {"type": "number"}
_FIELD_ID = {"type": "string", "pattern": "^fld_[a-z2-7]{12}$"}
# The relationships a field is reached through, when more than one path leads to its entity (a role).
_VIA = {"type": "array", "minItems": 1, "maxItems": 4, "uniqueItems": True,
        "items": {"type": "string", "pattern": "^rel_[a-z2-7]{12}$"}}


def _combinations(definition: str) -> list[dict]:
    """`all` and `any` of 1-16 conditions, and `not` one, each a condition of `definition` again."""
    one = {"$ref": f"#/definitions/{definition}"}
    several = {"type": "array", "minItems": 1, "maxItems": 16, "items": one}
    return [{"type": "object", "additionalProperties": False, "required": [key], "properties": {key: value}}
            for key, value in (("all", several), ("any", several), ("not", one))]


_PREDICATE = {
    "oneOf": [
        *_combinations("predicate"),
        {"type": "object", "additionalProperties": False, "required": ["field", "op"],
         "properties": {"field": _FIELD_ID, "via": _VIA, "op": {"const": "is_null"}}},
        {"type": "object", "additionalProperties": False, "required": ["has"],
         "properties": {"has": {"$ref": "#/definitions/predicate"}, "via": _VIA}},
        {"type": "object", "additionalProperties": False, "required": ["same", "via"],
         "properties": {"same": {"type": "string", "pattern": "^ent_[a-z2-7]{12}$"},
                        "via": {"type": "array", "minItems": 2, "maxItems": 2, "items": _VIA}}},
        {"type": "object", "additionalProperties": False, "required": ["field", "op", "value"],
         "properties": {"field": _FIELD_ID, "via": _VIA, "op": {"enum": [*COMPARISONS, *TEXT_OPS]},
                        "value": _SCALAR}},
        {"type": "object", "additionalProperties": False, "required": ["field", "op", "unit"],
         "properties": {"field": _FIELD_ID, "via": _VIA, "op": {"enum": list(periods.RELATIVE)},
                        "unit": {"enum": list(periods.UNITS)},
                        "count": {"type": "integer", "minimum": 1, "maximum": periods.MAX_COUNT}}},
        {"type": "object", "additionalProperties": False, "required": ["field", "op", "compare_to"],
         "properties": {"field": _FIELD_ID, "via": _VIA, "op": {"enum": list(COMPARISONS)},
                        "compare_to": {"type": "object", "additionalProperties": False, "required": ["field"],
                                       "properties": {"field": _FIELD_ID, "via": _VIA}}}},
        {"type": "object", "additionalProperties": False, "required": ["field", "op", "values"],
         "properties": {"field": _FIELD_ID, "via": _VIA, "op": {"const": "in"},
                        "values": {"type": "array", "minItems": 1, "maxItems": 100, "items": _SCALAR}}},
        {"type": "object", "additionalProperties": False, "required": ["field", "op", "values"],
         "properties": {"field": _FIELD_ID, "via": _VIA, "op": {"const": "between"},
                        "values": {"type": "array", "minItems": 2, "maxItems": 2, "items": _SCALAR}}},
    ]
}
# Conditions on computed outputs (measures and calculations), applied after aggregation.
_HAVING = {
    "oneOf": [
        *_combinations("having"),
        {"type": "object", "additionalProperties": False, "required": ["output", "op"],
         "properties": {"output": _OUTPUT_ID, "op": {"const": "is_null"}}},
        {"type": "object", "additionalProperties": False, "required": ["output", "op", "value"],
         "properties": {"output": _OUTPUT_ID, "op": {"enum": ["eq", "neq", "gt", "gte", "lt", "lte"]},
                        "value": _NUMBER}},
        {"type": "object", "additionalProperties": False, "required": ["output", "op", "values"],
         "properties": {"output": _OUTPUT_ID, "op": {"const": "between"},
                        "values": {"type": "array", "minItems": 2, "maxItems": 2, "items": _NUMBER}}},
        # A text breakdown tested after the calculations: "the share of orders that are cancelled" is the
        # cancelled group's share of all groups, kept alone.
        {"type": "object", "additionalProperties": False, "required": ["output", "op", "value"],
         "properties": {"output": _OUTPUT_ID, "op": {"enum": ["eq", "neq"]},
                        "value": {"type": "string", "maxLength": 200}}},
        {"type": "object", "additionalProperties": False, "required": ["output", "op", "values"],
         "properties": {"output": _OUTPUT_ID, "op": {"const": "in"},
                        "values": {"type": "array", "minItems": 1, "maxItems": 50,
                                   "items": {"type": "string", "maxLength": 200}}}},
    ]
}
_CALCULATIONS = {"type": "array", "maxItems": 8, "items": {
    "type": "object", "additionalProperties": False, "required": ["id", "kind", "of"],
    "properties": {"id": _OUTPUT_ID, "kind": {"enum": list(CALCULATIONS)}, "of": _OUTPUT_ID,
                   "within": {"type": "array", "maxItems": 8, "uniqueItems": True, "items": _OUTPUT_ID},
                   "direction": {"enum": ["asc", "desc"]}, "against": {"enum": list(AGAINST)},
                   "time": _OUTPUT_ID, "to": _OUTPUT_ID}}}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
_ORDER_BY = {"type": "array", "maxItems": 8, "items": {
    "type": "object", "additionalProperties": False, "required": ["output"],
    "properties": {"output": _OUTPUT_ID, "direction": {"enum": ["asc", "desc"]}}}}

DRAFT_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Tessera analysis draft",
    "definitions": {
        "predicate": _PREDICATE,
        "having": _HAVING,
        "aggregate": {
            "type": "object", "additionalProperties": False, "required": ["mode", "measures"],
            "properties": {
                "mode": {"const": "aggregate"},
                "measures": {"type": "array", "minItems": 1, "maxItems": 16, "items": {
                    "type": "object", "additionalProperties": False, "required": ["id"],
                    "properties": {
                        "id": _OUTPUT_ID,
                        "metric": {"type": "string", "pattern": "^met_[a-z2-7]{12}$"},
                        "aggregation": {"enum": list(AGGREGATIONS)},
                        "field": _FIELD_ID,
                        "entity": {"type": "string", "pattern": "^ent_[a-z2-7]{12}$"},
                    }}},
                "dimensions": {"type": "array", "maxItems": 8, "items": {
                    "type": "object", "additionalProperties": False, "required": ["id", "field"],
                    "properties": {"id": _OUTPUT_ID, "field": _FIELD_ID, "via": _VIA,
                                   "grain": {"enum": list(GRAINS)}}}},
                "filter": {"$ref": "#/definitions/predicate"},
                "calculations": _CALCULATIONS,
                "having": {"$ref": "#/definitions/having"},
                "order_by": _ORDER_BY,
                "limit": _LIMIT,
                "output": {"enum": ["scalar", "table", "series", "ranking"]},
            },
        },
        "records": {
            "type": "object", "additionalProperties": False, "required": ["mode", "entity", "fields", "order_by"],
            "properties": {
                "mode": {"const": "records"},
                "entity": {"type": "string", "pattern": "^ent_[a-z2-7]{12}$"},
                "fields": {"type": "array", "minItems": 1, "maxItems": 32, "items": {
                    "type": "object", "additionalProperties": False, "required": ["id", "field"],
                    "properties": {"id": _OUTPUT_ID, "field": _FIELD_ID, "via": _VIA}}},
                "filter": {"$ref": "#/definitions/predicate"},
                "order_by": {**_ORDER_BY, "minItems": 1},
                "limit": _LIMIT,
            },
        },
    },
    "oneOf": [{"$ref": "#/definitions/aggregate"}, {"$ref": "#/definitions/records"}],
}
jsonschema.Draft7Validator.check_schema(DRAFT_SCHEMA)
# One validator per mode gives errors that point into the draft, not "matches neither mode".
_VALIDATORS = {
    mode: jsonschema.Draft7Validator({"$schema": DRAFT_SCHEMA["$schema"], "definitions": DRAFT_SCHEMA["definitions"],
                                      **DRAFT_SCHEMA["definitions"][mode]})
    for mode in MODES
}
# What picks one of them: checked first, so no value of the wrong type decides anything.
_ENVELOPE = jsonschema.Draft7Validator({"$schema": DRAFT_SCHEMA["$schema"], "type": "object", "required": ["mode"],
                                        "properties": {"mode": {"type": "string", "enum": list(MODES)}}})


# The same schemas compiled with fastjsonschema: about ten times faster on valid drafts; the
# jsonschema validators above then explain an invalid one with the most relevant error.
_FAST_CHECKS = {mode: compile_check(validator.schema) for mode, validator in _VALIDATORS.items()}


def invalid(reason: str, message: str, pointer: str, **detail: str) -> TesseraError:
    return TesseraError(grpc.StatusCode.INVALID_ARGUMENT, reason, f"{message} (at {pointer or '/'})",
                        {"path": pointer or "/", **detail})


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
    against the latest value of that field in the data (the gateway fills `span` and `reference`)."""

    field: CatalogField
    relative: str  # trailing / to_date / previous
    unit: str
    count: int
    via: tuple[CatalogRelationship, ...] = ()
    pointer: str = ""
    span: periods.Span | None = None
    reference: periods.Moment | None = None


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
    time: str | None = None  # prior, change, growth, cumulative: the time breakdown they run along
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


def parse_draft(text: str) -> object:
    try:
        return parse(text, Limits(max_raw_bytes=MAX_DRAFT_BYTES, max_depth=32, max_values=2_000,
                                  max_utf16_units=MAX_DRAFT_BYTES))
    except BoundedJsonError as exc:
        raise invalid("DRAFT_NOT_JSON", str(exc), exc.pointer) from None


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
    error = jsonschema.exceptions.best_match(errors)
    if error is not None:
        raise _schema_refusal(error)


def _schema_refusal(error: jsonschema.ValidationError) -> TesseraError:
    """DRAFT_SCHEMA, with the JSON path in the message and the pointer and failed keyword as metadata."""
    parts = [str(part) for part in error.absolute_path]
    where, keyword, detail = error.json_path, str(error.validator), {}
    if keyword == "type":
        expected = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        got = _json_type(error.instance)
        message = f"{where} must be {_either(_ARTICLES.get(t, f'a {t}') for t in expected)}, got {got}"
        detail = {"expected": ",".join(expected), "got": got}
    elif keyword == "required" and isinstance(error.instance, dict):
        missing = next(n for n in error.validator_value if n not in error.instance)
        parts.append(missing)  # point at what is missing, not at its parent
        where = f"{where}.{missing}"
        message = f"{where} is required"
    elif keyword in ("enum", "const"):
        allowed = error.validator_value if keyword == "enum" else [error.validator_value]
        message = f"{where} must be {_either(repr(value) for value in allowed)}"
    else:
        message = f"{where}: {error.message}"
    pointer = "".join(f"/{part.replace('~', '~0').replace('/', '~1')}" for part in parts)
    return invalid("DRAFT_SCHEMA", message[:300], pointer, json_path=where, keyword=keyword, **detail)


_ARTICLES = {"object": "an object", "array": "an array", "integer": "an integer", "null": "null"}


def _json_type(value: object) -> str:
    if isinstance(value, bool):  # before numbers: a bool is an int in Python
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(type(value), type(value).__name__)


def _either(options) -> str:
    options = list(options)
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


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
    outputs: list[str] = []
    if mode == "aggregate":
        measures = tuple(_measure(m, f"/measures/{i}", resolve) for i, m in enumerate(raw["measures"]))
        dimensions = tuple(_dimension(d, f"/dimensions/{i}", resolve, use="dimension")
                           for i, d in enumerate(raw.get("dimensions", [])))
        calculations = tuple(_calculation(c, f"/calculations/{i}", measures, dimensions)
                             for i, c in enumerate(raw.get("calculations", [])))
        outputs = [m.id for m in measures] + [d.id for d in dimensions] + [c.id for c in calculations]
        output = raw.get("output", "table")
        _check_output_kind(output, measures, dimensions, raw)
        computed = {m.id for m in measures} | {c.id for c in calculations}
        texts = {d.id for d in dimensions if d.grain is None and d.field.spec.type == "string"}
        having = _having(raw["having"], "/having", computed, texts, 1) if "having" in raw else None
        draft_fields = {"calculations": calculations, "having": having}
    else:
        entity = resolve.get(raw["entity"], CatalogEntity, "/entity")
        record_fields = tuple(_dimension(f, f"/fields/{i}", resolve, use="record field")
                              for i, f in enumerate(raw["fields"]))
        outputs = [f.id for f in record_fields]
        draft_fields = {"records_entity": entity, "record_fields": record_fields}
        measures, dimensions, output = (), (), "table"
    duplicates = {o for o in outputs if outputs.count(o) > 1}
    if duplicates:
        raise invalid("DUPLICATE_OUTPUT", f"output id {sorted(duplicates)[0]!r} is used twice", "")
    order = []
    for i, item in enumerate(raw.get("order_by", [])):
        if item["output"] not in outputs:
            raise invalid("UNKNOWN_OUTPUT", f"order_by names {item['output']!r}, which is not an output",
                          f"/order_by/{i}/output")
        order.append(Order(item["output"], item.get("direction", "asc") == "desc"))
    limit = raw.get("limit")
    if limit is not None and not order:
        raise invalid("LIMIT_NEEDS_ORDER", "a limit keeps the first rows of an order: add order_by "
                                           "(e.g. the measure, descending, for a top-N)", "/limit")
    predicate = _predicate(raw["filter"], "/filter", resolve, 1) if "filter" in raw else None
    return Draft(mode=mode, measures=measures, dimensions=dimensions, filter=predicate, order_by=tuple(order),
                 output=output, limit=limit, _ids=tuple(resolve.seen.items()), **draft_fields)


def _measure(raw: dict, pointer: str, resolve: _Resolver) -> Measure:
    if "metric" in raw:
        if {"aggregation", "field", "entity"} & raw.keys():
            raise invalid("MEASURE_SHAPE", "a measure is either a metric or an aggregation, not both", pointer)
        return Measure(raw["id"], metric=resolve.get(raw["metric"], CatalogMetric, f"{pointer}/metric"))
    aggregation = raw.get("aggregation")
    if aggregation is None:
        raise invalid("MEASURE_SHAPE", "a measure needs a metric, or an aggregation with a field", pointer)
    if "field" in raw:
        if "entity" in raw:
            raise invalid("MEASURE_SHAPE", "give a field or an entity, not both", pointer)
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
    if aggregation == "count" and "entity" in raw:
        return Measure(raw["id"], aggregation="count",
                       entity=resolve.get(raw["entity"], CatalogEntity, f"{pointer}/entity"))
    raise invalid("MEASURE_SHAPE", f"{aggregation} needs a field (count may name an entity instead)", pointer)


def _dimension(raw: dict, pointer: str, resolve: _Resolver, *, use: str) -> Dimension:
    field = resolve.field(raw["field"], f"{pointer}/field", use=use)
    grain = raw.get("grain")
    if grain is not None and field.spec.type not in TEMPORAL:
        raise invalid("GRAIN_NOT_TEMPORAL", f"{field.spec.label!r} is not a date or time; drop the grain",
                      f"{pointer}/grain")
    if grain == "hour" and field.spec.type == "date":
        raise invalid("GRAIN_NOT_TEMPORAL", f"{field.spec.label!r} is a date: it has no hours; use day or coarser",
                      f"{pointer}/grain")
    if grain is None and field.spec.type == "timestamp" and use == "dimension":
        raise invalid("GRAIN_REQUIRED", f"grouping by {field.spec.label!r} needs a grain (hour … year)", pointer)
    return Dimension(raw["id"], field, grain, resolve.roles(raw, pointer))


def _calculation(raw: dict, pointer: str, measures, dimensions) -> Calculation:
    if raw["of"] not in {m.id for m in measures}:
        raise invalid("UNKNOWN_OUTPUT", f"{raw['kind']} is computed from a measure; {raw['of']!r} is not one",
                      f"{pointer}/of")
    dimension_ids = [d.id for d in dimensions]
    for i, name in enumerate(raw.get("within", [])):
        if name not in dimension_ids:
            raise invalid("UNKNOWN_OUTPUT", f"within names {name!r}, which is not a dimension", f"{pointer}/within/{i}")
    kind = raw["kind"]
    if kind != "rank" and "direction" in raw:
        raise invalid("CALCULATION_SHAPE", "direction goes with rank only", f"{pointer}/direction")
    if (kind == "ratio") != ("to" in raw):
        raise invalid("CALCULATION_SHAPE", "to (the measure divided by) goes with ratio, and ratio needs it",
                      f"{pointer}/to")
    if kind == "ratio" and raw["to"] not in {m.id for m in measures}:
        raise invalid("UNKNOWN_OUTPUT", f"a ratio divides by a measure; {raw['to']!r} is not one", f"{pointer}/to")
    if (kind in ("prior", "change", "growth")) != ("against" in raw):
        raise invalid("CALCULATION_SHAPE", "against (previous_period or same_period_last_year) goes with prior, "
                                           "change and growth, and they need it", f"{pointer}/against")
    if kind not in OVER_TIME:
        if "time" in raw:
            raise invalid("CALCULATION_SHAPE", f"time goes with {', '.join(sorted(OVER_TIME))}", f"{pointer}/time")
        if kind == "ratio" and "within" in raw:
            raise invalid("CALCULATION_SHAPE", "a ratio is computed row by row: drop within", f"{pointer}/within")
        return Calculation(raw["id"], kind, raw["of"], tuple(raw.get("within", [])),
                           raw.get("direction", "desc") == "desc", to=raw.get("to"))
    if "within" in raw:
        raise invalid("CALCULATION_SHAPE", f"{kind} runs within every other breakdown already: drop within",
                      f"{pointer}/within")
    timed = [d.id for d in dimensions if d.grain is not None]
    time = raw.get("time") or (timed[0] if len(timed) == 1 else None)
    if time is None or time not in timed:
        raise invalid("CALCULATION_NEEDS_TIME", f"{kind} runs along a time breakdown with a grain: add one, "
                                                "or name it with time", f"{pointer}/time" if "time" in raw else
                      pointer)
    return Calculation(raw["id"], kind, raw["of"], (), True, raw.get("against"), time)


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
    if raw["output"] in texts and textual:
        for i, value in enumerate(values):
            if "\x00" in value:
                raise invalid("VALUE_TYPE", "text cannot contain a NUL character",
                              f"{pointer}/values/{i}" if "values" in raw else f"{pointer}/value")
        return OutputCondition(raw["output"], raw["op"], values)
    if raw["output"] not in computed or textual:
        raise invalid("UNKNOWN_OUTPUT", f"having tests a measure or calculation against a number, or a text "
                                        f"breakdown against text; {raw['output']!r} is neither here "
                                        "(filter on dimensions before aggregation with filter)", f"{pointer}/output")
    for i, value in enumerate(values):
        if abs(value) > MAX_NUMBER:
            raise invalid("VALUE_TYPE", "the number is out of range", f"{pointer}/values/{i}")
    return OutputCondition(raw["output"], raw["op"], values)


def _check_output_kind(output: str, measures, dimensions, raw) -> None:
    if output == "scalar" and dimensions:
        raise invalid("OUTPUT_KIND", "a scalar output has no dimensions", "/output")
    if output == "series" and (not dimensions or dimensions[0].grain is None):
        raise invalid("OUTPUT_KIND", "a series starts with a time dimension that has a grain", "/output")
    if output == "ranking" and (not dimensions or not raw.get("order_by")):
        raise invalid("OUTPUT_KIND", "a ranking needs a dimension and an order_by", "/output")


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
        inner = _predicate(raw["has"], f"{pointer}/has", resolve, depth + 1)
        if any(isinstance(node, Has) for node in nodes(inner)):
            raise invalid("HAS_NESTED", "a has condition cannot contain another; name the deepest rows in one",
                          f"{pointer}/has")
        if any(isinstance(node, SameRow) for node in nodes(inner)) or \
                any(node.via or getattr(node, "other_via", ()) for node in comparisons(inner)):
            raise invalid("HAS_SHAPE", "inside has, fields are reached from the rows it looks for: drop via "
                                       "(a via beside has names the role of those rows)", f"{pointer}/has")
        sought = _sought_rows(inner, resolve.catalog, f"{pointer}/has")
        return Has(inner, pointer, sought.name, sought.spec.label, resolve.roles(raw, pointer))
    field = resolve.field(raw["field"], f"{pointer}/field", use="filter")
    via = resolve.roles(raw, pointer)
    op = raw["op"]
    kind = field.spec.type
    if op in ORDERED_OPS and kind not in NUMERIC | TEMPORAL:
        raise invalid("OPERATOR_TYPE", f"{op} needs a number, date or time field; {field.spec.label!r} is {kind}",
                      f"{pointer}/op")
    if op in TEXT_OPS and kind != "string":
        raise invalid("OPERATOR_TYPE", f"{op} needs a text field; {field.spec.label!r} is {kind}",
                      f"{pointer}/op")
    if "compare_to" in raw:
        return _field_comparison(field, via, op, raw["compare_to"], f"{pointer}/compare_to", resolve)
    if op in periods.RELATIVE:
        if kind not in TEMPORAL:
            raise invalid("OPERATOR_TYPE", f"{op} needs a date or time field; {field.spec.label!r} is {kind}",
                          f"{pointer}/op")
        if field.spec.exposure == "filter-only":  # the caption would state its latest value
            raise invalid("FIELD_NOT_EXPOSED", f"{op} counts back from the latest {field.spec.label!r}, which a "
                                               "filter-only field never shows; filter it with dates instead",
                          f"{pointer}/op")
        if op == "to_date" and raw.get("count", 1) != 1:
            raise invalid("PERIOD_SHAPE", "to_date is the current unit only: drop count", f"{pointer}/count")
        return RelativePeriod(field, op, raw["unit"], raw.get("count", 1), via, pointer)
    raw_values = [] if op == "is_null" else raw["values"] if "values" in raw else [raw["value"]]
    values = tuple(_typed_value(v, kind, f"{pointer}/{'values/' + str(i) if 'values' in raw else 'value'}")
                   for i, v in enumerate(raw_values))
    return Comparison(field, op, values, via)


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


def _typed_value(value, kind: str, pointer: str):
    """Values become typed bound parameters; text in them is never SQL."""
    if kind == "string":
        if not isinstance(value, str):
            raise invalid("VALUE_TYPE", "expected text", pointer)
        if "\x00" in value:  # PostgreSQL cannot hold one; no backend's text should differ on it
            raise invalid("VALUE_TYPE", "text cannot contain a NUL character", pointer)
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise invalid("VALUE_TYPE", "expected true or false", pointer)
        return value
    if kind in NUMERIC:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise invalid("VALUE_TYPE", f"expected a number for a {kind} field", pointer)
        if abs(value) > MAX_NUMBER:
            raise invalid("VALUE_TYPE", "the number is out of range", pointer)
        if kind == "integer" and isinstance(value, float) and not value.is_integer():
            raise invalid("VALUE_TYPE", "expected a whole number", pointer)
        return value
    if not isinstance(value, str):
        raise invalid("VALUE_TYPE", "expected an ISO 8601 date or date-time string", pointer)
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise invalid("VALUE_TYPE", f"{value[:40]!r} is not an ISO 8601 date or date-time", pointer) from None
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
        except OverflowError:  # e.g. 0001-01-01T00:00+05:00 is before year 1 in UTC
            raise invalid("VALUE_TYPE", f"{value[:40]!r} is out of the supported date range", pointer) from None
    return parsed.date() if kind == "date" else parsed
