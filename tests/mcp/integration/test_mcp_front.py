"""The MCP front (services/mcp): the official `mcp` Client, as an outside agent, answers a question with the
six data tools over stdio; the committed surface shows what SQL gives; nothing the front returned carries a
warehouse value; bad input gets the built-in agent's refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal

import anyio
import httpx
import httpx2
import pytest
from joserfc.jwk import ECKey
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from cli.launcher import ServiceSet, free_ports
from services.agent.contracts import MAX_REFUSALS
from shared import __version__
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.paths import REPO_ROOT
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.host.v1 import host_pb2
from tests.agent.integration.test_agent_turns import window
from tests.fixtures.authorization_server import serving_authorization_server
from tests.fixtures.flag_button import press, review_status
from tests.fixtures.golden.reference import expected_figures
from tests.fixtures.no_payload import leaks
from tests.fixtures.signing import sign_in

DATA_TOOLS = {"inspect_current_context", "inspect_catalog", "describe_data", "probe_data", "run_analysis",
              "present_ui"}
WEB_URL = "http://tessera.test"


def _stdio(running_set, person: str) -> StdioServerParameters:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
           "TESSERA_CERT_DIR": str(running_set.identity_dir("mcp")),
           "TESSERA_AGENT_ADDR": running_set.handles["agent"].address,
           "TESSERA_HOST_ADDR": running_set.handles["host"].address,
           "TESSERA_MCP_STDIO_PERSON": person, "TESSERA_MCP_STDIO_TENANT": "acme",
           "TESSERA_MCP_WEB_URL": WEB_URL}
    return StdioServerParameters(command=sys.executable, args=["-m", "services.mcp", "--stdio"], env=env,
                                 cwd=str(REPO_ROOT))


class OutsideAgent:
    """Records everything the front returns, for the no-payload scan."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.returned: list[tuple[str, str]] = []
        self.entities: list[str] = []  # what the last catalog answer named

    async def call(self, tool: str, arguments: dict) -> tuple[bool, dict]:
        result = await self.client.call_tool(tool, arguments)
        text = result.content[0].text
        self.returned.append((tool, text))
        return not result.is_error, json.loads(text)


def _region_table_proposal(view: dict, page_size: int = 25) -> dict:
    ids = {c["name"]: c["id"] for c in view["components"]}
    resource = view["resources"][-1]
    binding = {"ref": resource["id"], "offer": resource["offer"]}
    return {"version": 1, "id": "answer", "title": "Net revenue by region", "blocks": [
        {"id": "main", "component": ids["Column"], "data": {}, "children": ["table"]},
        {"id": "table", "component": ids["DataTable"], "data": {"resource": binding, "columns": ["d0", "m0"],
                                                                 "page_size": page_size}}]}


async def _answer_by_region(agent: OutsideAgent, page_size: int = 25) -> dict:
    ok, context = await agent.call("inspect_current_context", {})
    assert ok and set(context["tools"]) == DATA_TOOLS, context
    ok, catalog = await agent.call("inspect_catalog", {"question": "net revenue by region"})
    assert ok, catalog
    metric = next(m for e in catalog["entities"] for m in e["metrics"] if m["label"].lower() == "net revenue")
    region = next(f for e in catalog["entities"] for f in e["fields"]
                  if f["label"].lower() in ("region", "region name"))
    ok, analysis = await agent.call("run_analysis", {"draft": {
        "mode": "aggregate", "output": "table", "measures": [{"id": "m0", "metric": metric["id"]}],
        "dimensions": [{"id": "d0", "field": region["id"]}]}})
    assert ok and analysis["resource"]["rows"] > 0, analysis
    ok, frozen = await agent.call("present_ui", {})
    assert ok, frozen
    ok, presented = await agent.call("present_ui", {"proposal": _region_table_proposal(frozen["slice"], page_size)})
    assert ok and presented["outcome"] == "committed" and presented["revision"], presented
    agent.entities = [e["id"] for e in catalog["entities"]]
    return presented


def _table_rows(running_set, credentials, person, revision_id: str) -> list:
    """The rows the person's screen gets for the committed table, in the session the MCP front commits to."""
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        session = invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(actor=person, request_id="mcp"))
    return window(running_set, credentials, person, session, revision_id, "table")


def test_an_outside_agent_answers_through_the_mcp_front_and_the_surface_shows_what_sql_gives(
        running_set, credentials, cert_dir, warehouse_url):
    async def scenario() -> tuple[list, dict, OutsideAgent]:
        async with Client(_stdio(running_set, "mcp-asker"), cache=None) as client:
            listed = await client.list_tools()
            agent = OutsideAgent(client)
            agent.returned.append(("tools/list", json.dumps([t.model_dump(by_alias=True) for t in listed.tools])))
            return listed.tools, await _answer_by_region(agent), agent

    tools, presented, agent = anyio.run(scenario)
    assert {t.name for t in tools} == DATA_TOOLS
    read_only = {t.name for t in tools if t.annotations.read_only_hint}
    assert read_only == DATA_TOOLS - {"present_ui"}  # honest: present_ui commits to the person's surface
    assert presented["link"] == f"{WEB_URL}/?surface=mcp"

    # The committed surface is the person's, and its rows are what SQL gives.
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "mcp-asker", "acme")
    rows = _table_rows(running_set, credentials, person, presented["revision"])
    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"})
    assert {r[0] for r in rows} == set(expected)
    assert all(abs(Decimal(str(value)) - expected[name]) < Decimal("0.01") for name, value in rows)

    # Nothing the front returned to the outside agent carries a warehouse value.
    records = [{"turn_id": "mcp", "kind": f"result:{tool}", "text": text} for tool, text in agent.returned]
    assert leaks(records, warehouse_url) == []
    returned = " ".join(text for _, text in agent.returned)
    assert not [name for name in expected if name in returned]
    assert "SELECT" not in returned and "order_items" not in returned


def test_an_outside_agent_gets_the_built_in_agents_refusals(running_set):
    async def scenario() -> dict[str, tuple[bool, dict]]:
        async with Client(_stdio(running_set, "mcp-refused"), cache=None) as client:
            agent = OutsideAgent(client)
            outcomes = {"unknown tool": await agent.call("tickets__close_ticket", {"ticket_id": 1}),
                        "bad arguments": await agent.call("inspect_catalog", {"question": ""}),
                        "too large": await agent.call("inspect_catalog", {"question": "x" * 300_000})}
            ok, catalog = await agent.call("inspect_catalog", {"question": "net revenue by region"})
            assert not ok and catalog["error"] == "CAPABILITY_MISSING"  # the context comes first, as for any model
            await agent.call("inspect_current_context", {})
            ok, catalog = await agent.call("inspect_catalog", {"question": "net revenue by region"})
            assert ok, catalog
            seen = {e["id"] for e in catalog["entities"]}
            forged = next(f"ent_{c * 12}" for c in "abcdefgh" if f"ent_{c * 12}" not in seen)
            outcomes["forged id"] = await agent.call("describe_data", {"entity_ids": [forged]})
            field = next(f["id"] for e in catalog["entities"] for f in e["fields"])
            outcomes["probes"] = [await agent.call("probe_data", {"kind": "field-profile", "field_id": field})
                                  for _ in range(3)]
            ok, frozen = await agent.call("present_ui", {})
            assert ok, frozen
            outcomes["bad proposal"] = await agent.call("present_ui", {"proposal": {"version": 2, "blocks": []}})
            block = {"id": "main", "component": "component-000999", "data": {"text": "x"}}
            outcomes["unoffered component"] = await agent.call("present_ui", {"proposal": {
                "version": 1, "id": "a", "blocks": [block]}})
            return outcomes

    outcomes = anyio.run(scenario)
    ok, unknown = outcomes["unknown tool"]
    assert not ok and unknown["error"] == "UNKNOWN_TOOL"
    assert set(unknown["message"].split("available: ")[1].split(", ")) == DATA_TOOLS  # nothing else is offered
    assert outcomes["bad arguments"][1]["error"] == "ARGUMENTS_INVALID"
    assert outcomes["too large"][1]["error"] == "ARGUMENTS_NOT_JSON"  # the bridge's bound, as for any model
    assert not outcomes["forged id"][0] and outcomes["forged id"][1]["error"] == "UNKNOWN_ID"
    probes = outcomes["probes"]
    assert [ok for ok, _ in probes] == [True, True, False] and probes[2][1]["error"] == "PROBE_BUDGET_EXHAUSTED"
    ok, proposal = outcomes["bad proposal"]  # the envelope is the tool's input schema: refused before any work
    assert not ok and (proposal["error"], proposal["pointer"]) == ("ARGUMENTS_INVALID", "/proposal/version")
    assert proposal["allowed"] == [1] and proposal["next_step"] and "link" not in proposal
    ok, proposal = outcomes["unoffered component"]  # the block fails alone; the finding points into the arguments
    assert ok and proposal["outcome"] == "committed_partial"
    finding = proposal["diagnostics"][0]
    assert (finding["code"], finding["pointer"]) == ("catalog.component-not-offered", "/proposal/blocks/0/component")
    assert finding["next_step"]
    for _, refusal in [outcomes["unknown tool"], outcomes["bad arguments"], outcomes["too large"],
                       outcomes["forged id"], probes[2]]:  # every refusal says where, and what to do next
        assert refusal["next_step"] and (refusal["pointer"] == "" or refusal["pointer"].startswith("/")), refusal
    assert outcomes["forged id"][1]["pointer"] == "/entity_ids/0"


def test_a_client_repeating_a_refused_call_gets_the_same_refusal_until_the_turn_ends_then_a_question_starts_anew(
        running_set):
    bad = {"draft": {"mode": "aggregate", "measures": [{"id": "n"}]}}

    async def scenario():
        async with Client(_stdio(running_set, "mcp-relentless"), cache=None) as client:
            agent = OutsideAgent(client)
            await agent.call("inspect_current_context", {})
            refused = [await agent.call("run_analysis", bad) for _ in range(MAX_REFUSALS + 1)]
            return refused, await agent.call("inspect_current_context", {})

    refused, fresh = anyio.run(scenario)
    first = refused[0][1]
    assert all(result == first for _, result in refused[:MAX_REFUSALS])  # the same refusal every time
    assert (first["error"], first["pointer"]) == ("ARGUMENTS_INVALID", "/draft/measures/0")
    ok, spent = refused[-1]
    assert not ok and spent["error"] == "TURN_BUDGET_SPENT" and spent["bound"] == MAX_REFUSALS
    assert "new question" in spent["next_step"]
    ok, context = fresh  # a question's first call after the spent turn begins a new one, with its own budget
    assert ok and context["budgets"]["refusals_remaining"] == MAX_REFUSALS


# --- remote use: streamable HTTP with OAuth 2.1 bearer tokens ------------------------------------------------

@pytest.fixture(scope="module")
def authorization_server():
    with serving_authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def remote_front(cert_dir, running_set, authorization_server, tmp_path_factory):
    """An MCP front over HTTP that accepts the test authorization server's tokens, on a port it names."""
    (port,) = free_ports(1)
    resource = f"http://127.0.0.1:{port}/mcp"
    peers = {f"TESSERA_{name.upper()}_ADDR": running_set.handles[name].address for name in ("agent", "host")}
    started = ServiceSet(cert_dir, tmp_path_factory.mktemp("mcp-oauth"), names=("mcp",), ephemeral_ports=True,
                         extra_env={**peers, "TESSERA_MCP_OAUTH_ISSUER": authorization_server.issuer,
                                    "TESSERA_MCP_RESOURCE_URL": resource, "TESSERA_MCP_OAUTH_TENANT_CLAIM": "tenant",
                                    "TESSERA_MCP_WEB_URL": WEB_URL})
    started.handles["mcp"].port = port
    started.start()
    yield resource
    assert started.stop() == {"mcp": 0}


def _remote(resource: str, token: str | None, mode: str = "auto") -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(resource, http_client=httpx2.AsyncClient(headers=headers, timeout=60)),
                  cache=None, mode=mode)


def test_a_remote_client_without_a_valid_token_is_told_where_to_get_one(remote_front, authorization_server):
    with httpx.Client(timeout=30, trust_env=False) as http:
        anonymous = http.post(remote_front, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              headers={"Accept": "application/json, text/event-stream"})
        assert anonymous.status_code == 401
        challenge = anonymous.headers["www-authenticate"]
        assert challenge.startswith("Bearer") and "resource_metadata=" in challenge
        metadata_url = challenge.split('resource_metadata="')[1].split('"')[0]
        metadata = http.get(metadata_url).json()
        assert metadata["resource"] == remote_front
        assert metadata["authorization_servers"] == [authorization_server.issuer]
        assert metadata["scopes_supported"] == ["tessera.data"]

        def status_with(token: str) -> int:
            return http.post(remote_front, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Accept": "application/json, text/event-stream",
                                      "Authorization": f"Bearer {token}"}).status_code

        issue = authorization_server.token
        assert status_with(issue(audience="http://elsewhere.test/mcp", subject="ada")) == 401  # another resource
        assert status_with(issue(audience=remote_front, subject="ada", lifetime=-600)) == 401  # expired
        assert status_with(issue(audience=remote_front, subject="ada", typ="JWT")) == 401  # not an access token
        assert status_with(issue(audience=remote_front, subject="ada", scope="openid")) == 403  # scope missing
        forger = ECKey.generate_key("P-256", parameters={"kid": "test-1"})  # same key id, another key
        assert status_with(issue(audience=remote_front, subject="ada", key=forger)) == 401
        assert status_with("not-a-jwt") == 401
        oversized = http.post(remote_front, content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "x": "'
                              + b"x" * (3 * 1024 * 1024) + b'"}',
                              headers={"Accept": "application/json, text/event-stream",
                                       "Content-Type": "application/json",
                                       "Authorization": f"Bearer {issue(audience=remote_front, subject='ada')}"})
        assert oversized.status_code == 413  # refused before it is parsed


def test_a_remote_client_with_a_token_works_as_the_person_it_names(remote_front, authorization_server,
                                                                   running_set, credentials, cert_dir, warehouse_url):
    token = authorization_server.token(audience=remote_front, subject="remote-ada", tenant="acme")

    async def scenario() -> tuple[set[str], dict]:
        async with _remote(remote_front, token) as client:
            listed = await client.list_tools()
            return {t.name for t in listed.tools}, await _answer_by_region(OutsideAgent(client))

    names, presented = anyio.run(scenario)
    assert names == DATA_TOOLS
    # Committed to the surface of the person the token names (its sub, and its tenant claim).
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "remote-ada", "acme")
    rows = _table_rows(running_set, credentials, person, presented["revision"])
    assert {r[0] for r in rows} == set(expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"}))


def test_the_front_that_tessera_up_starts_refuses_remote_use_until_oauth_is_configured(running_set):
    address = running_set.handles["mcp"].address
    with httpx.Client(timeout=30, trust_env=False) as http:
        assert http.get(f"http://{address}/healthz").json() == {"status": "SERVING"}
        refused = http.post(f"http://{address}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 503 and refused.json()["reason"] == "OAUTH_NOT_CONFIGURED"


def test_the_link_present_ui_returns_opens_that_surface_in_web(running_set, credentials):
    async def scenario() -> dict:
        async with Client(_stdio(running_set, "mcp-linked"), cache=None) as client:
            return await _answer_by_region(OutsideAgent(client))

    presented = anyio.run(scenario)
    base = f"http://{running_set.handles['web'].address}"
    with httpx.Client(base_url=base, timeout=120, headers={"Origin": base}, trust_env=False) as browser:
        sign_in(browser, running_set, credentials, "mcp-linked", "acme")
        own = browser.get("/api/session").json()
        outside = browser.get("/api/session?surface=mcp").json()
        assert outside["session_id"] != own["session_id"]
        assert browser.get("/api/session?surface=elsewhere").json()["reason"] == "SURFACE_UNKNOWN"
        seen = []
        with browser.stream("GET", "/api/surface/stream?surface=mcp") as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                seen.append(line)
                if presented["revision"] in line:
                    break
    assert any(presented["revision"] in line for line in seen)


def test_tessera_mcp_serves_the_running_set_to_a_local_client(running_set, tmp_path):
    """What an MCP client's configuration starts: `tessera mcp`, on the set `tessera up` recorded."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "services.json").write_text(json.dumps(running_set.state()))
    params = StdioServerParameters(command=sys.executable, args=["-m", "cli", "mcp", "--person", "cli-mcp"],
                                   env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                        "TESSERA_VAR_DIR": str(tmp_path)}, cwd=str(REPO_ROOT))

    async def scenario() -> tuple[dict, object]:
        async with Client(params, cache=None) as client:
            context = json.loads((await client.call_tool("inspect_current_context", {})).content[0].text)
            return context, client.server_info

    context, server = anyio.run(scenario)
    assert set(context["tools"]) == DATA_TOOLS
    assert (server.name, server.version) == ("tessera", __version__)  # what a client shows for this server
    refused = subprocess.run([sys.executable, "-m", "cli", "mcp", "--person", "not a person"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "TESSERA_VAR_DIR": str(tmp_path)})
    assert refused.returncode == 2 and "--person" in refused.stderr and refused.stdout == ""


def test_after_an_answer_a_new_question_begins_a_new_turn(running_set):
    """What the outside model saw in one turn does not count in the next, as for the built-in model."""
    async def scenario() -> list[tuple[bool, dict]]:
        async with Client(_stdio(running_set, "mcp-turns"), cache=None) as client:
            agent = OutsideAgent(client)
            await _answer_by_region(agent)
            entity = {"entity_ids": agent.entities[:1]}
            same_turn = await agent.call("describe_data", entity)  # not a question opener: the same turn
            await agent.call("inspect_current_context", {})  # opens the next question: a new turn
            return [same_turn, await agent.call("describe_data", entity)]

    (same_ok, _), (next_ok, refused) = anyio.run(scenario)
    assert same_ok
    assert not next_ok and refused["error"] == "ID_NOT_IN_SCOPE", refused


def test_a_button_an_outside_agent_presents_asks_a_person_before_anything_changes(running_set, credentials,
                                                                                   cert_dir, warehouse_url):
    """Mutations become approvals exactly as for the built-in model: pressing the button only asks."""
    async def scenario() -> dict:
        async with Client(_stdio(running_set, "mcp-button"), cache=None) as client:
            agent = OutsideAgent(client)
            await agent.call("inspect_current_context", {})
            ok, frozen = await agent.call("present_ui", {})
            assert ok, frozen
            view = frozen["slice"]
            ids = {c["name"]: c["id"] for c in view["components"]}
            action = next(a["id"] for a in view["actions"] if a["action"] == "orders.flag_for_review")
            ok, presented = await agent.call("present_ui", {"proposal": {"version": 1, "id": "flag", "blocks": [
                {"id": "main", "component": ids["Column"], "data": {}, "children": ["flag"]},
                {"id": "flag", "component": ids["ActionButton"], "data": {
                    "label": "Flag for review", "action": action, "input": {"record_id": 1043}}}]}})
            assert ok and presented["outcome"] == "committed", presented
            return presented

    presented = anyio.run(scenario)
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "mcp-button", "acme")
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        session = invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(actor=person, request_id="mcp"))
        status = press(host, person, session, presented["revision"], "flag", 1043)
    assert status == 2  # INTENT_STATUS_AWAITING_APPROVAL: pressing never changes data
    assert review_status(warehouse_url, 1043) == "none"


def test_two_sessions_of_one_client_are_two_turns(remote_front, authorization_server):
    """Each MCP session (the handshake era's Mcp-Session-Id) is its own conversation: what one saw does not count
    in the other. (The 2026-07-28 era has no sessions: there a person's calls from one client share a turn.)"""
    token = authorization_server.token(audience=remote_front, subject="remote-two", tenant="acme")

    async def scenario() -> tuple[bool, dict]:
        async with _remote(remote_front, token, "legacy") as first, _remote(remote_front, token, "legacy") as second:
            one = OutsideAgent(first)
            await one.call("inspect_current_context", {})
            ok, catalog = await one.call("inspect_catalog", {"question": "net revenue by region"})
            assert ok, catalog
            return await OutsideAgent(second).call("describe_data", {"entity_ids": [catalog["entities"][0]["id"]]})

    ok, refused = anyio.run(scenario)
    assert not ok and refused["error"] == "CAPABILITY_MISSING", refused
