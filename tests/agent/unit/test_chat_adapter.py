"""The chat adapter against a local fake OpenAI-compatible server streaming real-format chunks."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse

from services.agent.chat import MAX_RESPONSE_CHARS_CAP, ChatAdapter, ChatConfig, ChatError, Completion, TextDelta
from tests.fixtures.fake_model import serving_completions

SEEN: list[dict] = []


def chunk(delta: dict | None = None, finish: str | None = None, index: int = 0) -> str:
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fake",
            "choices": [{"index": index, "delta": delta or {}, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n"


def call_delta(index, call_id=None, name=None, arguments=""):
    entry = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        entry.update(id=call_id, type="function")
        entry["function"]["name"] = name
    return {"tool_calls": [entry]}


SCENARIOS = {
    "text": [chunk({"role": "assistant", "content": "Hel"}), ": keep-alive\n\n", chunk({"content": "lo"}),
             chunk(finish="stop"), "data: [DONE]\n\n"],
    "tools": [chunk(call_delta(0, "call_a", "inspect_catalog", '{"ques')),
              chunk(call_delta(1, "call_b", "describe_data", '{"entity_ids": [')),
              chunk(call_delta(0, arguments='tion": "revenue"}')),
              chunk(call_delta(1, arguments='"ent_1"]}')),
              chunk(finish="tool_calls"), "data: [DONE]\n\n"],
    "error-chunk": [chunk({"content": "partial"}), 'data: {"error": {"message": "overloaded", "type": "server"}}\n\n'],
    "broken": [chunk({"content": "partial"})],
    "huge": [chunk({"content": "x" * 600}), chunk({"content": "y" * 600}), chunk(finish="stop"), "data: [DONE]\n\n"],
    "nameless": [chunk(call_delta(0, arguments='{"a": 1}')), chunk(finish="tool_calls"), "data: [DONE]\n\n"],
}


async def completions(request: Request):
    body = await request.json()
    SEEN.append({"body": body, "authorization": request.headers.get("authorization")})
    model = body["model"]
    if model == "http-429":
        return JSONResponse({"error": {"message": "rate limited", "type": "rate_limit"}}, status_code=429)

    async def stream():
        if model == "slow":
            yield chunk({"content": "thinking"})
            await asyncio.sleep(30)
        for piece in SCENARIOS[model]:
            yield piece

    return StreamingResponse(stream(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def fake_server():
    with serving_completions(completions) as url:
        yield url


def collect(base_url: str, model: str, **config):
    async def run():
        adapter = ChatAdapter(ChatConfig(base_url=base_url, model=model, api_key="sk-test", **config))
        events = []
        try:
            async for event in adapter.stream([{"role": "user", "content": "hi"}], tools=[]):
                events.append(event)
        finally:
            await adapter.aclose()
        return events

    return asyncio.run(run())


def test_text_streams_as_deltas_then_a_completion(fake_server):
    events = collect(fake_server, "text", parameters=(("temperature", 0),))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
    assert events[-1] == Completion("Hello", [], "stop")
    request = SEEN[-1]
    assert request["authorization"] == "Bearer sk-test" and "sk-test" not in json.dumps(request["body"])
    assert request["body"]["stream"] is True and request["body"]["temperature"] == 0


def test_parallel_tool_calls_are_assembled_from_pieces_and_not_run(fake_server):
    completion = collect(fake_server, "tools")[-1]
    assert completion.finish_reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments_json)) for c in completion.tool_calls] == [
        ("call_a", "inspect_catalog", {"question": "revenue"}), ("call_b", "describe_data", {"entity_ids": ["ent_1"]})]


@pytest.mark.parametrize("model,code", [
    ("error-chunk", "PROVIDER_ERROR"), ("http-429", "HTTP_429"), ("broken", "STREAM_BROKEN"),
    ("nameless", "STREAM_MALFORMED"),
])
def test_failures_have_stable_codes(fake_server, model, code):
    with pytest.raises(ChatError) as error:
        collect(fake_server, model)
    assert error.value.code == code
    if model == "http-429":
        assert error.value.message == "rate limited"


def test_responses_over_the_limit_stop(fake_server):
    with pytest.raises(ChatError) as error:
        collect(fake_server, "huge", max_response_chars=1000)
    assert error.value.code == "RESPONSE_TOO_LARGE"
    with pytest.raises(ValueError):
        ChatConfig(base_url="http://x", model="m", max_response_chars=MAX_RESPONSE_CHARS_CAP + 1)


def test_cancellation_closes_the_stream(fake_server):
    async def run():
        adapter = ChatAdapter(ChatConfig(base_url=fake_server, model="slow"))
        received = asyncio.Event()

        async def consume():
            async for event in adapter.stream([{"role": "user", "content": "hi"}], tools=[]):
                if isinstance(event, TextDelta):
                    received.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(received.wait(), 5)
        started = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await adapter.aclose()
        return time.perf_counter() - started

    assert asyncio.run(run()) < 1.0
