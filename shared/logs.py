"""Structured JSON logs with correlation ids.

One JSON object per line on stderr. Correlation ids (request, turn, surface,
intent) live in context variables so every log line written while handling
an RPC carries them without threading them through every call. Never log
rows, credentials or tokens: callers pass identifiers, not payloads.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import datetime as dt
import json
import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType

# Immutable default: each `correlated` block sets a new dict, never mutates one.
_correlation: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "tessera_correlation", default=MappingProxyType({})
)


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
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update(getattr(record, "correlation", None) or _correlation.get())
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class _DeferredHandler(logging.StreamHandler):
    """Formats and writes on the event loop shortly after a record is made.

    Inside a running asyncio loop, records are kept (with the correlation ids
    of the task that logged them) and written in one batch a few milliseconds
    later, after the RPC's response has gone out: a write per record on the
    request path, or a writer thread, measurably slowed every RPC. Outside a
    loop, and for errors, records are written at once.
    """

    FLUSH_DELAY_SECONDS = 0.02

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._pending: list[logging.LogRecord] = []
        self._flush_scheduled = False

    def emit(self, record: logging.LogRecord) -> None:
        record.correlation = _correlation.get()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or record.levelno >= logging.ERROR:
            self.flush_pending()
            super().emit(record)
            return
        self._pending.append(record)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_later(self.FLUSH_DELAY_SECONDS, self.flush_pending)

    def flush_pending(self) -> None:
        # Under the handler's lock (emit runs under it too): another thread's event loop, such as
        # the SPIFFE channel bridge, may log while this one writes the batch.
        with self.lock:
            self._flush_scheduled = False
            pending, self._pending = self._pending, []
            if not pending:
                return
            try:
                self.stream.write("".join(self.format(r) + self.terminator for r in pending))
                self.flush()
            except Exception:
                self.handleError(pending[-1])


_handler: _DeferredHandler | None = None


def setup_logging(service: str, level: str = "INFO") -> None:
    """JSON lines on stderr; written in batches off the request path, flushed at exit."""
    global _handler
    stop_logging()
    _handler = _DeferredHandler(sys.stderr)
    _handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [_handler]
    root.setLevel(level.upper())
    atexit.register(stop_logging)


def stop_logging() -> None:
    """Write every pending line; safe to call more than once."""
    if _handler is not None:
        _handler.flush_pending()


def log(logger: logging.Logger, level: int, msg: str, **fields: object) -> None:
    """Log with structured fields: log(logger, logging.INFO, "served", port=1)."""
    if logger.isEnabledFor(level):
        logger.log(level, msg, extra={"fields": fields})
