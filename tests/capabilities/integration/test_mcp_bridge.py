"""A stdio-only MCP server (mcp-server-time) under services/mcp_bridge, as its own pod runs it on Kubernetes:
the same tools the pins were reviewed on, calls answered, readiness only once the server lists its tools, a
child that dies started again on the next request, and foreign Host names refused."""

from __future__ import annotations

import json
import os
import signal
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from services.capabilities.tool_policy import ToolPolicy, digest
from shared.paths import REPO_ROOT
from tests.fixtures.mcp_http_process import host_check, serving
from tests.fixtures.waiting import wait_until


@pytest.fixture()
def bridged():
    def command(port: int) -> list[str]:
        return [sys.executable, "-m", "services.mcp_bridge", "--port", str(port), "--allowed-host",
                f"mcp-time:{port}", "--", sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    with serving(command, {}, "the bridge and its server ready") as served:
        yield served


async def _tools_and_a_call(url: str) -> tuple[list, dict]:
    async with Client(streamable_http_client(url)) as client:
        listed = await client.list_tools()
        answer = await client.call_tool("get_current_time", {"timezone": "Europe/Berlin"})
        return listed.tools, json.loads(answer.content[0].text)


def _children(process) -> list[int]:
    path = f"/proc/{process.pid}/task/{process.pid}/children"
    return [int(pid) for pid in open(path).read().split()] if os.path.exists(path) else []


def test_the_bridge_serves_the_pinned_tools_unchanged_and_answers_calls(bridged):
    base, _, _ = bridged
    tools, answer = anyio.run(_tools_and_a_call, f"{base}/mcp")
    pinned = ToolPolicy.load(REPO_ROOT / "deploy" / "policy" / "tools.yaml").policy.servers["time"].tools
    # The broker on Kubernetes judges these against the pins reviewed over stdio: through the bridge they
    # must not drift.
    offered = {tool.name: (digest(tool.description), digest(tool.input_schema)) for tool in tools}
    assert {name: offered[name] for name in pinned} == {
        name: (rule.pin.description_sha256, rule.pin.input_schema_sha256) for name, rule in pinned.items()}
    assert answer["timezone"] == "Europe/Berlin"


def test_a_server_that_died_is_started_again_by_the_next_request(bridged):
    base, _, process = bridged
    (child,) = _children(process)
    os.kill(child, signal.SIGKILL)
    wait_until(lambda: child not in _children(process), 30, what="the killed server reaped")

    def answers() -> bool:
        try:
            return bool(anyio.run(_tools_and_a_call, f"{base}/mcp")[0])
        except Exception:  # noqa: BLE001 - the request that found the server dead fails; the next one starts it
            return False
    wait_until(answers, 60, what="the bridge serving again with a fresh server")
    assert len(_children(process)) == 1


async def _unknown_tool(url: str) -> None:
    async with Client(streamable_http_client(url)) as client:
        await client.call_tool("no_such_tool", {})


def test_an_error_the_server_answers_with_leaves_it_running(bridged):
    """Only a connection that ended is replaced: a refused call (an unknown tool) keeps the same server."""
    base, _, process = bridged
    (child,) = _children(process)
    try:
        anyio.run(_unknown_tool, f"{base}/mcp")
    except Exception:  # noqa: BLE001 - however the refusal arrives, the point is what happens to the server
        pass
    assert anyio.run(_tools_and_a_call, f"{base}/mcp")[1]["timezone"] == "Europe/Berlin"
    assert _children(process) == [child]


def test_a_foreign_host_name_is_refused(bridged):
    base, port, _ = bridged
    refused, accepted = host_check(base, port, "mcp-time")
    assert refused == 421 and accepted != 421
