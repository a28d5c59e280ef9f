"""The golden set: every question through the agent (the embedded planner), every committed
answer checked against figures computed independently from raw rows with SQL and Python."""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import grpc
import pytest
import sqlalchemy as sa
import yaml

from services.agent.config import AgentSettings
from shared.config import load_settings
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke, invoke_stream
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.agent.integration.test_agent_turns import window
from tests.fixtures.golden.reference import Reference, months_back
from tests.fixtures.golden.sql_truth import CLOSE, mismatch, same_figure, top_one, truth_rows
from tests.fixtures.golden.transcripts import (
    clear_question_transcripts,
    question_transcript,
    transcript_end,
    turn_records,
    write_question_transcript,
)
from tests.fixtures.no_payload import leaks, transcript_records

GOLDEN_DIR = Path(__file__).parents[2] / "fixtures" / "golden"


def question_sets() -> list[dict]:
    """The golden set's questions, then each held-out set's (fresh_*.yaml, written by people who never read the
    planner, their truth in their own SQL), then any set named in TESSERA_HELD_OUT (paths joined by ':'),
    each question tagged with its set."""
    paths = [GOLDEN_DIR / "questions.yaml", *sorted(GOLDEN_DIR.glob("fresh_*.yaml")),
             *[Path(p) for p in os.environ.get("TESSERA_HELD_OUT", "").split(":") if p]]
    return [{**case, "set": "golden" if path.stem == "questions" else path.stem}
            for path in paths for case in _cases(yaml.safe_load(path.read_text()))]


def _cases(document: list | dict) -> list[dict]:
    """A set is a list of questions, or (as some authors hand it over, kept as written) a mapping whose
    `items` are."""
    return document["items"] if isinstance(document, dict) else document


GOLDEN = question_sets()
# What a model must meet: the embedded planner's bar.
GATES = {"correct_ratio": 0.95, "answered_a_different_question": 0, "fabricated_or_out_of_slice_references": 0}
RESULTS: list[dict] = []  # one entry per question, for the eval report
SHOWN: set[Decimal] = set()  # every figure the golden answers showed, for the no-payload scan


@pytest.fixture(scope="module")
def first_region(warehouse_url):
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        name = connection.execute(sa.text("SELECT name FROM regions ORDER BY region_id LIMIT 1")).scalar()
    engine.dispose()
    return name


@pytest.fixture(scope="module")
def reference(warehouse_url, first_region):
    return Reference(warehouse_url, first_region)


def _model_conduct(events) -> dict:
    """How the model behaved in one turn, from its tool steps and errors (for the eval report)."""
    finished = [e.tool_step for e in events if e.WhichOneof("event") == "tool_step"
                and e.tool_step.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED]
    outcomes = [s.summary.split()[0] for s in finished if s.tool == "present_ui"
                and s.summary.split()[0] in ("committed", "committed_partial", "rejected")]
    errors = [e.error.reason for e in events if e.WhichOneof("event") == "error"]
    return {"tool_calls": len(finished),
            "invalid_arguments": sum(s.summary.startswith(("ARGUMENTS_", "UNKNOWN_TOOL")) for s in finished),
            "provider_refused_request": any(r.startswith("MODEL_HTTP_4") for r in errors),
            "proposals": len(outcomes), "first_proposal_valid": outcomes[:1] == ["committed"],
            "committed_after_repair": outcomes[:1] != ["committed"] and "committed" in outcomes[1:]}


def eval_report_path() -> Path | None:
    """`make eval` sets TESSERA_EVAL_REPORT: the report goes there, each question's transcript next to it."""
    target = os.environ.get("TESSERA_EVAL_REPORT")
    return Path(target) if target else None


@pytest.fixture(scope="module", autouse=True)
def eval_report(request):
    """Under `make eval`: write what the golden set measured, held to its gates, and which model it measured."""
    report = eval_report_path()
    if report:
        clear_question_transcripts(report.parent / "transcripts")
        model = model_under_test(request.getfixturevalue("running_set"), request.getfixturevalue("credentials"))
    yield
    if report:
        summary = {"model": model, **eval_summary(RESULTS)}
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(summary, indent=2) + "\n")


def model_under_test(running_set, credentials) -> dict:
    """The model the agent says it runs, and the settings it was given (the key aside)."""
    with sync_channel(running_set.handles["agent"].address, credentials("cli"), "agent") as agent:
        planner = invoke(agent, "agent", "GetInfo", agent_pb2.GetInfoRequest()).model
    settings = load_settings("agent", AgentSettings)  # the operator's TESSERA_AGENT_* reach the agent as they are
    if not settings.model_url:
        return {"planner": planner}
    return {"planner": planner, "url": settings.model_url, "protocol": settings.model_protocol,
            "name": settings.model_name, "parameters": settings.model_parameters}


def eval_summary(results: list[dict], questions: int = len(GOLDEN)) -> dict:
    """The measures over `results`; a question of the `questions` asked for that has no result counts as wrong."""
    def ratio(part: int, whole: int) -> float | None:
        return round(part / whole, 3) if whole else None

    proposing = [r for r in results if r["proposals"]]
    needing_repair = [r for r in proposing if not r["first_proposal_valid"]]
    calls = sum(r["tool_calls"] for r in results)
    refusals = [r for r in results if r["kind"] != "answered" and r["kind"] != "listing"]
    answered = [r for r in results if r["kind"] in ("answered", "listing")]
    summary = {"questions": questions, "checked": len(results), "correct": sum(r["correct"] for r in results),
               "correct_ratio": ratio(sum(r["correct"] for r in results), questions),
               "interpretation_match": ratio(sum(r["interpretation_ok"] for r in answered), len(answered)),
               "honest_refusal_rate": ratio(sum(r["correct"] for r in refusals), len(refusals)),
               # answered, but not the question asked: wrong figures, wrong caption, or an answer where none was due
               "answered_a_different_question": sum(r["different_question"] for r in results),
               "provider_schema_acceptance": ratio(sum(not r["provider_refused_request"] for r in results),
                                                   len(results)),
               "tool_argument_validity": ratio(calls - sum(r["invalid_arguments"] for r in results), calls),
               "first_proposal_validity": ratio(sum(r["first_proposal_valid"] for r in proposing), len(proposing)),
               "commit_after_repair": ratio(sum(r["committed_after_repair"] for r in needing_repair),
                                            len(needing_repair)),
               "fabricated_or_out_of_slice_references": sum(r["refused_references"] for r in results),
               "by_set": {name: set_measures([r for r in results if r["set"] == name])
                          for name in dict.fromkeys(r["set"] for r in results)},
               "gates": GATES}
    return summary | {"gate_failures": gate_failures(summary), "results": results}


def set_measures(results: list[dict]) -> dict:
    """One question set's figures, held-out sets' above all: answerable questions answered rightly, answers
    to a different question, answerable questions refused, and questions due a refusal that got one."""
    answerable = [r for r in results if r["kind"] in ("answered", "listing")]
    due_refusal = [r for r in results if r["kind"] not in ("answered", "listing")]
    correct = sum(r["correct"] for r in answerable)
    refused = sum(r["refused"] for r in answerable)
    return {"questions": len(results), "answerable": len(answerable), "answerable_correct": correct,
            "answerable_correct_ratio": round(correct / len(answerable), 3) if answerable else None,
            "answered_a_different_question": sum(r["different_question"] for r in results),
            "answerable_refused": refused,
            "answerable_refused_ratio": round(refused / len(answerable), 3) if answerable else None,
            "refusals_due": len(due_refusal), "refusals_due_given": sum(r["correct"] for r in due_refusal)}


def gate_failures(summary: dict) -> list[str]:
    """Each gate the summary misses, in words; none: the model meets the embedded planner's bar."""
    failures = []
    if (summary["correct_ratio"] or 0) < GATES["correct_ratio"]:
        failures.append(f"correct_ratio {summary['correct_ratio']} is below {GATES['correct_ratio']}")
    for counted in ("answered_a_different_question", "fabricated_or_out_of_slice_references"):
        if summary[counted] > GATES[counted]:
            failures.append(f"{counted} is {summary[counted]}, above {GATES[counted]}")
    return failures


def ask_in_session(running_set, credentials, person, questions: list[str], agent_address: str = ""):
    """Ask each question in turn in one session (of the running set's agent unless another is named); the
    session and each turn's events."""
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        session = invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(
            actor=person, request_id=secrets.token_hex(8)))
    turns = []
    with sync_channel(agent_address or running_set.handles["agent"].address, credentials("cli"), "agent") as agent:
        for number, question in enumerate(questions):
            turns.append(list(invoke_stream(agent, "agent", "StartTurn", agent_pb2.StartTurnRequest(
                actor=person, session_id=session.session_id, question=question, request_id=f"q{number}"),
                timeout=120)))
    return session, turns


def ask_recorded(running_set, credentials, person, questions: list[str], transcript: Path, agent_address: str = ""):
    """`ask_in_session`, and each turn's records from the agent's model transcript (`transcript`, its
    TESSERA_AGENT_MODEL_TRANSCRIPT): the session, each turn's events, each turn's records."""
    since = transcript_end(transcript)
    session, turns = ask_in_session(running_set, credentials, person, questions, agent_address)
    return session, turns, turn_records(transcript, since, [turn_id(events) for events in turns])


def asked_questions(case: dict, first_region: str) -> list[str]:
    """What is asked for a golden case, in order: its earlier questions, then its own."""
    return [q.replace("{region}", first_region) for q in [*case.get("after", []), case["q"]]]


def golden_person(cert_dir):
    from shared.identity.actors import assert_actor
    from shared.identity.certs import load_signing_key, signing_key_path

    return assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "golden", "acme")


def turn_id(events) -> str:
    return events[0].started.turn_id


def revision_messages(running_set, credentials, person, session, revision_id: str) -> list[dict]:
    """The A2UI messages the host published for one revision, in order."""
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        first = invoke(host, "host", "Subscribe", host_pb2.SubscribeRequest(
            actor=person, session_id=session.session_id, resume_after=host_pb2.Cursor(epoch=1, sequence=0),
            max_envelopes=500), timeout=10)
    return [json.loads(envelope.a2ui.message_json) for envelope in [first.envelope, *first.following]
            if envelope.revision_id == revision_id and envelope.WhichOneof("payload") == "a2ui"]


def caption(running_set, credentials, person, session, revision_id: str) -> dict:
    """The gateway's interpretation of the result the revision shows (what the person reads under it)."""
    found = {}
    for message in revision_messages(running_set, credentials, person, session, revision_id):
        update = message.get("updateDataModel", {})
        if update.get("path", "").startswith("/resources/"):
            found = update["value"]["interpretation"]
    return found


def _layout(expect: dict) -> tuple[list[str], list[str]]:
    """The answer table's group keys and number columns, in the order the planner lays them out."""
    metrics = expect["metric"] if isinstance(expect["metric"], list) else [expect["metric"]]
    keys = [*expect.get("by", []), *expect.get("split", {}).keys(), *expect.get("share", {}).keys()]
    numbers = list(metrics) + (["per_count"] if "per" in expect else [])
    if "share" in expect or expect.get("share_of_total"):
        numbers.append("share")
    if "per" in expect:
        numbers.append("per")
    if "compare" in expect:
        numbers += ["prior", "change", "growth"]
    return keys, numbers


def expected_rows(reference: Reference, expect: dict) -> dict[tuple, dict[str, Decimal | None]]:
    keys, numbers = _layout(expect)
    metrics = expect["metric"] if isinstance(expect["metric"], list) else [expect["metric"]]
    where = dict(expect.get("where", {}))
    where.update(expect.get("split", {}))
    period = expect.get("period")
    columns = {m: reference.totals(m, keys, where, period) for m in metrics}
    groups = set(columns[metrics[0]])
    rows = {group: {m: columns[m].get(group, Decimal(0)) for m in metrics} for group in groups}
    primary = metrics[0]
    if "share" in expect:
        (field, value), = expect["share"].items()
        position = keys.index(field)
        totals: dict = defaultdict(Decimal)
        for group, row in rows.items():
            totals[group[:position] + group[position + 1:]] += row[primary]
        rows = {g: {**r, "share": r[primary] / totals[g[:position] + g[position + 1:]]}
                for g, r in rows.items() if g[position] == value}
    elif expect.get("share_of_total"):
        whole = sum(r[primary] for r in rows.values())
        rows = {g: {**r, "share": r[primary] / whole} for g, r in rows.items()}
    if "per" in expect:
        counts = reference.totals(expect["per"], keys, where, period)
        rows = {g: {**r, "per_count": counts.get(g, Decimal(0)),
                    "per": r[primary] / counts[g] if counts.get(g) else None} for g, r in rows.items()}
    if "compare" in expect:
        step = 12 if expect["compare"] == "same_period_last_year" else {"month": 1, "quarter": 3, "year": 12}[keys[0]]
        earlier = reference.totals(primary, keys, where, period, shift_months=step)
        for group, row in rows.items():
            back = (_back(group[0], step), *group[1:])
            row["prior"] = earlier.get(back)
            row["change"] = row[primary] - row["prior"] if row["prior"] is not None else None
            row["growth"] = row[primary] / row["prior"] - 1 if row["prior"] else None
    if expect.get("which"):  # the whole ranking, the highest (or lowest) first
        ordered = sorted(rows, key=lambda g: rows[g][primary], reverse=expect["which"] == "highest")
        rows = {g: rows[g] for g in ordered}
    if "top" in expect or "bottom" in expect:
        ranked = sorted(rows, key=lambda g: rows[g][numbers[-1] if "per" in expect or "share" in expect
                                                     else primary], reverse="top" in expect)
        rows = {g: rows[g] for g in ranked[:expect.get("top") or expect.get("bottom")]}
    return {g: {n: r.get(n) for n in numbers} for g, r in rows.items()}


def _back(bucket: str, months: int) -> str:
    return months_back(dt.datetime.fromisoformat(bucket), months).isoformat()


def _group_value(value):
    return value[:19] if isinstance(value, str) and len(value) >= 19 and value[4] == "-" else value


def answered_rightly(running_set, credentials, person, session, done, case, reference) -> bool:
    expect = case["expect"]
    keys, numbers = _layout(expect)
    want = expected_rows(reference, expect)
    revision = done.revision_ids[-1]
    share_keys = list(expect.get("share", {}))
    if not [k for k in keys if k not in share_keys]:  # headline figures: one Metric each, the first "figure"
        got = {}
        # The share or the ratio is the headline when asked for; then each measure.
        shown = [n for n in ("share", "per") if n in numbers] + [n for n in numbers if n not in (
            "share", "per", "per_count")]
        for index, name in enumerate(shown):
            node = "figure" if index == 0 else f"figure-{_column_id(name, numbers)}"
            got[name] = _figure(running_set, credentials, person, session, revision, node)
        row = next(iter(want.values()), {}) if len(want) == 1 else {}
        SHOWN.update(Decimal(str(v)).quantize(CLOSE) for v in got.values() if v is not None)
        return bool(want) and all(same_figure(got[n], row.get(n)) for n in got)
    rows = window(running_set, credentials, person, session, revision, "table")
    SHOWN.update(Decimal(str(v)).quantize(CLOSE) for r in rows for v in r[len(keys):] if isinstance(v, (int, float)))
    got = {tuple(_group_value(v) for v in r[:len(keys)]): dict(zip(numbers, r[len(keys):], strict=False))
           for r in rows}
    if got.keys() != want.keys():
        return False
    ordered = [tuple(_group_value(v) for v in r[:len(keys)]) for r in rows]
    if ("top" in expect or "bottom" in expect or expect.get("which")) and ordered[0] != next(iter(want)):
        return False
    return all(same_figure(got[g][n], want[g][n]) for g in want for n in numbers)


def _figure(running_set, credentials, person, session, revision_id: str, node: str, row: int = 0):
    """The one cell a Metric block shows (its grant covers that row only)."""
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        reply = invoke(host, "host", "SendCommand", host_pb2.SendCommandRequest(
            actor=person, command_id=f"w-{node}", session_id=session.session_id, surface_id=session.surface_id,
            revision_id=revision_id, resource_window=host_pb2.ResourceWindowCommand(node_id=node, offset=row, limit=1)))
        envelope = invoke(host, "host", "Subscribe", host_pb2.SubscribeRequest(
            actor=person, session_id=session.session_id,
            resume_after=host_pb2.Cursor(epoch=1, sequence=reply.cursor.sequence - 1)), timeout=10).envelope
    return json.loads(envelope.a2ui.message_json)["updateDataModel"]["value"]["rows"][0][0]


def _column_id(name: str, numbers: list[str]) -> str:
    """A headline figure's column id: measures are m0, m1…; the share and the ratio keep their names."""
    metrics = [n for n in numbers if n not in ("per_count", "share", "per", "prior", "change", "growth")]
    return f"m{metrics.index(name)}" if name in metrics else name


LISTED_PARTS = ("measures", "dimensions", "filters")  # a caption's parts that are lists of texts


def interpretation_ok(found: dict, wanted: dict | None) -> bool:
    if not wanted:
        return True
    unknown = set(wanted) - {*LISTED_PARTS, "ordering"}
    assert not unknown, f"a caption expectation names no part of a caption: {sorted(unknown)}"  # never a silent pass
    for part in LISTED_PARTS:
        have = " | ".join(found.get(part, []))
        if any(text not in have for text in wanted.get(part, [])):
            return False
    return wanted.get("ordering", "") in found.get("ordering", "")


@dataclass(frozen=True)
class GoldenCheck:
    """What holding a golden answer to SQL needs: the host the answer is read from, who asked, SQL's figures."""

    running_set: object
    credentials: object
    person: object
    reference: Reference
    first_region: str

    def result(self, case: dict, session, events) -> dict:
        """The question's report entry from its turn's events; `failure` says why it is not correct (None: it is)."""
        done = events[-1].done
        committed = [e.surface_committed for e in events if e.WhichOneof("event") == "surface_committed"]
        fabricated = [d.code for c in committed for d in c.diagnostics if d.code.startswith("catalog.")]
        result = {"question": asked_questions(case, self.first_region)[-1], "set": case["set"],
                  "kind": case["kind"], "correct": False, "interpretation_ok": False, "different_question": False,
                  "refused": done.outcome == common_pb2.TURN_OUTCOME_NOT_ANSWERABLE,
                  "refused_references": len(fabricated), "answer": done.answer, **_model_conduct(events),
                  "failure": None}
        if fabricated:
            return result | {"failure": f"out-of-slice or fabricated references: {fabricated}"}
        answered = done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and bool(done.revision_ids)
        if case["kind"] not in ("answered", "listing"):
            return self._refusal(case, done, answered, result)
        if not answered:
            return result | {"failure": f"not answered: {done.answer}"}
        try:
            if case["kind"] == "listing":
                return self._listing(session, done, result)
            if "sql" in case:
                return self._answer_by_sql(case, session, done, result)
            return self._answer(case, session, done, result)
        except grpc.RpcError as exc:  # say, a committed block bound to nothing: the answer shows no figures
            return result | {"correct": False, "failure": f"the answer cannot be read: {exc.code().name} "
                                                          f"{exc.details()}"}

    def _refusal(self, case: dict, done, answered: bool, result: dict) -> dict:
        says = [text.replace("{region}", self.first_region) for text in case.get("says", [])]
        result["different_question"] = answered
        result["correct"] = (done.outcome == common_pb2.TURN_OUTCOME_NOT_ANSWERABLE and not done.revision_ids
                             and all(text in done.answer for text in says))
        return result if result["correct"] else result | {"failure": f"not a refusal saying {says}: {done.answer}"}

    def _listing(self, session, done, result: dict) -> dict:
        rows = window(self.running_set, self.credentials, self.person, session, done.revision_ids[-1], "table")
        newest_first = [r[0] for r in rows] == sorted((r[0] for r in rows), reverse=True) and len(rows) > 0
        result["correct"] = result["interpretation_ok"] = newest_first
        return result if newest_first else result | {"failure": "the listing is empty or not newest first"}

    def _answer(self, case: dict, session, done, result: dict) -> dict:
        found = caption(self.running_set, self.credentials, self.person, session, done.revision_ids[-1])
        result["interpretation_ok"] = interpretation_ok(found, _wanted(case, self.first_region))
        right = answered_rightly(self.running_set, self.credentials, self.person, session, done, case,
                                 self.reference)
        result["correct"] = right and result["interpretation_ok"]
        result["different_question"] = not result["correct"]
        if not result["interpretation_ok"]:
            return result | {"failure": f"the caption reads {found}, not {case.get('caption')}"}
        return result if right else result | {"failure": f"the figures are not SQL's: {done.answer}"}


    def _answer_by_sql(self, case: dict, session, done, result: dict) -> dict:
        """A held-out question: the shown rows against its author's SQL (tests/fixtures/golden/sql_truth.py)."""
        truth = truth_rows(self.reference.url, case["sql"])
        views = shown_views(self.running_set, self.credentials, self.person, session, done.revision_ids[-1])
        wrongs = [mismatch(truth, shown, case["keys"], case.get("ordered", False) or top_one(case["sql"]))
                  for shown in views] or ["the answer shows no table and no headline figure"]
        wrong = None if None in wrongs else "; or ".join(wrongs)
        SHOWN.update(Decimal(str(v)).quantize(CLOSE) for shown in views for r in shown for v in r
                     if isinstance(v, (int, float)))
        result |= {"correct": wrong is None, "interpretation_ok": wrong is None,
                   "different_question": wrong is not None}
        return result if wrong is None else result | {"failure": f"not the SQL's answer: {wrong}; said: {done.answer}"}


def shown_views(running_set, credentials, person, session, revision_id: str) -> list[list[list]]:
    """What an answer shows, view by view: its table's rows, and its headline figures as one row ("are we
    getting more orders this year than last?": both years in the table, the later against the earlier above
    it). An answer carries the SQL's rows when one of its views does."""
    components = [component for message in revision_messages(running_set, credentials, person, session, revision_id)
                  for component in message.get("updateComponents", {}).get("components", [])]
    tables = [c["id"] for c in components if c.get("component") == "DataTable"]
    figures = [c for c in components if c.get("component") == "Metric"]
    views = [window(running_set, credentials, person, session, revision_id, tables[0])] if tables else []
    if figures:
        views.append([[_figure(running_set, credentials, person, session, revision_id, c["id"], c.get("row", 0))
                       for c in figures]])
    return views


@pytest.mark.parametrize("number,case", list(enumerate(GOLDEN, 1)),
                         ids=[f"{c['set']}:{c['q'][:48]}" for c in GOLDEN])
def test_golden_question(number, case, running_set, credentials, cert_dir, reference, first_region,
                         model_transcript):
    person = golden_person(cert_dir)
    asked = asked_questions(case, first_region)
    session, turns, records = ask_recorded(running_set, credentials, person, asked, model_transcript)
    report = eval_report_path()
    if report:  # each turn as the model lived it, next to the report
        write_question_transcript(report.parent / "transcripts",
                                  question_transcript(number, case["kind"], asked, records))
    result = GoldenCheck(running_set, credentials, person, reference, first_region).result(case, session, turns[-1])
    RESULTS.append(result)
    assert result["failure"] is None, result["failure"]
    done = turns[-1][-1].done
    if case["kind"] == "refused" and case["set"] == "golden" and case.get("offers", True) \
            and not os.environ.get("TESSERA_AGENT_MODEL_URL"):
        # The embedded planner's own promise: a configured model's turn has no channel for suggestions.
        assert 1 <= len(done.suggested_questions) <= 3, "a refusal offers questions that can be answered"


def _wanted(case: dict, region: str) -> dict | None:
    wanted = case.get("caption")
    if not wanted:
        return None
    return {k: ([t.replace("{region}", region) for t in v] if isinstance(v, list) else v) for k, v in wanted.items()}


def test_the_golden_set_meets_its_gates():
    """Runs after the questions (same module): the embedded planner's gates, over every question asked."""
    if len(RESULTS) < len(GOLDEN):
        pytest.skip("run the whole golden module for its gates")
    summary = eval_summary(RESULTS)
    assert len(GOLDEN) >= 100
    assert not summary["gate_failures"], (summary["gate_failures"],
                                          [(r["question"], r["failure"]) for r in RESULTS if r["failure"]])


def test_nothing_handed_to_the_model_carries_warehouse_values(model_transcript, warehouse_url):
    """Every tool result the models of this module's turns received (the golden set): no warehouse value except
    what a value-domain probe returned as untrusted values, and no figure the answers showed. The whole session's
    transcript is scanned again when the session ends (conftest), whichever worker ran which turns."""
    records = transcript_records(model_transcript)
    assert len({r["turn_id"] for r in records}) >= len(GOLDEN), "run the whole module: the scan covers its turns"
    leaked = leaks(records, warehouse_url, SHOWN)
    assert not leaked, leaked[:10]
