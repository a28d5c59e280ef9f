"""MCP Apps (services/mcp/answer_app.py): the official `mcp` Client acts as a chat client that draws apps.

It lists tools as such a client does (the model gets those whose `_meta.ui.visibility` includes "model"),
reads the `ui://` answer frame, and calls the frame's app-only tools as the frame would: the rows reach
the frame, and the same numbers SQL gives; nothing the model can see carries a warehouse value. A client
without the extension is offered nothing but the six data tools, and is refused the frame's tools.
"""

from __future__ import annotations

import json
import time
from decimal import Decimal
from html.parser import HTMLParser

import anyio
from mcp import Client
from mcp.client.extension import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from tests.fixtures.flag_button import review_status
from tests.fixtures.golden.reference import expected_figures
from tests.fixtures.no_payload import leaks
from tests.integration.test_mcp_front import DATA_TOOLS, WEB_URL, OutsideAgent, _answer_by_region, _stdio

ANSWER_URI = "ui://tessera/answer.html"
APP_TOOLS = {"read_answer", "send_answer_command"}
APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]


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
    """The answer frame's side: its calls of the app-only tools, and the envelopes it was given."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.cursor = ""
        self.envelopes: list[dict] = []
        self.returned: list[str] = []

    async def call(self, tool: str, arguments: dict) -> tuple[bool, dict]:
        result = await self.client.call_tool(tool, arguments)
        self.returned.append(result.content[0].text)
        return not result.is_error, json.loads(result.content[0].text)

    async def read(self, wait: float = 5) -> dict:
        ok, read = await self.call("read_answer", {"after": self.cursor, "wait_seconds": wait} if self.cursor
                                   else {"wait_seconds": wait})
        assert ok, read
        self.envelopes += read["envelopes"]
        self.cursor = read["cursor"] or self.cursor
        return read

    async def until(self, found, seconds: float = 60):
        """Read on until `found(envelopes)` is true: the journal is read as it grows, never slept on."""
        deadline = time.monotonic() + seconds
        while not found(self.envelopes):
            assert time.monotonic() < deadline, [e["kind"] for e in self.envelopes]
            await self.read()
        return found(self.envelopes)


def windows(envelopes: list[dict], revision: str) -> list[dict]:
    return [e["message"]["updateDataModel"]["value"] for e in envelopes
            if e["kind"] == "a2ui" and e["revision_id"] == revision
            and str(e["message"].get("updateDataModel", {}).get("path", "")).endswith("/window")]


def test_a_client_with_mcp_apps_gets_the_frame_and_its_tools_and_the_model_sees_no_row(running_set, warehouse_url):
    async def scenario():
        async with Client(_stdio(running_set, "apps-asker"), cache=None, extensions=APPS) as client:
            listed = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            html = (await client.read_resource(ANSWER_URI)).contents[0]
            agent = OutsideAgent(client)
            agent.returned.append(("tools/list", json.dumps([t.model_dump(by_alias=True)
                                                             for t in model_visible(listed)])))
            presented = await _answer_by_region(agent)
            frame = Frame(client)
            revision = presented["revision"]
            await frame.until(lambda envelopes: any(
                e["revision_id"] == revision and "createSurface" in e.get("message", {}) for e in envelopes))
            # Nobody watched when it committed, so no first window was sent: the table asks for its rows as the
            # page's does, and the window comes on the journal.
            ok, reply = await frame.call("send_answer_command", {"command": {
                "command_id": "frame-window-1", "revision_id": revision,
                "resource_window": {"node_id": "table", "offset": 0, "limit": 100}}})
            assert ok, reply
            await frame.until(lambda envelopes: windows(envelopes, revision))
            return listed, resources, html, presented, agent, frame

    listed, resources, html, presented, agent, frame = anyio.run(scenario)

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
    assert presented["link"] == f"{WEB_URL}/?surface=mcp"  # clients without the extension open web

    # The frame got the answer and its rows: what SQL gives.
    revision = presented["revision"]
    assert any(e["kind"] == "a2ui" and "createSurface" in e["message"] and e["revision_id"] == revision
               for e in frame.envelopes)
    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"})
    for window in windows(frame.envelopes, revision):
        rows = {row[0]: row[1] for row in window["rows"]}
        assert set(rows) == set(expected)
        assert all(abs(Decimal(str(value)) - expected[name]) < Decimal("0.01") for name, value in rows.items())

    # Nothing the model can see carries a warehouse value; the frame's reads do (the scan finds them there).
    seen_by_model = [{"turn_id": "mcp", "kind": f"result:{tool}", "text": text} for tool, text in agent.returned]
    assert leaks(seen_by_model, warehouse_url) == []
    assert leaks([{"turn_id": "frame", "kind": "result:read_answer", "text": text} for text in frame.returned],
                 warehouse_url)


def test_a_client_without_mcp_apps_is_offered_and_served_only_the_data_tools(running_set):
    async def scenario():
        async with Client(_stdio(running_set, "apps-none"), cache=None) as client:
            listed = (await client.list_tools()).tools
            agent = OutsideAgent(client)
            await agent.call("inspect_current_context", {})
            return listed, await agent.call("read_answer", {}), await agent.call("send_answer_command", {
                "command": {"command_id": "x", "resource_window": {"node_id": "table", "limit": 10}}})

    listed, read, command = anyio.run(scenario)
    assert {t.name for t in listed} == DATA_TOOLS
    assert all(not (t.meta or {}).get("ui") for t in listed)
    for ok, refused in (read, command):  # a model there would get the rows: the tools do not exist for it
        assert not ok and refused["error"] == "UNKNOWN_TOOL", refused


def test_a_button_in_the_frame_asks_for_approval_and_changes_nothing(running_set, warehouse_url):
    before = review_status(warehouse_url, 1047)

    async def scenario():
        async with Client(_stdio(running_set, "apps-button"), cache=None, extensions=APPS) as client:
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
            frame = Frame(client)
            revision = presented["revision"]
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
                {"command_id": "frame-bad", "resource_window": {"node_id": "flag", "limit": "many"}},
                "not an object")]
            return pressed, refusals, await frame.call("read_answer", {"after": "not-a-cursor"})

    (ok, pressed), refusals, (read_ok, bad_cursor) = anyio.run(scenario)
    assert ok and pressed["receipt"]["status"] == "INTENT_STATUS_AWAITING_APPROVAL", pressed
    assert review_status(warehouse_url, 1047) == before  # pressing only asks; the person signs in Tessera
    assert [(ok, refused["error"]) for ok, refused in refusals] == [
        (False, "COMMAND_NOT_FROM_FRAME"), (False, "FIELD_NOT_ALLOWED"), (False, "COMMAND_INVALID"),
        (False, "COMMAND_INVALID")]
    assert not read_ok and bad_cursor["error"] == "CURSOR_INVALID"
