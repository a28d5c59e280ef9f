"""The tool bridge of one conversation (§9): every model tool call passes through it.

- call ids are unique: a repeated id is refused, not run twice;
- at most `max_calls` ids are kept (no eviction, so a duplicate is always caught):
  past that, calls are refused;
- arguments are bounded JSON, then checked against the tool's schema; either
  failure is a result for the model, and the tool does not run;
- every refusal tells the model where (a JSON Pointer into its arguments), what is
  allowed there or the bound, and what to do next (shared.rpc.next_steps);
- closing suppresses every later result; cancelling stops running tools
  cooperatively (their tasks see CancelledError).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import grpc

from shared.data.bounded_json import BoundedJsonError, Limits, parse
from shared.rpc.errors import TesseraError, error_details
from shared.rpc.next_steps import metadata
from shared.rpc.refusals import Refusal
from shared.tools.tool_contracts import ToolContract
from shared.tools.tool_results import ToolResult, refused

logger = logging.getLogger("tessera.bridge")
DEFAULT_MAX_CALLS = 1000
ARGUMENT_LIMITS = Limits(max_raw_bytes=256 * 1024)

Handler = Callable[[dict], Awaitable[object]]


@dataclass
class Tool:
    contract: ToolContract
    handler: Handler
    service: str = ""  # the service its handler calls (shared.rpc.errors.SERVICE_NAMES), named when it does not answer


class ToolBridge:
    def __init__(self, tools: list[Tool], max_calls: int = DEFAULT_MAX_CALLS) -> None:
        if not 1 <= max_calls <= 100_000:
            raise ValueError("max_calls must be 1..100000")
        self._tools = {tool.contract.name: tool for tool in tools}
        self._max_calls = max_calls
        self._seen: set[str] = set()
        self._running: set[asyncio.Task] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _fail(self, call_id: str, tool: str, code: str, message: str, pointer: str | None = None,
              **taught) -> ToolResult:
        """The bridge's own refusal (shared.rpc.next_steps.metadata's keys); without a pointer, of the whole call."""
        return refused(call_id, tool, code, message, metadata(pointer, **taught))

    async def call(self, call_id: str, tool: str, arguments_json: str) -> ToolResult | None:
        """Run one call; None when the bridge was closed (the result is suppressed)."""
        if self._closed:
            return None
        if not isinstance(call_id, str) or not call_id or len(call_id) > 128:
            return self._fail(str(call_id)[:128], tool, "CALL_ID_INVALID", "a call id is 1-128 characters",
                              bound=128)
        if call_id in self._seen:
            return self._fail(call_id, tool, "DUPLICATE_CALL_ID", f"call id {call_id!r} was already used")
        if len(self._seen) >= self._max_calls:
            return self._fail(call_id, tool, "CALL_LIMIT", f"this conversation reached {self._max_calls} calls",
                              bound=self._max_calls)
        self._seen.add(call_id)
        found = self._tools.get(tool)
        if found is None:
            return self._fail(call_id, tool, "UNKNOWN_TOOL",
                              f"there is no tool {tool!r}; available: {', '.join(sorted(self._tools))}",
                              allowed=sorted(self._tools))
        try:
            arguments = parse(arguments_json, ARGUMENT_LIMITS)
        except BoundedJsonError as exc:
            return self._fail(call_id, tool, "ARGUMENTS_NOT_JSON", str(exc), pointer=exc.pointer)
        violations = found.contract.violations(arguments)
        if violations:
            return self._invalid(call_id, tool, violations)
        task = asyncio.ensure_future(found.handler(arguments))
        self._running.add(task)
        try:
            content = await task
        except asyncio.CancelledError:
            if self._closed or task.cancelled():
                return None if self._closed else self._fail(call_id, tool, "CANCELLED", "the turn was cancelled")
            raise
        except (Refusal, TesseraError) as exc:  # the tool's own refusal, or a peer's passed on
            return None if self._closed else refused(call_id, tool, exc.reason, exc.message, exc.metadata)
        except grpc.RpcError as exc:  # a peer's refusal, or a peer nobody reached: in words, never gRPC's text
            details = error_details(exc, found.service or None)
            # A peer's pointer is into what it was sent (the draft, the proposal): rooted there in the arguments.
            return None if self._closed else refused(call_id, tool, details.reason, details.message,
                                                     details.metadata, found.contract.subject)
        except Exception:
            logger.exception("tool %s failed", tool)
            return None if self._closed else self._fail(call_id, tool, "TOOL_FAILED", f"{tool} failed")
        finally:
            self._running.discard(task)
        if self._closed:
            return None  # finished after close: nobody may see it
        return ToolResult(call_id, tool, True, content=found.contract.project(content))

    def _invalid(self, call_id: str, tool: str, violations) -> ToolResult:
        first = violations[0]
        result = self._fail(call_id, tool, "ARGUMENTS_INVALID", first.message, first.pointer,
                            allowed=first.allowed or None, bound=first.bound)
        return replace(result, problems=[{"pointer": v.pointer, "message": v.message} for v in violations[1:]])

    def cancel(self) -> None:
        """Cooperative cancellation of every running tool."""
        for task in list(self._running):
            task.cancel()

    def close(self) -> None:
        """No result is delivered after this; running tools are cancelled."""
        self._closed = True
        self.cancel()
