"""The intent flow up to the effect (§7): validate → authorize → claim → approval → decide.

Every action the policy allows writes, and writes always wait for a person: a submitted intent (or a
model's call of a mutating tool) becomes a pending approval; a person's decision on it is checked,
signed, recorded once, and an approval hands the intent to `Execution`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from services.capabilities.changes import DataChanges
from services.capabilities.database import database_away
from services.capabilities.execution import Execution, sha256
from services.capabilities.metrics import BrokerMetrics
from services.capabilities.policy import Action, ActionPolicy
from services.capabilities.ports import IntentRecords
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import Intent, Signature, Surface, outcome
from shared.data.bounded_json import BoundedJsonError, Limits, canonical, parse
from shared.identity.actors import Actor
from shared.rpc.refusals import Conflict, Invalid, NotFound, Refusal
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2

INPUT_LIMITS = Limits(max_raw_bytes=64 * 1024, max_values=2_000)


@dataclass(eq=False)  # one per broker: compared by identity
class Intents:
    """Submitting intents and deciding their approvals. `db` runs a blocking call on the broker's database (on
    its pool); `elsewhere` runs one on the change target, which answers for itself (CHANGE_TARGET_UNAVAILABLE)."""

    policy: ActionPolicy
    store: IntentRecords
    changes: DataChanges
    execution: Execution
    signatures: DecisionSignatures
    metrics: BrokerMetrics
    db: Callable[..., Awaitable]
    elsewhere: Callable[..., Awaitable]
    approval_ttl: float
    dry_run: bool
    # approval → (lock, users): one Decide at a time per approval in this process, so a retry racing its
    # original finds the original's execution already registered with `Execution`.
    _deciding: dict[str, tuple[asyncio.Lock, int]] = field(default_factory=dict, init=False)

    # --- submit -------------------------------------------------------------------------------------------

    async def submit(self, actor: Actor, request: capabilities_pb2.SubmitIntentRequest) -> tuple[Intent, bool]:
        action = self._action(request.action_id)
        value = action_input(action, request.input_json)
        scope_actor = actor.actor_id if action.spec.idempotency_scope == "actor" else ""
        claim = sha256(canonical([actor.tenant_id, scope_actor, action.action_id, value, request.idempotency_key]))
        earlier = await self.db(self.store.by_claim, claim)
        if earlier is not None:
            return earlier, True
        arguments = await self.elsewhere(self._prepare, action, value)
        fields = self._fields(actor, request.session_id, action.action_id, action.effect, value, arguments)
        shown = request.surface
        fields["surface"] = Surface(shown.surface_id, shown.revision_id, shown.node_id, shown.command_id) \
            if shown.surface_id else None
        return await self._create(claim, fields, action.spec.effect)

    async def propose_tool_call(self, actor: Actor, request: capabilities_pb2.CallToolRequest,
                                arguments: dict) -> tuple[Intent, capabilities_pb2.PendingApproval]:
        """A model's call of a mutating tool, as an intent waiting for a person (the run's reads recorded)."""
        claim = sha256(canonical([actor.tenant_id, actor.actor_id, request.session_id, request.tool_id, arguments,
                                  request.call_id]))
        fields = self._fields(actor, request.session_id, request.tool_id,
                              common_pb2.ACTION_EFFECT_IRREVERSIBLE_WRITE, arguments,
                              {"tool": request.tool_id, "arguments": arguments})
        fields["turn_id"] = request.turn_id[:64]
        intent, _ = await self._create(claim, fields, "mutate")
        found = await self.db(self.store.approval, intent.approval_id)
        pending = capabilities_pb2.PendingApproval(approval_id=intent.approval_id)
        if found:
            pending.expires_at.FromNanoseconds(int(found[0].expires_at * 1e9))
        return intent, pending

    def _action(self, action_id: str) -> Action:
        action = self.policy.actions.get(action_id)
        if action is None:
            raise NotFound("ACTION_UNKNOWN", f"there is no action {action_id[:128]!r}")
        if action_id in self.policy.withheld:
            raise Conflict("ACTION_NOT_OFFERED",
                           f"action {action_id} is not offered here: {self.policy.withheld[action_id]}")
        return action

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

    def _fields(self, actor: Actor, session_id: str, action_id: str, effect: int, value: dict,
                arguments: dict) -> dict:
        """An intent's record: who asked, what for, and the exact arguments a person approves (hashed)."""
        arguments_json = canonical(arguments)
        return {"tenant_id": actor.tenant_id, "actor_id": actor.actor_id, "session_id": session_id,
                "action_id": action_id, "effect": effect, "input_json": canonical(value),
                "arguments_json": arguments_json, "arguments_sha256": sha256(arguments_json), "surface": None,
                "dry_run": self.dry_run}

    async def _create(self, claim: str, fields: dict, effect: str) -> tuple[Intent, bool]:
        """The intent and its pending approval, or the one an earlier call with the same claim created."""
        intent, replayed = await self.db(self.store.create, claim, fields, self.approval_ttl, effect)
        if not replayed:
            self.metrics.requested.inc()
        return intent, replayed

    # --- decide -------------------------------------------------------------------------------------------

    async def decide(self, actor: Actor, request: capabilities_pb2.DecideRequest) -> tuple[Intent, bool]:
        """Record a person's decision and, for an approval, run the effect once; (intent, replayed)."""
        approve = request.decision == capabilities_pb2.DECISION_APPROVE
        try:
            async with self._one_decision_at_a_time(request.approval_id):
                signature, entries = await self.db(self._checked_decision, actor, request)
                intent, approval, replayed = await self.db(
                    self.store.decide, request.approval_id, actor.tenant_id, actor.actor_id, approve,
                    request.reason, request.arguments_sha256, entries, request.decision_id,
                    _decision_digest(request), signature)
                running = self.execution.start(intent, approval.approved_entries or []) \
                    if approve and not replayed else None
        except Refusal as exc:  # every refused decision is on the record, with its reason
            if database_away(exc):  # not a refusal: nothing was decided
                raise
            await self.db(self.store.audit, actor.tenant_id, "decision-refused", actor.actor_id,
                          approval_id=request.approval_id[:128], reason=exc.reason,
                          signed_with=request.WhichOneof("signature") or "unsigned")
            raise
        if replayed:  # a retry: the first call's outcome, waiting for its effect as that call did
            return await self.execution.outcome(intent), True
        self.metrics.decided(approval.state, approval.decided_at - approval.requested_at)
        if running is None:
            return intent, False
        return await asyncio.shield(running), False

    def _checked_decision(self, actor: Actor, request: capabilities_pb2.DecideRequest,
                          ) -> tuple[Signature | None, list[str]]:
        """While the approval is the person's and pending: the decision's verified signature and the entries
        an approval covers. Otherwise (None, []): the store then answers a retry with its outcome, or
        refuses, and never decides on None."""
        found = self.store.approval_of(request.approval_id, actor.tenant_id, actor.actor_id)
        if found is None:
            return None, []
        approval, intent = found
        if approval.state == "pending":
            signature = self.signatures.verify(actor, request, intent)
            # Quoting other arguments is refused by the store (ARGUMENTS_CHANGED) before entries matter.
            covers = request.decision == capabilities_pb2.DECISION_APPROVE and \
                request.arguments_sha256 == intent.arguments_sha256
            return signature, _entries_for(request, intent) if covers else []
        retry = request.decision_id and request.decision_id == approval.decision_id
        if not retry and request.nonce and self.signatures.people.nonce_used(request.nonce):
            raise Conflict("ASSERTION_REPLAYED",
                           "this signed decision was used already; each signature decides once",
                           outcome(approval, intent))
        return None, []

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

    async def approval_of(self, actor: Actor, approval_id: str) -> tuple:
        """(approval, intent) of one of the person's approvals; another person's reads as unknown."""
        found = await self.db(self.store.approval_of, approval_id, actor.tenant_id, actor.actor_id)
        if found is None:
            raise NotFound("APPROVAL_UNKNOWN", "no such approval")
        return found

    async def begin_decision(self, actor: Actor, approval_id: str) -> capabilities_pb2.BeginDecisionResponse:
        """A nonce to sign a decision on one of the person's pending approvals with."""
        await self.expire()
        approval, intent = await self.approval_of(actor, approval_id)
        if approval.state != "pending":
            raise Conflict("APPROVAL_EXPIRED" if approval.state == "expired" else "APPROVAL_ALREADY_DECIDED",
                           f"the approval was already {approval.state}", outcome(approval, intent))
        return await self.db(self.signatures.begin, actor, approval, intent)

    async def expire(self) -> int:
        expired = await self.db(self.store.expire_due, time.time())
        for approval in expired:
            self.metrics.decided("expired", approval.expires_at - approval.requested_at)
        return len(expired)

    async def cancel_turn(self, actor: Actor, request: capabilities_pb2.CancelIntentsRequest) -> list[Intent]:
        cancelled = await self.db(self.store.cancel_turn, actor.tenant_id, actor.actor_id, request.session_id,
                                  request.turn_id)
        for intent in cancelled:
            self.metrics.decided("cancelled", time.time() - intent.accepted_at)
        return cancelled


def action_input(action: Action, input_json: str) -> dict:
    """An intent's input, parsed within bounds and checked against the action's input schema."""
    return checked_json(input_json, action.contract, "INPUT")


def checked_json(text: str, contract, what: str) -> dict:
    """JSON from a caller (an intent's input, a tool call's arguments), parsed within bounds and checked against
    its schema; refused as <what>_NOT_JSON or <what>_INVALID with the first problem's pointer."""
    try:
        value = parse(text, INPUT_LIMITS)
    except BoundedJsonError as exc:
        raise Invalid(f"{what}_NOT_JSON", f"{exc.pointer or '/'}: {exc}") from None
    violations = contract.violations(value)
    if violations:
        first = violations[0]
        raise Invalid(f"{what}_INVALID", f"{first.pointer or '/'}: {first.message}")
    return value


def _entries_for(request: capabilities_pb2.DecideRequest, intent: Intent) -> list[str]:
    """The entries an approval covers: checked against the intent inside the deciding transaction."""
    known = [e["entry_id"] for e in intent.arguments.get("entries", [])]
    decided = {e.entry_id: e.decision for e in request.entries}
    if "entries" not in intent.arguments and not decided:
        return []  # not a data change: the decision covers the one call
    unknown = sorted(set(decided) - set(known))
    if unknown:
        raise Invalid("ENTRY_UNKNOWN", f"no entry {unknown[0][:128]!r}")
    # No per-entry decisions: the whole request. Otherwise only the entries marked approve.
    chosen = known if not decided else [e for e in known if decided.get(e) == capabilities_pb2.DECISION_APPROVE]
    if not chosen:
        raise Invalid("NOTHING_APPROVED", "approve at least one entry, or reject the request")
    return chosen


def _decision_digest(request: capabilities_pb2.DecideRequest) -> str:
    """What a decision says, hashed: a retry under the same decision id must say exactly the same."""
    entries = {e.entry_id: int(e.decision) for e in request.entries}  # as `_entries_for` reads them
    return sha256(canonical({"decision": int(request.decision), "entries": [list(e) for e in sorted(entries.items())],
                             "reason": request.reason, "arguments_sha256": request.arguments_sha256}))
