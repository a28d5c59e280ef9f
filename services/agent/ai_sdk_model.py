"""A model behind an AI SDK `streamText` route, spoken to in the AI SDK's UI message stream protocol (§9).

For teams whose model sits behind a route like

    const { instructions, messages, tools } = await req.json();
    streamText({ model, instructions, messages: await convertToModelMessages(messages),
                 tools: /* each {description, inputSchema} as tool({description, inputSchema: jsonSchema(...)}) */ })
      .pipeUIMessageStreamToResponse(res);   // or return result.toUIMessageStreamResponse()

The request carries the conversation as UI messages (earlier tool calls as `dynamic-tool` parts with their
outputs) and the tools without any `execute`, so the route hands every tool call back instead of running it.
The response's parts are read into the same Completion as an OpenAI-compatible stream: `text-delta` is text,
`tool-input-start` / `tool-input-delta` / `tool-input-available` assemble a call (the available input is
final), `finish` gives the finish reason, `error` and `abort` end the turn with a ChatError; every character
counts against `max_response_chars`. Nothing is executed here: calls go to the tool bridge.
"""

from __future__ import annotations

import json

from services.agent.chat import ChatConfig, ChatError, TextDelta, Wire, _PartialCall, _Reply

# The route's finish reasons, as the planner knows them from OpenAI-compatible servers.
_FINISH_REASONS = {"tool-calls": "tool_calls", "content-filter": "content_filter"}
_IGNORED = {"start", "start-step", "finish-step", "text-start", "text-end", "reasoning-start", "reasoning-delta",
            "reasoning-end", "tool-input-end", "message-metadata", "source-url", "source-document", "custom"}


def _text_part(text: str) -> dict:
    return {"type": "text", "text": text}


def ui_messages(messages: list[dict]) -> tuple[str, list[dict]]:
    """OpenAI-shaped messages as (instructions, UI messages): each assistant turn with its tool calls and
    their results as `dynamic-tool` parts in state `output-available`."""
    instructions = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    converted = []
    for message in messages:
        role = message["role"]
        if role == "user":
            parts = [_text_part(message["content"])]
        elif role == "assistant":
            parts = [_text_part(message["content"])] if message.get("content") else []
            for call in message.get("tool_calls") or []:
                function = call["function"]
                parts.append({"type": "dynamic-tool", "toolName": function["name"], "toolCallId": call["id"],
                              "state": "output-available", "input": _json_or_text(function["arguments"]),
                              "output": _json_or_text(results.get(call["id"], "null"))})
        else:
            continue  # system: the instructions; tool: inside its assistant turn
        converted.append({"id": f"m{len(converted)}", "role": role, "parts": parts})
    return instructions, converted


def _json_or_text(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text  # a model's half-written arguments, refused by the bridge: shown back as it wrote them


def _payload(config: ChatConfig, messages: list[dict], tools: list[dict]) -> dict:
    """The route's body: the configured parameters (call settings such as `temperature` or `toolChoice`, which
    the route can spread into `streamText`), then the instructions, messages and tools."""
    instructions, converted = ui_messages(messages)
    return {**dict(config.parameters), "instructions": instructions, "messages": converted,
            "tools": {t["function"]["name"]: {"description": t["function"]["description"],
                                              "inputSchema": t["function"]["parameters"]} for t in tools}}


class _UIMessageReply(_Reply):
    """One assistant message from its UI message stream parts."""

    def __init__(self, max_chars: int) -> None:
        super().__init__(max_chars)
        self._slots: dict[str, int] = {}  # toolCallId → slot, in the order calls started

    def take(self, data: str) -> list[TextDelta]:
        try:
            part = json.loads(data)
        except json.JSONDecodeError:
            raise ChatError("STREAM_MALFORMED", "a stream part is not JSON") from None
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise ChatError("STREAM_MALFORMED", "a stream part is not a JSON object with a type")
        kind = part["type"]
        if kind == "text-delta":
            piece = str(part.get("delta", ""))
            self._spend(piece)
            self.text.append(piece)
            return [TextDelta(piece)] if piece else []
        if kind in ("tool-input-start", "tool-input-delta", "tool-input-available", "tool-input-error"):
            self._tool_part(kind, part)
        elif kind == "finish":
            reason = str(part.get("finishReason") or "")
            self.finish = _FINISH_REASONS.get(reason, reason) or self.finish
        elif kind == "error":
            raise ChatError("PROVIDER_ERROR", str(part.get("errorText") or "the model route reported an error")[:500])
        elif kind == "abort":
            raise ChatError("STREAM_BROKEN", f"the model route aborted the reply ({part.get('reason') or 'no reason'})")
        elif kind not in _IGNORED and not kind.startswith("data-"):
            raise ChatError("STREAM_MALFORMED", f"unexpected part {kind[:40]!r} in a model's reply")
        return []

    def _tool_part(self, kind: str, part: dict) -> None:
        call_id = part.get("toolCallId")
        if not isinstance(call_id, str) or not call_id:
            raise ChatError("STREAM_MALFORMED", f"a {kind} part without a toolCallId")
        slot = self._slots.setdefault(call_id, len(self._slots))
        partial = self.calls.setdefault(slot, _PartialCall())
        partial.id = call_id
        partial.name = str(part.get("toolName") or partial.name)
        if kind == "tool-input-delta":
            piece = str(part.get("inputTextDelta", ""))
            self._spend(piece)
            partial.arguments.append(piece)
        elif kind in ("tool-input-available", "tool-input-error"):
            # The whole input, as the route parsed it: it replaces the pieces (already counted once).
            whole = json.dumps(part.get("input"))
            self._spend(whole[len("".join(partial.arguments)):])
            partial.arguments[:] = [whole]


UI_MESSAGE_STREAM = Wire("ai-sdk-ui-message-stream", "", _payload, _UIMessageReply,
                         owned=frozenset({"instructions", "messages", "tools"}))
