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
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import NamedTuple

# Immutable default: each `correlated` block sets a new dict, never mutates one.
_correlation: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "tessera_correlation", default=MappingProxyType({})
)


def correlation() -> dict[str, str]:
    return dict(_correlation.get())


def add_correlation(**ids: str) -> contextvars.Token:
    """Add correlation ids from now on (and to tasks spawned from here); undo with `end_correlation(token)`.
    The interceptor's form, without a context manager's generator on every RPC."""
    return _correlation.set({**_correlation.get(), **{k: v for k, v in ids.items() if v}})


def end_correlation(token: contextvars.Token) -> None:
    _correlation.reset(token)


@contextmanager
def correlated(**ids: str) -> Iterator[None]:
    """Add correlation ids for the duration of the block (and tasks it spawns)."""
    token = add_correlation(**ids)
    try:
        yield
    finally:
        end_correlation(token)


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        return self.line(_Line(record.created, record.levelname, record.name, record.getMessage(),
                               getattr(record, "correlation", None) or _correlation.get(),
                               fields if isinstance(fields, dict) else {},
                               self.formatException(record.exc_info) if record.exc_info else None))

    def line(self, line: _Line) -> str:
        entry: dict[str, object] = {
            "ts": dt.datetime.fromtimestamp(line.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": line.level.lower(),
            "service": self.service,
            "logger": line.logger,
            "msg": line.msg,
        }
        entry.update(line.correlation)
        entry.update(line.fields)
        if line.exc is not None:
            entry["exc"] = line.exc
        return json.dumps(entry, default=str, ensure_ascii=False)


class _Line(NamedTuple):
    """What one JSON line says; the access log queues these instead of building a LogRecord."""

    created: float
    level: str
    logger: str
    msg: str
    correlation: Mapping[str, str]
    fields: dict[str, object]
    exc: str | None = None


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

    def enqueue(self, line: _Line) -> None:
        """Queue a line for the next batch (called on the event loop)."""
        with self.lock:
            self._pending.append(line)
            if not self._flush_scheduled:
                self._flush_scheduled = True
                asyncio.get_running_loop().call_later(self.FLUSH_DELAY_SECONDS, self.flush_pending)

    def flush_pending(self) -> None:
        # Under the handler's lock (emit runs under it too): another thread's event loop, such as
        # the SPIFFE channel bridge, may log while this one writes the batch.
        with self.lock:
            self._flush_scheduled = False
            pending, self._pending = self._pending, []
            if not pending:
                return
            try:
                formatter = self.formatter
                self.stream.write("".join(
                    (formatter.line(r) if isinstance(r, _Line) else self.format(r)) + self.terminator
                    for r in pending))
                self.flush()
            except Exception:
                last = pending[-1]
                self.handleError(last if isinstance(last, logging.LogRecord) else logging.makeLogRecord({}))


_handler: _DeferredHandler | None = None
_ROOT = logging.getLogger()


def setup_logging(service: str, level: str = "INFO") -> None:
    """JSON lines on stderr; written in batches off the request path, flushed at exit."""
    global _handler
    stop_logging()
    _handler = _DeferredHandler(sys.stderr)
    _handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [_handler]
    root.setLevel(level.upper())
    # Nothing in a line reads them; each costs a system call or a lookup on every record.
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    atexit.register(stop_logging)


def stop_logging() -> None:
    """Write every pending line; safe to call more than once."""
    if _handler is not None:
        _handler.flush_pending()


def log_rpc(logger: logging.Logger, level: int, **fields: object) -> None:
    """The interceptor's access line ("rpc"), one per RPC, on the event loop. When this process's JSON handler
    is the only one listening, the line is queued as plain values for the next batch: building a LogRecord
    cost more than the RPC's own checks. Anything else listening (a test capturing records) gets a record."""
    if not logger.isEnabledFor(level):
        return
    handler, listening = _handler, _ROOT.handlers
    if handler is None or logger.handlers or len(listening) != 1 or listening[0] is not handler:
        log(logger, level, "rpc", **fields)
        return
    handler.enqueue(_Line(time.time(), logging.getLevelName(level), logger.name, "rpc", _correlation.get(), fields))


def log(logger: logging.Logger, level: int, msg: str, **fields: object) -> None:
    """Log with structured fields: log(logger, logging.INFO, "served", port=1)."""
    if logger.isEnabledFor(level):
        logger.log(level, msg, extra={"fields": fields})
