"""A real model as the planner: an OpenAI-compatible endpoint driving the same tools.

It gets exactly what the embedded planner gets — the six tool contracts and
their projected results through the same bridge — and nothing else: no SQL,
no rows, no tokens. Tool calls keep the model's own call ids, so a repeated
id is refused by the bridge like any other.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from services.agent.chat import ChatAdapter
from services.agent.embedded_planner import Plan
from services.agent.tools import model_message
from shared.tools.tool_contracts import ToolContract, function_name
from shared.tools.tool_results import ToolResult

MAX_STEPS = 16
SYSTEM_PROMPT = (
    "You answer questions about an organisation's data by composing a UI. Use the tools: inspect the context "
    "and the catalog, run one or more analyses from semantic drafts, then call present_ui without a proposal to "
    "get the UI slice and its schema, and again with a proposal that binds the analysis results by their slice "
    "ids. A refused call says where (pointer) and what to do next (next_step): do that. You never see values: do "
    "not state numbers in your answer. Keep the final answer short; if the data cannot answer the question, say "
    "so and present nothing."
)

CallRaw = Callable[[str, str, str], Awaitable[ToolResult]]


class ChatPlanner:
    def __init__(self, adapter: ChatAdapter, contracts: list[ToolContract], max_steps: int = MAX_STEPS,
                 earlier_questions: list[str] | tuple[str, ...] = ()) -> None:
        self.adapter = adapter
        self.earlier = list(earlier_questions)
        self.name = f"{adapter.wire.name}:{adapter.config.model}"
        # Function names may not hold dots at most providers: `server.tool` travels as `server__tool`.
        self.names = {function_name(c.name): c.name for c in contracts}
        self.tools = [{"type": "function", "function": {"name": function_name(c.name), "description": c.description,
                                                          "parameters": c.input_schema}} for c in contracts]
        self.max_steps = max_steps

    async def run(self, question: str, call: CallRaw, committed: Callable[[], bool],
                  stopped: Callable[[], bool] = lambda: False) -> Plan:
        """The model's turn: its calls until it answers, runs out of steps, or the turn stops taking calls
        (`stopped`: its refusal budget is spent)."""
        messages: list[dict] = [{"role": "system", "content": SYSTEM_PROMPT}]
        if self.earlier:  # the person's own earlier words, so "now only web" can be read against them
            messages.append({"role": "user", "content": "Earlier questions in this conversation, oldest first:\n"
                             + "\n".join(f"- {q}" for q in self.earlier)})
        messages.append({"role": "user", "content": question})
        for _ in range(self.max_steps):
            # A ChatError (provider error, broken or oversized stream) ends the turn: the turn reports it.
            completion = await self.adapter.complete(messages, self.tools)
            calls = _complete_calls(completion)
            if not calls:
                if completion.tool_calls:  # every call was cut off at the length limit: none can run
                    return Plan("The model's reply was cut off at its length limit before its tool call was "
                                "complete; nothing more was done.", committed())
                return Plan(completion.text or "(no answer)", committed())
            messages.append({"role": "assistant", "content": completion.text or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
                for c in calls]})
            for tool_call in calls:
                result = await call(tool_call.id, self.names.get(tool_call.name, tool_call.name),
                                    tool_call.arguments_json)
                messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": model_message(result)})
            if stopped():
                return Plan("", committed())
        return Plan(f"The model did not finish within {self.max_steps} steps; nothing more was shown.", False)


def _complete_calls(completion) -> list:
    """The calls to run and to send back. A reply cut off at the length limit may end inside a call's
    arguments; that call is dropped, not run, and not echoed to the server (which refuses half-written
    JSON in the history and would end the turn)."""
    if completion.finish_reason != "length":
        return list(completion.tool_calls)
    complete = []
    for call in completion.tool_calls:
        try:
            json.loads(call.arguments_json or "{}")
        except ValueError:
            continue
        complete.append(call)
    return complete
