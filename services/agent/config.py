"""Settings of the Data Agent runtime (TESSERA_AGENT_*)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import NoDecode

from services.agent.ai_sdk_model import UI_MESSAGE_STREAM
from services.agent.chat import DEFAULT_MAX_RESPONSE_CHARS, MAX_RESPONSE_CHARS_CAP, OPENAI_CHAT, Wire
from shared.config import ServiceSettings
from shared.data import bounded_json

# How each model_protocol is spoken: its request body, its reply reader, the body keys it owns.
WIRES: dict[str, Wire] = {"openai-chat": OPENAI_CHAT, "ai-sdk-ui": UI_MESSAGE_STREAM}
# Request parameters are a few settings (temperature, tool_choice …), not a document.
MAX_PARAMETERS_BYTES = 8192


class AgentSettings(ServiceSettings):
    # Empty: the embedded planner. Otherwise an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1, or,
    # with model_protocol "ai-sdk-ui", an AI SDK streamText route, e.g. https://app.example.com/api/chat.
    model_url: str = ""
    # How the endpoint is spoken to: "openai-chat" (Chat Completions streaming) or "ai-sdk-ui" (the AI SDK's
    # UI message stream protocol, services/agent/ai_sdk_model.py).
    model_protocol: Literal["openai-chat", "ai-sdk-ui"] = "openai-chat"
    model_name: str = "gpt-4o-mini"
    # Held only by this process; sent only as the Authorization header, never logged.
    model_api_key: SecretStr = SecretStr("")
    # A JSON object added to every request body, for what the provider needs, e.g.
    # {"temperature": 0, "tool_choice": "auto", "parallel_tool_calls": false}. Read after model_protocol (field
    # order), whose own keys it may not replace. NoDecode: parsed here, so bad text is a one-line ConfigError.
    model_parameters: Annotated[dict[str, Any], NoDecode] = Field(default_factory=dict)
    model_max_response_chars: int = Field(default=DEFAULT_MAX_RESPONSE_CHARS, ge=1, le=MAX_RESPONSE_CHARS_CAP)
    # When set, each turn as the model lived it is appended here as JSONL: the question, every tool call and
    # its result, the answer (for audits, the eval's transcripts and the no-payload check). It holds only
    # model-visible text, which by design carries no rows.
    model_transcript: str = ""

    @field_validator("model_parameters", mode="before")
    @classmethod
    def _parameters_object(cls, value: object, info: ValidationInfo) -> object:
        parameters = _parsed_parameters(value) if isinstance(value, str) else value
        if not isinstance(parameters, dict):
            raise PydanticCustomError("parameters", "expected a JSON object, e.g. {\"temperature\": 0}")
        wire = WIRES.get(info.data.get("model_protocol", ""))
        owned = sorted(set(parameters) & wire.owned) if wire else []
        if owned:
            raise PydanticCustomError("parameters", "{keys}: the {protocol} adapter writes these keys itself",
                                      {"keys": ", ".join(owned), "protocol": info.data["model_protocol"]})
        return parameters


def _parsed_parameters(text: str) -> object:
    if not text.strip():
        return {}
    try:
        return bounded_json.parse(text, bounded_json.Limits(max_raw_bytes=MAX_PARAMETERS_BYTES))
    except bounded_json.BoundedJsonError as exc:
        raise PydanticCustomError("parameters", "{problem}", {"problem": str(exc)}) from None
