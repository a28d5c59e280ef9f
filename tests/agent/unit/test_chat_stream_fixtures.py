"""Recorded-shape Chat Completions streams (tests/fixtures/chat_streams/*.sse) through the chat adapter.

Each fixture is a server-sent event stream as written by hand after the shapes OpenAI-compatible
servers other than OpenAI send (its first lines, SSE comments, say what it shows). The fake endpoint
replays it event by event over real HTTP; the test checks what the adapter assembled.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import StreamingResponse

from services.agent.chat import Completion, TextDelta
from tests.agent.unit.test_chat_adapter import collect
from tests.fixtures.fake_model import serving_completions

STREAMS = Path(__file__).parents[2] / "fixtures" / "chat_streams"

# fixture → (text, [(call id, function name, parsed arguments)], finish_reason)
EXPECTED = {
    "name_in_every_delta": ("", [("call_n1", "inspect_catalog", {"question": "revenue by region"})], "tool_calls"),
    "arguments_before_name": ("", [("call_b1", "describe_data", {"entity_ids": ["ent_abcdefghijkl"]})],
                              "tool_calls"),
    "empty_content_with_tool_calls": ("", [("call_e1", "probe_data", {"kind": "time-bounds"})], "tool_calls"),
    "null_content_with_tool_calls": ("", [("call_u1", "inspect_current_context", {})], "tool_calls"),
    # No finish_reason anywhere, [DONE] at the end: "tool_calls" when calls were assembled, else "stop".
    "no_finish_reason_tool_calls": ("", [("call_f1", "present_ui", {})], "tool_calls"),
    "no_finish_reason_text": ("The data cannot answer that.", [], "stop"),
    "parallel_interleaved": ("", [("call_p0", "inspect_catalog", {"question": "orders by channel"}),
                                  ("call_p1", "probe_data", {"kind": "value-domain",
                                                             "field_id": "fld_abcdefghijkl"})], "tool_calls"),
    "id_only_first_delta": ("", [("call_i1", "run_analysis", {"draft": {
        "mode": "aggregate", "output": "scalar", "measures": [{"id": "value", "metric": "met_abcdefghijkl"}]}})],
        "tool_calls"),
    "parallel_without_index": ("", [("call_x0", "inspect_catalog", {"question": "tickets"}),
                                    ("call_x1", "present_ui", {})], "tool_calls"),
}


def _events(name: str) -> list[str]:
    """The fixture's events as the server writes them (comments included), one write each."""
    text = (STREAMS / f"{name}.sse").read_text()
    return [block + "\n\n" for block in text.split("\n\n") if block.strip()]


async def _replay(request: Request):
    """The fixture named by the request's model, one event per write."""
    return StreamingResponse(iter(_events((await request.json())["model"])), media_type="text/event-stream")


@pytest.fixture(scope="module")
def endpoint():
    with serving_completions(_replay) as url:
        yield url


def test_every_fixture_has_an_expectation():
    assert sorted(p.stem for p in STREAMS.glob("*.sse")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_recorded_stream_is_assembled(endpoint, name):
    text, calls, finish = EXPECTED[name]
    events = collect(endpoint, name)
    completion = events[-1]
    assert isinstance(completion, Completion) and not any(isinstance(e, Completion) for e in events[:-1])
    assert [(c.id, c.name, json.loads(c.arguments_json)) for c in completion.tool_calls] == calls
    assert completion.text == text and completion.finish_reason == finish
    # Text deltas are exactly the non-empty content pieces: "" and null never become a delta.
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == text and all(deltas)
