"""web's turns as the AI SDK's UI message stream (POST /api/chat), read by the real `ai` package as a `useChat`
app reads them (tests/fixtures/ai_sdk/read_chat.mjs): tool parts per step, the A2UI messages as data parts,
the answer, the outcome, finish; a client that stops cancels the turn (the model's stream closes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from decimal import Decimal

import httpx
import pytest

from cli.launcher import ServiceSet
from shared.paths import REPO_ROOT
from tests.agent.integration.test_agent_model_paths import STREAM_CLOSED, STREAM_THINKING, _agent, _model
from tests.fixtures.fake_model import serving_completions
from tests.fixtures.golden.reference import expected_figures
from tests.fixtures.signing import sign_in
from tests.fixtures.waiting import wait_until

READER = REPO_ROOT / "tests" / "fixtures" / "ai_sdk" / "read_chat.mjs"
PERSON = "ui-stream-person"


@pytest.fixture(scope="module")
def signed_in(running_set, credentials):
    """web's address and a session cookie of a person of these tests only."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the AI SDK reader needs Node.js")
    base = f"http://{running_set.handles['web'].address}"
    with httpx.Client(base_url=base, timeout=60, headers={"Origin": base}, trust_env=False) as browser:
        sign_in(browser, running_set, credentials, PERSON, "acme")
        cookie = "; ".join(f"{name}={value}" for name, value in browser.cookies.items())
    return base, cookie


def read(signed_in, question: str) -> dict:
    base, cookie = signed_in
    done = subprocess.run(["node", str(READER), base, cookie, question], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_use_chat_app_reads_a_whole_turn(signed_in, warehouse_url):
    read_back = read(signed_in, "What is our net revenue by region?")
    assert read_back.get("error") is None, read_back
    chunks, message = read_back["chunks"], read_back["message"]
    assert chunks[0] == "start" and chunks[-1] == "finish"
    parts = message["parts"]
    tools = [p for p in parts if p["type"] == "dynamic-tool"]
    assert [t["toolName"] for t in tools] == ["inspect_current_context", "inspect_catalog", "run_analysis",
                                              "present_ui", "present_ui"]
    assert all(t["state"] == "output-available" and t["output"]["status"] == "ok" for t in tools)
    surface = next(p["data"] for p in parts if p["type"] == "data-surface")
    assert surface["link"] == "/" and surface["turnId"] == message["id"]
    outcome = next(p["data"] for p in parts if p["type"] == "data-outcome")
    assert outcome["outcome"] == "answered" and len(outcome["revisionIds"]) == 1
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    assert text  # the answer, as the agent wrote it
    # The A2UI messages of the committed revision are in the message, the table's first window among them,
    # and its figures are what SQL gives.
    a2ui = [p["data"] for p in parts if p["type"] == "data-a2ui"]
    committed = [d["message"] for d in a2ui if d["revisionId"] == outcome["revisionIds"][0]]
    assert any("updateComponents" in m for m in committed)
    windows = [m["updateDataModel"]["value"] for m in committed
               if m.get("updateDataModel", {}).get("path", "").endswith("/window")]
    assert windows, committed
    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"})
    rows = {row[0]: Decimal(str(row[1])) for row in windows[-1]["rows"]}
    assert rows.keys() == expected.keys()
    assert all(abs(rows[k] - expected[k]) < Decimal("0.01") for k in expected)
    # Figures travel only in A2UI data-model updates: not in the answer text, not in the tool outputs.
    outside_a2ui = json.dumps([p for p in parts if p["type"] != "data-a2ui"])
    assert not [region for region in expected if region in outside_a2ui]


def test_an_unanswerable_question_a_refused_one_and_a_bad_request(signed_in):
    read_back = read(signed_in, "What is the colour of the sky on Mars?")
    outcome = next(p["data"] for p in read_back["message"]["parts"] if p["type"] == "data-outcome")
    assert outcome["outcome"] == "not_answerable" and not outcome["revisionIds"]
    # Over the contract's bound (rules.proto): web refuses the request before any stream begins (HTTP 400, its
    # reason and pointer below), which an AI SDK app receives as its API call's error.
    too_long = read(signed_in, "why " * 600)
    assert (too_long["chunks"], too_long["error"]) == ([], "AI_APICallError"), too_long
    base, cookie = signed_in
    refused = httpx.post(f"{base}/api/chat", json={"messages": [{"id": "a", "role": "assistant", "parts": []}]},
                         headers={"cookie": cookie, "origin": base}, timeout=30)
    assert refused.status_code == 400 and refused.json()["reason"] == "QUESTION_INVALID"
    too_long = {"id": "u", "role": "user", "parts": [{"type": "text", "text": "x" * 2001}]}
    refused = httpx.post(f"{base}/api/chat", json={"messages": [too_long]}, headers={"cookie": cookie, "origin": base},
                         timeout=30)
    assert (refused.status_code, refused.json()["reason"], refused.json()["pointer"]) == (
        400, "FIELD_INVALID", "/messages")


@pytest.fixture(scope="module")
def thinking_web(cert_dir, running_set, credentials, tmp_path_factory):
    """A web in front of an agent whose model (the fake OpenAI-compatible one) thinks until its client goes away
    on questions starting with "hang", so a turn is surely running when the reader stops."""
    with serving_completions(_model) as url:
        agent = _agent(cert_dir, tmp_path_factory.mktemp("agent-thinking"), running_set, TESSERA_AGENT_MODEL_URL=url)
        peers = {"TESSERA_AGENT_ADDR": agent.handles["agent"].address,
                 "TESSERA_HOST_ADDR": running_set.handles["host"].address,
                 "TESSERA_CAPABILITIES_ADDR": running_set.handles["capabilities"].address}
        web = ServiceSet(cert_dir, tmp_path_factory.mktemp("web-thinking"), names=("web",), ephemeral_ports=True,
                         extra_env=peers)
        web.start()
        base = f"http://{web.handles['web'].address}"
        with httpx.Client(base_url=base, timeout=60, headers={"Origin": base}, trust_env=False) as browser:
            sign_in(browser, running_set, credentials, PERSON, "acme")
            cookie = "; ".join(f"{name}={value}" for name, value in browser.cookies.items())
        yield base, cookie
        assert web.stop() == {"web": 0} and agent.stop() == {"agent": 0}


def test_a_client_that_stops_cancels_the_turn(thinking_web, tmp_path):
    question = "hang: what is our net revenue?"
    stop = tmp_path / "stop"
    base, cookie = thinking_web
    reader = subprocess.Popen(["node", str(READER), base, cookie, question, "stop"], cwd=REPO_ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "STOP_WHEN_EXISTS": str(stop)})
    # Stopped only once the turn is surely running: its model has begun to answer.
    wait_until(lambda: question in STREAM_THINKING, 60, what="the turn's model thinking")
    stop.touch()
    out, err = reader.communicate(timeout=60)
    read_back = json.loads(out)
    assert read_back["chunks"][:2] == ["start", "data-surface"] and "finish" not in read_back["chunks"], err
    # The agent cancelled the turn, so its model call ended: the model server saw its client go away.
    wait_until(lambda: question in STREAM_CLOSED, 60, what="the model's stream closed by the cancelled turn")
