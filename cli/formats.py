"""Values as a person reads them at the terminal (§10b): the same formats the browser uses, from the
result's column descriptors (the semantic model), through Babel's CLDR data like the browser's Intl."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal, InvalidOperation

from babel import Locale, UnknownLocaleError
from babel.dates import format_date, format_datetime
from babel.numbers import format_currency, format_decimal, format_percent

_BY_TYPE = {"integer": {"style": "integer"}, "decimal": {"style": "decimal", "decimals": 2},
            "float": {"style": "decimal", "decimals": 2}, "date": {"style": "date", "grain": "day"},
            "timestamp": {"style": "date", "grain": "minute"}}


def terminal_locale() -> str:
    """The person's locale from the environment; plain C/POSIX (and anything unknown) reads as en_US."""
    for variable in ("LC_ALL", "LC_NUMERIC", "LANG"):
        value = os.environ.get(variable, "").split(".")[0]
        if value and value not in ("C", "POSIX"):
            try:
                return str(Locale.parse(value))
            except (ValueError, UnknownLocaleError):
                break
    return "en_US"


def column_format(descriptor: dict | None, column_id: str) -> dict:
    column = next((c for c in (descriptor or {}).get("columns", []) if c.get("id") == column_id), {})
    return column.get("format") or _BY_TYPE.get(column.get("type", ""), {"style": "text"})


def _digits(count: int) -> str:
    return "#,##0" + ("." + "0" * count if count else "")


def format_value(value, value_format: dict, locale: str = "en_US") -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "Yes" if value else "No"
    style = value_format.get("style", "text")
    if style == "date":
        return _date(str(value), value_format.get("grain", "day"), locale)
    if style == "text":
        return str(value)
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    digits = value_format.get("decimals")
    if style == "integer":
        return format_decimal(number, format="#,##0", locale=locale)
    if style == "currency":
        code = value_format.get("currency", "USD")
        if digits is None:
            return format_currency(number, code, locale=locale)
        return format_currency(number, code, format="¤" + _digits(digits), currency_digits=False, locale=locale)
    if style == "percent":
        return format_percent(number, format=_digits(2 if digits is None else digits) + "%", locale=locale)
    return format_decimal(number, format=_digits(2 if digits is None else digits), locale=locale)


def _date(text: str, grain: str, locale: str) -> str:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return text
    if grain == "year":
        return str(moment.year)
    if grain == "quarter":
        return f"{moment.year} Q{(moment.month - 1) // 3 + 1}"
    if grain == "month":
        return format_date(moment, "MMM y", locale=locale)
    if grain == "week":
        return f"Week of {format_date(moment, 'medium', locale=locale)}"
    if grain == "day":
        return format_date(moment, "medium", locale=locale)
    return format_datetime(moment, "medium" if grain == "second" else "MMM d, y, HH:mm", locale=locale)
