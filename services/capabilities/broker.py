"""The intent flow (§7): validate → authorize → claim → approval → decide → execute once → receipt.

Blocking work (the broker's database, the warehouse) runs on a bounded thread
pool; this module only orders the steps. Execution is split so a crash can be
recovered without repeating an effect: `attempted` is committed before the
effect runs, and a restart reconciles an attempted data change against the
record versions instead of running it again blindly.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import grpc

from services.capabilities.changes import DataChanges, Entry, VersionConflict
from services.capabilities.metrics import BrokerMetrics
from services.capabilities.policy import Action, ActionPolicy
from services.capabilities.store import BrokerStore, Intent, refuse
from shared.actors import Actor
from shared.bounded_json import BoundedJsonError, Limits, canonical, parse
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2

logger = logging.getLogger("tessera.broker")
INPUT_LIMITS = Limits(max_raw_bytes=64 * 1024, max_values=2_000)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Broker:
    def __init__(self, policy: ActionPolicy, store: BrokerStore, changes: DataChanges, pool: ThreadPoolExecutor,
                 approval_ttl: float, dry_run: bool, metrics: BrokerMetrics,
                 on_event: Callable[[], None] = lambda: None) -> None:
        self.policy = policy
        self.store = store
        self.changes = changes
        self.pool = pool
        self.approval_ttl = approval_ttl
        self.dry_run = dry_run
        self.metrics = metrics
        self.on_event = on_event  # wakes the publisher: a new host event is in the outbox
        self._executing: set[str] = set()

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

    async def decide(self, actor: Actor, request: capabilities_pb2.DecideRequest) -> Intent:
        if request.decision not in (capabilities_pb2.DECISION_APPROVE, capabilities_pb2.DECISION_REJECT):
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "DECISION_REQUIRED", "decision: approve or reject")
        if len(request.reason) > 2_000:
            raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "REASON_TOO_LONG", "reason: at most 2000 characters")
        approve = request.decision == capabilities_pb2.DECISION_APPROVE

        def entries_for(intent: Intent) -> list[str]:
            known = [e["entry_id"] for e in intent.arguments.get("entries", [])]
            decided = {e.entry_id: e.decision for e in request.entries}
            unknown = sorted(set(decided) - set(known))
            if unknown:
                raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "ENTRY_UNKNOWN", f"no entry {unknown[0]!r}")
            # No per-entry decisions: the whole request. Otherwise only the entries marked approve.
            chosen = known if not decided else [e for e in known if decided.get(e) == capabilities_pb2.DECISION_APPROVE]
            if not chosen:
                raise refuse(grpc.StatusCode.INVALID_ARGUMENT, "NOTHING_APPROVED",
                             "approve at least one entry, or reject the request")
            return chosen

        intent, approval = await self.db(self.store.decide, request.approval_id, actor.tenant_id, actor.actor_id,
                                          approve, request.reason, request.arguments_sha256, entries_for)
        self.metrics.decided(approval.state, approval.decided_at - approval.requested_at)
        if not approve:
            return intent
        return await self.execute(intent, approval.approved_entries or [])

    # --- execute ------------------------------------------------------------------------------------------

    async def execute(self, intent: Intent, approved_entries: list[str], resumed: bool = False) -> Intent:
        """Run an approved intent once; a restart calls this with `resumed` for intents left running."""
        if intent.intent_id in self._executing:
            return intent
        self._executing.add(intent.intent_id)
        try:
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
        finally:
            self._executing.discard(intent.intent_id)

    async def _finish(self, intent: Intent, status: int, reason: str, entries: list[Entry], **detail) -> Intent:
        result = {"status": common_pb2.IntentStatus.Name(status), "applied": [e.entry_id for e in entries]
                  if status == common_pb2.INTENT_STATUS_SUCCEEDED else [], **detail}
        return await self.db(self.store.finish, intent.intent_id, status, reason, sha256(canonical(result)),
                              entries=[e.entry_id for e in entries], **detail)

    async def resume(self) -> int:
        """Take up intents a previous process approved but did not finish; how many."""
        running = await self.db(self.store.running)
        for intent in running:
            found = await self.db(self.store.approval, intent.approval_id)
            approved = (found[0].approved_entries or []) if found else []
            await self.execute(intent, approved, resumed=True)
        return len(running)

    async def expire(self) -> int:
        expired = await self.db(self.store.expire_due, time.time())
        for approval in expired:
            self.metrics.decided("expired", approval.expires_at - approval.requested_at)
        return len(expired)


def card(approval, intent: Intent, dry_run: bool) -> capabilities_pb2.ApprovalCard:
    """What a person sees before deciding (§8)."""
    arguments = intent.arguments
    changes = [capabilities_pb2.ArgumentChange(
        path=f"/entries/{i}/after", before_json=json.dumps(e["before"]), after_json=json.dumps(e["after"]),
        record_version=str(e["version"]), entry_id=e["entry_id"]) for i, e in enumerate(arguments.get("entries", []))]
    return capabilities_pb2.ApprovalCard(
        summary=summary(approval, intent), effect=intent.effect, arguments_json=intent.arguments_json,
        arguments_sha256=intent.arguments_sha256, changes=changes, dry_run=dry_run or intent.dry_run)


def summary(approval, intent: Intent) -> capabilities_pb2.ApprovalSummary:
    result = capabilities_pb2.ApprovalSummary(
        approval_id=approval.approval_id, intent_id=intent.intent_id, tool_id=intent.action_id,
        risk=capabilities_pb2.TOOL_RISK_MUTATE, status=intent.status)
    result.requested_at.FromNanoseconds(int(approval.requested_at * 1e9))
    result.expires_at.FromNanoseconds(int(approval.expires_at * 1e9))
    return result
