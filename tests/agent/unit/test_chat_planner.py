"""A model behind an OpenAI-compatible endpoint drives the same tools through the same bridge."""

from __future__ import annotations

import asyncio
import json

import pytest
from starlette.requests import Request
from starlette.responses import StreamingResponse

from services.agent.chat import ChatAdapter, ChatConfig
from services.agent.chat_planner import ChatPlanner
from services.agent.tool_bridge import Tool, ToolBridge
from shared.tools.tool_contracts import ToolContract
from tests.fixtures.fake_model import chunk, serving_completions

REQUESTS: list[dict] = []

# What inspect_catalog's results may carry: nothing else (a token, say) ever reaches the model.
ENTITIES = {"type": "object", "properties": {"entities": {"type": "array", "items": {
    "type": "object", "properties": {"id": {"type": "string"}, "label": {"type": "string"}}}}}}


async def scripted(request: Request):
    body = await request.json()
    REQUESTS.append(body)
    tool_messages = [m for m in body["messages"] if m["role"] == "tool"]

    async def stream():
        if len(tool_messages) == 0:
            yield chunk({"tool_calls": [{"index": 0, "id": "m1", "type": "function",
                                        "function": {"name": "inspect_catalog", "arguments": '{"quest'}}]})
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ion": "revenue"}'}}]})
            yield chunk(finish="tool_calls")
        elif len(tool_messages) == 1:  # the model repeats its call id and names a tool that does not exist
            yield chunk({"tool_calls": [
                {"index": 0, "id": "m1", "type": "function", "function": {"name": "inspect_catalog",
                                                                          "arguments": '{"question": "x"}'}},
                {"index": 1, "id": "m2", "type": "function", "function": {"name": "run_sql",
                                                                          "arguments": '{"sql": "SELECT 1"}'}}]})
            yield chunk(finish="tool_calls")
        else:
            yield chunk({"content": "Revenue is broken down by region."})
            yield chunk(finish="stop")
        yield "data: [DONE]\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def endpoint():
    with serving_completions(scripted) as url:
        yield url


def test_the_model_loop_uses_contracts_bridge_and_projected_results(endpoint):
    ran = []

    async def inspect(arguments):
        ran.append(arguments)
        return {"entities": [{"id": "ent_1", "label": "Order"}], "capability_token": "secret-token"}

    contract = ToolContract("inspect_catalog", "Find entities", {
        "type": "object", "additionalProperties": False, "required": ["question"],
        "properties": {"question": {"type": "string"}}}, ENTITIES)

    async def scenario():
        adapter = ChatAdapter(ChatConfig(base_url=endpoint, model="scripted"))
        bridge = ToolBridge([Tool(contract, inspect)])
        planner = ChatPlanner(adapter, [contract])
        try:
            return await planner.run("revenue by region?", lambda i, n, a: bridge.call(i, n, a), lambda: False)
        finally:
            await adapter.aclose()

    plan = asyncio.run(scenario())
    assert plan.answer == "Revenue is broken down by region." and not plan.answered
    assert ran == [{"question": "revenue"}]  # the repeated id m1 did not run again
    assert REQUESTS[0]["tools"][0]["function"]["name"] == "inspect_catalog"
    tool_messages = [m for m in REQUESTS[-1]["messages"] if m["role"] == "tool"]
    assert json.loads(tool_messages[0]["content"]) == {"entities": [{"id": "ent_1", "label": "Order"}]}
    errors = [json.loads(m["content"])["error"] for m in tool_messages[1:]]
    assert errors == ["DUPLICATE_CALL_ID", "UNKNOWN_TOOL"]
    assert "secret-token" not in json.dumps(REQUESTS)


def test_a_model_gets_the_sessions_earlier_questions_before_the_new_one(endpoint):
    contract = ToolContract("inspect_catalog", "Find entities", {
        "type": "object", "additionalProperties": False, "required": ["question"],
        "properties": {"question": {"type": "string"}}}, ENTITIES)

    async def inspect(arguments):
        return {"entities": []}

    async def scenario():
        adapter = ChatAdapter(ChatConfig(base_url=endpoint, model="scripted"))
        bridge = ToolBridge([Tool(contract, inspect)])
        planner = ChatPlanner(adapter, [contract], earlier_questions=["Net revenue by region", "and in 2024?"])
        try:
            return await planner.run("now only web", lambda i, n, a: bridge.call(i, n, a), lambda: False)
        finally:
            await adapter.aclose()

    REQUESTS.clear()
    asyncio.run(scenario())
    users = [m["content"] for m in REQUESTS[0]["messages"] if m["role"] == "user"]
    assert users[-1] == "now only web"
    assert users[0].endswith("- Net revenue by region\n- and in 2024?")  # oldest first, before the new one


async def cut_off(request: Request):
    CUT_OFF_REQUESTS.append(await request.json())

    async def stream():
        yield chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                    "function": {"name": "inspect_catalog", "arguments": '{"question": "rev'}}]})
        yield chunk(finish="length")
        yield "data: [DONE]\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream")


CUT_OFF_REQUESTS: list[dict] = []


def test_a_call_cut_off_at_the_length_limit_is_neither_run_nor_sent_back():
    ran = []
    contract = ToolContract("inspect_catalog", "Find entities", {
        "type": "object", "additionalProperties": False, "required": ["question"],
        "properties": {"question": {"type": "string"}}}, ENTITIES)

    async def inspect(arguments):
        ran.append(arguments)
        return {"entities": []}

    async def scenario(url):
        adapter = ChatAdapter(ChatConfig(base_url=url, model="scripted"))
        planner = ChatPlanner(adapter, [contract])
        bridge = ToolBridge([Tool(contract, inspect)])
        try:
            return await planner.run("revenue?", lambda i, n, a: bridge.call(i, n, a), lambda: False)
        finally:
            await adapter.aclose()

    with serving_completions(cut_off) as url:
        plan = asyncio.run(scenario(url))
    assert "cut off at its length limit" in plan.answer and not plan.answered
    assert ran == [] and len(CUT_OFF_REQUESTS) == 1  # the half-written call went nowhere
