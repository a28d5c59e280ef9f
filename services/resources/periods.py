"""Calendar arithmetic for time intelligence: relative periods and period offsets.

A relative period ("the last 3 months", "the previous quarter", "year to date")
is resolved against a reference date: today, or, where the semantic model sets
`time_anchor: latest_data`, the latest value of the field in the data (a
warehouse loaded up to 31 Dec 2024 then answers "last quarter" with Q4 2024
whenever it is asked). "The last N months" (quarters, years) are whole
calendar months, the reference's own so far included: in December, "the last 3
months" are October to December. Days and weeks roll: "the last 30 days" end at
the reference. Weeks start on Monday, as the time grains do. Months are added
as a calendar does: 31 Jan plus one month is 29 Feb (or 28), never 2 Mar.
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass

RELATIVE = ("trailing", "to_date", "previous")
CALENDAR_UNITS = ("month", "quarter", "year")  # counted whole by "the last N …", the reference's own included

Moment = dt.date | dt.datetime


@dataclass(frozen=True)
class Span:
    """[start, end) or [start, end]: the rows a resolved relative period keeps."""

    start: Moment
    end: Moment
    end_inclusive: bool  # ends at the reference moment itself (trailing, to date)


def add(value: Moment, *, months: int = 0, days: int = 0, hours: int = 0) -> Moment:
    """Calendar addition: months first (the day clipped to the month's length), then days and hours."""
    if months:
        index = value.year * 12 + value.month - 1 + months
        year, month = divmod(index, 12)
        day = min(value.day, calendar.monthrange(year, month + 1)[1])
        value = value.replace(year=year, month=month + 1, day=day)
    return value + dt.timedelta(days=days, hours=hours) if days or hours else value


def offset(unit: str, count: int) -> dict[str, int]:
    """`count` units as arguments of `add`."""
    if unit in ("month", "quarter", "year"):
        return {"months": count * {"month": 1, "quarter": 3, "year": 12}[unit]}
    if unit == "hour":  # a time grain, not a unit of relative periods
        return {"hours": count}
    return {"days": count * (7 if unit == "week" else 1)}


def start_of(value: Moment, unit: str) -> Moment:
    """The first moment of the unit `value` falls in (a date stays a date)."""
    day = value.date() if isinstance(value, dt.datetime) else value
    if unit == "week":
        day = day - dt.timedelta(days=day.weekday())
    elif unit == "month":
        day = day.replace(day=1)
    elif unit == "quarter":
        day = day.replace(month=(day.month - 1) // 3 * 3 + 1, day=1)
    elif unit == "year":
        day = day.replace(month=1, day=1)
    return dt.datetime.combine(day, dt.time()) if isinstance(value, dt.datetime) else day


def resolve(relative: str, unit: str, count: int, reference: Moment) -> Span:
    """The span a relative period means at `reference` (today, or the latest value in the data)."""
    current = start_of(reference, unit)
    if relative == "trailing" and unit in CALENDAR_UNITS:
        # "the last 3 months" in December: October, November and December so far, as people count months
        return Span(add(current, **offset(unit, 1 - count)), reference, True)
    if relative == "trailing":  # the `count` days or weeks that end at the reference: "the last 30 days"
        start = add(reference, **offset(unit, -count))
        if not isinstance(reference, dt.datetime):  # whole days: the reference's day is the last one
            start = add(start, days=1)
        return Span(start, reference, True)
    if relative == "to_date":  # "year to date": from the start of the reference's unit up to it
        return Span(current, reference, True)
    # "previous": the `count` whole units before the reference's own ("last quarter" on 14 Nov is Q3)
    return Span(add(current, **offset(unit, -count)), current, False)


def whole_days(span: Span) -> Span:
    """A span of dates as moments of a time field: from midnight of its first day up to, not including,
    midnight after its last (a day counted from is counted whole)."""
    end = add(span.end, days=1) if span.end_inclusive else span.end
    return Span(dt.datetime.combine(span.start, dt.time()), dt.datetime.combine(end, dt.time()), False)


def words(relative: str, unit: str, count: int) -> str:
    """The period as a person says it, for the caption: "the last 12 months", "quarter to date"."""
    plural = f"{count} {unit}s" if count != 1 else unit
    if relative == "trailing":
        return f"the last {plural}"
    if relative == "to_date":
        return f"{unit} to date"
    return f"the previous {plural}"
