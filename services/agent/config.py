"""Settings of the Data Agent runtime (TESSERA_AGENT_*)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from services.agent.chat import DEFAULT_MAX_RESPONSE_CHARS, MAX_RESPONSE_CHARS_CAP
from shared.config import ServiceSettings


class AgentSettings(ServiceSettings):
    # Empty: the embedded planner. Otherwise an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1, or,
    # with model_protocol "ai-sdk-ui", an AI SDK streamText route, e.g. https://app.example.com/api/chat.
    model_url: str = ""
    # How the endpoint is spoken to: "openai-chat" (Chat Completions streaming) or "ai-sdk-ui" (the AI SDK's
    # UI message stream protocol, services/agent/ui_message_stream.py).
    model_protocol: Literal["openai-chat", "ai-sdk-ui"] = "openai-chat"
    model_name: str = "gpt-4o-mini"
    # Held only by this process; sent only as the Authorization header, never logged.
    model_api_key: SecretStr = SecretStr("")
    model_max_response_chars: int = Field(default=DEFAULT_MAX_RESPONSE_CHARS, ge=1, le=MAX_RESPONSE_CHARS_CAP)
    # When set, every message handed to the model is appended here as JSONL (for audits and the
    # no-payload check); it holds only model-visible text, which by design carries no rows.
    model_transcript: str = ""
