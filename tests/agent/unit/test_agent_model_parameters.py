"""TESSERA_AGENT_MODEL_PARAMETERS: request parameters a provider needs, checked at startup, sent on both wires."""

from __future__ import annotations

import asyncio
import json
import os

import httpx
import pytest

from services.agent.chat import ChatAdapter
from services.agent.config import MAX_PARAMETERS_BYTES, AgentSettings
from services.agent.wiring import chat_adapter
from shared.config import ConfigError, load_settings

VARIABLE = "TESSERA_AGENT_MODEL_PARAMETERS"
PARAMETERS = {"temperature": 0, "tool_choice": "auto", "parallel_tool_calls": False}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for key in list(os.environ):
        if key.startswith("TESSERA_"):
            monkeypatch.delenv(key)


def _settings(monkeypatch, **variables) -> AgentSettings:
    for name, value in variables.items():
        monkeypatch.setenv(f"TESSERA_AGENT_{name.upper()}", value)
    return load_settings("agent", AgentSettings)


def test_parameters_are_read_as_a_json_object_and_reach_the_adapter(monkeypatch):
    settings = _settings(monkeypatch, model_url="http://127.0.0.1:9/v1", model_parameters=json.dumps(PARAMETERS))
    assert settings.model_parameters == PARAMETERS
    assert dict(chat_adapter(settings).config.parameters) == PARAMETERS


def test_no_parameters_is_an_empty_object(monkeypatch):
    assert _settings(monkeypatch).model_parameters == {}
    assert _settings(monkeypatch, model_parameters=" ").model_parameters == {}


@pytest.mark.parametrize("protocol,value,message", [
    ("openai-chat", "temperature=0", "not JSON"),
    ("openai-chat", '["temperature", 0]', "expected a JSON object"),
    ("openai-chat", '{"temperature": 0, "temperature": 1}', "duplicate key 'temperature'"),
    ("openai-chat", '{"temperature": NaN}', "NaN is not JSON"),
    ("openai-chat", '{"model": "other", "stream": false}', "model, stream: the openai-chat adapter writes these"),
    ("openai-chat", '{"messages": []}', "messages: the openai-chat adapter writes these keys itself"),
    ("ai-sdk-ui", '{"instructions": "be brief", "tools": {}}', "instructions, tools: the ai-sdk-ui adapter writes"),
    ("openai-chat", json.dumps({"stop": ["x" * MAX_PARAMETERS_BYTES]}), f"exceed the limit of {MAX_PARAMETERS_BYTES}"),
])
def test_bad_parameters_stop_startup_with_one_line_naming_the_variable(monkeypatch, protocol, value, message):
    with pytest.raises(ConfigError) as error:
        _settings(monkeypatch, model_protocol=protocol, model_parameters=value)
    text = str(error.value)
    assert text.startswith(f"{VARIABLE}={value!r}: ") and message in text and "\n" not in text


def test_a_key_one_protocol_owns_is_a_parameter_for_the_other(monkeypatch):
    # An AI SDK route's body has no "model" of the adapter's: a route may take one from the parameters.
    settings = _settings(monkeypatch, model_protocol="ai-sdk-ui", model_parameters='{"model": "route-model"}')
    assert settings.model_parameters == {"model": "route-model"}


_REPLIES = {
    "openai-chat": 'data: {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}\n\n'
                   "data: [DONE]\n\n",
    "ai-sdk-ui": 'data: {"type": "text-delta", "id": "t", "delta": "ok"}\n\n'
                 'data: {"type": "finish", "finishReason": "stop"}\n\ndata: [DONE]\n\n',
}


@pytest.mark.parametrize("protocol", ["openai-chat", "ai-sdk-ui"])
def test_both_wires_send_the_parameters_next_to_what_they_own(monkeypatch, protocol):
    sent: list[dict] = []

    def provider(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, text=_REPLIES[protocol], headers={"content-type": "text/event-stream"})

    settings = _settings(monkeypatch, model_url="http://model.test/v1", model_protocol=protocol,
                         model_name="m-1", model_parameters=json.dumps(PARAMETERS))
    configured = chat_adapter(settings)  # its config and wire, over a transport that answers in-process
    adapter = ChatAdapter(configured.config, transport=httpx.MockTransport(provider), wire=configured.wire)
    tools = [{"type": "function", "function": {"name": "present_ui", "description": "d", "parameters": {}}}]

    async def ask():
        try:
            return await adapter.complete([{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
                                          tools)
        finally:
            await adapter.aclose()
            await configured.aclose()

    assert asyncio.run(ask()).text == "ok"
    (body,) = sent
    assert {key: body[key] for key in PARAMETERS} == PARAMETERS
    if protocol == "openai-chat":
        assert body["model"] == "m-1" and body["stream"] is True and body["tools"] == tools
    else:
        assert body["instructions"] == "s" and list(body["tools"]) == ["present_ui"]
