"""Structured JSON logs with correlation ids.

One JSON object per line on stderr. Correlation ids (request, turn, surface,
intent) live in context variables so every log line written while handling
an RPC carries them without threading them through every call. Never log
rows, credentials or tokens: callers pass identifiers, not payloads.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

CORRELATION_KEYS = ("request_id", "turn_id", "surface_id", "intent_id")
_correlation: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("tessera_correlation", default={})


def correlation() -> dict[str, str]:
    return dict(_correlation.get())


@contextmanager
def correlated(**ids: str) -> Iterator[None]:
    """Add correlation ids for the duration of the block (and tasks it spawns)."""
    merged = {**_correlation.get(), **{k: v for k, v in ids.items() if v}}
    token = _correlation.set(merged)
    try:
        yield
    finally:
        _correlation.reset(token)


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update(_correlation.get())
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def setup_logging(service: str, level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def log(logger: logging.Logger, level: int, msg: str, **fields: object) -> None:
    """Log with structured fields: log(logger, logging.INFO, "served", port=1)."""
    if logger.isEnabledFor(level):
        logger.log(level, msg, extra={"fields": fields})
