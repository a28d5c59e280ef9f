"""The analysis draft's published JSON Schema (§5): the one definition of what a draft may say.

The Resource Gateway validates every draft against it, `inspect_current_context` publishes it, and the
agent's `run_analysis` tool (and so the MCP front's) advertises it, all from this module: a model reads
exactly the schema the gateway enforces. Everything a schema can say lives here (shapes, closed sets,
which keys go together, bounds), so a schema-valid draft is refused only for what only the catalog can
tell: an unknown or unseen id, a field used against its type or exposure, an output name that names
nothing, a join that would repeat rows or has two meanings, a time calculation without a time
dimension, or a budget or bound of the gateway.

Every property carries a description, so the schema alone teaches the format.
"""

from __future__ import annotations

import hashlib

from shared.data.bounded_json import canonical
from shared.data.schema_build import array as _array
from shared.data.schema_build import closed as _object
from shared.data.schema_build import described as _d

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
# Bumped when a draft valid under the old schema means something else or is refused under the new one.
DRAFT_SCHEMA_VERSION = 2
MODES = ("aggregate", "records")
AGGREGATIONS = ("count", "count_distinct", "sum", "avg", "min", "max")
COMPARISONS = ("eq", "neq", "gt", "gte", "lt", "lte")
TEXT_OPS = ("contains", "starts_with", "ends_with")  # case-insensitive; the value is matched as it is
CALCULATIONS = ("share_of_total", "rank", "ratio", "prior", "change", "growth", "cumulative")
OVER_TIME = ("prior", "change", "growth", "cumulative")  # computed along a time dimension
AGAINST = ("previous_period", "same_period_last_year")
GRAINS = ("hour", "day", "week", "month", "quarter", "year")
PERIOD_UNITS = ("day", "week", "month", "quarter", "year")
MAX_PERIOD_COUNT = 120
OUTPUT_KINDS = ("scalar", "table", "series", "ranking")
MAX_MEASURES = 16
MAX_DIMENSIONS = 8
MAX_CALCULATIONS = 8
MAX_ORDER = 8
MAX_RECORD_FIELDS = 32
MAX_CONDITIONS = 16  # in one all/any
MAX_PREDICATE_DEPTH = 8  # nesting of all/any/not/has; JSON Schema cannot count it, so the gateway does
MAX_IN_VALUES = 100
MAX_TEXT = 200
MAX_NUMBER = 2**63 - 1  # what every backend binds as a 64-bit integer
MAX_LIMIT = 20_000  # the schema's bound; the gateway's row cap (policy) is the real one
MAX_DRAFT_BYTES = 64 * 1024
MAX_DRAFT_VALUES = 2_000

OUTPUT_ID_PATTERN = "^[a-z][a-z0-9_]{0,31}$"
ID_PATTERNS = {"entity": "^ent_[a-z2-7]{12}$", "field": "^fld_[a-z2-7]{12}$", "metric": "^met_[a-z2-7]{12}$",
               "relationship": "^rel_[a-z2-7]{12}$"}


def _ref(name: str, text: str | None = None) -> dict:
    return {"$ref": f"#/definitions/{name}"} if text is None else _d(text, {"$ref": f"#/definitions/{name}"})


_NO_NUL = "^[^\\u0000]*$"
# Small parts used in many places: named once, referenced everywhere.
_PARTS = {
    "output_id": _d("An output's name, chosen by you (lower_snake_case, unique in the draft); order_by, having, "
                    "calculations and the result's columns use it.", {"type": "string", "pattern": OUTPUT_ID_PATTERN}),
    "entity_id": _d("An entity id (ent_…) from inspect_catalog or describe_data.",
                    {"type": "string", "pattern": ID_PATTERNS["entity"]}),
    "field_id": _d("A field id (fld_…) from inspect_catalog or describe_data.",
                   {"type": "string", "pattern": ID_PATTERNS["field"]}),
    "metric_id": _d("A metric id (met_…) from inspect_catalog or describe_data.",
                    {"type": "string", "pattern": ID_PATTERNS["metric"]}),
    "via": _array("Relationship ids (rel_…) naming the role a field is reached through (the customer's nation or "
                  "the supplier's): needed where two relationships lead from the measure's entity to the field's "
                  "(AMBIGUOUS_PATH lists them otherwise).",
                  {"type": "string", "pattern": ID_PATTERNS["relationship"]}, 1, 4, uniqueItems=True),
    "value": _d("Text, a number or a boolean; dates and times as ISO 8601 text ('2024-01-31', "
                "'2024-01-31T12:00:00'; with a zone, it is read in UTC). No NUL characters.",
                {"type": ["string", "number", "boolean"], "maxLength": MAX_TEXT, "pattern": _NO_NUL,
                 "minimum": -MAX_NUMBER, "maximum": MAX_NUMBER}),
    "number": _d("A number.", {"type": "number", "minimum": -MAX_NUMBER, "maximum": MAX_NUMBER}),
    "text": _d("A text, as the dimension shows it.", {"type": "string", "maxLength": MAX_TEXT, "pattern": _NO_NUL}),
    "direction": _d("asc (default) or desc.", {"enum": ["asc", "desc"]}),
}


def _leaves(via: bool) -> list[dict]:
    """Conditions on one field; inside `has` fields are reached from the rows it looks for, so no `via`."""
    role = {"via": _ref("via")} if via else {}

    def leaf(required: list[str], op: dict, more: dict, text: str) -> dict:
        return _object(["field", "op", *required], {"field": _ref("field_id"), **role, "op": op, **more}, text)

    units = _d("The unit.", {"enum": list(PERIOD_UNITS)})
    return [
        leaf([], _d("Has no value.", {"const": "is_null"}), {}, "The field has no value."),
        leaf(["value"], _d("eq neq gt gte lt lte (gt … for numbers, dates and times); contains, starts_with, "
                           "ends_with: text, case-insensitive.", {"enum": [*COMPARISONS, *TEXT_OPS]}),
             {"value": _ref("value")}, "The field compared with a value."),
        leaf(["values"], _d("Is one of the values.", {"const": "in"}),
             {"values": _array("1-100 values.", _ref("value"), 1, MAX_IN_VALUES)}, "The field is one of the values."),
        leaf(["values"], _d("Is between the values.", {"const": "between"}),
             {"values": _array("[low, high], both included.", _ref("value"), 2, 2)}, "The field between two values."),
        leaf(["unit"], _d("trailing: the last `count` units up to the reference date (months, quarters and years "
                          "whole, the reference's own included; days and weeks rolling); previous: the `count` whole "
                          "units before the reference's own.", {"enum": ["trailing", "previous"]}),
             {"unit": units, "count": _d(f"1-{MAX_PERIOD_COUNT} (default 1).",
                                         {"type": "integer", "minimum": 1, "maximum": MAX_PERIOD_COUNT})},
             "A date or time field in a period counted back from its latest value in the data (not the clock)."),
        leaf(["unit"], _d("From the start of the latest date's unit up to it (year to date …).",
                          {"const": "to_date"}), {"unit": units}, "A date or time field so far in its latest unit."),
        leaf(["compare_to"], _d("How the field compares with the other.", {"enum": list(COMPARISONS)}),
             {"compare_to": _object(["field"], {"field": _ref("field_id"), **role}, "A field of a comparable type.")},
             "Two fields of one row compared (receipt date after commit date)."),
    ]


def _combinations(definition: str) -> list[dict]:
    """`all` and `any` of 1-16 conditions, and `not` one, each a condition of `definition` again."""
    several = _array(f"1-{MAX_CONDITIONS} conditions.", _ref(definition), 1, MAX_CONDITIONS)
    return [_object(["all"], {"all": several}, "Every condition holds."),
            _object(["any"], {"any": several}, "At least one condition holds."),
            _object(["not"], {"not": _ref(definition)}, "The condition does not hold.")]


_PREDICATE = _d(
    f"Which rows count, before aggregation: all/any/not (nested at most {MAX_PREDICATE_DEPTH} levels), a "
    "condition on a field, has (a related row passes) or same (two roles reach one row).",
    {"oneOf": [
        *_combinations("predicate"),
        *_leaves(via=True),
        _object(["has"], {"has": _ref("has_predicate", "The condition on the related rows."), "via": _ref("via")},
                "The record has at least one related row (of what it has many of) that passes the condition; "
                "nothing is counted twice. Its fields belong to those rows or to what they belong to."),
        _object(["same", "via"], {
            "same": _ref("entity_id"),
            "via": _array("The two roles, each a list of relationship ids.", _ref("via"), 2, 2, uniqueItems=True)},
            "Two roles reach the same row of an entity (compared by its key, never shown)."),
    ]})
_HAS_PREDICATE = _d("A condition inside has: as in a filter, without via, has or same.",
                    {"oneOf": [*_combinations("has_predicate"), *_leaves(via=False)]})


def _output_test(required: list[str], op: dict, more: dict, text: str) -> dict:
    return _object(["output", "op", *required], {
        "output": _ref("output_id", "A measure or calculation of this draft (or, against text, a dimension "
                                    "without a grain)."), "op": op, **more}, text)


_HAVING = _d(
    "Which aggregated rows are kept, after the calculations: a measure or calculation against numbers, or a text "
    "dimension against text (a share of every status, then only 'cancelled' kept).",
    {"oneOf": [
        *_combinations("having"),
        _output_test([], _d("Has no value.", {"const": "is_null"}), {}, "The output has no value."),
        _output_test(["value"], _d("How it compares.", {"enum": list(COMPARISONS)}), {"value": _ref("number")},
                     "Compared with a number."),
        _output_test(["values"], _d("Is between the values.", {"const": "between"}),
                     {"values": _array("[low, high], both included.", _ref("number"), 2, 2)}, "Between two numbers."),
        _output_test(["value"], _d("Is, or is not, the text.", {"enum": ["eq", "neq"]}), {"value": _ref("text")},
                     "A text dimension is (not) a text."),
        _output_test(["values"], _d("Is one of the texts.", {"const": "in"}),
                     {"values": _array("1-50 texts.", _ref("text"), 1, 50)}, "A text dimension is one of the texts."),
    ]})

_MEASURE = _d(
    "One aggregated value: a catalog metric (preferred), an aggregation of a field, or a count of an entity's rows.",
    {"oneOf": [
        _object(["id", "metric"], {"id": _ref("output_id"), "metric": _ref("metric_id")}, "A catalog metric."),
        _object(["id", "aggregation", "field"], {
            "id": _ref("output_id"),
            "aggregation": _d("sum and avg need a number field; min and max are refused on aggregate-only fields.",
                              {"enum": list(AGGREGATIONS)}),
            "field": _ref("field_id")}, "An aggregation of a field."),
        _object(["id", "aggregation", "entity"], {
            "id": _ref("output_id"), "aggregation": _d("Counting rows.", {"const": "count"}),
            "entity": _ref("entity_id")},
            "How many rows an entity has."),
    ]})
_DIMENSION = _object(["id", "field"], {
    "id": _ref("output_id"), "field": _ref("field_id", "A bounded-values field to group by."), "via": _ref("via"),
    "grain": _d("The time bucket, for a date or time field (required for a timestamp; a date has no hours).",
                {"enum": list(GRAINS)})}, "A dimension: one row per value, or per time bucket, of a field.")


def _calculation(kind: str, text: str, required: tuple[str, ...] = (), **extra) -> dict:
    properties = {"id": _ref("output_id"), "kind": _d(text, {"const": kind}),
                  "of": _ref("output_id", "The measure it is computed from."), **extra}
    return _object(["id", "kind", "of", *required], properties, text)


_WITHIN = _array("Dimension ids partitioning it (within each region); none: over all rows.", _ref("output_id"),
                 high=MAX_DIMENSIONS, uniqueItems=True)
_TIME = _ref("output_id", "The time dimension (with a grain) it runs along; only when there are several.")
_AGAINST = _d("previous_period: one grain back; same_period_last_year: 12 months (52 weeks) back.",
              {"enum": list(AGAINST)})
_CALCULATION = _d(
    "A value computed over the aggregated rows (after aggregation, before having, order and limit).",
    {"oneOf": [
        _calculation("share_of_total", "The measure's share (0-1) of the total over all rows.", within=_WITHIN),
        _calculation("rank", "The row's rank by the measure (1 is the highest unless direction is asc).",
                     within=_WITHIN, direction=_ref("direction")),
        _calculation("ratio", "The measure divided by another, row by row (null where that is 0).", ("to",),
                     to=_ref("output_id", "The measure it is divided by.")),
        _calculation("prior", "The measure in the compared period.", ("against",), against=_AGAINST, time=_TIME),
        _calculation("change", "The measure minus the compared period's.", ("against",), against=_AGAINST,
                     time=_TIME),
        _calculation("growth", "The measure over the compared period's, minus 1 (null where that is 0).",
                     ("against",), against=_AGAINST, time=_TIME),
        _calculation("cumulative", "A running total along time (counts and sums only).", time=_TIME),
    ]})
_ORDER = _array(f"1-{MAX_ORDER} sort keys; ties are broken by every other output.", _object(
    ["output"], {"output": _ref("output_id"), "direction": _ref("direction")}, "One sort key."), 1, MAX_ORDER)
_LIMIT = _d("Top-N: only the first N rows of the order (needs order_by), at most the gateway's row cap "
            "(inspect_current_context: limits.max_result_rows).",
            {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT})


def _when_output(kind: str, then: dict) -> dict:
    return {"if": {"required": ["output"], "properties": {"output": {"const": kind}}}, "then": then}


_AGGREGATE = _object(["mode", "measures"], {
    "mode": _d("Aggregated values.", {"const": "aggregate"}),
    "measures": _array(f"1-{MAX_MEASURES} measures.", _ref("measure"), 1, MAX_MEASURES),
    "dimensions": _array(f"0-{MAX_DIMENSIONS} dimensions.", _ref("dimension"), high=MAX_DIMENSIONS),
    "filter": _ref("predicate"),
    "calculations": _array(f"0-{MAX_CALCULATIONS} calculations.", _ref("calculation"), high=MAX_CALCULATIONS),
    "having": _ref("having"),
    "order_by": _ORDER,
    "limit": _LIMIT,
    "output": _d("scalar: one row, no dimension; table (default); series: the first dimension is a time bucket; "
                 "ranking: dimensions ordered by a measure (needs order_by).", {"enum": list(OUTPUT_KINDS)}),
}, "Measures, optionally by dimensions. Work order: filter, aggregate, calculations, having, order, limit.",
    dependencies={"limit": ["order_by"]},
    allOf=[_when_output("scalar", {"properties": {"dimensions": {"maxItems": 0}}}),
           _when_output("series", {"required": ["dimensions"], "properties": {"dimensions": {
               "minItems": 1, "items": [{"required": ["grain"]}]}}}),
           _when_output("ranking", {"required": ["dimensions", "order_by"],
                                    "properties": {"dimensions": {"minItems": 1}}})])
_RECORDS = _object(["mode", "entity", "fields", "order_by"], {
    "mode": _d("Listed rows.", {"const": "records"}),
    "entity": _ref("entity_id", "The entity whose rows are listed."),
    "fields": _array(f"1-{MAX_RECORD_FIELDS} bounded-values fields to list.", _object(
        ["id", "field"], {"id": _ref("output_id"), "field": _ref("field_id"), "via": _ref("via")}, "A listed field."),
        1, MAX_RECORD_FIELDS),
    "filter": _ref("predicate"),
    "order_by": _ORDER,
    "limit": _LIMIT,
}, "Rows of one entity, listed (bounded-values fields only); order_by is required so a draft always lists the "
   "same rows.")

DEFINITIONS = {
    **_PARTS,
    "draft": _d("An analysis draft: mode aggregate or records.",
                {"oneOf": [{"$ref": "#/definitions/aggregate"}, {"$ref": "#/definitions/records"}]}),
    "aggregate": _AGGREGATE,
    "records": _RECORDS,
    "measure": _MEASURE,
    "dimension": _DIMENSION,
    "calculation": _CALCULATION,
    "predicate": _PREDICATE,
    "has_predicate": _HAS_PREDICATE,
    "having": _HAVING,
}
# The gateway's schema: a draft is the `draft` definition.
DRAFT_SCHEMA = {"$schema": DRAFT_07, "title": f"Tessera analysis draft v{DRAFT_SCHEMA_VERSION}",
                "definitions": DEFINITIONS, "$ref": "#/definitions/draft"}
DRAFT_SCHEMA_JSON = canonical(DRAFT_SCHEMA)
DRAFT_SCHEMA_SHA256 = hashlib.sha256(DRAFT_SCHEMA_JSON.encode()).hexdigest()


def tool_input_schema(description: str) -> dict:
    """The run_analysis arguments, `{"draft": …}`, over the very same definitions."""
    return {"$schema": DRAFT_07, "type": "object", "additionalProperties": False, "required": ["draft"],
            "properties": {"draft": _d(description, {"$ref": "#/definitions/draft"})}, "definitions": DEFINITIONS}


def mode_schema(mode: str) -> dict:
    """One mode's schema over the same definitions (a refusal then points into the draft, not at "neither")."""
    return {"$schema": DRAFT_07, "definitions": DEFINITIONS, "$ref": f"#/definitions/{mode}"}
