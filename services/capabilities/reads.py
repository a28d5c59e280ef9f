"""A run's external reads (§8): screened, recorded behind the reply, and the taint they give the run.

A model's read through a tool is answered before its record is in the database (the read journal
writes it in group commits); anything that shows a person the run's reads, or asks them to approve,
first waits for those records (`recorded`), so no approval card can hide a read.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

from services.capabilities.database import BrokerDatabase, database_away
from services.capabilities.mcp_gate import ToolCallFailed, ToolGate, result_text
from services.capabilities.ports import ReadRecords
from services.capabilities.read_journal import ExternalRead, ReadJournal
from shared.data.bounded_json import canonical
from shared.data.caches import bounded_lru
from shared.identity.actors import Actor
from shared.rpc.refusals import Unavailable
from shared.safety.screen import Screened, screen
from tessera.capabilities.v1 import capabilities_pb2

logger = logging.getLogger("tessera.broker")
INLINE_SCREEN_CHARS = 4_000
MAX_TAINT_MEMORY = 10_000


@dataclass
class PendingRead:
    """A read record being written behind the reply, and how to write it again."""

    future: asyncio.Future
    retry: Callable[[], None]


class RunReads:
    """The reads of each run: screening, recording and taint (tainted: it read something; flagged: a rule
    matched). `db` runs a blocking store call on the broker's database (`database`: its pool and outage)."""

    def __init__(self, store: ReadRecords, database: BrokerDatabase, gate: ToolGate,
                 db: Callable[..., Awaitable]) -> None:
        self.store = store
        self.pool = database.pool
        self.gate = gate
        self.db = db
        self.journal = ReadJournal(partial(database.guarded, store.record_reads), self.pool)
        # session → (tainted, flagged), this process's view; the event loop's only (no lock, shared/data/caches.py)
        self._taint = bounded_lru(MAX_TAINT_MEMORY)
        self._pending: dict[str, list[PendingRead]] = {}

    async def of_run(self, session_id: str) -> list:
        """A run's recorded external reads, newest first (for the approval card)."""
        await self.recorded(session_id)
        return await self.db(self.store.reads_of, session_id)

    async def taint(self, session_id: str) -> tuple[bool, bool]:
        """(tainted, flagged) of a run: from memory for this process's reads, else from the database."""
        known = self._taint.get(session_id)
        if known is None:
            reads = await self.of_run(session_id)
            known = self._taint[session_id] = (bool(reads), any(json.loads(r.matches_json) for r in reads))
        return known

    async def record(self, actor: Actor, request: capabilities_pb2.RecordReadsRequest) -> list:
        """External text read outside the broker (probe values): screened here and recorded as the run's reads."""
        screened = []
        for read in request.reads:
            result = screen(read.text, read.source[:200], read.ref[:200])
            matches = _match_records(result)
            await self.db(self.store.record_read, actor.tenant_id, actor.actor_id, request.session_id,
                          request.turn_id, result.source, result.ref, result.text, result.clipped, matches)
            await self._note_read(request.session_id, matches)
            screened.append(_untrusted(result, result.source))
        return screened

    async def read_tool(self, actor: Actor, request: capabilities_pb2.CallToolRequest, arguments: dict):
        """A model's read through an allowed tool: called, screened, answered; recorded behind the reply.
        Returns (outcome field, value, None) as `Broker.call_tool` does."""
        try:
            result = await self.gate.call(request.tool_id, arguments)
        except ToolCallFailed as exc:
            if exc.availability != capabilities_pb2.TOOL_AVAILABILITY_UNREACHABLE:  # denied as it was to go out
                await self.db(self.store.audit, actor.tenant_id, "tool-refused", actor.actor_id,
                              tool_id=request.tool_id[:200], reason=exc.reason, session_id=request.session_id)
            return "unavailable", capabilities_pb2.ToolUnavailable(
                availability=exc.availability, reason=exc.reason, message=str(exc)), None
        text = ("[the tool reported an error] " if result.is_error else "") + result_text(result)
        ref = _readable_ref(arguments)
        if len(text) < INLINE_SCREEN_CHARS:  # short text screens in microseconds: no thread hop
            screened = screen(text, request.tool_id, ref)
        else:
            screened = await asyncio.get_running_loop().run_in_executor(self.pool, screen, text, request.tool_id, ref)
        matches = _match_records(screened)
        await self._note_read(request.session_id, matches)
        self._record_behind(ExternalRead(actor.tenant_id, actor.actor_id, request.session_id, request.turn_id,
                                         request.tool_id, ref, screened.text, screened.clipped, matches))
        return "content", _untrusted(screened, request.tool_id), None

    async def _note_read(self, session_id: str, matches: list[dict]) -> None:
        """The run has read something now; flagged if this read or an earlier one matched a rule."""
        _, flagged = await self.taint(session_id)
        self._taint[session_id] = (True, flagged or bool(matches))

    def _record_behind(self, read: ExternalRead) -> None:
        """Written behind the reply (the model does not wait for our bookkeeping); anything that shows a
        person the run's reads, or asks them to approve, waits for this write first."""
        write = PendingRead(self.journal.add(read), partial(self.store.record_reads, [read]))
        self._pending.setdefault(read.session_id, []).append(write)
        write.future.add_done_callback(lambda done: self._forget_written(read.session_id, done))

    async def recorded(self, session_id: str) -> None:
        """Wait until every read of the run is in the database (they are written behind the reply).

        A read whose record failed is written again here; if that fails too, nothing that needs the
        record (an approval, a card) goes ahead, and the reads not yet written stay for the next attempt:
        no card may hide a read."""
        for write in list(self._pending.get(session_id, [])):
            await asyncio.wait({write.future})  # its outcome, whatever it is, without raising it here
            if not write.future.cancelled() and write.future.exception() is None:
                continue  # written (and forgotten by its own callback)
            try:
                await self.db(write.retry)
            except Exception as exc:
                if database_away(exc):  # said by the database's Outage; the caller retries
                    raise
                logger.exception("recording an external read failed twice")
                raise Unavailable("READ_RECORD_FAILED",
                                  "an external read of this run could not be recorded; try again") from None
            self._keep(session_id, [w for w in self._pending.get(session_id, []) if w is not write])

    def _forget_written(self, session_id: str, done: asyncio.Future) -> None:
        """Drop the records that were written; failed ones stay until the next flush retries them."""
        if not done.cancelled() and done.exception() is not None and not database_away(done.exception()):
            logger.error("recording an external read failed (retried before any approval): %s", done.exception())
        self._keep(session_id, [w for w in self._pending.get(session_id, [])
                                if not w.future.done() or w.future.cancelled() or w.future.exception() is not None])

    def _keep(self, session_id: str, pending: list[PendingRead]) -> None:
        if pending:
            self._pending[session_id] = pending
        else:
            self._pending.pop(session_id, None)


def _match_records(screened: Screened) -> list[dict]:
    return [{"rule": m.rule, "snippet": m.snippet, "ref": m.ref} for m in screened.matches]


def _untrusted(screened: Screened, source: str) -> capabilities_pb2.UntrustedContent:
    """A screened text as the model receives it: marked untrusted, with what the screen found."""
    return capabilities_pb2.UntrustedContent(
        text=screened.text, source=source, ref=screened.ref, clipped=screened.clipped,
        matches=[capabilities_pb2.ScreenMatch(rule=m.rule, snippet=m.snippet, source=source, ref=m.ref)
                 for m in screened.matches])


def _readable_ref(arguments: dict) -> str:
    """Where a read came from, for a person: "ticket_id 4821" rather than a JSON blob."""
    scalars = [f"{key} {value}" for key, value in sorted(arguments.items())
               if isinstance(value, (str, int, float)) and not isinstance(value, bool)]
    return (", ".join(scalars) if scalars and len(scalars) == len(arguments) else canonical(arguments))[:200]
