"""The tickets MCP server over streamable HTTP, as its own pod runs it on Kubernetes: a real process on
loopback serving the same reviewed tools as over stdio, readiness at /healthz, foreign Host names refused."""

from __future__ import annotations

import signal
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from services.capabilities.tool_policy import ToolPolicy, digest
from shared.paths import REPO_ROOT
from tests.fixtures.mcp_http_process import host_check, serving


@pytest.fixture()
def served(tmp_path):
    database = tmp_path / "data" / "tickets.sqlite"

    def command(port: int) -> list[str]:
        return [sys.executable, "-m", "services.mcp_tickets", "--http-port", str(port), "--allowed-host",
                f"mcp-tickets:{port}"]
    with serving(command, {"TICKETS_DB": str(database)}, "the tickets server ready") as (base, port, process):
        yield base, port, database, process


async def _tools_and_a_search(url: str) -> tuple[list, str]:
    async with Client(streamable_http_client(url)) as client:
        listed = await client.list_tools()
        found = await client.call_tool("search_tickets", {"query": "refund"})
        return listed.tools, found.content[0].text


def test_it_serves_the_pinned_tools_over_http_and_answers_a_read(served):
    base, _, database, _ = served
    tools, found = anyio.run(_tools_and_a_search, f"{base}/mcp")
    pinned = ToolPolicy.load(REPO_ROOT / "deploy" / "policy" / "tools.yaml").policy.servers["tickets"].tools
    # The broker on Kubernetes judges these against the same pins: over HTTP they must not drift.
    assert {tool.name: (digest(tool.description), digest(tool.input_schema)) for tool in tools} == {
        name: (rule.pin.description_sha256, rule.pin.input_schema_sha256) for name, rule in pinned.items()}
    assert found.splitlines() == ["ticket 4819 [open]: Duplicate charge", "ticket 4812 [open]: Refund not received"]
    assert database.is_file()  # its data folder: where TICKETS_DB points, made on first start


def test_a_foreign_host_name_is_refused_and_its_own_is_served(served):
    base, port, _, _ = served
    # The name the broker dials in the cluster passes the Host check (then wants a session: not 421).
    refused, accepted = host_check(base, port, "mcp-tickets")
    assert refused == 421 and accepted != 421


def test_sigterm_winds_it_down(served):
    """A pod's stop: uvicorn finishes its shutdown (open sessions closed), then ends by the signal it got."""
    _, _, _, process = served
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == -signal.SIGTERM
    log = process.stderr.read()
    assert "Application shutdown complete" in log and "Finished server process" in log, log[-2000:]
