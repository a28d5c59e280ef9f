"""OpenAI-compatible Chat Completions streaming, normalised (§9).

Reads the server-sent event stream over httpx (parsed by httpx-sse), assembles tool calls whose
arguments arrive in pieces (several calls may stream in parallel), and
reports finish reasons, provider errors, broken streams and responses over
`max_response_chars` as a ChatError with a stable code. It never executes a
tool call: calls go to the tool bridge. The API key stays in this process's
configuration and is sent only as the Authorization header.

Shapes other servers send are accepted (tests/fixtures/chat_streams): the name
repeated on every delta, arguments before the name, `content` "" or null next to
tool calls, tool-call deltas without `index`, and a stream that ends with [DONE]
but no finish_reason, which finishes as "tool_calls" if calls were assembled,
else "stop". An event is read once its blank line arrives, as the event stream
format says: a last event the server cut off before it is not read (the old
hand-written reader took it; servers that speak the format end every event).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx
from httpx_sse import SSEError, aconnect_sse

from shared.logs import log

logger = logging.getLogger("tessera.agent.chat")
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


class _Reply:
    """One completion as its chunks arrive: text, tool calls assembled from pieces, the finish reason, all
    within `max_chars` characters of text and arguments."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.budget = max_chars
        self.text: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.finish = ""

    def take(self, data: str) -> list[TextDelta]:
        """One chunk's payload; the text it adds, as deltas."""
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            raise ChatError("STREAM_MALFORMED", "a stream chunk is not JSON") from None
        if not isinstance(chunk, dict):
            raise ChatError("STREAM_MALFORMED", "a stream chunk is not a JSON object")
        if "error" in chunk:
            raise ChatError("PROVIDER_ERROR", _provider_message(json.dumps(chunk)))
        deltas = []
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue  # one completion is asked for
            delta = choice.get("delta") or {}
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self._spend(piece)
                self.text.append(piece)
                deltas.append(TextDelta(piece))
            for call in delta.get("tool_calls") or []:
                self._add_call_piece(call)
            self.finish = choice.get("finish_reason") or self.finish
        return deltas

    def _spend(self, piece: str) -> None:
        self.budget -= len(piece)
        if self.budget < 0:
            raise ChatError("RESPONSE_TOO_LARGE", f"the response exceeds {self.max_chars} characters")

    def _add_call_piece(self, call: dict) -> None:
        partial = self.calls.setdefault(_call_index(call, self.calls), _PartialCall())
        partial.id = call.get("id") or partial.id
        function = call.get("function") or {}
        # Replaced, not appended: some servers repeat the whole name on every delta.
        partial.name = function.get("name") or partial.name
        arguments = function.get("arguments") or ""
        self._spend(arguments)
        partial.arguments.append(arguments)

    def completion(self) -> Completion:
        tool_calls = []
        for index in sorted(self.calls):
            partial = self.calls[index]
            if not partial.id or not partial.name:
                raise ChatError("STREAM_MALFORMED", f"tool call {index} arrived without an id or a name")
            tool_calls.append(ToolCall(partial.id, partial.name, "".join(partial.arguments) or "{}"))
        # Some servers end with [DONE] and never send a finish_reason: the calls assembled say which it was.
        return Completion("".join(self.text), tool_calls, self.finish or ("tool_calls" if tool_calls else "stop"))


@dataclass(frozen=True)
class Wire:
    """How one kind of endpoint is spoken to: where to POST (relative to the configured URL), the request
    body from OpenAI-shaped messages and tools, and the reader of its event stream's payloads. `owned`: the
    body's keys the adapter writes itself, which configured parameters may not replace."""

    name: str
    path: str
    payload: Callable[[ChatConfig, list[dict], list[dict]], dict]
    reply: Callable[[int], _Reply]
    owned: frozenset[str] = frozenset()


def _chat_completions_payload(config: ChatConfig, messages: list[dict], tools: list[dict]) -> dict:
    # The parameters first, so a key the adapter owns is always its own (settings refuse such keys anyway).
    payload = {**dict(config.parameters), "model": config.model, "messages": messages, "stream": True}
    if tools:
        payload["tools"] = tools
    return payload


OPENAI_CHAT = Wire("openai-compatible", "chat/completions", _chat_completions_payload, _Reply,
                   owned=frozenset({"model", "messages", "tools", "stream"}))


class ChatAdapter:
    def __init__(self, config: ChatConfig, transport: httpx.AsyncBaseTransport | None = None,
                 wire: Wire = OPENAI_CHAT) -> None:
        self.config = config
        self.wire = wire
        headers = dict(config.headers)
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self._client = httpx.AsyncClient(base_url=config.base_url.rstrip("/") + "/", headers=headers,
                                         timeout=config.timeout_seconds, transport=transport)
        # An empty path is the configured URL itself (an AI SDK route), without the slash a base URL gets.
        self._url = wire.path or config.base_url

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream(self, messages: list[dict], tools: list[dict]) -> AsyncIterator[TextDelta | Completion]:
        """Text deltas as they arrive, then one Completion; raises ChatError."""
        reply = self.wire.reply(self.config.max_response_chars)
        done = False
        try:
            async with aconnect_sse(self._client, "POST", self._url,
                                    json=self.wire.payload(self.config, messages, tools)) as source:
                await _refuse_http_error(source.response)
                async for event in source.aiter_sse():
                    if not event.data:
                        continue  # a keep-alive or a named event without data
                    if event.data.strip() == "[DONE]":
                        done = True
                        break
                    for delta in reply.take(event.data):
                        yield delta
        except SSEError as exc:  # before HTTPError, which it is a kind of
            raise ChatError("STREAM_MALFORMED", f"the model server did not answer with an event stream ({exc})") \
                from None
        except httpx.HTTPError as exc:  # the connection's own text (addresses, errno) goes to the log only
            log(logger, logging.WARNING, "the model's stream broke", error=type(exc).__name__, detail=str(exc)[:500])
            raise ChatError("STREAM_BROKEN", _broken(exc)) from None
        if not done and not reply.finish:
            raise ChatError("STREAM_BROKEN", "the stream ended before the model finished")
        yield reply.completion()

    async def complete(self, messages: list[dict], tools: list[dict]) -> Completion:
        async for event in self.stream(messages, tools):
            if isinstance(event, Completion):
                return event
        raise ChatError("STREAM_BROKEN", "no completion")


def _broken(exc: httpx.HTTPError) -> str:
    """What a person is told when the model's server could not be reached or the stream broke."""
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return "the model's server could not be reached; try again shortly"
    if isinstance(exc, httpx.TimeoutException):
        return "the model's server stopped answering in time; try again shortly"
    return "the connection to the model's server broke; try again shortly"


def _call_index(call: dict, calls: dict[int, _PartialCall]) -> int:
    """The slot a tool-call delta belongs to: its `index`, or, where a server omits it, a new slot for a
    delta with a new id and the last opened slot for a continuation (so parallel calls are not merged)."""
    if call.get("index") is not None:
        return int(call["index"])
    last = max(calls, default=-1)
    if last < 0 or (call.get("id") and calls[last].id and call["id"] != calls[last].id):
        return last + 1
    return last


async def _refuse_http_error(response: httpx.Response) -> None:
    """An HTTP error status as a ChatError naming it, with the provider's own message."""
    if response.status_code >= 400:
        body = (await response.aread()).decode("utf-8", "replace")[:2000]
        raise ChatError(f"HTTP_{response.status_code}", _provider_message(body))


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
