"""The capability broker the servicer calls (§7, §8): one facade over its three parts.

- `Intents` (intents.py): validate → authorize → claim → approval → decide;
- `Execution` (execution.py): an approved effect, run once, under a lease, recoverable after a crash;
- `RunReads` (reads.py): a run's external reads, screened and recorded, and the taint they give it;
the approval card a person reads is built in cards.py. A model's tool call starts here: it is routed
to a read or to an intent waiting for a person.

Blocking work (the broker's database, the warehouse) runs on a bounded thread pool; these modules
only order the steps. Every call on the broker's own database goes through one `BrokerDatabase`
(database.py): a database that does not answer is DATABASE_UNAVAILABLE, said once per outage.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from services.capabilities.changes import DataChanges
from services.capabilities.database import BrokerDatabase, database_away
from services.capabilities.execution import Execution
from services.capabilities.intents import INPUT_LIMITS, Intents, checked_json
from services.capabilities.mcp_gate import ToolCallFailed, ToolGate, ToolState
from services.capabilities.metrics import BrokerMetrics
from services.capabilities.policy import ActionPolicy
from services.capabilities.ports import BrokerStorage
from services.capabilities.reads import RunReads
from services.capabilities.signatures import DecisionSignatures
from services.capabilities.store import Intent
from shared.identity.actors import Actor
from shared.rpc.refusals import Invalid, Refusal
from tessera.capabilities.v1 import capabilities_pb2

__all__ = ["INPUT_LIMITS", "Broker"]


class Broker:
    """What the servicer and the background tasks call; each call is answered by the part that owns it."""

    def __init__(self, *, policy: ActionPolicy, store: BrokerStorage, changes: DataChanges, pool: ThreadPoolExecutor,
                 approval_ttl: float, dry_run: bool, metrics: BrokerMetrics, gate: ToolGate,
                 signatures: DecisionSignatures, on_event: Callable[[], None] = lambda: None,
                 lease_pool: ThreadPoolExecutor | None = None, database: BrokerDatabase | None = None) -> None:
        self.policy = policy
        self.gate = gate
        self.store = store
        self.pool = pool
        self.database = database or BrokerDatabase(pool)  # the process's one (its outage is said once)
        self.dry_run = dry_run
        self.on_event = on_event  # wakes the publisher: a new host event is in the outbox
        lease_pool = lease_pool or ThreadPoolExecutor(max_workers=1, thread_name_prefix="broker-lease")
        self.execution = Execution(policy, store, changes, gate, self.db, self.database, lease_pool)
        self.intents = Intents(policy, store, changes, self.execution, signatures, metrics, self.db,
                               self.database.elsewhere, approval_ttl=approval_ttl, dry_run=dry_run)
        self.reads = RunReads(store, self.database, gate, self.db)
        self.journal = self.reads.journal  # closed when the service stops, after the reads already answered

    async def db(self, fn, *args, **kwargs):
        """A blocking call on the broker's database (on the pool, guarded); afterwards the publisher looks for
        new host events in the outbox."""
        result = await self.database(fn, *args, **kwargs)
        self.on_event()
        return result

    # --- intents (intents.py) and their execution (execution.py) ----------------------------------------

    async def submit(self, actor: Actor, request: capabilities_pb2.SubmitIntentRequest) -> tuple[Intent, bool]:
        return await self.intents.submit(actor, request)

    async def decide(self, actor: Actor, request: capabilities_pb2.DecideRequest) -> tuple[Intent, bool]:
        return await self.intents.decide(actor, request)

    async def approval_of(self, actor: Actor, approval_id: str) -> tuple:
        return await self.intents.approval_of(actor, approval_id)

    async def begin_decision(self, actor: Actor, approval_id: str) -> capabilities_pb2.BeginDecisionResponse:
        return await self.intents.begin_decision(actor, approval_id)

    async def cancel_turn(self, actor: Actor, request: capabilities_pb2.CancelIntentsRequest) -> list[Intent]:
        return await self.intents.cancel_turn(actor, request)

    async def expire(self) -> int:
        return await self.intents.expire()

    async def resume(self) -> int:
        return await self.execution.resume()

    async def take_up(self, any_lease: bool = False) -> int:
        return await self.execution.take_up(any_lease)

    # --- the run's reads (reads.py) -------------------------------------------------------------------------

    async def run_reads(self, session_id: str) -> list:
        return await self.reads.of_run(session_id)

    async def run_taint(self, session_id: str) -> tuple[bool, bool]:
        return await self.reads.taint(session_id)

    async def record_reads(self, actor: Actor, request: capabilities_pb2.RecordReadsRequest) -> list:
        return await self.reads.record(actor, request)

    # --- external tools (§8) ------------------------------------------------------------------------------

    async def list_tools(self, session_id: str) -> dict[str, ToolState]:
        """The session's tools: fetched and hashed afresh when the session starts (its first listing or
        call), then the same view for every turn of it, except that a tool this replica has seen drift
        since is denied (mcp_gate.ToolGate)."""
        if not session_id:
            raise Invalid("SESSION_REQUIRED", "session_id is required")
        return await self.gate.session(session_id)

    async def call_tool(self, actor: Actor, request: capabilities_pb2.CallToolRequest):
        """A model's tool call: denied/drifted/unreachable → unavailable; a read runs and comes back screened;
        a mutation becomes an intent waiting for a person. Returns (outcome field, value, intent or None)."""
        state = (await self.gate.session(request.session_id)).get(request.tool_id)
        if state is None or not state.available:
            return await self._unavailable(actor, request, state)
        arguments = checked_json(request.arguments_json, state.contract, "ARGUMENTS")
        if state.rule.risk == "read":
            return await self.reads.read_tool(actor, request, arguments)
        # Nobody is asked to approve a call of a server whose tools, as they stand now, deny it (a
        # streamable-HTTP server is listed afresh: it may have been replaced without a word).
        try:
            refused = await self.gate.refusal_now(request.tool_id)
        except ToolCallFailed as exc:
            refused = exc
        if refused is not None:
            return await self._refused(actor, request, refused)
        await self.reads.recorded(request.session_id)  # the card must show every read that came before
        try:
            intent, pending = await self.intents.propose_tool_call(actor, request, arguments)
        except Refusal as exc:  # its turn was cancelled meanwhile: refused, and on the record
            if database_away(exc):
                raise
            await self.db(self.store.audit, actor.tenant_id, "tool-refused", actor.actor_id,
                          tool_id=request.tool_id[:200], reason=exc.reason, session_id=request.session_id)
            raise
        return "pending_approval", pending, intent

    async def _refused(self, actor: Actor, request: capabilities_pb2.CallToolRequest, refused: ToolCallFailed):
        """A mutation not asked for: denied as its server stands now (on the record), or its server unreachable."""
        if refused.availability != capabilities_pb2.TOOL_AVAILABILITY_UNREACHABLE:
            await self.db(self.store.audit, actor.tenant_id, "tool-refused", actor.actor_id,
                          tool_id=request.tool_id[:200], reason=refused.reason, session_id=request.session_id)
        return "unavailable", capabilities_pb2.ToolUnavailable(
            availability=refused.availability, reason=refused.reason, message=str(refused)), None

    async def _unavailable(self, actor: Actor, request: capabilities_pb2.CallToolRequest, state: ToolState | None):
        """A tool the session may not call now (not allowed, drifted, unreachable): refused, on the record."""
        availability = capabilities_pb2.TOOL_AVAILABILITY_DENIED if state is None else state.availability
        reason = "TOOL_NOT_ALLOWED" if state is None else state.reason
        await self.db(self.store.audit, actor.tenant_id, "tool-refused", actor.actor_id,
                      tool_id=request.tool_id[:200], reason=reason, session_id=request.session_id)
        return "unavailable", capabilities_pb2.ToolUnavailable(
            availability=availability, reason=reason,
            message=f"{request.tool_id[:200]} is not available ({reason})"), None
