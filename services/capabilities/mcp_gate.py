"""The MCP side of the tool trust gate (§8), with the official `mcp` SDK.

One long-lived client per allowlisted server (stdio subprocess or streamable
HTTP), restarted when it crashes or hangs. A server's tools are listed, each
tool's description and input schema hashed and compared with the reviewed
pins — unlisted → denied, changed → drifted (denied, with an alert), missing
or unreachable → unavailable — whenever:
- a session starts (and on ReviewTools, and before an approved mutation runs);
- its client connects or reconnects (after a crash or a hang): before anything
  else may use the new connection, so no call reaches a server that came back
  changed;
- the server announces `notifications/tools/list_changed` (a 2026-07-28 server
  is asked for them with `subscriptions/listen`; older ones send them unasked):
  in the background, one listing at a time per server, any number of
  announcements during a listing making one more. A call waits (bounded) until
  every change announced before it is judged;
- a call is about to go to a streamable-HTTP server, or a mutation of one is
  requested: a server behind a URL can be replaced (a rolling deploy) with no
  failed request, no reconnect and, under 2026-07-28, no session to lose, so
  nothing else would tell us. Listing costs about as much as a read, so there
  is no freshness bound to tune: every call waits for a listing that started
  after it arrived. Calls arriving together share one (the same one-at-a-time
  rounds as announcements), so N concurrent calls cost at most two listings.
  Behind a load balancer the listing and the call may still meet different
  replicas of the server: that narrows to the moment between them, it does
  not close.
A list of more than MAX_TOOLS tools (or MAX_PAGES pages), a description over
MAX_DESCRIPTION_CHARS, a name over MAX_TOOL_NAME_CHARS or a schema over
SCHEMA_LIMITS denies all of that server's tools with the reason
(TOOL_LIST_TOO_LARGE, DESCRIPTION_TOO_LONG, TOOL_NAME_TOO_LONG,
SCHEMA_TOO_LARGE); every listing is bounded by the server's timeout. The model
only ever gets `server.tool` ids and our reviewed descriptions, and arguments
are checked against the *pinned* schema with undeclared properties refused
(a closed ToolContract): a server that added a parameter never receives it.

A session keeps the view surveyed at its start, except that it only ever gets
stricter: a tool this process has seen drift (in any listing) is denied in
every session from then on, until it is re-pinned (which takes a restart), and
a tool its server's latest listing denies is denied in every session until a
later listing allows it again. A drifted tool also denies its server's
mutating tools (SERVER_DRIFTED): the server is no longer the one reviewed, and
an effect cannot be taken back, while a read of an unchanged sibling stays
allowed (its answer is screened and taints the run like any other, the run is
degraded, and an approval card of that server names the drifted tools). The
same holds for a call at the moment it would be sent. Each replica lists its
own servers and is not told of another's findings.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from services.capabilities import sandbox
from services.capabilities.tool_policy import ServerRule, ToolPolicy, ToolRule, digest, pinned_as
from shared.data.bounded_json import BoundedJsonError, Limits, check
from shared.data.caches import bounded_lru
from shared.tools.tool_contracts import ToolContract, ToolSchemaError
from tessera.capabilities.v1 import capabilities_pb2 as cap

# The MCP SDK takes about a second to import: it is loaded when the first tool server is opened (after the
# broker serves), not at start, so a broker restarted after a crash answers that much sooner.
if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

logger = logging.getLogger("tessera.broker.mcp")
MAX_SESSIONS = 1_000  # snapshots kept; the least recently used session re-surveys on its next call
CONNECT_TIMEOUT_SECONDS = 15.0
# The SDK winds a stdio server down itself, every step bounded: close stdin, wait 2 s, SIGTERM the process
# group, wait 2 s, SIGKILL, reap (≤ ~7 s for a server that ignores everything). Interrupting that with a
# plain task.cancel() can leave the server process alive and its pipe reader waiting forever, so it is only
# a last resort after this long.
SHUTDOWN_SECONDS = 8.0
# A server asked to announce changes answers at once; one that does not is used unwatched rather than
# spending the connect budget (CONNECT_TIMEOUT_SECONDS) on it.
LISTEN_ACK_SECONDS = 5.0
# What one server's tool list may hold. Beyond that it is refused whole, with the reason: judging (and
# showing a reviewer) a list larger than any reviewed one only costs time, and a list that never ends
# would cost all of it.
MAX_TOOLS = 1_000
MAX_PAGES = 100
MAX_TOOL_NAME_CHARS = 128  # the MCP spec's own bound on tool names
MAX_DESCRIPTION_CHARS = 20_000  # the read path's clip (§8): no reviewed description is longer
SCHEMA_LIMITS = Limits(max_utf16_units=100_000)


class ToolCallFailed(Exception):
    """A call that did not produce a result: the server crashed, hung or refused the request, or the gate
    refused to send it. `sent` is False when the server never saw it (nothing can have happened there)."""

    def __init__(self, reason: str, message: str, availability: int = cap.TOOL_AVAILABILITY_UNREACHABLE,
                 sent: bool = True) -> None:
        super().__init__(message)
        self.reason = reason
        self.availability = availability
        self.sent = sent


@dataclass
class ToolState:
    tool_id: str
    rule: ToolRule | None
    availability: int
    reason: str = ""
    description: str = ""  # the server's, as offered now
    input_schema: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    contract: ToolContract | None = None  # our description + the pinned (== current) schema, closed

    @property
    def available(self) -> bool:
        return self.availability == cap.TOOL_AVAILABILITY_AVAILABLE


def _offered(tool_id: str, rule: ToolRule | None, tool: mcp_types.Tool) -> ToolState:
    """A tool as its server offers it now: available as far as the server goes; the judge decides."""
    return ToolState(tool_id, rule, cap.TOOL_AVAILABILITY_AVAILABLE if rule else cap.TOOL_AVAILABILITY_DENIED,
                     "" if rule else "NOT_IN_POLICY", tool.description or "", tool.input_schema,
                     tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {})


@dataclass
class Listing:
    """One listing of a server's tools, judged: its allowlisted tools' states and the ids it offers beyond."""

    states: dict[str, ToolState]
    unlisted: list[str]


# How a gate judges a server's tool list: (tools, whether that was the whole list, the listing's number
# among this server's listings, in the order they started) → the judged listing.
Judge = Callable[[list, bool, int], Listing]


class ServerConnection:
    """A client to one server, kept open in its own task (the SDK's contexts live in one task)."""

    def __init__(self, name: str, rule: ServerRule, policy: ToolPolicy, log_dir: Path, judge: Judge,
                 on_unboxed: Callable[[str], None] = lambda server: None) -> None:
        self.name = name
        self.on_unboxed = on_unboxed  # told each time a server whose policy says `sandbox: none` is started
        self.rule = rule
        self.policy = policy
        self.log_dir = log_dir
        self.judge = judge
        self._client: Client | None = None
        self._task: asyncio.Task | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._failure: BaseException | None = None
        self._lock = asyncio.Lock()
        self._abort: anyio.CancelScope | None = None  # ends a connection still in its handshake
        self._closed = False  # the broker is stopping: no new connection
        # Announced changes: the listing that will cover announcements not yet being listed, the one under
        # way, and the task that runs them one after the other.
        self._next_round: asyncio.Future | None = None
        self._current_round: asyncio.Future | None = None
        self._relisting: asyncio.Task | None = None
        self._listings = 0  # listings started: listings may overlap, and the latest started is the latest word

    def _transport(self, errlog):
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        if self.rule.transport == "stdio":
            command, env = self.policy.command(self.rule), self.policy.server_env(self.rule)
            if self.rule.sandbox != "none":
                launch = sandbox.enclose(command, env, self.policy.box(self.rule))
                command, env = launch.command, launch.env
            else:
                self.on_unboxed(self.name)
            return stdio_client(StdioServerParameters(command=command[0], args=command[1:], env=env), errlog=errlog)
        http = create_mcp_http_client(headers=self.policy.headers(self.rule))
        return streamable_http_client(self.rule.url, http_client=http)

    async def _hold(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"mcp-{self.name}.log", "a", encoding="utf-8") as errlog:
            try:
                from mcp import Client

                # An anyio scope, not task.cancel(): cancelling it honours the SDK's shielded wind-down, so an
                # aborted handshake still ends with the server process stopped and reaped.
                with anyio.CancelScope() as self._abort:
                    async with Client(self._transport(errlog), cache=None, message_handler=self._on_message,
                                      read_timeout_seconds=self.rule.timeout_seconds) as client:
                        async with self._change_feed(client):
                            self._client = client
                            self._ready.set()
                            await self._stop.wait()
                if self._abort.cancelled_caught:
                    self._failure = ConnectionAbortedError("the connection was closed during its handshake")
            except BaseException as exc:  # noqa: BLE001 - whatever ended the connection, callers see it
                self._failure = exc
            finally:
                self._client = None
                self._abort = None
                self._ready.set()

    @contextlib.asynccontextmanager
    async def _change_feed(self, client: Client):
        """Ask a server of the 2026-07-28 protocol to announce changes of its tool list (older ones send them
        unasked); they reach `_on_message`. Opened before the connection's first listing, so no change falls
        between the two. A server that declines is still listed at every (re)connect and session start."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = getattr(client.session.server_capabilities, "tools", None)
        async with contextlib.AsyncExitStack() as feed:
            if client.session.protocol_version in MODERN_PROTOCOL_VERSIONS and tools and tools.list_changed:
                try:
                    with anyio.fail_after(min(LISTEN_ACK_SECONDS, self.rule.timeout_seconds)):
                        await feed.enter_async_context(client.listen(tools_list_changed=True))
                except Exception as exc:  # noqa: BLE001 - the connection is still usable, only less watched
                    logger.warning("tool server %s: no change announcements: %s: %s", self.name,
                                   type(exc).__name__, exc)
            yield

    async def _on_message(self, message) -> None:
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._list_again()

    def _list_again(self) -> None:
        """List and judge the tools again (the server announced a change, or a call to a streamable-HTTP server
        is waiting), in the background and one listing at a time: requests during a listing make one more,
        never a pile of tasks, and that one starts after every request it covers was made."""
        if self._closed:
            return
        if self._next_round is None:
            self._next_round = asyncio.get_running_loop().create_future()
        if self._relisting is None or self._relisting.done():
            self._relisting = asyncio.create_task(self._relist(), name=f"mcp-{self.name}-relist")

    async def _relist(self) -> None:
        while self._next_round is not None and not self._closed:
            self._current_round, self._next_round = self._next_round, None
            try:
                await self.list_tools()  # judged as it lands: a drifted tool is denied from then on
            except ToolCallFailed as exc:  # the connection ended: the next use reconnects, and lists first
                logger.warning("tool server %s could not be listed again: %s", self.name, exc)
            except Exception:
                logger.exception("listing tool server %s again failed", self.name)
            finally:
                self._current_round.set_result(None)
                self._current_round = None

    async def _changes_judged(self) -> None:
        """Wait until every listing asked for so far (announced changes, waiting calls) is done and judged: a
        call never goes out against a tool list the server said has changed and nobody has looked at yet.
        Bounded (at most two listings, each possibly after a reconnect); past that, the call is refused unsent."""
        pending = self._next_round if self._next_round is not None else self._current_round
        if pending is None:
            return
        bound = 2 * (CONNECT_TIMEOUT_SECONDS + self.rule.timeout_seconds)
        done, _ = await asyncio.wait({pending}, timeout=bound)
        if not done:
            raise ToolCallFailed("SERVER_TIMEOUT", f"the tools of {self.name} could not be listed and checked "
                                                   f"within {bound:g} s", sent=False)

    async def judged_now(self) -> None:
        """Wait until the server's tools, as they stand now, are judged: every announced change, a reconnect's
        listing, and for a streamable-HTTP server a listing that started after this was asked. ToolCallFailed
        (unsent) if the server cannot be reached or listed in time."""
        await self._changes_judged()
        _, opened = await self._connected()  # a reconnect lists first; a change announced meanwhile is waited for
        if self.rule.transport == "http" and opened is None:  # (a connection this opened was listed just now)
            self._list_again()
        await self._changes_judged()

    async def client(self) -> Client:
        return (await self._connected())[0]

    async def _connected(self) -> tuple[Client, Listing | None]:
        """The live client. A new connection's tools are listed and judged before anyone can use it (the
        listing is returned to the caller that opened it, None to everyone else)."""
        async with self._lock:
            if self._client is not None:
                return self._client, None
            await self._restart()
            client = self._client
            if client is None:
                failure = self._failure
                if isinstance(failure, sandbox.SandboxUnavailable):
                    raise ToolCallFailed("SANDBOX_UNAVAILABLE", f"server {self.name} was not started: it must "
                                                                f"run boxed and {failure}"[:300], sent=False)
                _log_cause(self.name, "did not start", failure)
                raise ToolCallFailed("SERVER_UNREACHABLE", f"tool server {self.name} did not start (the broker's "
                                                           "log says why)", sent=False)
            try:
                listed = await asyncio.wait_for(self._fetch(client), self.rule.timeout_seconds)
            except Exception as exc:  # hung or broken from the start: nobody may use it unjudged
                await self._shutdown()
                _log_cause(self.name, "did not list its tools on connecting", exc)
                raise ToolCallFailed("SERVER_TIMEOUT" if isinstance(exc, TimeoutError) else "SERVER_FAILED",
                                     f"tool server {self.name} did not list its tools on connecting (the broker's "
                                     "log says why)", sent=False) from None
            return client, self.judge(*listed)

    async def _restart(self) -> None:
        await self._shutdown()
        if self._closed:
            self._failure = ConnectionAbortedError("the broker is stopping")
            return
        await asyncio.to_thread(_load_sdk)  # the first time only: off the event loop, which keeps serving
        self._ready, self._stop, self._failure = asyncio.Event(), asyncio.Event(), None
        self._task = asyncio.create_task(self._hold(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), CONNECT_TIMEOUT_SECONDS)
        except TimeoutError:
            await self._shutdown()  # aborts the handshake (which records its own, less telling, failure)
            self._failure = TimeoutError(f"no handshake within {CONNECT_TIMEOUT_SECONDS:.0f} s")

    async def _shutdown(self) -> None:
        """End the current connection: a live one winds down (the SDK stops the server); one still in its
        handshake is aborted at once — a server that never answered has nothing to finish."""
        task = self._task
        if task is not None:
            self._stop.set()
            if self._client is None and self._abort is not None:
                self._abort.cancel()
            done, _ = await asyncio.wait({task}, timeout=SHUTDOWN_SECONDS)
            if not done:  # the SDK's own bounds were overrun: cancel, and do not wait on it for long
                logger.error("tool server %s did not stop within %.0f s; abandoning it", self.name, SHUTDOWN_SECONDS)
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)
        if self._task is task:
            self._task = None
            self._client = None

    async def _timed(self, what: str, work):
        client = await self.client()
        try:
            # asyncio.timeout, not wait_for: it bounds the call in this task instead of wrapping it in a new one
            # (one loop round trip less on every read through the broker).
            async with asyncio.timeout(self.rule.timeout_seconds):
                return await work(client)
        except TimeoutError:
            async with self._lock:  # a hung server is restarted before anyone uses it again (unless already)
                if self._client is client:
                    await self._shutdown()
            raise ToolCallFailed("SERVER_TIMEOUT", f"{self.name} did not answer {what} within "
                                                   f"{self.rule.timeout_seconds:g} s") from None
        except ToolCallFailed:
            raise
        except Exception as exc:  # the connection broke (the server crashed) or the server refused
            async with self._lock:
                if self._client is client:
                    await self._shutdown()
            _log_cause(self.name, f"failed during {what}", exc)
            raise ToolCallFailed("SERVER_FAILED", f"tool server {self.name} failed during {what} (its connection "
                                                  "broke or it refused; the broker's log says why)") from None

    async def _fetch(self, client: Client) -> tuple[list[mcp_types.Tool], bool, int]:
        """The tool list, page by page, stopping once it is past MAX_TOOLS or MAX_PAGES (a paginator that
        never ends cannot hang the broker): (tools, whether that was the whole list, the listing's number)."""
        self._listings += 1
        number, tools, cursor = self._listings, [], None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="bypass")
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                return tools, True, number
            if len(tools) > MAX_TOOLS:
                break
        return tools, False, number

    async def list_tools(self) -> Listing:
        """The server's tools, listed now and judged (a connection opened by this call lists them once)."""
        _, listing = await self._connected()
        if listing is not None:
            return listing
        return self.judge(*await self._timed("tools/list", self._fetch))

    async def call(self, tool: str, arguments: dict, refusal: Callable[[], ToolCallFailed | None]
                   ) -> mcp_types.CallToolResult:
        """Call `tool` unless `refusal()` — asked once the connection is up and judged, right before the
        request goes out — says why not (then the server never sees it)."""
        await self.judged_now()

        def send(client: Client):
            refused = refusal()
            if refused is not None:
                raise refused
            return client.call_tool(tool, arguments)
        return await self._timed(tool, send)

    async def close(self) -> None:
        """Stop for good. Not behind the lock: a restart waiting for a hung handshake holds it for up to
        CONNECT_TIMEOUT_SECONDS, and the abort below is what releases it."""
        self._closed = True
        if self._relisting is not None:
            self._relisting.cancel()
            await asyncio.wait({self._relisting}, timeout=1.0)
        if self._next_round is not None and not self._next_round.done():
            self._next_round.set_result(None)  # its waiters go on, to find the connection closed
        await self._shutdown()


def _load_sdk() -> None:
    import mcp.client.stdio  # noqa: F401 - imported for its side effect: loaded, so later imports are free
    import mcp.client.streamable_http  # noqa: F401
    import mcp_types  # noqa: F401


def result_text(result: mcp_types.CallToolResult) -> str:
    """Everything a tool returned, as text: text blocks, and structured content as JSON."""
    import mcp_types

    parts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
    others = [block.type for block in result.content if not isinstance(block, mcp_types.TextContent)]
    if result.structured_content is not None and not parts:
        parts.append(json.dumps(result.structured_content, sort_keys=True))
    if others:
        parts.append(f"[{len(others)} non-text block(s) omitted: {', '.join(sorted(set(others)))}]")
    return "\n".join(parts)


def out_of_bounds(tools: list[mcp_types.Tool], complete: bool) -> tuple[str, str]:
    """Why a server's tool list is refused whole, (reason, detail), or ("", "") if it is within bounds."""
    if not complete or len(tools) > MAX_TOOLS:
        return "TOOL_LIST_TOO_LARGE", f"more than {MAX_TOOLS} tools or {MAX_PAGES} pages"
    for tool in tools:
        if len(tool.name) > MAX_TOOL_NAME_CHARS:
            return "TOOL_NAME_TOO_LONG", f"a tool name of {len(tool.name)} characters (at most {MAX_TOOL_NAME_CHARS})"
        if len(tool.description or "") > MAX_DESCRIPTION_CHARS:
            return "DESCRIPTION_TOO_LONG", (f"{tool.name}: a description of {len(tool.description)} characters "
                                            f"(at most {MAX_DESCRIPTION_CHARS})")
        try:
            check(tool.input_schema, SCHEMA_LIMITS)
        except BoundedJsonError as exc:
            return "SCHEMA_TOO_LARGE", f"{tool.name}: input schema: {exc}"
    return "", ""


class ToolGate:
    def __init__(self, policy: ToolPolicy, log_dir: Path,
                 on_drift: Callable[[str, str], None] = lambda tool_id, what: None,
                 on_unboxed: Callable[[str], None] = lambda server: None) -> None:
        self.policy = policy
        self.on_drift = on_drift
        self.connections = {name: ServerConnection(name, rule, policy, log_dir, partial(self._listed, name),
                                                   on_unboxed)
                            for name, rule in policy.policy.servers.items()}
        self._sessions = bounded_lru(MAX_SESSIONS)  # session → its tools; used on the event loop only
        self._alerted: set[tuple[str, str]] = set()
        self._unlisted: dict[str, dict[str, ToolState]] = {}  # server → its unlisted tools, latest listing
        # Tools any listing of this process found changed since review. Without this, a session surveyed
        # before the change kept its "available" view and went on calling the changed tool, while the same
        # process denied it (and alerted) for every session started after.
        self._drifted: set[str] = set()
        # Each server's tools as its latest listing judged them (a survey, a reconnect, an announced change),
        # with that listing's number: what a running session and every call are held to besides drift.
        self._latest: dict[str, tuple[int, dict[str, ToolState]]] = {}
        self._contracts: dict[str, ToolContract | None] = {}  # by tool id; pins do not change while we run

    def _listed(self, server: str, tools: list[mcp_types.Tool], complete: bool, number: int) -> Listing:
        """One listing of `server`, judged (bounds first, then each allowlisted tool against its pin), and
        kept as the server's latest verdict unless a listing started after it has landed already."""
        rule = self.connections[server].rule
        reason, detail = out_of_bounds(tools, complete)
        if reason:
            logger.warning("tool server %s: %s; all its tools are denied (%s)", server, detail, reason)
            listing = Listing({f"{server}.{name}": ToolState(f"{server}.{name}", tool_rule,
                                                             cap.TOOL_AVAILABILITY_DENIED, reason)
                               for name, tool_rule in rule.tools.items()}, [])
            self._unlisted[server] = {}
        else:
            offered = {tool.name: tool for tool in tools}
            listing = Listing({f"{server}.{name}": self._judge(f"{server}.{name}", tool_rule, offered.get(name))
                               for name, tool_rule in rule.tools.items()},
                              [f"{server}.{name}" for name in sorted(offered) if name not in rule.tools])
            # Kept for a reviewer to read in full (ReviewTools), never offered; only the server's latest listing,
            # so a server that keeps renaming its extra tools cannot make this grow.
            self._unlisted[server] = {tool_id: _offered(tool_id, None, offered[tool_id.partition(".")[2]])
                                      for tool_id in listing.unlisted}
        if number > self._latest.get(server, (0, {}))[0]:
            self._latest[server] = number, listing.states
        return listing

    def _judge(self, tool_id: str, rule: ToolRule, tool: mcp_types.Tool | None) -> ToolState:
        if tool is None:
            return ToolState(tool_id, rule, cap.TOOL_AVAILABILITY_UNREACHABLE, "TOOL_MISSING")
        state = _offered(tool_id, rule, tool)
        pin = rule.pin
        if pin is None:
            state.availability, state.reason = cap.TOOL_AVAILABILITY_DENIED, "NOT_REVIEWED"
            return state
        changed = [what for what, offered, pinned in (
            ("description", state.description, pin.description_sha256),
            ("input schema", state.input_schema, pin.input_schema_sha256)) if not pinned_as(offered, pinned)]
        if changed:
            state.availability, state.reason = cap.TOOL_AVAILABILITY_DRIFTED, "DRIFT"
            self._drifted.add(tool_id)
            key = (tool_id, digest([state.description, state.input_schema]))
            if key not in self._alerted:
                self._alerted.add(key)
                self.on_drift(tool_id, " and ".join(changed))
            return state
        state.contract = self._contract(tool_id, rule)
        if state.contract is None:
            state.availability, state.reason = cap.TOOL_AVAILABILITY_DENIED, "SCHEMA_UNSUPPORTED"
        return state

    def _contract(self, tool_id: str, rule: ToolRule) -> ToolContract | None:
        """The contract a pinned tool is called under: our description and the pinned schema, closed (a
        property the reviewed schema does not declare is refused); built once, None if it cannot be."""
        if tool_id not in self._contracts:
            try:
                self._contracts[tool_id] = ToolContract(tool_id, rule.description, rule.pin.input_schema,
                                                        closed=True)
            except ToolSchemaError as exc:
                logger.warning("%s", exc)
                self._contracts[tool_id] = None
        return self._contracts[tool_id]

    async def survey(self) -> tuple[dict[str, ToolState], list[str]]:
        """Fetch every server's tool list now and judge each tool; (states, unlisted tool ids)."""
        async def one(server: str, connection: ServerConnection) -> Listing:
            try:
                return await connection.list_tools()
            except ToolCallFailed as exc:
                logger.warning("tool server %s unreachable: %s", server, exc)
                return Listing({f"{server}.{name}": ToolState(f"{server}.{name}", rule,
                                                              cap.TOOL_AVAILABILITY_UNREACHABLE, exc.reason)
                                for name, rule in connection.rule.tools.items()}, [])

        listings = await asyncio.gather(*(one(name, c) for name, c in self.connections.items()))
        states: dict[str, ToolState] = {}
        unlisted: list[str] = []
        for listing in listings:
            states.update(listing.states)
            unlisted += listing.unlisted
        return self._as_judged_now(states), unlisted

    def isolation(self) -> list[cap.ToolServer]:
        """How each server is confined, in policy order (what `tessera status` shows)."""
        servers = []
        for name, connection in self.connections.items():
            rule = connection.rule
            if rule.transport == "http":
                servers.append(cap.ToolServer(name=name, isolation=cap.TOOL_SERVER_ISOLATION_REMOTE,
                                              detail=f"streamable HTTP at {rule.url}"))
            elif rule.sandbox == "none":
                servers.append(cap.ToolServer(name=name, isolation=cap.TOOL_SERVER_ISOLATION_UNBOXED,
                                              detail="its policy says sandbox: none"))
            elif why := sandbox.unavailable() or sandbox.problem(self.policy.box(rule), sandbox.Hidden.here()):
                servers.append(cap.ToolServer(name=name, isolation=cap.TOOL_SERVER_ISOLATION_NOT_STARTED,
                                              detail=why))
            else:
                servers.append(cap.ToolServer(name=name, isolation=cap.TOOL_SERVER_ISOLATION_BOXED,
                                              detail="bubblewrap: no network, only its declared files"))
        return servers

    def unlisted_offers(self, tool_ids: list[str]) -> list[ToolState]:
        """Unlisted tools as the last listing found them (denied; a reviewer reads them in full)."""
        found = [self._unlisted.get(tool_id.partition(".")[0], {}).get(tool_id) for tool_id in tool_ids]
        return [state for state in found if state is not None]

    def drifted_on(self, server: str) -> list[str]:
        """The tools of `server` this process has seen drift (until they are re-pinned), sorted."""
        return sorted(tool_id for tool_id in self._drifted if tool_id.partition(".")[0] == server)

    def drifted_beside(self, action_id: str) -> list[str]:
        """The drifted tools of the server of `action_id`, itself included; [] for what no tool server offers
        (a data change)."""
        return self.drifted_on(action_id.partition(".")[0]) if self.offers(action_id) else []

    def offers(self, tool_id: str) -> bool:
        """Whether `tool_id` names a tool of an allowlisted server (what a read's source is when a tool server
        answered it, rather than the run's own data)."""
        return self.policy.rule(tool_id) is not None

    def _denial(self, tool_id: str) -> tuple[int, str] | None:
        """(availability, reason) if the tool is denied now: it drifted (once seen, drift holds until
        re-pinned, even if the server changes back), it is a mutation of a server with a drifted tool, or
        its server's latest listing denies it."""
        if tool_id in self._drifted:
            return cap.TOOL_AVAILABILITY_DRIFTED, "DRIFT"
        server = tool_id.partition(".")[0]
        # The pins cover words and schemas, not behaviour: a server seen to change one tool is not the server
        # that was reviewed, and its effects cannot be taken back. Its reads stay: screened, and the run is
        # degraded already by the drifted tool.
        found = self.policy.rule(tool_id)
        if found is not None and found[3].risk == "mutate" and self.drifted_on(server):
            return cap.TOOL_AVAILABILITY_DRIFTED, "SERVER_DRIFTED"
        latest = self._latest.get(server, (0, {}))[1].get(tool_id)
        if latest is not None and not latest.available:
            return latest.availability, latest.reason
        return None

    def _as_judged_now(self, states: dict[str, ToolState]) -> dict[str, ToolState]:
        """`states` with every tool that is denied now marked so. Only ever denies."""
        judged = {}
        for tool_id, state in states.items():
            denial = self._denial(tool_id) if state.available else None
            judged[tool_id] = state if denial is None else replace(state, availability=denial[0], reason=denial[1],
                                                                   contract=None)
        return judged

    async def start_session(self, session_id: str) -> dict[str, ToolState]:
        """A session's view of the tools: fetched and hashed afresh, never from an earlier session."""
        states, _ = await self.survey()
        self._sessions[session_id] = states
        return states

    async def session(self, session_id: str) -> dict[str, ToolState]:
        found = self._sessions.get(session_id)
        return self._as_judged_now(found) if found is not None else await self.start_session(session_id)

    async def call(self, tool_id: str, arguments: dict) -> mcp_types.CallToolResult:
        """Call a tool, unless it is denied at the moment the call would go out (after any reconnect's or
        announced change's listing): then ToolCallFailed, unsent, with the availability to report."""
        server, _, tool = tool_id.partition(".")
        return await self.connections[server].call(tool, arguments, partial(self._refusal, tool_id))

    async def refusal_now(self, tool_id: str) -> ToolCallFailed | None:
        """Why `tool_id` may not be asked for now, judged against its server's tools as they stand now (for
        a streamable-HTTP server, listed afresh): what a mutation's request checks before a person is asked
        to approve it. None if it may; ToolCallFailed (unsent) if its server cannot be listed either."""
        await self.connections[tool_id.partition(".")[0]].judged_now()
        return self._refusal(tool_id)

    def _refusal(self, tool_id: str) -> ToolCallFailed | None:
        denial = self._denial(tool_id)
        if denial is None:
            return None
        return ToolCallFailed(denial[1], f"{tool_id} is not available ({denial[1]})", availability=denial[0],
                              sent=False)

    async def close(self) -> None:
        """Stop every server at once: the slowest bounds the stop, not the sum of them."""
        results = await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)
        for name, result in zip(self.connections, results, strict=True):
            if isinstance(result, BaseException):
                logger.error("closing tool server %s failed: %s", name, result)


def _log_cause(server: str, what: str, exc: BaseException) -> None:
    """The error text of a tool server's failure (its own words, addresses, the SDK's): for the operator's log
    only. The model and the person read the sentence; a server's text is untrusted and may carry anything."""
    logger.warning("tool server %s %s: %s: %s", server, what, type(exc).__name__, str(exc)[:500])
