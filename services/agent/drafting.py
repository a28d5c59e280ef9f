"""A reading as an analysis draft: the embedded planner's `plan()` step.

Output ids are fixed by role, so composing knows what to bind: `m0…` measures, `t` the time dimension,
`d0…` other dimensions, `s` the share's field, `share`, `per`, `prior`, `change`, `growth`, `cumulative`
calculations.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from services.agent.time_words import TimeSpan, later_against_earlier
from services.agent.understanding import (
    Filter,
    Reading,
    had_filters,
    is_average,
    lower_first,
    reachable,
    time_field,
    words,
)


class CannotPlan(Exception):
    """The reading cannot become a draft; the message says why, in the person's terms."""


@dataclass
class Drafted:
    draft: dict
    primary: str  # the output that answers the question (a measure, a share, a ratio)
    primary_label: str
    dimensions: list[str] = field(default_factory=list)  # output ids, the time dimension first
    time_field: dict | None = None
    had: list[Filter] = field(default_factory=list)  # filters on the rows the counted records must have
    later_period: TimeSpan | None = None  # a which-way answer: the period set against the one before it


@dataclass
class Listing:
    """A record listing: the entity, its fields shown (bounded values only), the one it is ordered by (newest
    first), and the draft that lists them (outputs `c0…` in field order)."""

    entity: dict
    fields: list[dict]
    order_field: dict
    draft: dict

    @property
    def dated(self) -> bool:
        return self.order_field["type"] in ("timestamp", "date")

    @property
    def order_output(self) -> str:
        return f"c{self.fields.index(self.order_field)}"


def plan_listing(entities: list[dict], asked: set[str]) -> Listing | None:
    """“List the latest orders”: the best-matching entity with fields to show, newest first; None if none has."""
    ranked = sorted(entities, key=lambda e: -len(asked & set(words(" ".join([e["label"], *e.get("synonyms", [])])))))
    entity = next((e for e in ranked if any(f["exposure"] == "bounded-values" for f in e["fields"])), None)
    if entity is None:
        return None
    fields = [f for f in entity["fields"] if f["exposure"] == "bounded-values"][:6]
    order_field = next((f for f in fields if f["type"] in ("timestamp", "date")), fields[0])
    draft = {"mode": "records", "entity": entity["id"],
             "fields": [{"id": f"c{i}", "field": f["id"]} for i, f in enumerate(fields)],
             "order_by": [{"output": f"c{fields.index(order_field)}", "direction": "desc"}]}
    return Listing(entity, fields, order_field, draft)


def _moment(day: dt.date, fld: dict) -> str:
    return day.isoformat() if fld["type"] == "date" else f"{day.isoformat()}T00:00:00"


def time_condition(span: TimeSpan, fld: dict) -> dict:
    if span.kind == "any":  # "in 2022 and 2025": only those periods
        return {"any": [time_condition(part, fld) for part in span.parts]}
    if span.kind == "relative":
        return {"field": fld["id"], "op": span.op, "unit": span.unit, "count": span.count} if span.op != "to_date" \
            else {"field": fld["id"], "op": "to_date", "unit": span.unit}
    parts = [{"field": fld["id"], "op": "gte", "value": _moment(span.start, fld)}]
    if span.end is not None:
        parts.append({"field": fld["id"], "op": "lt", "value": _moment(span.end, fld)})
    return parts[0] if len(parts) == 1 else {"all": parts}


def _condition(condition: Filter) -> dict:
    values = list(condition.values)
    if len(values) == 1:
        return {"field": condition.field["id"], "op": "eq", "value": values[0]}
    return {"field": condition.field["id"], "op": "in", "values": values}


def plan(reading: Reading, entities: list[dict]) -> Drafted:
    """The analysis that answers the reading, or CannotPlan saying why there is none."""
    if not reading.measures:
        raise CannotPlan("I found no measure in the question")
    if reading.cumulative and (reading.compare or reading.direction or reading.limit):
        raise CannotPlan("a running total beside a change or a ranking is more than I can answer; ask for the "
                         "running total along time on its own")
    inside = had_filters(reading, entities)
    _check_reach(reading, entities, inside)
    measures = [_measure(f"m{i}", m) for i, m in enumerate(reading.measures[:4])]
    draft: dict = {"mode": "aggregate", "measures": measures}
    when, grain = _time(reading, entities)
    dimensions = [{"id": "t", "field": when["id"], "grain": grain}] if grain else []
    grouped = list({b["id"]: b for b in [*reading.dimensions, *([reading.split.field] if reading.split else [])]
                       }.values())  # ("small business vs consumers … by segment": one segment column, not two)
    dimensions += [{"id": f"d{i}", "field": b["id"]} for i, b in enumerate(grouped)]
    conditions = _conditions(reading, when, inside, entities)
    if conditions:
        draft["filter"] = conditions[0] if len(conditions) == 1 else {"all": conditions}
    if (reading.direction or reading.limit) and not dimensions:
        raise CannotPlan("I found nothing to rank: say what to rank by, e.g. \u201ctop 5 regions by net revenue\u201d")
    one_period = reading.time is not None and reading.time.calendar_unit == grain  # "from 2024 to 2025": 2025
    if (reading.direction or reading.limit) and grain and len(dimensions) > 1 and not (
            reading.ranks_change and one_period):
        if reading.time is not None and len(reading.time.parts) == 2:
            # "which channels had fewer orders in 2025 than in 2024?": not a top within each period
            periods = " vs ".join(p.words.strip().removeprefix("in ") for p in reading.time.parts)
            offered = f"{reading.measures[0]['label']} by {grouped[0]['label'].lower()} in {periods}"
            raise CannotPlan(f"which ones had more or less in one period than in the other is more than I can pick "
                             f"out; I can show each one in both periods side by side: \u201c{offered}\u201d")
        raise CannotPlan("a top or bottom within each period is more than I can answer; ask for one period, "
                         "e.g. \u201ctop 3 regions by net revenue in 2024\u201d")
    which_way = _which_way(reading, dimensions)
    primary, label = _calculations(reading, draft, dimensions, which_way[0] if which_way else None)
    if reading.threshold is not None:
        if not dimensions:
            raise CannotPlan("a bound on a figure keeps some of the groups: name them, e.g. \u201cregions "
                             "with net revenue under 15,000\u201d")
        op, value = reading.threshold
        bound = {"output": primary, "op": op, "value": value}
        draft["having"] = {"all": [draft["having"], bound]} if "having" in draft else bound
    if dimensions:
        draft["dimensions"] = dimensions
    draft["output"] = _output(reading, dimensions)
    if reading.direction and dimensions:
        draft["order_by"] = [{"output": primary, "direction": reading.direction}]
        if reading.limit:
            draft["limit"] = reading.limit
    elif dimensions and not grain:
        draft["order_by"] = [{"output": primary, "direction": "desc"}]
    return Drafted(draft, primary, label, [d["id"] for d in dimensions], when, inside,
                   which_way[1] if which_way else None)


def _which_way(reading: Reading, dimensions: list[dict]) -> tuple[str, TimeSpan] | None:
    """"Did we get more orders this year than last?": two periods of the time dimension and nothing else broken
    down, one measure whose change is a plain difference (not a rate per something, a share or a running
    total): how far back the earlier period is and the later one; else None (the periods stay side by side)."""
    if not reading.which_way or reading.compare or reading.time is None or len(reading.measures) != 1 \
            or [d["id"] for d in dimensions] != ["t"] or reading.per is not None or reading.share is not None \
            or reading.share_of_total or reading.cumulative or reading.direction:
        return None
    return later_against_earlier(reading.time, dimensions[0]["grain"])


def _measure(output: str, measure: dict) -> dict:
    """A metric, or an amount averaged ("average discount": the field itself, aggregated)."""
    if measure.get("aggregation"):
        return {"id": output, "aggregation": measure["aggregation"], "field": measure["id"]}
    return {"id": output, "metric": measure["id"]}


def _time(reading: Reading, entities: list[dict]) -> tuple[dict | None, str | None]:
    """The date the question's time is counted by, and the grain of a time dimension (if one is asked)."""
    if not (reading.grain or reading.time or reading.compare or reading.cumulative):
        return None, None
    owner = reading.measures[0]["entity_id"]
    named = reading.time_field
    if reading.has_rows is not None and not reading.had_ever:  # dated by the rows they had; one count of them,
        # not one per period
        if reading.grain or reading.compare or reading.cumulative:
            raise CannotPlan(f"{reading.measures[0]['label']} period by period, each counted again in every period "
                             f"with one of its {reading.has_rows['label'].lower()} rows, is more than I can answer; "
                             "ask for one period")
        when = named or time_field(entities, reading.has_rows["id"])
        if when is None and reading.time is not None:
            raise CannotPlan(f"I found no date on the {reading.has_rows['label'].lower()} rows to limit them by")
        return when, None
    if named and named["entity_id"] not in reachable(entities, owner):
        raise CannotPlan(f"{reading.measures[0]['label']} cannot be followed by {named['label'].lower()}")
    when = named or time_field(entities, owner)
    if when is not None and reading.time is not None and reading.time.unresolved:
        raise CannotPlan(f"I could not tell which {reading.time.words.strip()} is meant")
    if when is None:
        doing = f"follow {reading.measures[0]['label']} over" if reading.grain or reading.compare else \
            f"limit {reading.measures[0]['label']} to '{reading.time.words.strip()}'"
        raise CannotPlan(f"I found no date or time to {doing}")
    grain = reading.grain or (reading.compare_grain if reading.compare else None)
    if reading.cumulative and not grain:  # "cumulative revenue in 2025": added up month by month
        grain = "month"
    if reading.compare and not grain:  # "this quarter vs last quarter", "2024 vs last year": by the unit named
        grain = _span_unit(reading.time) if reading.time else "month"
    return when, grain


def _span_unit(span) -> str:
    """The calendar unit a span is (a relative period's own, whole years, a quarter or a month), else month."""
    if span.kind == "relative":
        return span.unit
    return span.calendar_unit or ("year" if span.whole_years else "month")


def _conditions(reading: Reading, when: dict | None, inside: list[Filter], entities: list[dict]) -> list[dict]:
    """The draft's filter conditions; `inside`: those on the rows the counted records must have."""
    conditions = [_condition(f) for f in reading.filters if f not in inside]
    if reading.split is not None:
        conditions.append(_condition(reading.split))
    if reading.has_rows is not None:  # "customers who bought online this year"
        dated = reading.time is not None and not reading.had_ever
        parts = [*(_condition(f) for f in inside), *([time_condition(reading.time, when)] if dated else [])]
        if not parts:  # "customers who have placed an order": one with a date, at any time
            rows_date = time_field(entities, reading.has_rows["id"])
            if rows_date is None:
                raise CannotPlan(f"I found no date on the {reading.has_rows['label'].lower()} rows to tell them by")
            parts = [{"not": {"field": rows_date["id"], "op": "is_null"}}]
        had = {"has": parts[0] if len(parts) == 1 else {"all": parts}}
        conditions.append({"not": had} if reading.had_none else had)
    if reading.lacks_rows is not None:  # "… but never returned anything": no such row, at any time
        rows_date = time_field(entities, reading.lacks_rows["id"])
        if rows_date is None:
            raise CannotPlan(f"I found no date on the {reading.lacks_rows['label'].lower()} rows to tell them by")
        conditions.append({"not": {"has": {"not": {"field": rows_date["id"], "op": "is_null"}}}})
    if reading.time is not None and (reading.has_rows is None or reading.had_ever):
        conditions.append(time_condition(reading.time, when))
    return conditions


def _calculations(reading: Reading, draft: dict, dimensions: list[dict], which_way: str | None = None
                  ) -> tuple[str, str]:
    """Shares, ratios and period comparisons added to the draft (`which_way`: the later of two periods against
    the earlier, as far back as it says); the output that answers and its label."""
    primary, label = "m0", reading.measures[0]["label"]
    calculations = []
    if reading.share is not None and len(reading.share.values) > 1:
        raise CannotPlan(f"a share of {' and '.join(reading.share.values)} together is more than I can answer; "
                         "ask for one at a time")
    if reading.share_of_total and not dimensions:
        raise CannotPlan("a share needs a whole to be part of: name the part (\u201cwhat share of orders are "
                         "cancelled\u201d) or what to group by (\u201cshare of net revenue by channel\u201d)")
    if reading.share is not None:  # the part's share of every value, then only the part is kept
        dimensions[:] = [d for d in dimensions if d.get("field") != reading.share.field["id"]]  # (of itself: 1)
        dimensions.append({"id": "s", "field": reading.share.field["id"]})
        within = [d["id"] for d in dimensions if d["id"] != "s"]
        calculations.append({"id": "share", "kind": "share_of_total", "of": "m0", **({"within": within} if within
                                                                                         else {})})
        values = list(reading.share.values)
        draft["having"] = {"output": "s", "op": "eq", "value": values[0]} if len(values) == 1 else \
            {"output": "s", "op": "in", "values": values}
        part = f"{reading.share.field['label'][:1].lower()}{reading.share.field['label'][1:]}"
        primary, label = "share", f"Share of {label[:1].lower()}{label[1:]} with {part} \u201c{values[0]}\u201d"
    elif reading.share_of_total and dimensions:
        calculations.append({"id": "share", "kind": "share_of_total", "of": "m0"})
    if reading.per is not None and reading.compare:  # (the change would be of the count, not of the rate)
        raise CannotPlan(f"a change in {lower_first(label)} per {reading.per['label'].lower()} is more than I can "
                         "answer; ask for it over time, e.g. by month")
    if reading.per is not None:
        counts = [m for m in reading.per["metrics"] if m["label"].lower().startswith("number of")]
        if not counts:
            raise CannotPlan(f"I found no count of {reading.per['label'].lower()} to divide by")
        draft["measures"].append({"id": "per_count", "metric": counts[0]["id"]})
        calculations.append({"id": "per", "kind": "ratio", "of": "m0", "to": "per_count"})
        primary, label = "per", f"{label} per {reading.per['label'].lower()}"
    if reading.compare or which_way:
        calculations += [{"id": kind, "kind": kind, "of": "m0", "against": reading.compare or which_way}  # (the
                         for kind in ("prior", "change", "growth")]  # change both as an amount and as a rate)
        if reading.ranks_change:  # "which category grew fastest": ranked by its growth
            primary, label = "growth", f"Growth of {label[:1].lower()}{label[1:]}"
    if reading.cumulative:
        if primary != "m0" or is_average(reading.measures[0]):  # (a ratio's sum is refused by the gateway)
            raise CannotPlan(f"a running total adds up {label[:1].lower()}{label[1:]}, which does not add up; "
                             "ask for a count or a sum")
        calculations.append({"id": "cumulative", "kind": "cumulative", "of": "m0",
                             **({"time": "t"} if len(dimensions) > 1 else {})})
        primary, label = "cumulative", f"Running total of {label[:1].lower()}{label[1:]}"
    if calculations:
        draft["calculations"] = calculations
    return primary, label


def _check_reach(reading: Reading, entities: list[dict], inside: list[Filter]) -> None:
    """Every dimension and filter must sit on what each measure's rows belong to: through a one-to-many path
    a filter would test each joined row, and the gateway refuses it. Said here in the person's terms."""
    for measure in reading.measures:
        reach = set(reachable(entities, measure["entity_id"]))
        for dimension in [*reading.dimensions, *([reading.split.field] if reading.split else [])]:
            if dimension["entity_id"] not in reach:
                raise CannotPlan(f"{measure['label']} cannot be broken down by {dimension['label'].lower()}")
        for condition in [*reading.filters, *([reading.share] if reading.share else [])]:
            if condition.field["entity_id"] not in reach and condition not in inside:
                raise CannotPlan(f"{measure['label']} cannot be limited by {condition.field['label'].lower()} "
                                 f"\u201c{condition.values[0]}\u201d")


def _output(reading: Reading, dimensions: list[dict]) -> str:
    if not dimensions:
        return "scalar"
    if dimensions[0].get("grain") and not reading.direction:
        return "series"
    if reading.limit and reading.direction:
        return "ranking"
    return "table"
