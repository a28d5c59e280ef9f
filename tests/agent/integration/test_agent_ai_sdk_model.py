"""The agent driven by a model behind an AI SDK `streamText` route (TESSERA_AGENT_MODEL_PROTOCOL=ai-sdk-ui): the
route is Node with the real `ai` package and a scripted model from its test utilities
(tests/fixtures/ai_sdk/model_route.mjs), so every stream the agent reads is one the AI SDK wrote."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from decimal import Decimal

import pytest

from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.paths import REPO_ROOT
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tests.agent.integration.test_agent_model_paths import _agent, _ask, _kinds, _open
from tests.agent.integration.test_agent_turns import window
from tests.fixtures.golden.reference import expected_figures
from tests.fixtures.waiting import wait_until

ROUTE = REPO_ROOT / "tests" / "fixtures" / "ai_sdk" / "model_route.mjs"


@pytest.fixture(scope="module")
def person(cert_dir):
    return assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "ai-sdk-asker", "acme")


@pytest.fixture(scope="module")
def route():
    """The Node route, on a port it picks; yields its URL and the lines it printed (it says when a client
    went away mid-reply)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the AI SDK route needs Node.js")
    process = subprocess.Popen([node, str(ROUTE)], cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    said: list[dict] = []
    reader = threading.Thread(target=lambda: said.extend(json.loads(line) for line in process.stdout), daemon=True)
    reader.start()
    port = wait_until(lambda: next((s["port"] for s in said if "port" in s), None), 60,
                      what="the AI SDK route listening", detail=lambda: process.poll())
    yield f"http://127.0.0.1:{port}/api/chat", said
    process.terminate()
    process.wait(10)


@pytest.fixture(scope="module")
def routed_agent(cert_dir, tmp_path_factory, running_set, route):
    agent = _agent(cert_dir, tmp_path_factory.mktemp("agent-ai-sdk"), running_set,
                   TESSERA_AGENT_MODEL_URL=route[0], TESSERA_AGENT_MODEL_PROTOCOL="ai-sdk-ui",
                   TESSERA_AGENT_MODEL_MAX_RESPONSE_CHARS="4000")
    yield agent.handles["agent"].address
    assert agent.stop()["agent"] == 0


def test_a_full_turn_through_an_ai_sdk_route_commits_what_sql_gives(routed_agent, running_set, credentials, person,
                                                                    warehouse_url):
    session = _open(running_set, credentials, person, "ai-sdk-full")
    events = _ask(routed_agent, credentials, person, session, "What is our net revenue by region?")
    steps = [s.tool for s in _kinds(events, "tool_step") if s.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED]
    assert steps == ["inspect_current_context", "inspect_catalog", "run_analysis", "present_ui", "present_ui"]
    assert all(s.status == agent_pb2.TOOL_STEP_STATUS_OK for s in _kinds(events, "tool_step")
               if s.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED)
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and len(done.revision_ids) == 1, done
    assert done.answer.startswith("Net revenue by region is on your screen")
    rows = window(running_set, credentials, person, session, done.revision_ids[0], "table")
    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"})
    assert {r[0] for r in rows} == set(expected)
    assert all(abs(Decimal(str(value)) - expected[region]) < Decimal("0.01") for region, value in rows)
    with sync_channel(routed_agent, credentials("cli"), "agent") as agent:
        assert invoke(agent, "agent", "GetInfo").model.startswith("ai-sdk-ui-message-stream:")


def test_an_error_part_and_an_oversized_reply_end_the_turn_with_their_reasons(routed_agent, running_set,
                                                                              credentials, person):
    messages = {}
    for question, reason in (("error: the route's model fails", "MODEL_PROVIDER_ERROR"),
                             ("long: a reply past max_response_chars", "MODEL_RESPONSE_TOO_LARGE")):
        session = _open(running_set, credentials, person, question[:20])
        events = _ask(routed_agent, credentials, person, session, question)
        errors = _kinds(events, "error")
        assert [e.reason for e in errors] == [reason], errors
        assert events[-1].done.outcome == common_pb2.TURN_OUTCOME_FAILED
        messages[reason] = errors[0].message
    assert "the model is overloaded" in messages["MODEL_PROVIDER_ERROR"]  # the route's own words
    assert "4000" in messages["MODEL_RESPONSE_TOO_LARGE"]


def test_cancelling_the_turn_closes_the_routes_stream(routed_agent, running_set, credentials, person, route):
    session = _open(running_set, credentials, person, "ai-sdk-hang")
    said = route[1]
    cancelled = {}
    cancelling: list[threading.Thread] = []

    def on_started(turn_id: str) -> None:
        def cancel() -> None:
            wait_until(lambda: {"thinking": "hang: think forever"} in said, 60, what="the route's model thinking")
            with sync_channel(routed_agent, credentials("cli"), "agent") as agent:
                cancelled["reply"] = invoke(agent, "agent", "CancelTurn", agent_pb2.CancelTurnRequest(
                    actor=person, turn_id=turn_id, reason="test"))
        cancelling.append(threading.Thread(target=cancel, daemon=True))
        cancelling[0].start()

    events = _ask(routed_agent, credentials, person, session, "hang: think forever", on_started=on_started)
    assert events[-1].done.outcome == common_pb2.TURN_OUTCOME_CANCELLED
    cancelling[0].join(30)  # the turn's `done` can arrive before CancelTurn's own reply
    assert cancelled["reply"].cancelled
    wait_until(lambda: {"closed": "hang: think forever"} in said, 30, what="the route saw its client go away")

