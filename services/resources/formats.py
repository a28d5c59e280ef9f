"""Display formats of result columns (§10b).

A column's format comes from the semantic model (`format:` on a field or a
metric) and otherwise from its type and use: counts are whole numbers, a time
dimension is a date at its grain, text is text. The model never chooses one.
Formats travel as plain dicts in pinned results and as `ValueFormat` in
column descriptors.
"""

from __future__ import annotations

from shared.semantic.model import FormatSpec
from tessera.common.v1 import common_pb2

_STYLES = {"integer": common_pb2.FORMAT_STYLE_INTEGER, "decimal": common_pb2.FORMAT_STYLE_DECIMAL,
           "currency": common_pb2.FORMAT_STYLE_CURRENCY, "percent": common_pb2.FORMAT_STYLE_PERCENT,
           "date": common_pb2.FORMAT_STYLE_DATE, "text": common_pb2.FORMAT_STYLE_TEXT}
_COUNTS = ("count", "count_distinct")


def by_type(value_type: str) -> dict:
    """What a value of this type reads as when the model declares nothing."""
    if value_type == "integer":
        return {"style": "integer"}
    if value_type in ("decimal", "float"):
        return {"style": "decimal", "decimals": 2}
    if value_type == "date":
        return {"style": "date", "grain": "day"}
    if value_type == "timestamp":
        return {"style": "date", "grain": "minute"}
    return {"style": "text"}


def declared(spec: FormatSpec | None, value_type: str) -> dict:
    if spec is None:
        return by_type(value_type)
    return spec.model_dump(exclude_none=True)


def of_measure(measure, value_type: str) -> dict:
    if measure.metric is not None:
        return declared(measure.metric.spec.format, value_type)
    if measure.field is None or measure.aggregation in _COUNTS:
        return {"style": "integer"}
    # sum, avg, min and max keep the field's unit (money stays money); an average is not whole.
    chosen = declared(measure.field.spec.format, value_type)
    if measure.aggregation == "avg" and chosen["style"] == "integer":
        return {"style": "decimal", "decimals": 1}
    return chosen


def of_dimension(field, grain: str | None) -> dict:
    if grain is not None:
        return {"style": "date", "grain": grain}
    return declared(field.spec.format, field.spec.type)


def to_proto(value_format: dict | None) -> common_pb2.ValueFormat:
    if not value_format:
        return common_pb2.ValueFormat()
    out = common_pb2.ValueFormat(style=_STYLES[value_format["style"]], currency=value_format.get("currency", ""),
                                 grain=value_format.get("grain", ""))
    if value_format.get("decimals") is not None:
        out.decimals = value_format["decimals"]
    return out
