"""OpenAI-compatible Chat Completions streaming, normalised (§9).

Reads the server-sent event stream over httpx, assembles tool calls whose
arguments arrive in pieces (several calls may stream in parallel), and
reports finish reasons, provider errors, broken streams and responses over
`max_response_chars` as a ChatError with a stable code. It never executes a
tool call: calls go to the tool bridge. The API key stays in this process's
configuration and is sent only as the Authorization header.

Shapes other servers send are accepted (tests/fixtures/chat_streams): the name
repeated on every delta, arguments before the name, `content` "" or null next to
tool calls, tool-call deltas without `index`, and a stream that ends with [DONE]
but no finish_reason, which finishes as "tool_calls" if calls were assembled,
else "stop".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx

DEFAULT_MAX_RESPONSE_CHARS = 1_000_000
MAX_RESPONSE_CHARS_CAP = 10_000_000


class ChatError(Exception):
    """A model call that failed; `code` is stable (PROVIDER_ERROR, HTTP_429, STREAM_BROKEN …)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass
class ToolCall:
    id: str
    name: str
    arguments_json: str


@dataclass
class TextDelta:
    text: str


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCall]
    finish_reason: str


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ChatConfig:
    base_url: str
    model: str
    api_key: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    parameters: tuple[tuple[str, object], ...] = ()  # e.g. (("temperature", 0),)
    max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS
    timeout_seconds: float = 120.0

    def __post_init__(self) -> None:
        if not 1 <= self.max_response_chars <= MAX_RESPONSE_CHARS_CAP:
            raise ValueError(f"max_response_chars must be 1..{MAX_RESPONSE_CHARS_CAP}")


async def _events(response: httpx.Response) -> AsyncIterator[str]:
    """The `data` payloads of a server-sent event stream (multi-line data joined by newlines)."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith(":"):
            continue  # comment / keep-alive
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "\n".join(data)


class ChatAdapter:
    def __init__(self, config: ChatConfig, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.config = config
        headers = dict(config.headers)
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self._client = httpx.AsyncClient(base_url=config.base_url.rstrip("/") + "/", headers=headers,
                                         timeout=config.timeout_seconds, transport=transport)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream(self, messages: list[dict], tools: list[dict]) -> AsyncIterator[TextDelta | Completion]:
        """Text deltas as they arrive, then one Completion; raises ChatError."""
        payload = {"model": self.config.model, "messages": messages, "stream": True,
                   **dict(self.config.parameters)}
        if tools:
            payload["tools"] = tools
        budget = self.config.max_response_chars
        text: list[str] = []
        calls: dict[int, _PartialCall] = {}
        finish = ""
        done = False
        try:
            async with self._client.stream("POST", "chat/completions", json=payload) as response:
                if response.status_code >= 400:
                    body = (await response.aread()).decode("utf-8", "replace")[:2000]
                    raise ChatError(f"HTTP_{response.status_code}", _provider_message(body))
                async for data in _events(response):
                    if data.strip() == "[DONE]":
                        done = True
                        break
                    try:
                        chunk = json.loads(data)
                    except json.JSONDecodeError:
                        raise ChatError("STREAM_MALFORMED", "a stream chunk is not JSON") from None
                    if "error" in chunk:
                        raise ChatError("PROVIDER_ERROR", _provider_message(json.dumps(chunk)))
                    for choice in chunk.get("choices") or []:
                        if choice.get("index", 0) != 0:
                            continue  # one completion is asked for
                        delta = choice.get("delta") or {}
                        piece = delta.get("content")
                        if isinstance(piece, str) and piece:
                            budget -= len(piece)
                            if budget < 0:
                                raise ChatError("RESPONSE_TOO_LARGE",
                                                f"the response exceeds {self.config.max_response_chars} characters")
                            text.append(piece)
                            yield TextDelta(piece)
                        for call in delta.get("tool_calls") or []:
                            partial = calls.setdefault(_call_index(call, calls), _PartialCall())
                            partial.id = call.get("id") or partial.id
                            function = call.get("function") or {}
                            # Replaced, not appended: some servers repeat the whole name on every delta.
                            partial.name = function.get("name") or partial.name
                            arguments = function.get("arguments") or ""
                            budget -= len(arguments)
                            if budget < 0:
                                raise ChatError("RESPONSE_TOO_LARGE",
                                                f"the response exceeds {self.config.max_response_chars} characters")
                            partial.arguments.append(arguments)
                        finish = choice.get("finish_reason") or finish
        except httpx.HTTPError as exc:
            raise ChatError("STREAM_BROKEN", f"{type(exc).__name__}: {exc}") from None
        if not done and not finish:
            raise ChatError("STREAM_BROKEN", "the stream ended before the model finished")
        tool_calls = []
        for index in sorted(calls):
            partial = calls[index]
            if not partial.id or not partial.name:
                raise ChatError("STREAM_MALFORMED", f"tool call {index} arrived without an id or a name")
            tool_calls.append(ToolCall(partial.id, partial.name, "".join(partial.arguments) or "{}"))
        # Some servers end with [DONE] and never send a finish_reason: the calls assembled say which it was.
        yield Completion("".join(text), tool_calls, finish or ("tool_calls" if tool_calls else "stop"))

    async def complete(self, messages: list[dict], tools: list[dict]) -> Completion:
        async for event in self.stream(messages, tools):
            if isinstance(event, Completion):
                return event
        raise ChatError("STREAM_BROKEN", "no completion")


def _call_index(call: dict, calls: dict[int, _PartialCall]) -> int:
    """The slot a tool-call delta belongs to: its `index`, or, where a server omits it, a new slot for a
    delta with a new id and the last opened slot for a continuation (so parallel calls are not merged)."""
    if call.get("index") is not None:
        return int(call["index"])
    last = max(calls, default=-1)
    if last < 0 or (call.get("id") and calls[last].id and call["id"] != calls[last].id):
        return last + 1
    return last


def _provider_message(body: str) -> str:
    try:
        error = json.loads(body).get("error")
        if isinstance(error, dict):
            return str(error.get("message") or error.get("type") or "provider error")[:500]
        if isinstance(error, str):
            return error[:500]
    except (json.JSONDecodeError, AttributeError):
        pass
    return body[:500] or "provider error"
