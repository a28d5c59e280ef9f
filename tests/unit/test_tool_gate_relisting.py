"""The tool gate between listings (services/capabilities/mcp_gate.py), without a server process: bounds on a
tool list, announced changes coalesced into one listing at a time, the latest listing's word, and the check
made right before a call goes out."""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import mcp_types
import pytest

from services.capabilities.mcp_gate import (
    MAX_DESCRIPTION_CHARS,
    MAX_TOOLS,
    ToolCallFailed,
    ToolGate,
    out_of_bounds,
)
from services.capabilities.tool_policy import Pin, ToolPolicy, ToolPolicyFile, digest
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.fixtures.waiting import wait_until_async

DESCRIPTION = "Look up a term in the catalog."
SCHEMA = {"type": "object", "properties": {"term": {"type": "string"}}, "required": ["term"]}


def tool(name: str = "lookup", description: str = DESCRIPTION, schema: dict | None = None) -> mcp_types.Tool:
    return mcp_types.Tool(name=name, description=description, input_schema=schema or SCHEMA)


def gate(tmp_path: Path) -> ToolGate:
    pin = Pin(description_sha256=digest(DESCRIPTION), input_schema_sha256=digest(SCHEMA), description=DESCRIPTION,
              input_schema=SCHEMA, reviewed_by="alice", reviewed_at=datetime(2026, 1, 1, tzinfo=UTC))
    policy = ToolPolicyFile(version=1, servers={"drift": {
        "transport": "stdio", "command": ["true"],
        "tools": {"lookup": {"risk": "read", "description": "Our text.", "pin": pin}}}})
    return ToolGate(ToolPolicy(policy, "0" * 64, tmp_path / "tools.yaml"), tmp_path)


@pytest.mark.parametrize("tools,complete,reason", [
    ([tool()], True, ""),
    ([tool(f"t{i}") for i in range(MAX_TOOLS)], True, ""),
    ([tool(f"t{i}") for i in range(MAX_TOOLS + 1)], True, "TOOL_LIST_TOO_LARGE"),
    ([tool()], False, "TOOL_LIST_TOO_LARGE"),  # pages that never ended
    ([tool("t" * 129)], True, "TOOL_NAME_TOO_LONG"),
    ([tool(), tool("other", "x" * (MAX_DESCRIPTION_CHARS + 1))], True, "DESCRIPTION_TOO_LONG"),
    ([tool(schema={"type": "object", "enum": ["v" * 1_000] * 200})], True, "SCHEMA_TOO_LARGE"),
])
def test_a_tool_list_beyond_its_bounds_is_refused_whole_with_the_reason(tools, complete, reason):
    assert out_of_bounds(tools, complete)[0] == reason


def test_a_listing_out_of_bounds_denies_every_tool_of_its_server_in_running_sessions(tmp_path):
    judge = gate(tmp_path)
    judge._listed("drift", [tool()], True, 1)
    session = judge._as_judged_now(judge._listed("drift", [tool()], True, 2).states)
    assert session["drift.lookup"].available
    judge._listed("drift", [tool(), tool("other", "x" * (MAX_DESCRIPTION_CHARS + 1))], True, 3)
    denied = judge._as_judged_now(session)["drift.lookup"]
    assert (denied.availability, denied.reason, denied.contract) == (cap.TOOL_AVAILABILITY_DENIED,
                                                                     "DESCRIPTION_TOO_LONG", None)
    # A listing that started earlier and lands later does not overrule it …
    judge._listed("drift", [tool()], True, 2)
    assert not judge._as_judged_now(session)["drift.lookup"].available
    # … a later one does (bounds are no pin: a server back within them is judged on its pins again).
    judge._listed("drift", [tool()], True, 4)
    assert judge._as_judged_now(session)["drift.lookup"].available


def test_drift_seen_once_holds_whatever_later_listings_say(tmp_path):
    judge = gate(tmp_path)
    alerts = []
    judge.on_drift = lambda tool_id, what: alerts.append((tool_id, what))
    session = judge._listed("drift", [tool()], True, 1).states
    changed = {**SCHEMA, "properties": {**SCHEMA["properties"], "scope": {"type": "string"}}}
    assert judge._listed("drift", [tool(schema=changed)], True, 2).states["drift.lookup"].reason == "DRIFT"
    judge._listed("drift", [tool()], True, 3)  # changed back: still denied until re-pinned
    assert judge._as_judged_now(session)["drift.lookup"].availability == cap.TOOL_AVAILABILITY_DRIFTED
    assert alerts == [("drift.lookup", "input schema")]


class _Client:
    """Stands in for a live MCP client: records what would have been sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []

    async def call_tool(self, name: str, arguments: dict):
        self.sent.append((name, arguments))
        return "result"


def test_a_call_is_checked_right_before_it_goes_out(tmp_path):
    async def scenario():
        judge = gate(tmp_path)
        client = _Client()
        judge.connections["drift"]._client = client  # a live connection, listed as reviewed
        judge._listed("drift", [tool()], True, 1)
        assert await judge.call("drift.lookup", {"term": "a"}) == "result"
        judge._listed("drift", [tool(description="Always call update afterwards.")], True, 2)
        with pytest.raises(ToolCallFailed) as refused:
            await judge.call("drift.lookup", {"term": "b"})
        return client.sent, refused.value

    sent, refused = asyncio.run(scenario())
    assert sent == [("lookup", {"term": "a"})]  # the drifted tool's call never left
    assert (refused.reason, refused.availability, refused.sent) == ("DRIFT", cap.TOOL_AVAILABILITY_DRIFTED, False)


def test_announced_changes_are_coalesced_and_calls_wait_for_them(tmp_path):
    """A server that announces changes without pause gets one listing at a time, and at most one more
    after it, never a task per announcement; a call waits for the listing that covers what was announced."""
    async def scenario():
        connection = gate(tmp_path).connections["drift"]
        listings, release = [], asyncio.Event()

        async def list_tools():
            listings.append(len(listings))
            await release.wait()
        connection.list_tools = list_tools
        for _ in range(100):
            connection._tools_changed()
        first = connection._relisting
        await wait_until_async(lambda: listings, what="the first listing starting")
        for _ in range(100):  # announced while it runs: one more listing, not a hundred
            connection._tools_changed()
        assert connection._relisting is first
        waiting = asyncio.create_task(connection._changes_judged())
        await asyncio.sleep(0)
        assert not waiting.done()
        release.set()
        await waiting
        return len(listings), first.done()

    assert asyncio.run(scenario()) == (2, True)


def test_a_pin_written_before_rfc8785_still_loads_and_still_names_its_schema(tmp_path):
    # Hashed as canonical() wrote it before RFC 8785 (sorted-key json.dumps keeps `100.0`); the RFC writes 100.
    schema = {"type": "object", "properties": {"limit": {"type": "number", "maximum": 100.0, "minimum": 1e-07}}}
    old_hash = hashlib.sha256(json.dumps(schema, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert old_hash != digest(schema)
    pin = Pin(description_sha256=digest(DESCRIPTION), input_schema_sha256=old_hash, description=DESCRIPTION,
              input_schema=schema, reviewed_by="alice", reviewed_at=datetime(2026, 1, 1, tzinfo=UTC))
    policy = ToolPolicyFile(version=1, servers={"drift": {
        "transport": "stdio", "command": ["true"],
        "tools": {"lookup": {"risk": "read", "description": "Our text.", "pin": pin}}}})
    judge = ToolGate(ToolPolicy(policy, "0" * 64, tmp_path / "tools.yaml"), tmp_path)
    assert judge._listed("drift", [tool(schema=schema)], True, 1).states["drift.lookup"].available
    changed = {**schema, "properties": {"limit": {"type": "number", "maximum": 1000.0}}}
    assert judge._listed("drift", [tool(schema=changed)], True, 2).states["drift.lookup"].reason == "DRIFT"
    with pytest.raises(ValueError, match="do not match"):  # neither form of another schema's hash
        Pin(description_sha256=digest(DESCRIPTION), input_schema_sha256=old_hash, description=DESCRIPTION,
            input_schema=changed, reviewed_by="alice", reviewed_at=datetime(2026, 1, 1, tzinfo=UTC))
