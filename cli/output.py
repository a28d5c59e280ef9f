"""What the CLI prints: plain-text tables, times as people read them, JSON for scripts, and long output through
the person's pager."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os

from rich.console import Console

TABLE_ROWS = 10  # rows of a table `tessera ask` shows unless told (--rows)


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def print_json(value) -> None:
    """One JSON document on standard output (`--json`): text as written, not \\u-escaped."""
    print(json.dumps(value, indent=2, ensure_ascii=False))


def utc(moment: dt.datetime | float | str) -> dt.datetime:
    """A protobuf Timestamp's datetime, epoch seconds or an ISO 8601 time (a record's), as an aware UTC
    datetime."""
    if isinstance(moment, int | float):
        return dt.datetime.fromtimestamp(moment, dt.UTC)
    if isinstance(moment, str):
        moment = dt.datetime.fromisoformat(moment)
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)


def human_time(moment: dt.datetime | float | str) -> str:
    """'2026-12-05 23:06:12' (UTC, which the column heading says)."""
    return utc(moment).strftime("%Y-%m-%d %H:%M:%S")


def iso_time(moment: dt.datetime | float | str) -> str:
    """'2026-12-05T23:06:12Z', for `--json`."""
    return utc(moment).isoformat(timespec="seconds").replace("+00:00", "Z")


@contextlib.contextmanager
def paged(console: Console):
    """What `console` prints inside, through the person's pager when it is a terminal ($PAGER, else `less`);
    `less` is told, as git tells it, to quit when the text fits one screen and to keep colours, so a short
    answer reads as printed. Piped or redirected output goes straight out."""
    if not console.is_terminal:
        yield
        return
    os.environ.setdefault("LESS", "FRX")
    with console.pager(styles=True):
        yield
