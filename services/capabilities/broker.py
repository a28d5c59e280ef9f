"""The intent flow (§7): validate → authorize → claim → approval → decide → execute once → receipt.

Blocking work (the broker's database, the warehouse) runs on a bounded thread
pool; this module only orders the steps. Execution is split so a crash can be
recovered without repeating an effect: `attempted` is committed before the
effect runs, and a restart reconciles an attempted data change against the
record versions instead of running it again blindly.

Several broker replicas may share one PostgreSQL database: approving hands the
effect to the deciding replica under a lease it renews while the effect runs;
every replica periodically takes up running intents whose lease ran out (their
replica died), so an approved intent runs once, on one replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import grpc

from services.capabilities.changes import DataChanges, Entry, VersionConflict
from services.capabilities.mcp_gate import ToolCallFailed, ToolGate, ToolState, result_text
from services.capabilities.metrics import BrokerMetrics
from services.capabilities.policy import Action, ActionPolicy
from services.capabilities.read_journal import ExternalRead, ReadJournal
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import BrokerStore, Intent, Signature, outcome, refuse
from services.capabilities.wording import Wording
from shared.actors import Actor
from shared.bounded_json import BoundedJsonError, Limits, canonical, parse
from shared.errors import TesseraError
from shared.screen import screen
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2

logger = logging.getLogger("tessera.broker")
INPUT_LIMITS = Limits(max_raw_bytes=64 * 1024, max_values=2_000)
INLINE_SCREEN_CHARS = 4_000
MAX_RECORDED_READS = 50
DECISION_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# How long a retried decision waits for the start-up pass to take up an intent a previous process left
# running, or for another replica to finish it (then it answers with the intent as it stands; the caller's
# own deadline still applies).
RESUME_WAIT_SECONDS = 30.0
OUTCOME_POLL_SECONDS = 0.1


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Broker:
    def __init__(self, policy: ActionPolicy, store: BrokerStore, changes: DataChanges, pool: ThreadPoolExecutor,
                 approval_ttl: float, dry_run: bool, metrics: BrokerMetrics, gate: ToolGate,
                 signatures: DecisionSignatures, on_event: Callable[[], None] = lambda: None,
                 lease_pool: ThreadPoolExecutor | None = None) -> None:
        self.policy = policy
        self.signatures = signatures
        self.gate = gate
        self.store = store
        self.changes = changes
        self.pool = pool
        # Lease renewals get a thread of their own: effects blocked on the shared pool (a slow warehouse)
        # must never starve the renewals that keep other replicas from taking those effects over.
        self.lease_pool = lease_pool or ThreadPoolExecutor(max_workers=1, thread_name_prefix="broker-lease")
        self.approval_ttl = approval_ttl
        self.dry_run = dry_run
        self.metrics = metrics
        self.on_event = on_event  # wakes the publisher: a new host event is in the outbox
        # intent → its one execution: every caller (a Decide, its retries, the restart pass) awaits the same
        # future, and it keeps running when a caller goes away.
        self._running: dict[str, asyncio.Future] = {}
        self._resumed = asyncio.Event()  # set once `resume` went over what a previous process left running
        # approval → (lock, users): one Decide at a time per approval in this process, so a retry racing its
        # original finds the original's execution already registered in `_running`.
        self._deciding: dict[str, tuple[asyncio.Lock, int]] = {}
        self._taint: dict[str, tuple[bool, bool]] = {}  # session → (tainted, flagged), this process's view
        self._pending_reads: dict[str, list[_PendingRead]] = {}
        self.journal = ReadJournal(self.store.record_reads, self.pool)

    async def db(self, fn, *args, **kwargs):
        result = await asyncio.get_running_loop().run_in_executor(self.pool, partial(fn, *args, **kwargs))
        self.on_event()
        return result

    # --- submit -------------------------------------------------------------------------------------------

    def _action(self, action_id: str) -> Action:
        action = self.policy.actions.get(action_id)
        if action is None:
            raise refuse(grpc.StatusCode.NOT_FOUND, "ACTION_UNKNOWN", f"there is no action {action_id[:128]!r}")
        return action

    def _input(self, action: Action, input_json: str) -> dict:
        try:
            value = parse(input_json, INPUT_LIMITS)
        except BoundedJsonError as exc:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "INPUT_NOT_JSON", f"{exc.pointer or '/'}: {exc}") from None
        violations = action.contract.violations(value)
        if violations:
            first = violations[0]
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "INPUT_INVALID", f"{first.pointer or '/'}: {first.message}")
        return value

    def _prepare(self, action: Action, value: dict) -> dict:
        """The exact arguments a person will approve (before-values and record versions included)."""
        fixed = action.spec.data_change
        if fixed is not None:
            entity = fixed.entity
            changes = [{"record_id": value["record_id"], "field": fixed.field, "value": fixed.value}]
        else:
            entity, changes = value["entity"], value["changes"]
        entries = self.changes.prepare(entity, changes)
        return {"action": action.action_id, "entity": entity, "reason": value.get("reason", ""),
                "entries": [e.as_json() for e in entries]}

    async def submit(self, actor: Actor, request: capabilities_pb2.SubmitIntentRequest) -> tuple[Intent, bool]:
        action = self._action(request.action_id)
        value = self._input(action, request.input_json)
        if not 1 <= len(request.idempotency_key) <= 128:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "IDEMPOTENCY_KEY_REQUIRED",
                         "idempotency_key: 1-128 characters")
        if not request.session_id:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "SESSION_REQUIRED", "session_id is required")
        scope_actor = actor.actor_id if action.spec.idempotency_scope == "actor" else ""
        claim = sha256(canonical([actor.tenant_id, scope_actor, action.action_id, value, request.idempotency_key]))
        earlier = await self.db(self.store.by_claim, claim)
        if earlier is not None:
            return earlier, True
        arguments = await self.db(self._prepare, action, value)
        arguments_json = canonical(arguments)
        fields = {"tenant_id": actor.tenant_id, "actor_id": actor.actor_id, "session_id": request.session_id,
                  "action_id": action.action_id, "effect": action.effect, "input_json": canonical(value),
                  "arguments_json": arguments_json, "arguments_sha256": sha256(arguments_json),
                  "surface": request.surface.SerializeToString() if request.HasField("surface") else None,
                  "dry_run": self.dry_run}
        # Every action the policy allows today writes, and writes always wait for a person.
        intent, replayed = await self.db(self.store.create, claim, fields, self.approval_ttl, action.spec.effect)
        if not replayed:
            self.metrics.requested.inc()
        return intent, replayed

    # --- decide -------------------------------------------------------------------------------------------

    async def decide(self, actor: Actor, request: capabilities_pb2.DecideRequest) -> tuple[Intent, bool]:
        """Record a person's decision and, for an approval, run the effect once; (intent, replayed)."""
        if request.decision not in (capabilities_pb2.DECISION_APPROVE, capabilities_pb2.DECISION_REJECT):
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "DECISION_REQUIRED", "decision: approve or reject")
        if len(request.reason) > 2_000:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "REASON_TOO_LONG", "reason: at most 2000 characters")
        if request.decision_id and not DECISION_ID.fullmatch(request.decision_id):
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "DECISION_ID_INVALID",
                         "decision_id: 1-128 characters of A-Z a-z 0-9 . _ : -")
        approve = request.decision == capabilities_pb2.DECISION_APPROVE
        try:
            async with self._one_decision_at_a_time(request.approval_id):
                signature = await self.db(self._signature, actor, request)
                intent, approval, replayed = await self.db(
                    self.store.decide, request.approval_id, actor.tenant_id, actor.actor_id, approve,
                    request.reason, request.arguments_sha256, partial(_entries_for, request), request.decision_id,
                    _decision_digest(request), signature)
                running = self._start(intent, approval.approved_entries or []) if approve and not replayed else None
        except TesseraError as exc:  # every refused decision is on the record, with its reason
            await self.db(self.store.audit, actor.tenant_id, "decision-refused", actor.actor_id,
                          approval_id=request.approval_id[:128], reason=exc.reason,
                          signed_with=request.WhichOneof("signature") or "unsigned")
            raise
        if replayed:  # a retry: the first call's outcome, waiting for its effect as that call did
            return await self._outcome(intent), True
        self.metrics.decided(approval.state, approval.decided_at - approval.requested_at)
        if running is None:
            return intent, False
        return await asyncio.shield(running), False

    def _signature(self, actor: Actor, request: capabilities_pb2.DecideRequest) -> Signature | None:
        """The decision's verified signature while the approval is the person's and pending; None otherwise
        (the store then answers a retry with its outcome, or refuses, and never decides on None)."""
        found = self.store.approval_of(request.approval_id, actor.tenant_id, actor.actor_id)
        if found is None:
            return None
        approval, intent = found
        if approval.state == "pending":
            return self.signatures.verify(actor, request, intent)
        retry = request.decision_id and request.decision_id == approval.decision_id
        if not retry and request.nonce and self.signatures.people.nonce_used(request.nonce):
            raise refuse(grpc.StatusCode.FAILED_PRECONDITION, "ASSERTION_REPLAYED",
                         "this signed decision was used already; each signature decides once",
                         outcome(approval, intent))
        return None

    async def approval_of(self, actor: Actor, approval_id: str) -> tuple:
        """(approval, intent) of one of the person's approvals; another person's reads as unknown."""
        found = await self.db(self.store.approval_of, approval_id, actor.tenant_id, actor.actor_id)
        if found is None:
            raise refuse(grpc.StatusCode.NOT_FOUND, "APPROVAL_UNKNOWN", "no such approval")
        return found

    async def begin_decision(self, actor: Actor, approval_id: str) -> capabilities_pb2.BeginDecisionResponse:
        """A nonce to sign a decision on one of the person's pending approvals with."""
        await self.expire()
        approval, intent = await self.approval_of(actor, approval_id)
        if approval.state != "pending":
            raise refuse(grpc.StatusCode.FAILED_PRECONDITION,
                         "APPROVAL_EXPIRED" if approval.state == "expired" else "APPROVAL_ALREADY_DECIDED",
                         f"the approval was already {approval.state}", outcome(approval, intent))
        return await self.db(self.signatures.begin, actor, approval, intent)

    @contextlib.asynccontextmanager
    async def _one_decision_at_a_time(self, approval_id: str):
        lock, users = self._deciding.get(approval_id, (asyncio.Lock(), 0))
        self._deciding[approval_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._deciding[approval_id]
            if users == 1:
                del self._deciding[approval_id]
            else:
                self._deciding[approval_id] = (lock, users - 1)

    async def _outcome(self, intent: Intent) -> Intent:
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

    # --- execute ------------------------------------------------------------------------------------------

    async def execute(self, intent: Intent, approved_entries: list[str], resumed: bool = False) -> Intent:
        """Run an approved intent once; a restart calls this with `resumed` for intents left running.

        The effect runs in its own task: if the caller's deadline passes or it goes away, the effect still
        finishes and records its receipt (read it with GetReceipt, or retry the decision with its id)."""
        return await asyncio.shield(self._start(intent, approved_entries, resumed))

    def _start(self, intent: Intent, approved_entries: list[str], resumed: bool = False) -> asyncio.Future:
        """The intent's one execution, started now unless it is already running (no await: nothing can slip
        in between the check and the registration)."""
        running = self._running.get(intent.intent_id)
        if running is None:
            running = asyncio.ensure_future(self._execute_once(intent, approved_entries, resumed))
            self._running[intent.intent_id] = running
            running.add_done_callback(lambda _: self._running.pop(intent.intent_id, None))
        return running

    async def _execute_once(self, intent: Intent, approved_entries: list[str], resumed: bool) -> Intent:
        holding = asyncio.ensure_future(self._hold_lease(intent.intent_id))
        try:
            return await self._execute(intent, approved_entries, resumed)
        except Exception:  # never leave an approved intent silently running
            logger.exception("executing %s failed", intent.intent_id)
            current = await self.db(self.store.intent, intent.intent_id)
            return await self.db(self.store.finish, intent.intent_id, common_pb2.INTENT_STATUS_FAILED,
                                 "OUTCOME_UNKNOWN" if current.attempted else "EFFECT_FAILED", "")
        finally:
            holding.cancel()

    async def _hold_lease(self, intent_id: str) -> None:
        """Renew our lease on a running intent until its effect ends, so no other replica takes it up."""
        while True:
            await asyncio.sleep(self.store.lease_seconds / 3)
            try:
                if not await asyncio.get_running_loop().run_in_executor(self.lease_pool, self.store.renew,
                                                                        intent_id):
                    return  # it ended (or, after a long outage, another replica took it up)
            except Exception:  # the database hiccuped: the next renewal may still come in time
                logger.exception("renewing the lease on %s failed", intent_id)

    async def _execute(self, intent: Intent, approved_entries: list[str], resumed: bool) -> Intent:
        if intent.action_id not in self.policy.actions:
            return await self._execute_tool(intent, resumed)
        return await self._execute_change(intent, approved_entries, resumed)

    async def _execute_change(self, intent: Intent, approved_entries: list[str], resumed: bool) -> Intent:
        """An approved data change: reconciled against record versions after a crash, else applied once."""
        arguments = intent.arguments
        entries = [Entry(**e) for e in arguments["entries"] if e["entry_id"] in approved_entries]
        if resumed and intent.attempted:
            state = await self.db(self.changes.applied_state, arguments["entity"], entries)
            if state == "applied":
                return await self._finish(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "", entries, resumed=True)
            if state == "diverged":
                return await self._finish(intent, common_pb2.INTENT_STATUS_FAILED, "OUTCOME_DIVERGED", entries)
        await self.db(self.store.mark_attempted, intent.intent_id)
        if intent.dry_run:  # a recording stub: the would-be call is in the audit trail, nothing changes
            logger.info("dry run: %s would change %d record(s)", intent.action_id, len(entries))
            return await self._finish(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "", entries, dry_run=True)
        try:
            changed = await self.db(self.changes.apply, arguments["entity"], entries)
        except VersionConflict:
            return await self._finish(intent, common_pb2.INTENT_STATUS_FAILED, "VERSION_CONFLICT", entries)
        except Exception:
            logger.exception("data change %s failed", intent.intent_id)
            return await self._finish(intent, common_pb2.INTENT_STATUS_FAILED, "EFFECT_FAILED", entries)
        return await self._finish(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "", entries, records=changed)

    async def _execute_tool(self, intent: Intent, resumed: bool) -> Intent:
        """An approved MCP mutation: re-checked against the policy now, then called once."""
        if resumed and intent.attempted:  # it may have run: never repeat a third party's effect blindly
            return await self._finish_tool(intent, common_pb2.INTENT_STATUS_FAILED, "OUTCOME_UNKNOWN", {})
        states, _ = await self.gate.survey()  # re-authorized at decision time: pinned, listed, reachable
        state = states.get(intent.action_id)
        if state is None or not state.available:
            reason = "TOOL_NOT_ALLOWED" if state is None else f"TOOL_{state.reason or 'UNAVAILABLE'}"
            return await self._finish_tool(intent, common_pb2.INTENT_STATUS_FAILED, reason, {})
        arguments = intent.arguments["arguments"]
        violations = state.contract.violations(arguments)
        if violations:  # the tool was re-pinned with another schema since the person approved
            return await self._finish_tool(intent, common_pb2.INTENT_STATUS_FAILED, "ARGUMENTS_NO_LONGER_VALID",
                                           {"error": violations[0].message})
        await self.db(self.store.mark_attempted, intent.intent_id)
        if intent.dry_run:  # a recording stub: the would-be call is in the audit trail, nothing runs
            logger.info("dry run: would call %s", intent.action_id)
            return await self._finish_tool(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "",
                                           {"dry_run": True, "ok": True}, would_call=arguments)
        try:
            result = await self.gate.call(intent.action_id, arguments)
        except ToolCallFailed as exc:
            # A call never sent (the server did not start, or the tool was denied) did nothing; one that
            # hung or broke mid-call may have acted.
            reason = "OUTCOME_UNKNOWN" if exc.sent else exc.reason
            return await self._finish_tool(intent, common_pb2.INTENT_STATUS_FAILED, reason,
                                           {"error": str(exc)}, cause=exc.reason)
        text = result_text(result)
        if result.is_error:
            return await self._finish_tool(intent, common_pb2.INTENT_STATUS_FAILED, "TOOL_ERROR", {"text": text})
        return await self._finish_tool(intent, common_pb2.INTENT_STATUS_SUCCEEDED, "", {"text": text})

    async def _finish_tool(self, intent: Intent, status: int, reason: str, result: dict, **detail) -> Intent:
        return await self.db(self.store.finish, intent.intent_id, status, reason, sha256(canonical(result)),
                             **detail)

    # --- external tools (§8) ------------------------------------------------------------------------------

    async def list_tools(self, session_id: str) -> dict[str, ToolState]:
        """The session's tools: fetched and hashed afresh when the session starts (its first listing or
        call), then the same view for every turn of it, except that a tool this replica has seen drift
        since is denied (mcp_gate.ToolGate)."""
        if not session_id:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "SESSION_REQUIRED", "session_id is required")
        return await self.gate.session(session_id)

    async def _reads_recorded(self, session_id: str) -> None:
        """Wait until every read of the run is in the database (they are written behind the reply).

        A read whose record failed is written again here; if that fails too, nothing that needs the
        record (an approval, a card) goes ahead, and the reads not yet written stay for the next attempt:
        no card may hide a read."""
        for write in list(self._pending_reads.get(session_id, [])):
            await asyncio.wait({write.future})  # its outcome, whatever it is, without raising it here
            if not write.future.cancelled() and write.future.exception() is None:
                continue  # written (and forgotten by its own callback)
            try:
                await self.db(write.retry)
            except Exception:
                logger.exception("recording an external read failed twice")
                raise refuse(grpc.StatusCode.UNAVAILABLE, "READ_RECORD_FAILED",
                             "an external read of this run could not be recorded; try again") from None
            kept = [w for w in self._pending_reads.get(session_id, []) if w is not write]
            if kept:
                self._pending_reads[session_id] = kept
            else:
                self._pending_reads.pop(session_id, None)

    def _forget_written(self, session_id: str, done: asyncio.Future) -> None:
        """Drop the records that were written; failed ones stay until the next flush retries them."""
        if not done.cancelled() and done.exception() is not None:
            logger.error("recording an external read failed (retried before any approval): %s", done.exception())
        kept = [w for w in self._pending_reads.get(session_id, [])
                if not w.future.done() or w.future.cancelled() or w.future.exception() is not None]
        if kept:
            self._pending_reads[session_id] = kept
        else:
            self._pending_reads.pop(session_id, None)

    async def run_reads(self, session_id: str) -> list:
        """A run's recorded external reads, newest first (for the approval card)."""
        await self._reads_recorded(session_id)
        return await self.db(self.store.reads_of, session_id)

    async def run_taint(self, session_id: str) -> tuple[bool, bool]:
        """(tainted, flagged) of a run: from memory for this process's reads, else from the database."""
        known = self._taint.get(session_id)
        if known is None:
            reads = await self.run_reads(session_id)
            known = self._taint[session_id] = (bool(reads), any(json.loads(r.matches_json) for r in reads))
            while len(self._taint) > 10_000:
                self._taint.pop(next(iter(self._taint)))
        return known

    async def call_tool(self, actor: Actor, request: capabilities_pb2.CallToolRequest):
        """A model's tool call: denied/drifted/unreachable → unavailable; a read runs and comes back screened;
        a mutation becomes an intent waiting for a person. Returns (outcome field, value, intent or None)."""
        if not request.session_id:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "SESSION_REQUIRED", "session_id is required")
        if not 1 <= len(request.call_id) <= 128:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "CALL_ID_REQUIRED", "call_id: 1-128 characters")
        state = (await self.gate.session(request.session_id)).get(request.tool_id)
        if state is None or not state.available:
            availability = capabilities_pb2.TOOL_AVAILABILITY_DENIED if state is None else state.availability
            reason = "TOOL_NOT_ALLOWED" if state is None else state.reason
            await self.db(self.store.audit, actor.tenant_id, "tool-refused", actor.actor_id,
                          tool_id=request.tool_id[:200], reason=reason, session_id=request.session_id)
            return "unavailable", capabilities_pb2.ToolUnavailable(
                availability=availability, reason=reason,
                message=f"{request.tool_id[:200]} is not available ({reason})"), None
        try:
            arguments = parse(request.arguments_json, INPUT_LIMITS)
        except BoundedJsonError as exc:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "ARGUMENTS_NOT_JSON", f"{exc.pointer or '/'}: {exc}") \
                from None
        violations = state.contract.violations(arguments)
        if violations:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "ARGUMENTS_INVALID",
                         f"{violations[0].pointer or '/'}: {violations[0].message}")
        if state.rule.risk == "read":
            return await self._read(actor, request, arguments)
        await self._reads_recorded(request.session_id)  # the card must show every read that came before
        claim = sha256(canonical([actor.tenant_id, actor.actor_id, request.session_id, request.tool_id, arguments,
                                  request.call_id]))
        arguments_json = canonical({"tool": request.tool_id, "arguments": arguments})
        fields = {"tenant_id": actor.tenant_id, "actor_id": actor.actor_id, "session_id": request.session_id,
                  "turn_id": request.turn_id[:64], "action_id": request.tool_id,
                  "effect": common_pb2.ACTION_EFFECT_IRREVERSIBLE_WRITE,
                  "input_json": canonical(arguments), "arguments_json": arguments_json,
                  "arguments_sha256": sha256(arguments_json), "surface": None, "dry_run": self.dry_run}
        intent, replayed = await self.db(self.store.create, claim, fields, self.approval_ttl, "mutate")
        if not replayed:
            self.metrics.requested.inc()
        found = await self.db(self.store.approval, intent.approval_id)
        pending = capabilities_pb2.PendingApproval(approval_id=intent.approval_id)
        if found:
            pending.expires_at.FromNanoseconds(int(found[0].expires_at * 1e9))
        return "pending_approval", pending, intent

    async def cancel_turn(self, actor: Actor, request: capabilities_pb2.CancelIntentsRequest) -> list[Intent]:
        if not request.session_id or not request.turn_id:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "TURN_REQUIRED", "session_id and turn_id are required")
        cancelled = await self.db(self.store.cancel_turn, actor.tenant_id, actor.actor_id, request.session_id,
                                  request.turn_id)
        for intent in cancelled:
            self.metrics.decided("cancelled", time.time() - intent.accepted_at)
        return cancelled

    async def record_reads(self, actor: Actor, request: capabilities_pb2.RecordReadsRequest) -> list:
        """External text read outside the broker (probe values): screened here and recorded as the run's reads."""
        if not request.session_id:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "SESSION_REQUIRED", "session_id is required")
        if not 1 <= len(request.reads) <= MAX_RECORDED_READS:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "READS_INVALID", f"1-{MAX_RECORDED_READS} reads per call")
        screened = []
        for read in request.reads:
            result = screen(read.text, read.source[:200], read.ref[:200])
            matches = [{"rule": m.rule, "snippet": m.snippet, "ref": m.ref} for m in result.matches]
            await self.db(self.store.record_read, actor.tenant_id, actor.actor_id, request.session_id,
                          request.turn_id, result.source, result.ref, result.text, result.clipped, matches)
            _, flagged = await self.run_taint(request.session_id)
            self._taint[request.session_id] = (True, flagged or bool(matches))
            screened.append(capabilities_pb2.UntrustedContent(
                text=result.text, source=result.source, ref=result.ref, clipped=result.clipped,
                matches=[capabilities_pb2.ScreenMatch(rule=m.rule, snippet=m.snippet, source=result.source,
                                                      ref=m.ref) for m in result.matches]))
        return screened

    async def _read(self, actor: Actor, request, arguments: dict):
        try:
            result = await self.gate.call(request.tool_id, arguments)
        except ToolCallFailed as exc:
            if exc.availability != capabilities_pb2.TOOL_AVAILABILITY_UNREACHABLE:  # denied as it was to go out
                await self.db(self.store.audit, actor.tenant_id, "tool-refused", actor.actor_id,
                              tool_id=request.tool_id[:200], reason=exc.reason, session_id=request.session_id)
            return "unavailable", capabilities_pb2.ToolUnavailable(
                availability=exc.availability, reason=exc.reason,
                message=str(exc)), None
        text = ("[the tool reported an error] " if result.is_error else "") + result_text(result)
        ref = _readable_ref(arguments)
        loop = asyncio.get_running_loop()
        if len(text) < INLINE_SCREEN_CHARS:  # short text screens in microseconds: no thread hop
            screened = screen(text, request.tool_id, ref)
        else:
            screened = await loop.run_in_executor(self.pool, screen, text, request.tool_id, ref)
        matches = [{"rule": m.rule, "snippet": m.snippet, "ref": m.ref} for m in screened.matches]
        tainted, flagged = await self.run_taint(request.session_id)
        self._taint[request.session_id] = (True, flagged or bool(matches))
        # Written behind the reply (the model does not wait for our bookkeeping); anything that shows a
        # person the run's reads, or asks them to approve, waits for these writes first.
        read = ExternalRead(actor.tenant_id, actor.actor_id, request.session_id, request.turn_id, request.tool_id,
                            ref, screened.text, screened.clipped, matches)
        write = _PendingRead(self.journal.add(read), partial(self.store.record_reads, [read]))
        self._pending_reads.setdefault(request.session_id, []).append(write)
        write.future.add_done_callback(lambda done: self._forget_written(request.session_id, done))
        return "content", capabilities_pb2.UntrustedContent(
            text=screened.text, source=request.tool_id, ref=ref, clipped=screened.clipped,
            matches=[capabilities_pb2.ScreenMatch(rule=m.rule, snippet=m.snippet, source=request.tool_id, ref=m.ref)
                     for m in screened.matches]), None

    async def _finish(self, intent: Intent, status: int, reason: str, entries: list[Entry], **detail) -> Intent:
        result = {"status": common_pb2.IntentStatus.Name(status), "applied": [e.entry_id for e in entries]
                  if status == common_pb2.INTENT_STATUS_SUCCEEDED else [], **detail}
        return await self.db(self.store.finish, intent.intent_id, status, reason, sha256(canonical(result)),
                              entries=[e.entry_id for e in entries], **detail)

    async def resume(self) -> int:
        """The start-up pass: take up what a previous process (or a dead replica) left running; how many.

        A lone broker on SQLite takes up every running intent (whatever runs was left by its previous
        life); replicas on PostgreSQL only those whose lease ran out."""
        try:
            return await self.take_up(any_lease=self.store.engine.dialect.name == "sqlite")
        finally:  # retried decisions stop waiting for this pass, whatever became of it
            self._resumed.set()

    async def take_up(self, any_lease: bool = False) -> int:
        """Claim running intents whose replica stopped renewing their lease, and start running them here
        (their effects then run under our lease); how many were taken up."""
        taken = 0
        for intent in await self.db(self.store.take_up, 10, any_lease):
            try:
                found = await self.db(self.store.approval, intent.approval_id)
                self._start(intent, (found[0].approved_entries or []) if found else [], resumed=True)
                taken += 1
            except Exception:  # its lease runs out again: the next round (here or elsewhere) retries
                logger.exception("could not take up intent %s", intent.intent_id)
        return taken

    async def expire(self) -> int:
        expired = await self.db(self.store.expire_due, time.time())
        for approval in expired:
            self.metrics.decided("expired", approval.expires_at - approval.requested_at)
        return len(expired)


def _entries_for(request: capabilities_pb2.DecideRequest, intent: Intent) -> list[str]:
    """The entries an approval covers: checked against the intent inside the deciding transaction."""
    known = [e["entry_id"] for e in intent.arguments.get("entries", [])]
    decided = {e.entry_id: e.decision for e in request.entries}
    if "entries" not in intent.arguments and not decided:
        return []  # not a data change: the decision covers the one call
    unknown = sorted(set(decided) - set(known))
    if unknown:
        raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "ENTRY_UNKNOWN", f"no entry {unknown[0][:128]!r}")
    # No per-entry decisions: the whole request. Otherwise only the entries marked approve.
    chosen = known if not decided else [e for e in known if decided.get(e) == capabilities_pb2.DECISION_APPROVE]
    if not chosen:
        raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "NOTHING_APPROVED",
                     "approve at least one entry, or reject the request")
    return chosen


def _decision_digest(request: capabilities_pb2.DecideRequest) -> str:
    """What a decision says, hashed: a retry under the same decision id must say exactly the same."""
    entries = {e.entry_id: int(e.decision) for e in request.entries}  # as `_entries_for` reads them
    return sha256(canonical({"decision": int(request.decision), "entries": [list(e) for e in sorted(entries.items())],
                             "reason": request.reason, "arguments_sha256": request.arguments_sha256}))


def _readable_ref(arguments: dict) -> str:
    """Where a read came from, for a person: "ticket_id 4821" rather than a JSON blob."""
    scalars = [f"{key} {value}" for key, value in sorted(arguments.items())
               if isinstance(value, (str, int, float)) and not isinstance(value, bool)]
    return (", ".join(scalars) if scalars and len(scalars) == len(arguments) else canonical(arguments))[:200]


@dataclass
class _PendingRead:
    """A read record being written behind the reply, and how to write it again."""

    future: asyncio.Future
    retry: Callable[[], None]


def card(approval, intent: Intent, dry_run: bool, reads: list, wording: Wording) -> capabilities_pb2.ApprovalCard:
    """What a person sees before deciding (§8): what approving does in words, the exact arguments (a
    before/after diff for data changes, each record named), the run's taint and flags with each snippet and
    its source, and its last three external reads."""
    arguments = intent.arguments
    changes = []
    for i, e in enumerate(arguments.get("entries", [])):
        record, field = wording.change(arguments.get("entity", ""), e)
        changes.append(capabilities_pb2.ArgumentChange(
            path=f"/entries/{i}/after", before_json=json.dumps(e["before"]), after_json=json.dumps(e["after"]),
            record_version=str(e["version"]), entry_id=e["entry_id"], record=record, field=field))
    matches = [capabilities_pb2.ScreenMatch(rule=m["rule"], snippet=m["snippet"], source=r.source, ref=m["ref"])
               for r in reads for m in json.loads(r.matches_json)]
    recent = [capabilities_pb2.UntrustedContent(
        text=r.text[:2_000], source=r.source, ref=r.ref, clipped=r.clipped,
        matches=[capabilities_pb2.ScreenMatch(rule=m["rule"], snippet=m["snippet"], source=r.source, ref=m["ref"])
                 for m in json.loads(r.matches_json)]) for r in reads[:3]]
    flagged = bool(matches)
    result = capabilities_pb2.ApprovalCard(
        summary=summary(approval, intent, wording), effect=intent.effect, arguments_json=intent.arguments_json,
        arguments_sha256=intent.arguments_sha256, changes=changes, dry_run=dry_run or intent.dry_run,
        tainted=bool(reads), matches=matches, recent_reads=recent, decided_by=approval.decided_by or "",
        signed_with=approval.signed_with or "")
    result.summary.flagged = flagged
    return result


def summary(approval, intent: Intent, wording: Wording) -> capabilities_pb2.ApprovalSummary:
    result = capabilities_pb2.ApprovalSummary(
        approval_id=approval.approval_id, intent_id=intent.intent_id, tool_id=intent.action_id,
        risk=capabilities_pb2.TOOL_RISK_MUTATE, status=intent.status,
        title=wording.title(intent.action_id, intent.arguments))
    result.requested_at.FromNanoseconds(int(approval.requested_at * 1e9))
    result.expires_at.FromNanoseconds(int(approval.expires_at * 1e9))
    return result
