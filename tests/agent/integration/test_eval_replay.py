"""`make eval` against an external model: a local OpenAI-compatible server replays recorded golden turns.

A handful of golden questions of different kinds is asked of the running set's agent (the embedded planner),
and each question's turns are kept as `make eval` keeps them (tests/fixtures/golden/transcripts.py). The replay
model (tests/fixtures/replay_model.py) serves those recordings over HTTP in the provider's streaming format. A
second agent process, configured only with the variables an operator sets for a hosted model (URL, name, key,
request parameters), answers the same questions through it, and the golden module's own checks hold each answer
to SQL and the set to its gates. The recording is made live, by the real planner, each run: a committed one
would go stale with every catalog, slice or planner change and prove less.
"""

from __future__ import annotations

import json

import pytest

from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.agent.v1 import agent_pb2
from tests.agent.integration.test_agent_model_paths import _agent
from tests.agent.integration.test_golden import (  # noqa: F401  (first_region, reference: fixtures)
    GOLDEN,
    GoldenCheck,
    ask_recorded,
    asked_questions,
    eval_summary,
    first_region,
    golden_person,
    reference,
)
from tests.fixtures.fake_model import serving_completions
from tests.fixtures.golden.transcripts import question_transcript, write_question_transcript
from tests.fixtures.no_payload import leaks, transcript_records
from tests.fixtures.replay_model import ReplayModel, recorded_turns

REPLAYED = [  # golden questions (the first case of each text), one of each kind of turn
    "What is our net revenue by region?",  # a breakdown: a chart and a table
    "What is the total number of orders?",  # a headline figure
    "Net revenue in the {region} region by channel",  # a value found with a value-match probe
    "now only web",  # a follow-up: its earlier question is asked (and replayed) first
    "List the latest orders",  # a record listing
    "Net revenue by weather",  # refused: words it cannot use
    "Delete all cancelled orders",  # cannot change data: a slice frozen to name the actions, nothing proposed
]
CASES = [next(case for case in GOLDEN if case["q"] == question) for question in REPLAYED]
PARAMETERS = {"temperature": 0, "tool_choice": "auto", "parallel_tool_calls": False}
MODEL_NAME, API_KEY = "replayed-golden", "sk-replay-only"


@pytest.fixture(scope="module")
def person(cert_dir):
    return golden_person(cert_dir)


@pytest.fixture(scope="module")
def recordings(running_set, credentials, person, model_transcript, first_region, tmp_path_factory):  # noqa: F811
    """The cases asked of the embedded planner, each question's turns written as `make eval` writes them; the
    files, in the order of CASES."""
    folder = tmp_path_factory.mktemp("eval") / "transcripts"
    paths = []
    for case in CASES:
        asked = asked_questions(case, first_region)
        _, _, records = ask_recorded(running_set, credentials, person, asked, model_transcript)
        paths.append(write_question_transcript(folder, question_transcript(GOLDEN.index(case) + 1, case["kind"],
                                                                           asked, records)))
    return paths


@pytest.fixture(scope="module")
def replay_model(recordings):
    return ReplayModel(recorded_turns(recordings))


@pytest.fixture(scope="module")
def replay_url(replay_model):
    with serving_completions(replay_model.respond) as url:
        yield url


@pytest.fixture(scope="module")
def replaying_agent(cert_dir, tmp_path_factory, running_set, replay_url):
    """A second agent whose model is the replay server, set up as for a hosted model; its address and transcript."""
    transcript = tmp_path_factory.mktemp("replay-transcript") / "transcript.jsonl"
    agent = _agent(cert_dir, tmp_path_factory.mktemp("agent-replay"), running_set,
                   TESSERA_AGENT_MODEL_URL=replay_url, TESSERA_AGENT_MODEL_NAME=MODEL_NAME,
                   TESSERA_AGENT_MODEL_API_KEY=API_KEY, TESSERA_AGENT_MODEL_PARAMETERS=json.dumps(PARAMETERS),
                   TESSERA_AGENT_MODEL_TRANSCRIPT=str(transcript))
    yield agent.handles["agent"].address, transcript
    assert agent.stop()["agent"] == 0


@pytest.fixture(scope="module")
def replayed(replaying_agent, running_set, credentials, person, reference, first_region):  # noqa: F811
    """Each case asked of the replaying agent: (its report entry, each turn's records)."""
    address, transcript = replaying_agent
    check = GoldenCheck(running_set, credentials, person, reference, first_region)
    answers = []
    for case in CASES:
        session, turns, records = ask_recorded(running_set, credentials, person, asked_questions(case, first_region),
                                               transcript, agent_address=address)
        answers.append((check.result(case, session, turns[-1]), records))
    return answers


def test_every_replayed_answer_is_held_to_sql_and_the_set_meets_the_gates(replayed):
    results = [result for result, _ in replayed]
    assert [(r["question"], r["failure"]) for r in results if r["failure"]] == []
    summary = eval_summary(results, questions=len(CASES))
    assert summary["gate_failures"] == [] and summary["correct_ratio"] == 1.0
    assert {r["kind"] for r in results} == {"answered", "listing", "refused", "cannot_change"}


def test_the_replayed_turns_made_the_recorded_calls_with_the_live_slice_quoted(replayed, recordings):
    recorded = [json.loads(path.read_text())["turns"] for path in recordings]
    for (result, live_turns), recorded_turns_of_case in zip(replayed, recorded, strict=True):
        assert len(live_turns) == len(recorded_turns_of_case), result["question"]
        for live, then in zip(live_turns, recorded_turns_of_case, strict=True):
            assert _calls(live, quoted=False) == _calls(then["records"], quoted=False), then["question"]
            assert _answer(live) == _answer(then["records"])
            offers = _quoted_offers(live)
            assert offers <= _offered(live), offers  # every tag a proposal quoted is one the live slice offered
            assert not offers & _offered(then["records"])  # and none is the recorded turn's (a new slice, new tags)
    assert any(_quoted_offers(live) for _, turns in replayed for live in turns), "no proposal was replayed"


def test_every_request_carried_the_configured_parameters_key_and_model(replay_model, replaying_agent, credentials,
                                                                        replayed):
    assert replay_model.requests
    for authorization, body in replay_model.requests:
        assert authorization == f"Bearer {API_KEY}" and API_KEY not in json.dumps(body)
        assert {key: body.get(key) for key in PARAMETERS} == PARAMETERS and body["model"] == MODEL_NAME
    with sync_channel(replaying_agent[0], credentials("cli"), "agent") as agent:
        assert invoke(agent, "agent", "GetInfo", agent_pb2.GetInfoRequest()).model == f"openai-compatible:{MODEL_NAME}"


def test_nothing_handed_to_the_replayed_model_carries_warehouse_values(replaying_agent, replayed, warehouse_url):
    records = transcript_records(replaying_agent[1])
    assert len({r["turn_id"] for r in records}) == sum(len(turns) for _, turns in replayed)
    assert leaks(records, warehouse_url) == []


def _calls(records: list[dict], quoted: bool) -> list[tuple[str, object]]:
    """(tool, arguments) of each call; a proposal's arguments only when `quoted` (its ids and tags are the slice's)."""
    calls = []
    for record in records:
        if record["kind"].startswith("call:"):
            arguments = json.loads(record["text"])
            calls.append((record["kind"], arguments if quoted or "proposal" not in arguments else "a proposal"))
    return calls


def _answer(records: list[dict]) -> str:
    return next(r["text"] for r in records if r["kind"] == "answer")


def _quoted_offers(records: list[dict]) -> set[str]:
    """Every offer tag the turn's proposals quoted."""
    found: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            found.update([value["offer"]] if isinstance(value.get("offer"), str) else [])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    for kind, arguments in _calls(records, quoted=True):
        if kind == "call:present_ui":
            walk(arguments)
    return found


def _offered(records: list[dict]) -> set[str]:
    """Every offer tag the turn's frozen slices offered."""
    views = [json.loads(r["text"]) for r in records if r["kind"] == "result:present_ui"]
    return {resource["offer"] for view in views if "slice" in view for resource in view["slice"]["resources"]}
