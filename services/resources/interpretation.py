"""What a result answers, in words (§10b): the caption shown once under an answer, and under a block whose
result says something else.

Written from the executed draft and the semantic model's labels only, never
from the model's prose: a heading that claims "in 2025" over an unfiltered
result sits above a caption that says "no filter". Filter values are the
draft's own (model-chosen) literals and are quoted as such; the only figures
taken from the data are counts (rows kept, rows matched) and the time span
the result covers.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from services.resources import periods
from services.resources.catalog import CatalogField
from services.resources.draft import (
    TEMPORAL,
    Comparison,
    Draft,
    Group,
    Has,
    OutputCondition,
    Predicate,
    RelativePeriod,
    SameRow,
    role_words,
)
from services.resources.query_compiler import OutputColumn
from tessera.common.v1 import common_pb2

MAX_LISTED_VALUES = 6
MAX_VALUE_CHARS = 60
SEPARATOR = " · "


@dataclass(frozen=True)
class Coverage:
    """The earliest and latest value of the time field over the rows a result was computed from."""

    field: CatalogField
    first: dt.date | dt.datetime | None
    last: dt.date | dt.datetime | None


def interpret(draft: Draft, columns: list[OutputColumn], *, row_count: int, total_rows: int | None,
              truncated: bool, coverage: Coverage | None, limited: bool = False) -> common_pb2.Interpretation:
    by_output = {c.id: c for c in columns}
    if draft.mode == "records":
        measures = [f"{draft.records_entity.spec.label} records"]
        head = f"{measures[0]}: {', '.join(c.label for c in columns)}"
        dimensions: list[str] = []
    else:
        measures = [by_output[m.id].label for m in (*draft.measures, *draft.calculations)]
        dimensions = [by_output[d.id].label for d in draft.dimensions]
        head = " and ".join(measures) + (f" by {' and '.join(dimensions)}" if dimensions else "")
    filters = filter_words(draft.filter) if draft.filter is not None else []
    if draft.having is not None:
        filters.append(f"only where {_condition_words(draft.having, by_output)}")
    ordering = _ordering(draft, columns)
    truncation = ""
    if limited:  # the draft asked for its top rows: say how many of how many
        if total_rows is not None and total_rows > row_count:
            truncation = f"top {row_count:,} of {total_rows:,}"
        elif total_rows is None and row_count == draft.limit:
            truncation = f"top {row_count:,}; more were left out"
    elif truncated:
        truncation = (f"first {row_count:,} rows of {total_rows:,}" if total_rows is not None
                      else f"first {row_count:,} rows; more were left out")
    covered = _coverage(coverage) if coverage is not None else ""
    parts = [head, " and ".join(filters) if filters else "no filter", ordering, truncation,
             _coverage_words(coverage, draft.filter) if coverage is not None else ""]
    return common_pb2.Interpretation(text=SEPARATOR.join(p for p in parts if p), measures=measures,
                                     dimensions=dimensions, filters=filters, ordering=ordering,
                                     truncation=truncation, coverage=covered)


# --- filters ---------------------------------------------------------------


def filter_words(predicate: Predicate) -> list[str]:
    """The top-level conditions, each in words (an `all` at the top is split into its items)."""
    if isinstance(predicate, Group) and predicate.op == "all":
        return _merge_ranges(list(predicate.items))
    return [_words(predicate)]


def _merge_ranges(items: list[Predicate]) -> list[str]:
    """`on or after A` and `before B` on one date field read as one span: "A – the day before B"."""
    out: list[str] = []
    used: set[int] = set()
    for i, lower in enumerate(items):
        if i in used:
            continue
        if _is_bound(lower, ("gte",)):
            for j in range(i + 1, len(items)):
                upper = items[j]
                if j not in used and _is_bound(upper, ("lt", "lte")) and upper.field.id == lower.field.id and \
                        {r.name for r in upper.via} == {r.name for r in lower.via}:
                    end = upper.values[0]
                    if upper.op == "lt" and _is_midnight(end):  # before a day starts: up to the day before
                        end = _day(end) - dt.timedelta(days=1)
                    elif upper.op == "lt" or upper.field.spec.type == "timestamp":
                        end = None  # "before 14:00", or "on or before" one moment: said as it is, unmerged
                    if end is not None:
                        out.append(f"{lower.field.spec.label}{role_words(lower.via)} "
                                   f"{_value(lower.field, lower.values[0])} – {_value(lower.field, end)}")
                        used |= {i, j}
                        break
        if i not in used:
            out.append(_words(lower))
            used.add(i)
    return out


def _is_bound(predicate: Predicate, ops: tuple[str, ...]) -> bool:
    return isinstance(predicate, Comparison) and predicate.op in ops and predicate.field.spec.type in TEMPORAL \
        and predicate.other is None


def _is_midnight(value) -> bool:
    return not isinstance(value, dt.datetime) or value.time() == dt.time()


_TEMPORAL_OPS = {"gt": "after", "gte": "on or after", "lt": "before", "lte": "on or before"}
_NUMERIC_OPS = {"gt": "above", "gte": "at least", "lt": "below", "lte": "at most"}


def _words(predicate: Predicate) -> str:
    if isinstance(predicate, Group):
        if predicate.op == "not" and isinstance(predicate.items[0], Has):
            return _has_words(predicate.items[0], "has no")
        inner = [_words(item) for item in predicate.items]
        if predicate.op == "not":
            return f"not ({inner[0]})"
        joined = f" {'and' if predicate.op == 'all' else 'or'} ".join(inner)
        return f"({joined})" if len(inner) > 1 else joined
    if isinstance(predicate, Has):
        return _has_words(predicate, "has at least one")
    if isinstance(predicate, RelativePeriod):
        return _period_words(predicate)
    if isinstance(predicate, SameRow):
        first, second = (", ".join(f"'{r.spec.label}'" for r in role) for role in predicate.roles)
        return f"the same {predicate.entity.spec.label} by {first} and by {second}"
    field, op, values = predicate.field, predicate.op, predicate.values
    label = field.spec.label + role_words(predicate.via)
    if predicate.other is not None:
        other = predicate.other.spec.label + role_words(predicate.other_via)
        words = _TEMPORAL_OPS if field.spec.type in TEMPORAL else _NUMERIC_OPS
        words = {**words, "eq": "is the same as", "neq": "differs from"}
        return f"{label} {words[op]} {other}"
    if op in ("starts_with", "ends_with"):
        return f"{label} {op.replace('_', ' ')} {_value(field, values[0])}"
    if op == "is_null":
        return f"{label} is missing"
    if op == "eq":
        return f"{label} is {_value(field, values[0])}"
    if op == "neq":
        return f"{label} is not {_value(field, values[0])}"
    if op == "contains":
        return f"{label} contains {_value(field, values[0])}"
    if op == "in":
        shown = ", ".join(_value(field, v) for v in values[:MAX_LISTED_VALUES])
        more = len(values) - MAX_LISTED_VALUES
        return f"{label} is one of {shown}" + (f" and {more} more" if more > 0 else "")
    if op == "between":
        if field.spec.type == "timestamp":  # both ends are moments: the last one is said with its time
            return f"{label} {_value(field, values[0])} – {readable_moment(values[1])}"
        if field.spec.type in TEMPORAL:
            return f"{label} {_value(field, values[0])} – {_value(field, values[1])}"
        return f"{label} between {_value(field, values[0])} and {_value(field, values[1])}"
    words = _TEMPORAL_OPS if field.spec.type in TEMPORAL else _NUMERIC_OPS
    if field.spec.type == "timestamp" and op in ("gt", "lte"):  # "after 1 Jun" would skip the day: say 00:00
        return f"{label} {words[op]} {readable_moment(values[0])}"
    return f"{label} {words[op]} {_value(field, values[0])}"


def _period_words(period: RelativePeriod) -> str:
    """"Order date in the last 12 months (1 Jan 2024 – 31 Dec 2024), counted from the latest data (31 Dec 2024)",
    or "…, counted from today (5 Dec 2026)": a person reads which date "last" means."""
    label = period.field.spec.label + role_words(period.via)
    span, timed = period.span, period.field.spec.type == "timestamp"
    end = span.end
    if not span.end_inclusive:  # up to the start of the reference's own unit: the day before it
        end = _day(end) - dt.timedelta(days=1)
        timed = False
    last = readable_moment(end) if timed else readable_day(end)
    first = readable_date(span.start) if timed else readable_day(span.start)
    phrase = periods.words(period.relative, period.unit, period.count)
    where = "" if phrase.endswith("to date") else "in "
    origin = "today" if period.anchor == "today" else "the latest data"
    return f"{label} {where}{phrase} ({first} – {last}), counted from {origin} ({readable_date(period.reference)})"


def _has_words(has: Has, quantity: str) -> str:
    return f"{quantity} {has.sought_label}{role_words(has.via)} where {_words(has.predicate)}"


def _condition_words(condition: Group | OutputCondition, by_output: dict[str, OutputColumn]) -> str:
    """A having condition in words, its numbers in the tested output's own format."""
    if isinstance(condition, Group):
        inner = [_condition_words(item, by_output) for item in condition.items]
        if condition.op == "not":
            return f"not ({inner[0]})"
        joined = f" {'and' if condition.op == 'all' else 'or'} ".join(inner)
        return f"({joined})" if len(inner) > 1 else joined
    column, values = by_output[condition.output], condition.values
    style = (column.format or {}).get("style", "")
    if condition.op == "is_null":
        return f"{column.label} is missing"
    if condition.op == "between":
        return f"{column.label} between {_number(values[0], style)} and {_number(values[1], style)}"
    if isinstance(values[0], str):  # a text dimension: its values as written
        quoted = [f"\u201c{value}\u201d" for value in values]
        if condition.op == "in":
            return f"{column.label} is one of {', '.join(quoted)}" if len(quoted) > 1 else \
                f"{column.label} is {quoted[0]}"
        return f"{column.label} {'is' if condition.op == 'eq' else 'is not'} {quoted[0]}"
    words = {**_NUMERIC_OPS, "eq": "is", "neq": "is not"}
    return f"{column.label} {words[condition.op]} {_number(values[0], style)}"


def _number(value: int | float, style: str) -> str:
    if style == "percent":
        return f"{value * 100:g}%"
    if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.6g}"


def _value(field: CatalogField, value) -> str:
    """A draft literal as a person reads it: text quoted (it is the model's literal), dates as dates."""
    if isinstance(value, str):
        clipped = value if len(value) <= MAX_VALUE_CHARS else value[:MAX_VALUE_CHARS - 1] + "…"
        return f"\u201c{clipped}\u201d"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.date):  # a date, or a date-time (with its time when it has one)
        return readable_date(value)
    style = field.spec.format.style if field.spec.format is not None else ""
    return _number(value, style)


def readable_moment(value: dt.datetime) -> str:
    """A moment with its time always (the end of a span of time)."""
    return f"{value.day} {value.strftime('%b %Y %H:%M')}"


def readable_date(value: dt.date | dt.datetime) -> str:
    """1 Jan 2025, or 1 Jan 2025 14:30 for a time of day (no locale: the same words everywhere)."""
    day = f"{value.day} {value.strftime('%b %Y')}"
    if isinstance(value, dt.datetime) and value.time() != dt.time():
        return f"{day} {value.strftime('%H:%M')}"
    return day


# --- ordering and coverage -------------------------------------------------


def _ordering(draft: Draft, columns: list[OutputColumn]) -> str:
    by_output = {c.id: c for c in columns}
    orders = [(o.output, o.descending) for o in draft.order_by]
    if not orders and draft.mode == "aggregate" and draft.dimensions:
        orders = [(draft.dimensions[0].id, False)]  # the query compiler's tie-breakers start with the first output
    words = []
    for output, descending in orders:
        column = by_output[output]
        if column.role == "measure" or column.type in ("integer", "decimal", "float"):
            words.append(f"{'highest' if descending else 'lowest'} {column.label} first")
        elif column.type in TEMPORAL:
            words.append(f"{'latest' if descending else 'earliest'} {column.label} first")
        else:
            words.append(f"{column.label} {'Z–A' if descending else 'A–Z'}")
    return ", then ".join(words)


def _coverage(coverage: Coverage) -> str:
    if coverage.first is None or coverage.last is None:
        return f"no {coverage.field.spec.label.lower()} in the rows used"
    return f"{coverage.field.spec.label} {_span(coverage)}"


def _span(coverage: Coverage) -> str:
    first, last = readable_day(coverage.first), readable_day(coverage.last)
    return first if first == last else f"{first} – {last}"


def _coverage_words(coverage: Coverage, predicate: Predicate | None) -> str:
    """The rows' span in the caption: not said where a filter on the same field bounds it on both sides and
    the rows begin in its first month and end in its last (the filter's dates already say it: one span, not
    two nearly alike), and said as the rows' own where it tells more (a year of which the data holds a part)."""
    bounds = _filter_bounds(predicate, coverage.field) if predicate is not None else []
    if not bounds or coverage.first is None or coverage.last is None:
        return _coverage(coverage)
    lower = max((b for b, _ in bounds if b is not None), default=None)
    upper = min((b for _, b in bounds if b is not None), default=None)
    if lower is not None and upper is not None and _month(lower) == _month(coverage.first) \
            and _month(upper) == _month(coverage.last):
        return ""
    return f"{coverage.field.spec.label} of the rows used: {_span(coverage)}"


def _filter_bounds(predicate: Predicate, field: CatalogField) -> list[tuple[dt.date | None, dt.date | None]]:
    """The (first day, last day) each top-level condition on `field` allows; None where it is open."""
    items = predicate.items if isinstance(predicate, Group) and predicate.op == "all" else (predicate,)
    bounds = []
    for item in items:
        if isinstance(item, RelativePeriod) and item.field.id == field.id and item.span is not None:
            end = item.span.end if item.span.end_inclusive else _day(item.span.end) - dt.timedelta(days=1)
            bounds.append((_day(item.span.start), _day(end)))
        elif isinstance(item, Comparison) and item.field.id == field.id and item.other is None \
                and isinstance(item.values[0], dt.date):
            first, *rest = item.values
            if item.op == "lt":
                bounds.append((None, _day(first) - dt.timedelta(days=1) if _is_midnight(first) else _day(first)))
            else:
                bounds.append({"gte": (_day(first), None), "gt": (_day(first), None), "lte": (None, _day(first)),
                               "eq": (_day(first), _day(first)),
                               "between": (_day(first), _day(rest[0]) if rest else None)}.get(item.op, (None, None)))
    return [b for b in bounds if b != (None, None)]


def _day(value: dt.date | dt.datetime) -> dt.date:
    return value.date() if isinstance(value, dt.datetime) else value


def _month(value: dt.date | dt.datetime) -> tuple[int, int]:
    return value.year, value.month


def readable_day(value: dt.date | dt.datetime) -> str:
    """The day alone, even of a moment with a time (a span's ends)."""
    return readable_date(_day(value))
