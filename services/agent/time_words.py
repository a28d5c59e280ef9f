"""Time in a question's words: "in 2025", "Q3 2024", "last quarter", "last 12 months", "year to date",
"since March", "between 2023 and 2024".

Pure text work: the planner never sees data, so relative periods are handed to the gateway as relative
filters (counted back from the data's latest date there), and a month named without a year ("since March")
is marked as needing that latest date, which the planner asks for with a time-bounds probe.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

MONTHS = {name: number for number, names in enumerate(
    [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
     ("november", "nov"), ("december", "dec")], start=1) for name in names}
_MONTH_WORD = (r"(?:january|february|march|april|may|june|july|august|september|october|november|december|"
               r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)")
_YEAR_WORD = r"(?:19|20)\d\d"
_MONTH, _YEAR = f"({_MONTH_WORD})", f"({_YEAR_WORD})"
_QUARTER_WORD = r"(?:q[1-4]|(?:first|second|third|fourth|1st|2nd|3rd|4th) quarter)"
# A day as written: "march 1", "1st of march", "15 may", "2025-03-01" (with or without its year).
_DAY_OF_MONTH = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_DAY_WORD = (rf"(?:{_MONTH_WORD} {_DAY_OF_MONTH}|{_DAY_OF_MONTH} {_MONTH_WORD}|(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th) "
             rf"of {_MONTH_WORD})(?![\w:])")  # ("top 10 of june": no day; "the 10th of june": one)
_ISO_DAY = r"(?:19|20)\d\d-[01]\d-[0-3]\d"
# One point in time as written: a day, a quarter of a year, a month (of a year, or alone), a year.
_HALF_WORD = r"(?:(?:first|second|1st|2nd|front|back) half(?: of)?|h[12])"  # "the first half of 2025", "H2 2024"
_POINT = (f"(?:{_ISO_DAY}|{_DAY_WORD}(?:,? {_YEAR_WORD})?|{_HALF_WORD} {_YEAR_WORD}|{_YEAR_WORD} h[12]|"
          f"{_QUARTER_WORD}(?: of)? {_YEAR_WORD}|{_YEAR_WORD} q[1-4]|"
          f"{_MONTH_WORD}(?:,? {_YEAR_WORD})?|{_YEAR_WORD}|{_QUARTER_WORD})")
_ORDINAL_QUARTER = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
           "eleven": 11, "twelve": 12, "eighteen": 18, "twenty-four": 24, "thirty": 30}
_UNIT = r"(day|week|month|quarter|year)s?"


@dataclass(frozen=True)
class TimeSpan:
    """What the question asked of time. `kind`:

    - "between": `start` inclusive to `end` exclusive (absolute dates);
    - "since": from `start` on;
    - "relative": `op` (trailing, previous, to_date) of `count` `unit`s, resolved by the gateway;
    - "month_latest" / "since_month_latest" / "quarter_latest": a month or quarter named without a year: the
      latest such one (or from it on), resolved once the planner knows what "now" is (`resolved`).
    """

    kind: str
    words: str  # as the person wrote them, for the answer
    start: dt.date | None = None
    end: dt.date | None = None
    op: str = ""
    unit: str = ""
    count: int = 1
    month: int = 0
    day: int = 0  # a day without its year ("day_latest"): the latest such day
    parts: tuple[TimeSpan, ...] = ()  # "in 2022 and 2025": the periods named, side by side ("any": only those)
    ends: tuple[TimeSpan, ...] = ()  # "from October to November 2025": the periods a stretch runs between

    @property
    def calendar_unit(self) -> str | None:
        """The one calendar unit a span is: a relative period's own, or a whole year, quarter or month."""
        if self.kind == "relative" and self.count == 1:
            return self.unit
        if self.kind != "between":
            return None
        months = (self.end.year - self.start.year) * 12 + self.end.month - self.start.month
        unit = {12: "year", 3: "quarter", 1: "month"}.get(months)
        aligned = {"year": (1,), "quarter": (1, 4, 7, 10), "month": tuple(range(1, 13))}
        return unit if unit and self.start.day == 1 and self.start.month in aligned[unit] else None

    @property
    def unresolved(self) -> bool:
        return self.kind in LATEST_KINDS

    @property
    def whole_years(self) -> bool:
        return self.kind == "between" and (self.start.month, self.start.day, self.end.month, self.end.day) == (
            1, 1, 1, 1)

    def resolved(self, latest: dt.date) -> TimeSpan:
        """A month or quarter without a year as dates: the latest such one that starts on or before `latest`
        (a stretch: its last end so, its first the latest such one before that)."""
        if not self.unresolved:
            return self
        if self.kind == "relative_latest":
            return dated(TimeSpan("relative", self.words, op=self.op, unit=self.unit), latest)
        if self.kind == "stretch_latest":
            last = self.ends[1].resolved(latest)
            first = self.ends[0].resolved(last.start) if self.ends[0].unresolved else self.ends[0]
            return TimeSpan("between", self.words, start=first.start, end=last.end, ends=(first, last))
        if self.kind == "day_latest" or self.day:  # a day without its year, or since one
            year = latest.year if (self.month, self.day) <= (latest.month, latest.day) else latest.year - 1
            while not _a_day(self.month, self.day, year):  # "feb 29": the latest there was
                year -= 1
            start = dt.date(year, self.month, self.day)
            if self.kind == "since_month_latest":
                return TimeSpan("since", self.words, start=start)
            return TimeSpan("between", self.words, start=start, end=start + dt.timedelta(days=1))
        year = latest.year if self.month <= latest.month else latest.year - 1
        start = dt.date(year, self.month, 1)
        if self.kind == "since_month_latest":
            return TimeSpan("since", self.words, start=start)
        return TimeSpan("between", self.words, start=start, end=_add_months(start, 3 if self.kind ==
                                                                             "quarter_latest" else 1))


def dated(span: TimeSpan, latest: dt.date | None) -> TimeSpan:
    """A relative period of one calendar unit ("last year", "this quarter") as its dates, to be set beside
    periods named by their dates; unresolved ("relative_latest") while "now" is not known. Others as they are."""
    if span.kind != "relative" or span.count != 1 or span.op not in ("previous", "to_date") or \
            span.unit not in UNIT_MONTHS:
        return span
    if latest is None:
        return TimeSpan("relative_latest", span.words, op=span.op, unit=span.unit)
    months = UNIT_MONTHS[span.unit]
    current = dt.date(latest.year, (latest.month - 1) // months * months + 1, 1)
    start = _add_months(current, -months) if span.op == "previous" else current
    return TimeSpan("between", span.words, start=start, end=_add_months(start, months))


LATEST_KINDS = ("month_latest", "since_month_latest", "quarter_latest", "stretch_latest", "relative_latest",
                "day_latest")
UNIT_MONTHS = {"month": 1, "quarter": 3, "year": 12}


def _add_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, 1)


def _quarter(year: int, quarter: int) -> tuple[dt.date, dt.date]:
    start = dt.date(year, 3 * quarter - 2, 1)
    return start, _add_months(start, 3)


def _count(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return _COUNTS.get(word)


# Each pattern: (regex over the lower-cased question, builder from the match). Tried in order, longest
# constructions first, so "since march 2024" is not read as "march 2024" plus a stray "since".
def _stretch(m: re.Match) -> TimeSpan | None:
    """"From March 2024 to May 2024", "between 2022 and 2024", "2022-2024": one stretch, both ends in it. Ends
    without a year ("from march to may") wait for what "now" is."""
    first, last = _absolute(m.group(1)), _absolute(m.group(2))
    if first is None or last is None:  # "from feb 30": no such day
        return None
    if first.kind in ("month_latest", "quarter_latest") and re.fullmatch(_YEAR_WORD, m.group(2).strip()):
        return _absolute(f"{m.group(1).strip()} {m.group(2).strip()}")  # "Q3-2024", "mar-2024": of that year
    if first.kind == "day_latest" and last.kind == "between":  # "from march 1 to may 15 2025": its year, or the
        later = (first.month, first.day) > (last.start.month, last.start.day)  # one before ("dec 1 to jan 15")
        first = _absolute(f"{m.group(1).strip()} {last.start.year - later}")
        if first is None:  # "february 29" of a year without one
            return None
    if last.unresolved and not first.unresolved and last.kind in ("month_latest", "quarter_latest", "day_latest"):
        last = _on_or_after(last, first.start)  # "from march 2024 to may": May 2024
        if last is None:
            return None
    if first.unresolved or last.unresolved:
        return TimeSpan("stretch_latest", m.group(0), ends=(first, last))
    first, last = sorted((first, last), key=lambda span: span.start)
    return TimeSpan("between", m.group(0), start=first.start, end=last.end, ends=(first, last))


def _on_or_after(span: TimeSpan, start: dt.date) -> TimeSpan | None:
    """A month, quarter or day named without a year: the first such one that ends after `start`."""
    for year in (start.year, start.year + 1):
        if span.kind == "day_latest":
            if not _a_day(span.month, span.day, year):
                continue
            day = dt.date(year, span.month, span.day)
            found = TimeSpan("between", span.words, start=day, end=day + dt.timedelta(days=1))
        else:
            begin = dt.date(year, span.month, 1)
            found = TimeSpan("between", span.words, start=begin, end=_add_months(begin, 3 if span.kind ==
                                                                                   "quarter_latest" else 1))
        if found.end > start:
            return found
    return None


def _since(m: re.Match) -> TimeSpan | None:
    span = _absolute(m.group(1))
    if span is None:
        return None
    if span.kind in ("month_latest", "quarter_latest", "day_latest"):
        return TimeSpan("since_month_latest", m.group(0), month=span.month, day=span.day)
    return TimeSpan("since", m.group(0), start=span.start)


def _a_day(month: int, day: int, year: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]


def _day(year: int, month: int, day: int) -> dt.date:
    """A day named without its year, in `year`: february 29 of a year without one is its 28th."""
    return dt.date(year, month, min(day, calendar.monthrange(year, month)[1]))


def _absolute(text: str) -> TimeSpan | None:
    """A day, a year, a quarter of a year, a month of a year, or a month or day alone, as written (None: a day
    no month has, "february 30", "2025-13-01")."""
    text = text.strip()
    if m := re.fullmatch(r"((?:19|20)\d\d)-([01]\d)-([0-3]\d)", text):
        if not _a_day(int(m.group(2)), int(m.group(3)), int(m.group(1))):
            return None
        start = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        return TimeSpan("between", text, start=start, end=start + dt.timedelta(days=1))
    if m := re.fullmatch(rf"(?:{_MONTH} (\d{{1,2}})|(\d{{1,2}}) (?:of )?{_MONTH})(?:,? {_YEAR})?",
                         re.sub(r"(?<=\d)(?:st|nd|rd|th)\b", "", text)):
        month = MONTHS[m.group(1) or m.group(4)]
        day = int(m.group(2) or m.group(3))
        if not _a_day(month, day, int(m.group(5)) if m.group(5) else 2024):  # (2024: february 29 may be meant)
            return None
        if m.group(5) is None:
            return TimeSpan("day_latest", text, month=month, day=day)
        start = dt.date(int(m.group(5)), month, day)
        return TimeSpan("between", text, start=start, end=start + dt.timedelta(days=1))
    if m := re.fullmatch(rf"(?:(first|second|1st|2nd|front|back) half(?: of)?|h([12])) {_YEAR}|{_YEAR} h([12])", text):
        second = (m.group(1) or "") in ("second", "2nd", "back") or "2" in (m.group(2) or "", m.group(5) or "")
        start = dt.date(int(m.group(3) or m.group(4)), 7 if second else 1, 1)
        return TimeSpan("between", text, start=start, end=_add_months(start, 6))
    if m := re.fullmatch(r"(?:q([1-4])|(first|second|third|fourth|1st|2nd|3rd|4th) quarter)(?: of)? " + _YEAR,
                         text):
        start, end = _quarter(int(m.group(3)), int(m.group(1)) if m.group(1) else _ORDINAL_QUARTER[m.group(2)])
        return TimeSpan("between", text, start=start, end=end)
    if m := re.fullmatch(_YEAR + r" q([1-4])", text):
        start, end = _quarter(int(m.group(1)), int(m.group(2)))
        return TimeSpan("between", text, start=start, end=end)
    if m := re.fullmatch(_MONTH + r",? " + _YEAR, text):
        start = dt.date(int(m.group(2)), MONTHS[m.group(1)], 1)
        return TimeSpan("between", text, start=start, end=_add_months(start, 1))
    if m := re.fullmatch(_MONTH, text):
        return TimeSpan("month_latest", text, month=MONTHS[m.group(1)])
    if m := re.fullmatch(r"q([1-4])|(first|second|third|fourth|1st|2nd|3rd|4th) quarter", text):
        quarter = int(m.group(1)) if m.group(1) else _ORDINAL_QUARTER[m.group(2)]
        return TimeSpan("quarter_latest", text, month=3 * quarter - 2)
    if not re.fullmatch(_YEAR_WORD, text):  # ("dec 31 1899": no year this reads)
        return None
    year = int(text)
    return TimeSpan("between", text, start=dt.date(year, 1, 1), end=dt.date(year + 1, 1, 1))


def _relative_trailing(m: re.Match) -> TimeSpan | None:
    """"the last 3 months" (this one included); "the previous 2 quarters" (the whole ones before this one)."""
    count = _count(m.group(2))
    if count is None or not 1 <= count <= 120:
        return None
    op = "previous" if m.group(1) in ("previous", "prior") else "trailing"
    return TimeSpan("relative", m.group(0), op=op, unit=m.group(3), count=count)


_PATTERNS: list[tuple[re.Pattern, object]] = [
    (re.compile(rf"\bbetween (?:the )?({_POINT}) and (?:the )?({_POINT})\b"), _stretch),
    (re.compile(rf"\b(?:from )?(?:the )?({_POINT}) ?(?:to|through|thru|until|till|-|\u2013) ?(?:the )?({_POINT})\b"),
     _stretch),
    # "since (the start of) last year": the whole previous year and this one so far, i.e. the last two (this one
    # included); "since the start of this quarter": this one so far.
    (re.compile(r"\bsince (?:(?:the )?(?:start|beginning) of )?(last|previous|this|the previous|the current) "
                r"(month|quarter|year)\b"),
     lambda m: TimeSpan("relative", m.group(0), op="to_date", unit=m.group(2)) if m.group(1) in (
         "this", "the current") else TimeSpan("relative", m.group(0), op="trailing", unit=m.group(2), count=2)),
    (re.compile(r"\bsince (?:(?:the )?start of |(?:the )?beginning of |the )?(" + _POINT + r")\b"), _since),
    (re.compile(r"\b(?:from )?(" + _POINT + r"),? (?:onwards?\b|and (?:later|after)(?=\s*[?.!,;]|\s*$))"),
     _since),  # "2021 onwards", "2023 and later" (not "placed in 2023 and later cancelled")
    (re.compile(r"\b(?:in |during |for |of )?(?:the )?(last|past|previous|trailing|prior) (\d{1,3}|[a-z-]+) "
                + _UNIT + r"\b"), _relative_trailing),
    (re.compile(r"\b(?:in |during |for |of )?(?:the )?(?:last|previous|prior|past) (day|week|month|quarter|year)\b"),
     lambda m: TimeSpan("relative", m.group(0), op="previous", unit=m.group(1))),
    (re.compile(r"\b(?:in |during |for |of )?(?:the )?(?:most recent|latest|current) (day|week|month|quarter|year)\b"),
     lambda m: TimeSpan("relative", m.group(0), op="to_date", unit=m.group(1))),
    (re.compile(r"\byesterday\b"), lambda m: TimeSpan("relative", m.group(0), op="previous", unit="day")),
    (re.compile(r"\b(?:(?:so far )?this |the current )(week|month|quarter|year)(?: so far)?\b"),
     lambda m: TimeSpan("relative", m.group(0), op="to_date", unit=m.group(1))),
    (re.compile(r"\b(?:so far this |this )?(week|month|quarter|year)[ -]to[ -]date\b"),
     lambda m: TimeSpan("relative", m.group(0), op="to_date", unit=m.group(1))),
    (re.compile(r"\b(ytd|qtd|mtd)\b"), lambda m: TimeSpan("relative", m.group(0), op="to_date",
                                                          unit={"ytd": "year", "qtd": "quarter",
                                                                "mtd": "month"}[m.group(1)])),
    (re.compile(r"\b(?:in |during |for |of |throughout )?(?:the )?(" + _POINT + r")\b"), lambda m: _absolute_in(m)),
]


def _absolute_in(m: re.Match) -> TimeSpan | None:
    span = _absolute(m.group(1))
    return None if span is None else replace(span, words=m.group(0).strip())


# "May" is also a verb and "march" a noun: a month name alone counts only after a word that introduces time.
_AMBIGUOUS_ALONE = re.compile(r"^(?:in |during |for |of |since )?(?:the )?(may|march|jan|mar|jun|jul|aug|sep|oct|"
                              r"nov|dec)$")


# "Q3 vs Q4 2025", "March to May of 2024": the year written once, after the last of them.
_RANGE_JOINING = r"(?:to|through|thru|until|till|-|\u2013)"
_JOINING = rf"(?:vs\.?|versus|and|or|against|compared (?:to|with)|\+|&|{_RANGE_JOINING})"
_JOINING_WORD = r"(?:vs\.?|versus|and|or|against|compared (?:to|with)|to|through|thru|until|till)"
_PART = rf"\b(?:{_QUARTER_WORD}|{_MONTH_WORD})\b"
# (a joining word between spaces, or a sign with or without them: never both ways, so a long list is linear)
_SEPARATOR = rf"(?: {_JOINING_WORD} | ?[-\u2013+&] ?)"
_SHARED_YEAR = re.compile(rf"({_PART})((?:,?{_SEPARATOR}{_PART})+),? (?:of |in )?({_YEAR_WORD})\b")
_JOINED_PERIOD = re.compile(rf"(,?{_SEPARATOR})({_PART})")
MAX_SPANS = 8
_YEAR_SAID_AFTER = re.compile(rf"((?:{_DAY_WORD}|\b{_MONTH_WORD}|\b{_QUARTER_WORD})(?:,? (?:{_JOINING}) (?:{_DAY_WORD}|"
                              rf"{_MONTH_WORD}|{_QUARTER_WORD}))*),? (?:of |in )?(this|last) year\b")


_HALF_OF_YEAR = re.compile(rf"\b({_HALF_WORD}),? (?:of |in )?(this|last) year\b")


def _year_on_each(m: re.Match) -> str:
    """Each period its year: the last one's; across a range, the year before for one later in the calendar
    ("from December to February 2025": December 2024). Listed ("November or March 2024"), all that year."""
    parts = [("", m.group(1)), *_JOINED_PERIOD.findall(m.group(2))]
    years = [int(m.group(3))] * len(parts)
    for i in range(len(parts) - 2, -1, -1):
        across_range = re.fullmatch(rf",?\s*{_RANGE_JOINING}\s*", parts[i + 1][0]) is not None
        later_in_calendar = _absolute(parts[i][1]).month > _absolute(parts[i + 1][1]).month
        years[i] = years[i + 1] - 1 if across_range and later_in_calendar else years[i + 1]
    return "".join(f"{joiner}{part} {year}" for (joiner, part), year in zip(parts, years, strict=True))


def _thanksgiving(year: int) -> dt.date:
    """The fourth Thursday of November (the United States' Thanksgiving, which Black Friday follows)."""
    first = dt.date(year, 11, 1)
    return first + dt.timedelta(days=(3 - first.weekday()) % 7 + 21)


# Days of the calendar people name instead of a date; each is one day of the year said beside it.
_NAMED_DAYS: dict[str, Callable[[int], dt.date]] = {
    "thanksgiving": _thanksgiving,
    "black friday": lambda year: _thanksgiving(year) + dt.timedelta(days=1),
    "cyber monday": lambda year: _thanksgiving(year) + dt.timedelta(days=4),
    "christmas eve": lambda year: dt.date(year, 12, 24),
    "christmas day": lambda year: dt.date(year, 12, 25),
    "boxing day": lambda year: dt.date(year, 12, 26),
    "new year's eve": lambda year: dt.date(year, 12, 31),
    "new year's day": lambda year: dt.date(year, 1, 1),
    "valentine's day": lambda year: dt.date(year, 2, 14),
    "halloween": lambda year: dt.date(year, 10, 31),
}


def _spoken(name: str) -> str:
    """A named day's pattern as people type it: "new year's eve", "new years eve", "new year eve"."""
    return name.replace("'s", "(?:'?s)?")


_NAMED_DAY_NAME = "(" + "|".join(_spoken(name) for name in _NAMED_DAYS) + ")"
_NAMED_DAY = re.compile(rf"\b{_NAMED_DAY_NAME}(?: day)?,? (?:of |in )?({_YEAR_WORD}|this year|last year)\b")
NAMED_DAY_ALONE = re.compile(rf"\b{_NAMED_DAY_NAME}\b")  # ("on black friday": of which year is not guessed)


def named_days(text: str, latest: dt.date | None) -> tuple[str, list[tuple[str, str]]]:
    """`text` (lower-cased) with each named day of a year ("black friday 2024", "black friday this year" when
    `latest`, "now", is known) written as its date ("29 nov 2024"), and what each was read as, to be said in
    the answer. A named day without a year is left as said: which one is meant is not guessed."""
    read: list[tuple[str, str]] = []

    def as_date(m: re.Match) -> str:
        if m.group(2).endswith("year") and latest is None:
            return m.group(0)
        year = int(m.group(2)) if m.group(2)[0].isdigit() else latest.year - (m.group(2) == "last year")
        day = _named_day(m.group(1), year)
        read.append((m.group(0).strip(), f"{day.day} {calendar.month_abbr[day.month]} {day.year}"))
        return f"{day.day} {calendar.month_abbr[day.month].lower()} {day.year}".ljust(len(m.group(0)))
    return _NAMED_DAY.sub(as_date, text), read


def named_day_within(name: str, spans: list[TimeSpan]) -> bool:
    """Whether the day `name` names ("black friday") falls inside one of `spans` that is at most a month long
    ("each day from nov 24 to dec 1 2025 … the black friday bump"): said of that stretch, not of a year."""
    return any(span.kind == "between" and (span.end - span.start).days <= 31 and any(
        span.start <= _named_day(name, year) < span.end for year in {span.start.year, span.end.year})
        for span in spans)


def _named_day(said: str, year: int) -> dt.date:
    """The date of the named day `said` (as `_NAMED_DAY_NAME` matched it) in `year`."""
    return next(date_in for name, date_in in _NAMED_DAYS.items() if re.fullmatch(_spoken(name), said))(year)


def find_times(question: str, latest: dt.date | None = None) -> tuple[list[TimeSpan], str, list[int]]:
    """Every time expression in `question` (lower-cased), at most MAX_SPANS, the question with them blanked
    out, and where each was in it. A year written once after several quarters or months belongs to each of
    them; a month or quarter without one is the latest such before `latest`, when it is known."""
    text = question.lower()
    if latest is not None:  # "march 1 to may 15 this year", "Q3 last year": of that year
        text = _YEAR_SAID_AFTER.sub(lambda m: f"{m.group(1)} {latest.year - (m.group(2) == 'last')}".ljust(
            len(m.group(0))), text)
        text = _HALF_OF_YEAR.sub(lambda m: f"{m.group(1)} {latest.year - (m.group(2) == 'last')}".ljust(
            len(m.group(0))), text)
    spans, starts = [], []
    if latest is None:  # "the back half of this year": which one, once "now" is known
        for m in _HALF_OF_YEAR.finditer(text):
            spans.append(TimeSpan("relative_latest", m.group(0), op="to_date", unit="year"))
            starts.append(m.start())
        text = _HALF_OF_YEAR.sub(lambda m: " " * len(m.group(0)), text)
    text = _SHARED_YEAR.sub(_year_on_each, text)
    while len(spans) < MAX_SPANS:
        span, text, start = _first_time(text)
        if span is None:
            break
        spans.append(span.resolved(latest) if latest is not None else span)
        starts.append(start)
    return spans, text, starts


def side_by_side(spans: list[TimeSpan]) -> TimeSpan | None:
    """Several periods of one calendar unit as one span: one stretch when they follow each other ("2024 and
    2025"), else only those periods; None when they are not all whole periods of one unit."""
    units = {span.calendar_unit for span in spans}
    if len(units) != 1 or None in units or any(span.kind != "between" for span in spans):
        return None
    parts = tuple(sorted({(s.start, s.end): s for s in spans}.values(), key=lambda s: s.start))
    written = " and ".join(s.words for s in parts)
    if all(a.end == b.start for a, b in zip(parts, parts[1:], strict=False)):
        return TimeSpan("between", written, start=parts[0].start, end=parts[-1].end, parts=parts)
    return TimeSpan("any", written, parts=parts)


def widened_back(span: TimeSpan, months: int) -> TimeSpan | None:
    """A period and the one `months` before it, side by side ("last quarter and the quarter before")."""
    unit_months = UNIT_MONTHS.get(span.calendar_unit or "")
    if unit_months is None:
        return None
    if span.kind == "relative" and span.op == "previous" and months == unit_months:
        return TimeSpan("relative", span.words, op="previous", unit=span.unit, count=2)
    if span.kind == "relative" and span.op == "to_date" and months == unit_months:  # "this quarter vs last"
        before = TimeSpan("relative", f"the previous {span.unit}", op="previous", unit=span.unit)
        return TimeSpan("any", f"{before.words} and {span.words.strip()}", parts=(before, span))
    earlier = shifted_back(span, months)
    return None if earlier is None else side_by_side([earlier, span])


def later_against_earlier(span: TimeSpan, unit: str | None) -> tuple[str, TimeSpan] | None:
    """Two periods of one `unit` as the later set against the earlier: how far back the earlier one is
    (`previous_period` when one follows the other, `same_period_last_year` when a year apart) and the later
    period; None for anything else (one period, three, or two further apart: no change of the draft's joins it)."""
    if unit not in UNIT_MONTHS:
        return None
    if span.kind == "relative" and span.op == "previous" and span.count == 2 and span.unit == unit:
        return "previous_period", TimeSpan("relative", "", op="previous", unit=unit)  # "last quarter vs the one before"
    if len(span.parts) != 2:
        return None
    earlier, later = span.parts
    if all(p.kind == "relative" and p.unit == unit and p.count == 1 for p in span.parts):
        return ("previous_period", later) if (earlier.op, later.op) == ("previous", "to_date") else None
    if any(p.kind != "between" or p.calendar_unit != unit for p in span.parts):
        return None
    gap = (later.start.year - earlier.start.year) * 12 + later.start.month - earlier.start.month
    if gap == UNIT_MONTHS[unit]:
        return "previous_period", later
    return ("same_period_last_year", later) if gap == 12 else None


def shifted_back(span: TimeSpan, months: int) -> TimeSpan | None:
    """A period of dates `months` earlier, said in words (None for a period that is not of dates)."""
    if span.kind != "between":
        return None
    earlier = TimeSpan("between", "", start=_add_months(span.start, -months), end=_add_months(span.end, -months))
    return replace(earlier, words=describe(earlier))


def find_time(question: str) -> tuple[TimeSpan | None, str]:
    """The first time expression in `question` (lower-cased) and the question with it blanked out."""
    span, text, _ = _first_time(question)
    return span, text


def _first_time(question: str) -> tuple[TimeSpan | None, str, int]:
    lowered = question.lower()
    for pattern, build in _PATTERNS:
        for m in pattern.finditer(lowered):
            if _AMBIGUOUS_ALONE.match(m.group(0).strip()) and not re.match(r"(in|during|for|of|since) ",
                                                                            m.group(0).strip()):
                continue
            span = build(m)
            if span is None:
                continue
            return span, lowered[:m.start()] + " " * (m.end() - m.start()) + lowered[m.end():], m.start()
    return None, lowered, -1


def describe(span: TimeSpan) -> str:
    """The span in the answer's words, e.g. "in 2025", "in the last 12 months", "since 1 March 2025"."""
    if span.parts:  # "in 2024 and 2025", "in Q3 2025 and Q4 2025"
        said = [describe(part) for part in span.parts]
        return " and ".join([said[0], *(text.removeprefix("in ") for text in said[1:])])
    if span.kind == "relative":
        unit = span.unit
        if span.op == "trailing":
            return f"in the last {span.count} {unit}s" if span.count != 1 else f"in the last {unit}"
        if span.op == "previous":
            return f"in the previous {unit}" if span.count == 1 else f"in the previous {span.count} {unit}s"
        return f"{unit} to date"
    if span.kind == "since":
        return f"since {span.start.day} {span.start.strftime('%B %Y')}"
    if span.kind == "between":
        unit = span.calendar_unit
        if unit == "year":
            return f"in {span.start.year}"
        if unit == "quarter":
            return f"in Q{(span.start.month + 2) // 3} {span.start.year}"
        if unit == "month":
            return f"in {span.start.strftime('%B %Y')}"
        if span.end - span.start == dt.timedelta(days=1):
            return f"on {span.start.day} {span.start.strftime('%B %Y')}"
        return f"from {span.start.isoformat()} to {(span.end - dt.timedelta(days=1)).isoformat()}"
    return span.words


def spoken(span: TimeSpan) -> str | None:
    """The span in words `find_times` reads back as the same span, or None when there are none."""
    if span.parts:
        said = [spoken(part) for part in span.parts]
        return None if None in said else " and ".join(said)
    if span.kind == "relative":
        if span.op == "trailing":
            return f"in the last {span.count} {span.unit}s"
        if span.op == "previous":
            return f"in the previous {span.unit}" if span.count == 1 else None
        return f"{span.unit} to date"
    if span.kind == "since":
        return f"since {span.start.strftime('%B %Y').lower()}" if span.start.day == 1 else None
    if span.kind in ("month_latest", "since_month_latest"):
        month = next(name for name, number in MONTHS.items() if number == span.month)
        return f"{'since' if span.kind == 'since_month_latest' else 'in'} {month}"
    if span.kind == "quarter_latest":
        return f"in q{(span.month + 2) // 3}"
    if span.kind != "between":
        return None
    unit = span.calendar_unit
    if unit == "year":
        return f"in {span.start.year}"
    if unit == "quarter":
        return f"in q{(span.start.month + 2) // 3} {span.start.year}"
    if unit == "month":
        return f"in {span.start.strftime('%B %Y').lower()}"
    return f"between {span.start.year} and {span.end.year - 1}" if span.whole_years else None
