"""The answer frame (MCP Apps) drawn as a chat client draws it: Tessera's `ui://` document in a sandboxed
iframe (scripts only: no same-origin, no network), whose host page speaks the extension's JSON-RPC over
postMessage and relays the frame's calls of its app-only tools to the MCP front through the official `mcp`
Client. The table the frame draws holds what SQL gives; the outside model never saw a row of it."""

from __future__ import annotations

import json

import anyio
from mcp import Client
from playwright.async_api import TimeoutError as PlaywrightTimeout
from playwright.async_api import async_playwright

from tests.fixtures.golden.reference import expected_figures
from tests.fixtures.no_payload import leaks
from tests.mcp.integration.test_mcp_apps import ANSWER_URI, APPS, apps_stdio
from tests.mcp.integration.test_mcp_front import OutsideAgent, _answer_by_region

# A chat client's side of MCP Apps, as small as the extension allows: it answers the frame's initialize,
# hands it the tool result once it is initialized, and relays tools/call for the app's own tools only.
HOST_PAGE = """<!doctype html><html><body>
<iframe id="app" sandbox="allow-scripts" style="width: 960px; height: 720px; border: 0"></iframe>
<script>
window.hostLog = [];
window.chatMessages = [];
const frame = document.getElementById('app');
const post = (message) => frame.contentWindow.postMessage({ jsonrpc: '2.0', ...message }, '*');
window.addEventListener('message', async (event) => {
  const message = event.data;
  if (event.source !== frame.contentWindow || !message || message.jsonrpc !== '2.0' || !message.method) return;
  window.hostLog.push(message.method === 'tools/call' ? `tools/call ${message.params.name}` : message.method);
  if (message.method === 'ui/initialize') {
    post({ id: message.id, result: { protocolVersion: message.params.protocolVersion, hostCapabilities: {},
      hostInfo: { name: 'test host', version: '1' }, hostContext: {} } });
  } else if (message.method === 'ui/message') {
    window.chatMessages.push(message.params);
    post({ id: message.id, result: {} });
  } else if (message.method === 'ui/notifications/initialized') {
    post({ method: 'ui/notifications/tool-result', params: window.toolResult });
  } else if (message.method === 'tools/call') {
    if (!window.appTools.includes(message.params.name)) {
      post({ id: message.id, error: { code: -32601, message: 'not a tool of this app' } });
      return;
    }
    post({ id: message.id, result: await window.callTool(message.params.name, message.params.arguments || {}) });
  } else if (message.id !== undefined) {
    post({ id: message.id, result: {} });
  }
});
</script></body></html>"""


def test_the_frame_draws_the_committed_table_with_what_sql_gives(chromium_path, running_set, warehouse_url):
    async def scenario():
        async with Client(apps_stdio(running_set, "apps-frame"), cache=None, extensions=APPS) as client:
            listed = (await client.list_tools()).tools
            app_tools = [t.name for t in listed if t.meta and t.meta.get("ui", {}).get("visibility") == ["app"]]
            html = (await client.read_resource(ANSWER_URI)).contents[0].text
            agent = OutsideAgent(client)
            presented = await _answer_by_region(agent, page_size=5)
            relayed: list[tuple[str, str]] = []

            async def call_tool(name: str, arguments: dict) -> dict:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text if result.is_error else json.dumps(result.structured_content)
                relayed.append((name, text))
                return result.model_dump(by_alias=True, mode="json", exclude_none=True)

            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=chromium_path, headless=True,
                                                           args=["--no-sandbox", "--disable-gpu"])
                page = await browser.new_page()
                problems: list[str] = []
                page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda error: problems.append(str(error)))
                await page.expose_function("callTool", call_tool)
                await page.set_content(HOST_PAGE)
                await page.evaluate("""([result, tools, html]) => {
                    window.toolResult = result; window.appTools = tools;
                    document.getElementById('app').srcdoc = html; }""",
                                    [{"content": [{"type": "text", "text": json.dumps(presented)}],
                                      "structuredContent": presented, "isError": False}, app_tools, html])
                rows = page.frame_locator("#app").locator("tessera-data-table tbody tr")
                try:
                    await rows.first.wait_for(timeout=60_000)
                except PlaywrightTimeout:
                    raise AssertionError((problems, await page.evaluate("window.hostLog"), relayed[-3:])) from None
                table = [[await cell.inner_text() for cell in await row.locator("td").all()]
                         for row in await rows.all()]
                app = page.frame_locator("#app")
                tools = await app.locator("tessera-data-table .tools").inner_text()
                # A region clicked: its follow-up is the person's to ask; nothing goes to the chat by itself.
                await rows.first.locator("button.drill").click()
                notice = app.locator("#frame-notice")
                await notice.wait_for(state="visible", timeout=10_000)
                asked = (await notice.inner_text(), await page.evaluate("window.chatMessages"))
                # The next answer is the next frame's: this one says so, keeps its own, and still pages it.
                newer = await _answer_by_region(agent)
                await app.locator("#frame-notice-text", has_text="A newer answer").wait_for(timeout=60_000)
                await app.locator("tessera-data-table .pager button", has_text="Next").click()
                pager = app.locator("tessera-data-table .pager [role=status]")
                await pager.filter(has_text="Rows 6–10").wait_for(timeout=60_000)
                replaced = (await notice.inner_text(), await rows.count(), await pager.inner_text())
                log = await page.evaluate("window.hostLog")
                await browser.close()
            return presented, agent, relayed, table, (tools, asked), (newer, replaced), log, problems

    presented, agent, relayed, table, (tools, asked), (newer, replaced), log, problems = anyio.run(scenario)
    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"})
    assert len(table) == 5 and {row[0] for row in table} <= set(expected), table
    for name, shown in table:  # the figure as the renderer formats it: digits of the SQL value, to the cent
        digits = "".join(ch for ch in shown if ch.isdigit() or ch == ".")
        assert abs(float(digits) - float(expected[name])) < 0.01, (name, shown, expected[name])
    assert "Download CSV" not in tools  # a sandboxed frame may not save files
    assert table[0][0] in asked[0] and asked[1] == []  # the value is shown to the person, not sent to the model
    assert newer["revision"] != presented["revision"]
    assert "A newer answer replaced this one" in replaced[0] and replaced[1] == 5 and "of 12" in replaced[2]
    assert log[:2] == ["ui/initialize", "ui/notifications/initialized"], log
    # Every tool the frame asked for, before the host page's filter: its own two only.
    called = {entry.removeprefix("tools/call ") for entry in log if entry.startswith("tools/call ")}
    assert called == {"read_answer", "send_answer_command"}, log
    # The rows went to the frame only: what the model saw carries none of them.
    seen_by_model = [{"turn_id": "mcp", "kind": f"result:{tool}", "text": text} for tool, text in agent.returned]
    assert leaks(seen_by_model, warehouse_url) == []
    assert leaks([{"turn_id": "frame", "kind": f"result:{name}", "text": text} for name, text in relayed],
                 warehouse_url)
    assert problems == []
