"""The page's API calls say which surface it shows (services/web/frontend/src/api.js): with ?surface=mcp in its
address, every call asks for the person's outside-agent surface, with ?surface=terminal-<12 hex> for the session
they asked in at the terminal; otherwise none does. Run in Node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from shared.paths import REPO_ROOT

API = REPO_ROOT / "services" / "web" / "frontend" / "src" / "api.js"

CALLS = """
const fetched = [];
globalThis.location = { search: process.env.PAGE_SEARCH };
globalThis.fetch = async (url) => { fetched.push(url); return new Response('{}', { status: 200 }); };
const api = await import(process.env.API_URL);
await api.getJson('/api/session');
await api.postJson('/api/commands', {});
await api.getJson('/api/surface/stream?after=1:2');
console.log(JSON.stringify({ fetched, outside: api.showsOutsideAgentSurface(), terminal: api.showsTerminalSurface() }));
"""


def _calls(search: str) -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    result = subprocess.run([node, "--input-type=module", "-e", CALLS], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60,
                            env={**os.environ, "API_URL": API.as_uri(), "PAGE_SEARCH": search})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_outside_agent_surface_is_asked_for_on_every_call():
    assert _calls("?surface=mcp") == {"outside": True, "terminal": False, "fetched": [
        "/api/session?surface=mcp", "/api/commands?surface=mcp", "/api/surface/stream?after=1:2&surface=mcp"]}


def test_a_session_asked_in_at_the_terminal_is_asked_for_on_every_call():
    assert _calls("?surface=terminal-0123456789ab") == {"outside": False, "terminal": True, "fetched": [
        "/api/session?surface=terminal-0123456789ab", "/api/commands?surface=terminal-0123456789ab",
        "/api/surface/stream?after=1:2&surface=terminal-0123456789ab"]}


@pytest.mark.parametrize("search", ["", "?surface=elsewhere", "?q=1", "?surface=terminal-XYZ",
                                    "?surface=terminal-0123456789abc"])
def test_otherwise_the_page_asks_for_its_own(search):
    assert _calls(search) == {"outside": False, "terminal": False, "fetched": [
        "/api/session", "/api/commands", "/api/surface/stream?after=1:2"]}
