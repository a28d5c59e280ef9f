"""A tool call's result as a model receives it (§9): content, or a refusal that teaches where (a JSON Pointer
into the arguments), what is allowed there or the bound, and what to do next (shared.rpc.next_steps). The
agent's tool bridge and the MCP front answer in this one form."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from shared.rpc.next_steps import fill


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    tool: str
    ok: bool
    content: object = None
    error_code: str = ""
    error_message: str = ""
    # A refusal teaches: where in the arguments, what is allowed there or the bound, and the next step.
    pointer: str = ""
    next_step: str = ""
    allowed: list | None = None
    bound: int | float | None = None
    problems: list = field(default_factory=list)  # further problems, each {pointer, message}
    details: dict = field(default_factory=dict)  # anything else the refusal says (the roles of a path …)

    def refusal(self) -> dict:
        """The refusal exactly as a model receives it."""
        found = {"error": self.error_code, "message": self.error_message, "pointer": self.pointer,
                 "next_step": self.next_step}
        for key in ("allowed", "bound"):
            if getattr(self, key) is not None:
                found[key] = getattr(self, key)
        if self.problems:
            found["problems"] = self.problems
        if self.details:
            found["details"] = self.details
        return found


def refused(call_id: str, tool: str, reason: str, message: str, metadata: dict[str, str] | None = None,
            root: str = "") -> ToolResult:
    """A refusal from its reason and ErrorInfo-style metadata (shared.rpc.next_steps' keys); a pointer in the
    metadata is rooted at `root` in the arguments, and a refusal without one is about the whole call."""
    taught = fill(reason, dict(metadata or {}))
    pointer = taught.pop("pointer", None)
    allowed, bound = taught.pop("allowed", None), taught.pop("bound", None)
    return ToolResult(call_id, tool, False, error_code=reason, error_message=message,
                      pointer="" if pointer is None else root + pointer,
                      next_step=taught.pop("next_step", ""), allowed=_json(allowed), bound=_json(bound),
                      details=taught)


def _json(text: str | None):
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return text
