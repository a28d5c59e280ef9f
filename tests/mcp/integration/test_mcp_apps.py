"""MCP Apps (services/mcp/answer_app.py): the official `mcp` Client acts as a chat client that draws apps.

It lists tools as such a client does (the model gets those whose `_meta.ui.visibility` includes "model"),
reads the `ui://` answer frame, and calls the frame's app-only tools as the frame would: the rows of the
frame's own answer reach it, the same numbers SQL gives, and nothing of another answer; nothing the model
can see carries a warehouse value. A client without the extension, or one the operator did not name, is
offered nothing but the six data tools, and is refused the frame's tools.
"""

from __future__ import annotations

import json
import time
from decimal import Decimal
from html.parser import HTMLParser

import anyio
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.stdio import StdioServerParameters
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from tests.fixtures.flag_button import review_status
from tests.fixtures.golden.reference import expected_figures
from tests.fixtures.no_payload import leaks
from tests.mcp.integration.test_mcp_front import DATA_TOOLS, WEB_URL, OutsideAgent, _answer_by_region, _stdio

ANSWER_URI = "ui://tessera/answer.html"
APP_TOOLS = {"read_answer", "send_answer_command"}
APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]


def apps_stdio(running_set, person: str, named: bool = True) -> StdioServerParameters:
    """The front over stdio, with the local client named as one that keeps app-only tools from its model."""
    params = _stdio(running_set, person)
    if named:
        params.env["TESSERA_MCP_APPS_CLIENTS"] = json.dumps(["stdio"])
    return params


class Fetches(HTMLParser):
    """The document's own elements (script text is not parsed as markup): what it would fetch, and its scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.scripts += tag == "script"
        self.urls += [value for name, value in attrs if name in ("src", "href") and value]


def model_visible(tools) -> list:
    """What a client that speaks MCP Apps gives its model: tools whose visibility includes "model" (the
    extension's default when none is said)."""
    return [tool for tool in tools if "model" in ((tool.meta or {}).get("ui") or {}).get("visibility", ["model"])]


class Frame:
    """The answer frame's side: its calls of the app-only tools, and what it was given."""

    def __init__(self, client: Client, revision: str) -> None:
        self.client, self.revision = client, revision
        self.cursor = ""
        self.envelopes: list[dict] = []
        self.returned: list[str] = []
        self.replaced = False

    async def call(self, tool: str, arguments: dict) -> tuple[bool, dict]:
        result = await self.client.call_tool(tool, arguments)
        content = result.structured_content if not result.is_error else json.loads(result.content[0].text)
        self.returned.append(json.dumps(content))
        return not result.is_error, content

    async def read(self, wait: float = 5) -> dict:
        arguments = {"revision": self.revision, "wait_seconds": wait, **({"after": self.cursor} if self.cursor else {})}
        ok, read = await self.call("read_answer", arguments)
        assert ok, read
        self.envelopes += read["envelopes"]
        self.cursor = read["cursor"] or self.cursor
        self.replaced = read["replaced"]
        return read

    async def until(self, found, seconds: float = 60):
        """Read on until `found(envelopes)` is true: the journal is read as it grows, never slept on."""
        deadline = time.monotonic() + seconds
        while not found(self.envelopes):
            assert time.monotonic() < deadline, [e["kind"] for e in self.envelopes]
            await self.read()
        return found(self.envelopes)

    async def ask_rows(self, node: str = "table") -> None:
        """What the table does when no first window is coming: ask for its rows."""
        ok, reply = await self.call("send_answer_command", {"command": {
            "command_id": f"frame-{self.revision}-{node}", "revision_id": self.revision,
            "resource_window": {"node_id": node, "offset": 0, "limit": 100}}})
        assert ok, reply


def windows(envelopes: list[dict]) -> list[dict]:
    return [e["message"]["updateDataModel"]["value"] for e in envelopes
            if e["kind"] == "a2ui" and str(e["message"].get("updateDataModel", {}).get("path", "")).endswith("/window")]


def created(revision: str):
    return lambda envelopes: any(e["revision_id"] == revision and "createSurface" in e.get("message", {})
                                 for e in envelopes)


def test_a_named_client_with_mcp_apps_gets_the_frame_and_its_answers_rows_and_the_model_none(running_set,
                                                                                              warehouse_url):
    async def scenario():
        async with Client(apps_stdio(running_set, "apps-asker"), cache=None, extensions=APPS) as client:
            listed = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            html = (await client.read_resource(ANSWER_URI)).contents[0]
            agent = OutsideAgent(client)
            agent.returned.append(("tools/list", json.dumps([t.model_dump(by_alias=True)
                                                             for t in model_visible(listed)])))
            first = await _answer_by_region(agent)
            frame = Frame(client, first["revision"])
            await frame.until(created(first["revision"]))
            # Nobody watched when it committed, so no first window was sent: the table asks for its rows as the
            # page's does, and the window comes on the journal.
            await frame.ask_rows()
            await frame.until(windows)
            assert not frame.replaced
            # A second answer, with rows of its own: the first frame is told, and given none of it.
            second = await _answer_by_region(agent)
            other = Frame(client, second["revision"])
            await other.until(created(second["revision"]))
            await other.ask_rows()
            await other.until(windows)
            seen = len(frame.envelopes)
            await frame.read()  # the first frame, following on from its cursor
            newer_for_frame = frame.envelopes[seen:]
            again = Frame(client, first["revision"])  # the first frame opened anew: from the journal's start
            while (await again.read())["more"]:
                pass
            return listed, resources, html, (first, second), agent, (frame, other, again, newer_for_frame)

    listed, resources, html, (first, second), agent, (frame, other, again, newer_for_frame) = anyio.run(scenario)

    # The model is offered the six data tools; the frame's two are the app's alone.
    assert {t.name for t in model_visible(listed)} == DATA_TOOLS
    app_only = {t.name: t.meta["ui"] for t in listed if t.name not in DATA_TOOLS}
    assert app_only == {name: {"resourceUri": ANSWER_URI, "visibility": ["app"]} for name in APP_TOOLS}
    present_ui = next(t for t in listed if t.name == "present_ui")
    assert present_ui.meta["ui"] == {"resourceUri": ANSWER_URI}

    # The frame is one self-contained document: the renderer inlined, nothing fetched.
    assert [(r.uri, r.mime_type) for r in resources] == [(ANSWER_URI, APP_MIME_TYPE)]
    assert (html.uri, html.mime_type) == (ANSWER_URI, APP_MIME_TYPE)
    fetched = Fetches()
    fetched.feed(html.text)
    assert fetched.scripts == 1 and "a2ui-surface" in html.text
    assert fetched.urls == []
    assert first["link"] == f"{WEB_URL}/?surface=mcp"  # clients without the extension open web

    # Each frame got its answer and its rows: what SQL gives.
    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"})
    for shown in (frame, other):
        [window] = windows(shown.envelopes)
        rows = {row[0]: row[1] for row in window["rows"]}
        assert set(rows) == set(expected)
        assert all(abs(Decimal(str(value)) - expected[name]) < Decimal("0.01") for name, value in rows.items())
    # Read from the journal's start, the first frame gets its own messages and window, nothing of the second
    # answer's, and is told it was replaced.
    assert frame.replaced and again.replaced and not other.replaced
    # Following its cursor, the first frame was given none of the second answer: no message, no window.
    assert newer_for_frame == [], newer_for_frame
    assert {e["revision_id"] for e in again.envelopes if e["kind"] == "a2ui" and not e["message"].get(
        "updateDataModel", {}).get("path", "").endswith("/window")} == {first["revision"]}
    assert len(windows(again.envelopes)) == 1 and created(first["revision"])(again.envelopes)
    assert not created(second["revision"])(again.envelopes)

    # Nothing the model can see carries a warehouse value; the frame's reads do (the scan finds them there).
    seen_by_model = [{"turn_id": "mcp", "kind": f"result:{tool}", "text": text} for tool, text in agent.returned]
    assert leaks(seen_by_model, warehouse_url) == []
    assert leaks([{"turn_id": "frame", "kind": "result:read_answer", "text": text} for text in frame.returned],
                 warehouse_url)


def test_only_named_clients_with_mcp_apps_are_offered_and_served_the_frame(running_set):
    """Without the extension, or with it but not named by the operator (a client could declare the extension
    and hand every tool to its model), a client gets the six data tools and is refused the frame's."""
    async def scenario(params, extensions):
        async with Client(params, cache=None, extensions=extensions) as client:
            listed = (await client.list_tools()).tools
            agent = OutsideAgent(client)
            return listed, [await agent.call("read_answer", {"revision": "rev-x"}),
                            await agent.call("send_answer_command", {"command": {
                                "command_id": "x", "resource_window": {"node_id": "table", "limit": 10}}})]

    for params, extensions in ((apps_stdio(running_set, "apps-none"), None),
                               (apps_stdio(running_set, "apps-unnamed", named=False), APPS)):
        listed, refusals = anyio.run(scenario, params, extensions)
        assert {t.name for t in listed} == DATA_TOOLS
        assert all(not (t.meta or {}).get("ui") for t in listed)
        for ok, refused in refusals:  # a model there would get the rows: the tools do not exist for it
            assert not ok and refused["error"] == "UNKNOWN_TOOL", refused
            assert set(refused["message"].split("available: ")[1].split(", ")) == DATA_TOOLS


def test_a_button_in_the_frame_asks_for_approval_and_changes_nothing(running_set, warehouse_url):
    before = review_status(warehouse_url, 1047)

    async def scenario():
        async with Client(apps_stdio(running_set, "apps-button"), cache=None, extensions=APPS) as client:
            agent = OutsideAgent(client)
            await agent.call("inspect_current_context", {})
            ok, frozen = await agent.call("present_ui", {})
            assert ok, frozen
            ids = {c["name"]: c["id"] for c in frozen["slice"]["components"]}
            action = next(a["id"] for a in frozen["slice"]["actions"] if a["action"] == "orders.flag_for_review")
            ok, presented = await agent.call("present_ui", {"proposal": {"version": 1, "id": "flag", "blocks": [
                {"id": "main", "component": ids["Column"], "data": {}, "children": ["flag"]},
                {"id": "flag", "component": ids["ActionButton"], "data": {
                    "label": "Flag for review", "action": action, "input": {"record_id": 1047}}}]}})
            assert ok and presented["outcome"] == "committed", presented
            revision = presented["revision"]
            frame = Frame(client, revision)
            await frame.read()  # the frame shows the button, and follows the journal from there
            pressed = await frame.call("send_answer_command", {"command": {
                "command_id": "frame-press-1047", "revision_id": revision,
                "action_trigger": {"node_id": "flag", "input_json": json.dumps({"record_id": 1047})}}})
            await frame.until(lambda envelopes: any(e["kind"] == "approval_requested" for e in envelopes))
            refusals = [await frame.call("send_answer_command", {"command": command}) for command in (
                {"command_id": "frame-decide", "revision_id": revision,
                 "approval_decision": {"approval_id": "a" * 20}},
                {"command_id": "frame-forged", "revision_id": revision, "actor": {"token": "x"},
                 "resource_window": {"node_id": "flag", "limit": 1}},
                {"command_id": "frame-forged-2", "revision_id": revision, "sessionId": "someone-elses",
                 "resource_window": {"node_id": "flag", "limit": 1}},
                {"command_id": "frame-bad", "resource_window": {"node_id": "flag", "limit": "many"}},
                "not an object")]
            reads = [await frame.call("read_answer", arguments) for arguments in (
                {"revision": revision, "after": "not-a-cursor"}, {},
                {"revision": "rev_" + "0" * 20})]  # a revision of nobody's surface here
            return pressed, refusals, reads

    (ok, pressed), refusals, reads = anyio.run(scenario)
    assert ok and pressed["receipt"]["status"] == "INTENT_STATUS_AWAITING_APPROVAL", pressed
    assert review_status(warehouse_url, 1047) == before  # pressing only asks; the person signs in Tessera
    assert [(ok, refused["error"]) for ok, refused in refusals] == [
        (False, "COMMAND_NOT_FROM_FRAME"), (False, "FIELD_NOT_ALLOWED"), (False, "FIELD_NOT_ALLOWED"),
        (False, "COMMAND_INVALID"), (False, "COMMAND_INVALID")]
    assert [(ok, refused["error"]) for ok, refused in reads] == [
        (False, "CURSOR_INVALID"), (False, "REVISION_REQUIRED"), (False, "REVISION_UNKNOWN")]
