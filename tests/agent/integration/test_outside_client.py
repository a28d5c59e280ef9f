"""An outside client answers through the MCP front from the contracts alone (issue 37).

The client (tests/fixtures/outside_client.py) and its five questions (tests/fixtures/outside_questions.py) were
written by someone who read only what tools/list returns, two refusals and docs/demo-warehouse.md: it imports
nothing from services/ or shared/, builds every draft and proposal from the catalog it is shown, and may retry
after a refusal using only what the refusal says. Each committed answer is read as the person's screen reads it
and checked against the question's own SQL; how many calls had to be repeated is recorded (the goal is none).

The client's calls are also kept as a model's recording and replayed, over the OpenAI-compatible streaming
protocol (tests/fixtures/replay_model.py), to a second agent whose model it is: a chat model that follows the
contracts gets the same answers through the agent's own model path.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal

import anyio
import pytest
import sqlalchemy as sa
from mcp import Client

from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.agent.integration.test_agent_model_paths import _agent, _ask, _open
from tests.fixtures.fake_model import serving_completions
from tests.fixtures.outside_client import OutsideModel
from tests.fixtures.outside_questions import QUESTIONS
from tests.fixtures.replay_model import RecordedCall, RecordedTurn, ReplayModel
from tests.mcp.integration.test_mcp_front import _stdio

PERSON = "outside-client"


@pytest.fixture(scope="module")
def answers(running_set, credentials, cert_dir) -> list[dict]:
    """Each question answered in its own turn, through one MCP session, as an outside agent would; with the rows
    the person's screen shows for it, read before the next answer replaces it."""
    async def scenario():
        async with Client(_stdio(running_set, PERSON), cache=None) as client:
            tools = [t.model_dump(by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools]

            calls: list[RecordedCall] = []  # the turn's calls as a model's recording: what it wrote, what it had seen
            seen: list[dict | None] = [None]

            async def call(name: str, arguments: dict) -> tuple[bool, dict]:
                calls.append(RecordedCall(f"o{len(calls) + 1}", name, copy.deepcopy(arguments), seen[0]))
                result = await client.call_tool(name, arguments)
                found = json.loads(result.content[0].text)
                seen[0] = found.get("slice", seen[0]) if name == "present_ui" else seen[0]
                return not result.is_error, found

            found = []
            for question in QUESTIONS:
                calls.clear()
                answer = await OutsideModel(tools, call).answer(question)
                shown = _shown(running_set, credentials, cert_dir, answer["revision"]) if answer["revision"] else []
                found.append({**answer, "shown": shown, "recorded": RecordedTurn(
                    question["text"], (), tuple(calls), "The answer is on the display.")})
            return found

    return anyio.run(scenario)


def _expected(warehouse_url: str, sql: str) -> list[tuple]:
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        rows = [tuple(row) for row in connection.execute(sa.text(sql))]
    engine.dispose()
    return rows


def _number(value) -> Decimal | None:
    try:
        return None if isinstance(value, bool) else Decimal(str(value))
    except ArithmeticError:
        return None


def _same(got, want) -> bool:
    """Money to the cent, shares to a millionth; time buckets by their date; text exactly."""
    if _number(got) is not None and _number(want) is not None:
        want_number = _number(want)
        tolerance = Decimal("0.000001") if abs(want_number) < 10 else Decimal("0.01")
        return abs(_number(got) - want_number) <= tolerance
    if isinstance(want, str) and len(want) >= 19 and want[4] == "-":
        return str(got)[:10] == want[:10]
    return got == want


def _shown(running_set, credentials, cert_dir, revision: str, person_id: str = PERSON, session=None) -> list:
    """The rows the person's screen gets for the answer block of `revision` (by default in the session the MCP
    front commits to)."""
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), person_id, "acme")
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        session = session or invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(
            actor=person, request_id="mcp"))
        reply = invoke(host, "host", "SendCommand", host_pb2.SendCommandRequest(
            actor=person, command_id=f"w-{revision}", session_id=session.session_id, surface_id=session.surface_id,
            revision_id=revision, resource_window=host_pb2.ResourceWindowCommand(node_id="answer", limit=100)))
        envelope = invoke(host, "host", "Subscribe", host_pb2.SubscribeRequest(
            actor=person, session_id=session.session_id,
            resume_after=host_pb2.Cursor(epoch=1, sequence=reply.cursor.sequence - 1)), timeout=10).envelope
    return json.loads(envelope.a2ui.message_json)["updateDataModel"]["value"]["rows"]


@pytest.fixture(scope="module")
def replayed(answers, running_set, credentials, cert_dir, tmp_path_factory) -> list[dict]:
    """The client's recorded turns replayed to a second agent as its chat model; each question's outcome and rows."""
    model = ReplayModel([answer["recorded"] for answer in answers])
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "outside-replay", "acme")
    with serving_completions(model.respond) as url:
        agent = _agent(cert_dir, tmp_path_factory.mktemp("agent-outside"), running_set, TESSERA_AGENT_MODEL_URL=url)
        try:
            session = _open(running_set, credentials, person, "outside-replay")
            found = []
            for question in QUESTIONS:
                done = _ask(agent.handles["agent"].address, credentials, person, session, question["text"])[-1].done
                revision = done.revision_ids[-1] if done.revision_ids else ""
                found.append({"outcome": done.outcome, "shown": _shown(
                    running_set, credentials, cert_dir, revision, "outside-replay", session) if revision else []})
        finally:
            assert agent.stop()["agent"] == 0
    return found


@pytest.mark.parametrize("index", range(len(QUESTIONS)), ids=[q["kind"] for q in QUESTIONS])
def test_the_outside_client_answers_each_question_as_sql_does(answers, index, warehouse_url):
    question, answer = QUESTIONS[index], answers[index]
    assert answer["revision"], answer
    assert answer["outcome"] == "committed", answer
    _held_to_sql(question, answer["shown"], warehouse_url)


@pytest.mark.parametrize("index", range(len(QUESTIONS)), ids=[q["kind"] for q in QUESTIONS])
def test_the_same_calls_from_a_chat_model_get_the_same_answers(replayed, index, warehouse_url):
    assert replayed[index]["outcome"] == common_pb2.TURN_OUTCOME_ANSWERED, replayed[index]
    _held_to_sql(QUESTIONS[index], replayed[index]["shown"], warehouse_url)


def _held_to_sql(question: dict, shown: list, warehouse_url: str) -> None:
    want = _expected(warehouse_url, question["sql"])
    assert len(shown) == len(want) > 0, (shown, want)
    if not question["ordered"]:
        shown, want = sorted(shown, key=lambda r: str(r[0])), sorted(want, key=lambda r: str(r[0]))
    for got_row, want_row in zip(shown, want, strict=True):
        assert len(got_row) == len(want_row) and all(_same(g, w) for g, w in zip(got_row, want_row, strict=True)), \
            (question["kind"], got_row, want_row)


def test_no_question_needed_a_retry(answers):
    """The contracts' goal: a client that follows them gets every call right the first time."""
    retries = {q["kind"]: a["retries"] for q, a in zip(QUESTIONS, answers, strict=True)}
    refusals = {q["kind"]: [r.get("error") for r in a["refusals"]] for q, a in zip(QUESTIONS, answers, strict=True)}
    assert sum(retries.values()) == 0, (retries, refusals)
