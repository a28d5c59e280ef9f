"""How the chat adapter reads the event stream itself (httpx-sse underneath): what is not an event stream,
events without data, a chunk split over several data lines, and a chunk that is JSON but not an object."""

from __future__ import annotations

import asyncio
import json

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse

from services.agent.chat import ChatAdapter, ChatConfig, ChatError, Completion
from tests.fixtures.fake_model import chunk, serving_completions

STREAMS = {
    # A named keep-alive event with no data, then a chunk whose JSON spans two data lines.
    "split": ["event: ping\n\n", 'data: {"choices": [{"index": 0,\ndata: "delta": {"content": "Hi"}}]}\n\n',
              chunk(finish="stop"), "data: [DONE]\n\n"],
    "not-an-object": ["data: [1, 2]\n\n", "data: [DONE]\n\n"],
    # The finishing chunk without the blank line that ends an event: the event stream format says an event
    # cut off at the end of the stream is not dispatched (httpx-sse follows it), so the model never finished.
    "unterminated": [chunk({"content": "Hi"}), chunk(finish="stop").rstrip("\n") + "\n"],
}


async def completions(request: Request):
    model = (await request.json())["model"]
    if model == "json-body":  # a server that ignored stream=true
        return JSONResponse({"choices": [{"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop"}]})
    return StreamingResponse(iter(STREAMS[model]), media_type="text/event-stream")


@pytest.fixture(scope="module")
def fake_server():
    with serving_completions(completions) as url:
        yield url


def complete(base_url: str, model: str) -> Completion:
    async def run():
        adapter = ChatAdapter(ChatConfig(base_url=base_url, model=model))
        try:
            return await adapter.complete([{"role": "user", "content": "hi"}], tools=[])
        finally:
            await adapter.aclose()

    return asyncio.run(run())


def test_events_without_data_are_skipped_and_data_lines_are_joined(fake_server):
    assert complete(fake_server, "split") == Completion("Hi", [], "stop")


@pytest.mark.parametrize("model", ["json-body", "not-an-object"])
def test_what_is_not_a_stream_of_chunk_objects_is_malformed(fake_server, model):
    with pytest.raises(ChatError) as error:
        complete(fake_server, model)
    assert error.value.code == "STREAM_MALFORMED", json.dumps(error.value.message)


def test_a_last_event_cut_off_before_its_blank_line_is_not_read(fake_server):
    with pytest.raises(ChatError) as error:
        complete(fake_server, "unterminated")
    assert (error.value.code, error.value.message) == ("STREAM_BROKEN", "the stream ended before the model finished")
