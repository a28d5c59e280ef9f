"""An approved intent's effect, run once (§7): execute → receipt, recoverable after a crash.

`attempted` is committed before the effect runs, and a restart reconciles an attempted data change
against the record versions instead of running it again blindly. Several broker replicas may share
one PostgreSQL database: the deciding replica runs the effect under a lease it renews while the
effect runs; every replica periodically takes up running intents whose lease ran out (their replica
died), so an approved intent runs once, on one replica.

Neither database answering stops an effect for good: an intent whose broker database or change target
did not answer stays running, and is taken up again once its lease runs out, reconciled as after a crash.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from services.capabilities.changes import ChangeTargetUnavailable, DataChanges, Entry, VersionConflict
from services.capabilities.database import BrokerDatabase, database_away
from services.capabilities.mcp_gate import ToolCallFailed, ToolGate, result_text
from services.capabilities.policy import ActionPolicy
from services.capabilities.ports import EffectRuns
from services.capabilities.store import Intent
from shared.data.bounded_json import canonical
from tessera.common.v1 import common_pb2

logger = logging.getLogger("tessera.broker")
# How long a retried decision waits for the start-up pass to take up an intent a previous process left
# running, or for another replica to finish it (then it answers with the intent as it stands; the caller's
# own deadline still applies).
RESUME_WAIT_SECONDS = 30.0
OUTCOME_POLL_SECONDS = 0.1
TAKE_UP_BATCH = 10


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(eq=False)  # one per broker: compared by identity
class Execution:
    """Runs each approved intent once and records its receipt. `db` runs a blocking call on the broker's
    database; `database` is that database (its pool, its outage)."""

    policy: ActionPolicy
    store: EffectRuns
    changes: DataChanges
    gate: ToolGate
    db: Callable[..., Awaitable]
    database: BrokerDatabase
    # Lease renewals get a thread of their own: effects blocked on the shared pool (a slow warehouse)
    # must never starve the renewals that keep other replicas from taking those effects over.
    lease_pool: ThreadPoolExecutor
    # intent → its one execution: every caller (a Decide, its retries, the restart pass) awaits the same
    # future, and it keeps running when a caller goes away.
    _running: dict[str, asyncio.Future] = field(default_factory=dict, init=False)
    # set once `resume` went over what a previous process left running
    _resumed: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    def start(self, intent: Intent, approved_entries: list[str], resumed: bool = False) -> asyncio.Future:
        """The intent's one execution, started now unless it is already running (no await: nothing can slip
        in between the check and the registration). The effect runs in its own task: if a caller's deadline
        passes or it goes away, the effect still finishes and records its receipt (read it with GetReceipt,
        or retry the decision with its id)."""
        running = self._running.get(intent.intent_id)
        if running is None:
            running = asyncio.ensure_future(self._execute_once(intent, approved_entries, resumed))
            self._running[intent.intent_id] = running
            running.add_done_callback(partial(self._ended, intent.intent_id))
        return running

    def _ended(self, intent_id: str, running: asyncio.Future) -> None:
        self._running.pop(intent_id, None)
        if not running.cancelled():
            running.exception()  # seen: whoever awaits it gets it; a take-up nobody awaits left it to a retry

    async def outcome(self, intent: Intent) -> Intent:
        """An approved intent as its first Decide call would have answered: after its effect, if it runs here."""
        if intent.status != common_pb2.INTENT_STATUS_RUNNING:
            return intent
        if intent.intent_id not in self._running:  # a previous process approved it: the restart pass takes it up
            try:
                await asyncio.wait_for(self._resumed.wait(), RESUME_WAIT_SECONDS)
            except TimeoutError:
                pass
        return await self._awaited(intent.intent_id, time.monotonic() + RESUME_WAIT_SECONDS)

    async def _awaited(self, intent_id: str, deadline: float) -> Intent:
        """The intent once its effect ended, whichever replica runs it; as it stands at the deadline. Never
        runs it ourselves: only the lease holder (or whoever takes up an expired lease) does."""
        while True:
            running = self._running.get(intent_id)
            if running is not None:
                return await asyncio.shield(running)
            current = await self.db(self.store.intent, intent_id)
            if current.status != common_pb2.INTENT_STATUS_RUNNING or time.monotonic() >= deadline:
                return current
            await asyncio.sleep(OUTCOME_POLL_SECONDS)

    # --- taking up what others left running -----------------------------------------------------------------

    async def resume(self) -> int:
        """The start-up pass: take up what a previous process (or a dead replica) left running; how many.

        A lone broker on SQLite takes up every running intent (whatever runs was left by its previous
        life); replicas on PostgreSQL only those whose lease ran out."""
        try:
            return await self.take_up(any_lease=self.store.sole_process)
        finally:  # retried decisions stop waiting for this pass, whatever became of it
            self._resumed.set()

    async def take_up(self, any_lease: bool = False) -> int:
        """Claim running intents whose replica stopped renewing their lease, and start running them here
        (their effects then run under our lease); how many were taken up."""
        taken = 0
        for intent in await self.db(self.store.take_up, TAKE_UP_BATCH, any_lease):
            try:
                found = await self.db(self.store.approval, intent.approval_id)
                self.start(intent, (found[0].approved_entries or []) if found else [], resumed=True)
                taken += 1
            except Exception as exc:  # its lease runs out again: the next round (here or elsewhere) retries
                if not database_away(exc):  # (an outage is said by the database's Outage)
                    logger.exception("could not take up intent %s", intent.intent_id)
        return taken

    # --- one execution ------------------------------------------------------------------------------------

    async def _execute_once(self, intent: Intent, approved_entries: list[str], resumed: bool) -> Intent:
        holding = asyncio.ensure_future(self.hold_lease(intent.intent_id))
        try:
            if intent.action_id not in self.policy.actions:
                return await self._execute_tool(intent, resumed)
            return await self._execute_change(intent, approved_entries, resumed)
        except Exception as exc:  # never leave an approved intent silently running
            if database_away(exc):  # its outcome cannot be recorded now: a take-up records it later
                logger.info("intent %s is left running for a take-up: the broker database did not answer",
                            intent.intent_id)
                raise
            logger.exception("executing %s failed", intent.intent_id)
            current = await self.db(self.store.intent, intent.intent_id)
            return await self.db(self.store.finish, intent.intent_id, common_pb2.INTENT_STATUS_FAILED,
                                 "OUTCOME_UNKNOWN" if current.attempted else "EFFECT_FAILED", "")
        finally:
            holding.cancel()

    async def hold_lease(self, intent_id: str) -> None:
        """Renew our lease on a running intent until its effect ends, so no other replica takes it up."""
        while True:
            await asyncio.sleep(self.store.lease_seconds / 3)
            try:
                if not await self.database.on(self.lease_pool, self.store.renew, intent_id):
                    return  # it ended (or, after a long outage, another replica took it up)
            except Exception as exc:  # the database hiccuped: the next renewal may still come in time
                if not database_away(exc):  # (an outage is said by the database's Outage)
                    logger.exception("renewing the lease on %s failed", intent_id)

    async def _execute_change(self, intent: Intent, approved_entries: list[str], resumed: bool) -> Intent:
        """An approved data change: reconciled against record versions after a crash, else applied once."""
        arguments = intent.arguments
        entries = [Entry(**e) for e in arguments["entries"] if e["entry_id"] in approved_entries]
        if resumed and intent.attempted:
            try:
                state = await self.database.elsewhere(self.changes.applied_state, arguments["entity"], entries)
            except ChangeTargetUnavailable:
                return await self._left_running(intent)
            if state == "applied":
                return await self._finish_change(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "", entries,
                                                 resumed=True)
            if state == "diverged":
                return await self._finish_change(intent, common_pb2.INTENT_STATUS_FAILED, "OUTCOME_DIVERGED", entries)
        await self.db(self.store.mark_attempted, intent.intent_id)
        if intent.dry_run:  # a recording stub: the would-be call is in the audit trail, nothing changes
            logger.info("dry run: %s would change %d record(s)", intent.action_id, len(entries))
            return await self._finish_change(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "", entries, dry_run=True)
        try:
            changed = await self.database.elsewhere(self.changes.apply, arguments["entity"], entries)
        except VersionConflict:
            return await self._finish_change(intent, common_pb2.INTENT_STATUS_FAILED, "VERSION_CONFLICT", entries)
        except ChangeTargetUnavailable:  # applied or not: unknown until the target answers
            return await self._left_running(intent)
        except Exception:
            logger.exception("data change %s failed", intent.intent_id)
            return await self._finish_change(intent, common_pb2.INTENT_STATUS_FAILED, "EFFECT_FAILED", entries)
        return await self._finish_change(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "", entries, records=changed)

    async def _left_running(self, intent: Intent) -> Intent:
        """The change target did not answer: the intent stays running (attempted), neither lost nor failed.
        Once our lease runs out, a take-up (here or on another replica) reconciles it against the record
        versions when the target answers: applied if it was not, and never twice."""
        logger.info("data change %s waits for its target to answer; taken up again when its lease runs out",
                    intent.intent_id)
        return await self.db(self.store.intent, intent.intent_id)

    async def _execute_tool(self, intent: Intent, resumed: bool) -> Intent:
        """An approved MCP mutation: re-checked against the policy now, then called once."""
        if resumed and intent.attempted:  # it may have run: never repeat a third party's effect blindly
            return await self._finish(intent, common_pb2.INTENT_STATUS_FAILED, "OUTCOME_UNKNOWN", {})
        states, _ = await self.gate.survey()  # re-authorized at decision time: pinned, listed, reachable
        state = states.get(intent.action_id)
        if state is None or not state.available:
            reason = "TOOL_NOT_ALLOWED" if state is None else f"TOOL_{state.reason or 'UNAVAILABLE'}"
            return await self._finish(intent, common_pb2.INTENT_STATUS_FAILED, reason, {})
        arguments = intent.arguments["arguments"]
        violations = state.contract.violations(arguments)
        if violations:  # the tool was re-pinned with another schema since the person approved
            return await self._finish(intent, common_pb2.INTENT_STATUS_FAILED, "ARGUMENTS_NO_LONGER_VALID",
                                      {"error": violations[0].message})
        await self.db(self.store.mark_attempted, intent.intent_id)
        if intent.dry_run:  # a recording stub: the would-be call is in the audit trail, nothing runs
            logger.info("dry run: would call %s", intent.action_id)
            return await self._finish(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "", {"dry_run": True, "ok": True},
                                      would_call=arguments)
        try:
            result = await self.gate.call(intent.action_id, arguments)
        except ToolCallFailed as exc:
            # A call never sent (the server did not start, or the tool was denied) did nothing; one that
            # hung or broke mid-call may have acted.
            reason = "OUTCOME_UNKNOWN" if exc.sent else exc.reason
            return await self._finish(intent, common_pb2.INTENT_STATUS_FAILED, reason, {"error": str(exc)},
                                      cause=exc.reason)
        text = result_text(result)
        if result.is_error:
            return await self._finish(intent, common_pb2.INTENT_STATUS_FAILED, "TOOL_ERROR", {"text": text})
        return await self._finish(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "", {"text": text})

    async def _finish_change(self, intent: Intent, status: int, reason: str, entries: list[Entry],
                             **detail) -> Intent:
        applied = [e.entry_id for e in entries] if status == common_pb2.INTENT_STATUS_SUCCEEDED else []
        result = {"status": common_pb2.IntentStatus.Name(status), "applied": applied, **detail}
        return await self._finish(intent, status, reason, result, entries=[e.entry_id for e in entries], **detail)

    async def _finish(self, intent: Intent, status: int, reason: str, result: dict, **detail) -> Intent:
        """The receipt: the outcome, and the digest of what the effect returned."""
        return await self.db(self.store.finish, intent.intent_id, status, reason, sha256(canonical(result)),
                             **detail)
