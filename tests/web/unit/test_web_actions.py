"""The page's one action handler (services/web/frontend/src/actions.js) sends each A2UI action a block dispatches
as the command web accepts for it. Run in Node with `fetch` answered here: the state write is the one no
browser test reaches (the host offers no state yet)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from shared.paths import REPO_ROOT

ACTIONS = REPO_ROOT / "services" / "web" / "frontend" / "src" / "actions.js"

# Sends each action given on stdin and prints what reached fetch and what the block was told.
SEND_ALL = """
const posted = [];
globalThis.fetch = async (url, init) => {
  const body = JSON.parse(init.body);
  posted.push({ url, body });
  if (body.state_write && body.state_write.state_slice_id === 'refused') {
    return new Response(JSON.stringify({ reason: 'STATE_NOT_BOUND', message: 'no' }), { status: 400 });
  }
  return new Response(JSON.stringify({ command_id: body.command_id }), { status: 200 });
};
const { send, outcomes } = await import(process.env.ACTIONS_URL);
const told = [];
outcomes.addEventListener('outcome', ({ detail }) => told.push(detail.error ? detail.error.reason : 'ok'));
let input = '';
for await (const chunk of process.stdin) input += chunk;
for (const action of JSON.parse(input)) await send(action, 'rev-1');
console.log(JSON.stringify({ posted, told }));
"""


def _send(actions: list[dict]) -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    result = subprocess.run([node, "--input-type=module", "-e", SEND_ALL], input=json.dumps(actions),
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "ACTIONS_URL": ACTIONS.as_uri()})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _action(name: str, node: str, context: dict) -> dict:
    return {"name": name, "surfaceId": "srf", "sourceComponentId": node, "timestamp": "2026-01-01T00:00:00Z",
            "context": context}


def test_each_action_becomes_its_command_for_the_revision_shown():
    sent = _send([
        _action("resource-window", "table", {"offset": 25, "limit": 25}),
        _action("resource-window", "answer", {"prop": "/figures/total", "offset": 0, "limit": 1}),
        _action("action-trigger", "flag", {"action": "action-000001", "input": {"order": 1212}}),
        _action("state-write", "region", {"state": "state_1", "value": "EU"}),
        _action("state-write", "region", {"state": "refused", "value": "EU"}),
    ])
    bodies = [p["body"] for p in sent["posted"]]
    assert {p["url"] for p in sent["posted"]} == {"/api/commands"}
    assert all(b["revision_id"] == "rev-1" for b in bodies)
    ids = [b.pop("command_id") for b in bodies]
    assert len(set(ids)) == len(ids) and ids[0].startswith("resource-window-") and ids[2].startswith("action-trigger-")
    for body in bodies:
        body.pop("revision_id")
    assert bodies[:4] == [
        {"resource_window": {"node_id": "table", "offset": 25, "limit": 25}},
        {"resource_window": {"node_id": "answer", "prop": "/figures/total", "offset": 0, "limit": 1}},
        {"action_trigger": {"node_id": "flag", "action_slice_id": "action-000001", "input_json": '{"order":1212}'}},
        {"state_write": {"state_slice_id": "state_1", "value_json": '"EU"'}}]
    assert sent["told"] == ["ok", "ok", "ok", "ok", "STATE_NOT_BOUND"]
