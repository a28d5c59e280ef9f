"""Turns end to end with real processes: the embedded planner through the bridge, the host, resources."""

from __future__ import annotations

import calendar
import json
from collections import defaultdict
from decimal import Decimal

import grpc
import pytest
import sqlalchemy as sa

from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke, invoke_stream
from shared.rpc.errors import error_details
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.capabilities.integration.test_broker import Broker
from tests.fixtures.flag_button import press, review_status
from tests.fixtures.signing import enroll, operator_signed, passkey_signed


@pytest.fixture(scope="module")
def person(cert_dir):
    return assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "asker", "acme")


def ask(running_set, credentials, person, question):
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        session = invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(actor=person,
                                                                                  request_id=question[:60]))
    with sync_channel(running_set.handles["agent"].address, credentials("cli"), "agent") as agent:
        events = list(invoke_stream(agent, "agent", "StartTurn", agent_pb2.StartTurnRequest(
            actor=person, session_id=session.session_id, question=question, request_id="r1"), timeout=120))
    return session, events


def window(running_set, credentials, person, session, revision_id, node):
    """The rows a block shows: a table's first 100, a Metric's one cell (it is bound to that row only)."""
    limit = 1 if node == "figure" else 100
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        reply = invoke(host, "host", "SendCommand", host_pb2.SendCommandRequest(
            actor=person, command_id=f"w-{node}", session_id=session.session_id, surface_id=session.surface_id,
            revision_id=revision_id, resource_window=host_pb2.ResourceWindowCommand(node_id=node, limit=limit)))
        envelope = invoke(host, "host", "Subscribe", host_pb2.SubscribeRequest(
            actor=person, session_id=session.session_id,
            resume_after=host_pb2.Cursor(epoch=1, sequence=reply.cursor.sequence - 1)), timeout=10).envelope
    return json.loads(envelope.a2ui.message_json)["updateDataModel"]["value"]["rows"]


def test_a_breakdown_question_commits_a_surface_bound_to_the_right_numbers(running_set, credentials, person,
                                                                           warehouse_url):
    session, events = ask(running_set, credentials, person, "What is our net revenue by region?")
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "started" and kinds[-1] == "done" and "surface_committed" in kinds
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    tools = [e.tool_step.tool for e in events if e.WhichOneof("event") == "tool_step"
             and e.tool_step.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED]
    assert tools == ["inspect_current_context", "inspect_catalog", "run_analysis", "present_ui", "present_ui"]
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and len(done.revision_ids) == 1

    rows = window(running_set, credentials, person, session, done.revision_ids[0], "table")
    engine = sa.create_engine(warehouse_url)
    expected = defaultdict(Decimal)
    with engine.connect() as connection:
        for region, quantity, price, discount in connection.execute(sa.text(
                "SELECT r.name, i.quantity, i.unit_price, i.discount FROM order_items i JOIN orders o "
                "ON o.order_id = i.order_id JOIN customers c ON c.customer_id = o.customer_id "
                "JOIN regions r ON r.region_id = c.region_id")):
            expected[region] += Decimal(quantity) * Decimal(str(price)) * (1 - Decimal(str(discount)))
    engine.dispose()
    assert {r[0] for r in rows} == set(expected)
    assert all(abs(Decimal(str(value)) - expected[region]) < Decimal("0.01") for region, value in rows)
    # Nothing the turn streamed to the client carries a value.
    streamed = "".join(str(e) for e in events)
    assert not [region for region in expected if region in streamed]


def test_a_trend_a_total_and_an_unanswerable_question(running_set, credentials, person):
    _, trend = ask(running_set, credentials, person, "Show units sold by month")
    assert trend[-1].done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and trend[-1].done.revision_ids
    assert "by order time" in trend[-1].done.answer
    _, total = ask(running_set, credentials, person, "What is our total net revenue?")
    assert total[-1].done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and total[-1].done.revision_ids
    _, weather = ask(running_set, credentials, person, "Will it rain tomorrow?")
    done = weather[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_NOT_ANSWERABLE and not done.revision_ids
    assert "can't answer" in done.answer


def test_cancel_turn_needs_a_signed_actor_and_a_running_turn(running_set, credentials, person):
    with sync_channel(running_set.handles["agent"].address, credentials("cli"), "agent") as agent:
        assert not invoke(agent, "agent", "CancelTurn", agent_pb2.CancelTurnRequest(
            actor=person, turn_id="trn_unknown")).cancelled
        with pytest.raises(grpc.RpcError) as unsigned:
            invoke(agent, "agent", "CancelTurn", agent_pb2.CancelTurnRequest(turn_id="trn_unknown"))
        assert error_details(unsigned.value).reason == "ACTOR_MISSING"


def test_a_filter_on_a_value_found_by_a_probe(running_set, credentials, person, warehouse_url):
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        region = connection.execute(sa.text("SELECT name FROM regions ORDER BY region_id LIMIT 1")).scalar()
        expected = defaultdict(Decimal)
        for channel, quantity, price, discount in connection.execute(sa.text(
                "SELECT o.channel, i.quantity, i.unit_price, i.discount FROM order_items i JOIN orders o "
                "ON o.order_id = i.order_id JOIN customers c ON c.customer_id = o.customer_id "
                "JOIN regions r ON r.region_id = c.region_id WHERE r.name = :region"), {"region": region}):
            expected[channel] += Decimal(quantity) * Decimal(str(price)) * (1 - Decimal(str(discount)))
    engine.dispose()
    session, events = ask(running_set, credentials, person,
                          f"What is our net revenue in the {region} region by channel?")
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and region in done.answer
    assert "probe_data" in [e.tool_step.tool for e in events if e.WhichOneof("event") == "tool_step"]
    assert done.tainted and not done.flagged  # probe values are external text: screened, nothing matched
    from tessera.capabilities.v1 import capabilities_pb2 as cap

    with sync_channel(running_set.handles["capabilities"].address, credentials("cli"), "capabilities") as broker:
        records = [json.loads(r.record_json) for r in invoke_stream(
            broker, "capabilities", "ExportAudit", cap.ExportAuditRequest(actor=person), timeout=30)]
    probed = [r for r in records if r["kind"] == "external-read" and r["detail"]["session_id"] == session.session_id]
    assert probed and all(r["detail"]["source"] == "probe_data" for r in probed)  # on the run's record too
    rows = window(running_set, credentials, person, session, done.revision_ids[0], "table")
    assert {r[0]: Decimal(str(r[1])) for r in rows}.keys() == expected.keys()
    assert all(abs(Decimal(str(v)) - expected[c]) < Decimal("0.01") for c, v in rows)


def test_a_record_listing(running_set, credentials, person):
    session, events = ask(running_set, credentials, person, "List the latest orders")
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and done.revision_ids
    rows = window(running_set, credentials, person, session, done.revision_ids[0], "table")
    times = [row[0] for row in rows]
    assert times == sorted(times, reverse=True) and len(rows) == 100


def test_a_name_the_data_cannot_explain_is_not_silently_dropped(running_set, credentials, person):
    _, events = ask(running_set, credentials, person, "What is our net revenue in Atlantis by channel?")
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_NOT_ANSWERABLE and not done.revision_ids
    assert "Atlantis" in done.answer


def _finished(events, tool):
    return [e.tool_step for e in events if e.WhichOneof("event") == "tool_step" and e.tool_step.tool == tool
            and e.tool_step.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED]


def test_external_reads_go_through_the_broker_and_taint_the_run(running_set, credentials, person):
    _, events = ask(running_set, credentials, person, "Which support tickets mention refund?")
    (step,) = _finished(events, "tickets.search_tickets")
    assert step.status == agent_pb2.TOOL_STEP_STATUS_OK and "external data from tickets.search_tickets" in step.summary
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and done.tainted and not done.flagged
    assert "4812" in done.answer and not done.revision_ids

    _, events = ask(running_set, credentials, person, "What does ticket 4815 say?")
    done = events[-1].done
    assert done.tainted and done.flagged and "did not act on them" in done.answer
    # the injected ticket asked to close every other ticket: nothing was even asked for
    assert not [e for e in events if e.WhichOneof("event") == "tool_step"
                and e.tool_step.status == agent_pb2.TOOL_STEP_STATUS_AWAITING_APPROVAL]


def test_a_mutation_asked_for_by_the_agent_waits_for_a_person(running_set, credentials, person):
    from tessera.capabilities.v1 import capabilities_pb2 as cap

    _, events = ask(running_set, credentials, person, "Open a ticket about a broken garden lamp")
    (step,) = _finished(events, "tickets.create_ticket")
    assert step.status == agent_pb2.TOOL_STEP_STATUS_AWAITING_APPROVAL and step.approval_id
    assert step.approval_id in events[-1].done.answer
    _, before = ask(running_set, credentials, person, "Search the tickets for garden lamp")
    assert "has 0 tickets" in before[-1].done.answer  # asked for, not done
    broker = Broker(running_set.handles["capabilities"].address, credentials)
    try:
        card = broker("cli", "GetApproval", cap.GetApprovalRequest(actor=person, approval_id=step.approval_id)).card
        assert card.summary.tool_id == "tickets.create_ticket" and not card.tainted  # this run read nothing
        decision = cap.DecideRequest(actor=person, approval_id=step.approval_id, decision=cap.DECISION_APPROVE,
                                     arguments_sha256=card.arguments_sha256)
        # The tool's rule names no approvers: the default, the person's passkey only. The operator's key is
        # refused (and the refusal audited); the person's own passkey approves.
        with pytest.raises(grpc.RpcError) as refused:
            broker("cli", "Decide", operator_signed(broker, decision, credentials.cert_dir))
        assert error_details(refused.value).reason == "PASSKEY_REQUIRED"
        _, between = ask(running_set, credentials, person, "Search the tickets for garden lamp")
        assert "has 0 tickets" in between[-1].done.answer  # the refused approval ran nothing
        passkey = enroll(broker, person)
        broker("web", "Decide", passkey_signed(broker, decision, passkey))
    finally:
        broker.close()
    _, after = ask(running_set, credentials, person, "Search the tickets for garden lamp")
    assert "has 1 ticket " in after[-1].done.answer


def test_a_named_order_gets_a_flag_button_that_needs_approval(running_set, credentials, person, warehouse_url):
    session, events = ask(running_set, credentials, person, "Flag order 1042 for review")
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and len(done.revision_ids) == 1
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        revision = invoke(host, "host", "GetRevision", host_pb2.GetRevisionRequest(
            actor=person, session_id=session.session_id, revision_id=done.revision_ids[0])).revision
        document = json.loads(revision.document_json)
        button = next(b for b in document["blocks"] if b["component"] == "ActionButton")
        assert button["data"]["input"] == {"record_id": 1042} and button["data"]["label"] == "Flag for review"
        status = press(host, person, session, revision.revision_id, button["id"], 1042)
    assert status == 2  # INTENT_STATUS_AWAITING_APPROVAL: pressing never changes data
    assert review_status(warehouse_url, 1042) == "none"


def test_an_answer_with_no_rows_says_why_and_offers_the_same_question_for_a_year_that_has_some(
        running_set, credentials, person, warehouse_url):
    session, events = ask(running_set, credentials, person, "Net revenue by month in 2019")
    done = events[-1].done
    assert done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and len(done.revision_ids) == 1
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        first, last = (str(v)[:7] for v in connection.execute(sa.text(
            "SELECT min(ordered_at), max(ordered_at) FROM orders")).one())
    engine.dispose()
    span = [f"{calendar.month_name[int(m[5:])]} {m[:4]}" for m in (first, last)]
    assert done.answer.startswith("Nothing matched: there are no rows for net revenue by order time (month) in 2019.")
    assert f"runs from {span[0]} to {span[1]} only." in done.answer, done.answer
    assert done.suggested_questions[0] == f"Net revenue by month in {last[:4]}"
    with sync_channel(running_set.handles["host"].address, credentials("cli"), "host") as host:
        revision = invoke(host, "host", "GetRevision", host_pb2.GetRevisionRequest(
            actor=person, session_id=session.session_id, revision_id=done.revision_ids[0])).revision
    blocks = {b["id"]: b for b in json.loads(revision.document_json)["blocks"]}
    assert "chart" not in blocks and "table" not in blocks  # nothing drawn blank
    assert f"runs from {span[0]} to {span[1]} only." in blocks["answer-text"]["data"]["text"]
    _, offered = ask(running_set, credentials, person, done.suggested_questions[0])  # and it has an answer
    assert offered[-1].done.outcome == common_pb2.TURN_OUTCOME_ANSWERED and "Nothing matched" not in \
        offered[-1].done.answer
