"""The golden set: every question through the agent (the embedded planner), every committed
answer checked against figures computed independently from raw rows with SQL and Python."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from tessera.agent.v1 import agent_pb2
from tests.integration.test_agent_turns import ask, window

GOLDEN = yaml.safe_load((Path(__file__).parents[1] / "fixtures" / "golden" / "questions.yaml").read_text())
ITEM_ROWS = ("SELECT i.quantity, i.unit_price, i.discount, r.name AS region, o.channel, c.segment, p.category, "
             "o.status, o.ordered_at FROM order_items i JOIN orders o ON o.order_id = i.order_id "
             "JOIN customers c ON c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id "
             "JOIN products p ON p.product_id = i.product_id")
ORDER_ROWS = ("SELECT r.name AS region, o.channel, c.segment, o.status, o.ordered_at FROM orders o "
              "JOIN customers c ON c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id")
TICKET_ROWS = "SELECT priority, status AS ticket_status, opened_at FROM support_tickets"
CUSTOMER_ROWS = "SELECT c.segment, r.name AS region FROM customers c JOIN regions r ON r.region_id = c.region_id"
METRICS = {  # metric → (rows, value of one row)
    "net_revenue": (ITEM_ROWS, lambda r: Decimal(r.quantity) * Decimal(str(r.unit_price))
                    * (1 - Decimal(str(r.discount)))),
    "gross_revenue": (ITEM_ROWS, lambda r: Decimal(r.quantity) * Decimal(str(r.unit_price))),
    "units_sold": (ITEM_ROWS, lambda r: Decimal(r.quantity)),
    "order_count": (ORDER_ROWS, lambda r: Decimal(1)),
    "ticket_count": (TICKET_ROWS, lambda r: Decimal(1)),
    "customer_count": (CUSTOMER_ROWS, lambda r: Decimal(1)),
}


def _when(value) -> dt.datetime:
    return dt.datetime.fromisoformat(value) if isinstance(value, str) else value


def _group(row, by: str | None):
    if by is None:
        return "all"
    if by in ("month", "year", "quarter"):
        moment = _when(getattr(row, "ordered_at", None) or row.opened_at)
        start = {"month": dt.datetime(moment.year, moment.month, 1), "year": dt.datetime(moment.year, 1, 1),
                 "quarter": dt.datetime(moment.year, 3 * ((moment.month - 1) // 3) + 1, 1)}[by]
        return start.isoformat()
    return getattr(row, by)


@pytest.fixture(scope="module")
def first_region(warehouse_url):
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        name = connection.execute(sa.text("SELECT name FROM regions ORDER BY region_id LIMIT 1")).scalar()
    engine.dispose()
    return name


def expected_figures(warehouse_url, expect: dict, region: str) -> dict:
    rows_sql, value = METRICS[expect["metric"]]
    engine = sa.create_engine(warehouse_url)
    totals: dict = defaultdict(Decimal)
    with engine.connect() as connection:
        for row in connection.execute(sa.text(rows_sql)):
            if expect.get("where") == "region" and row.region != region:
                continue
            totals[_group(row, expect.get("by"))] += value(row)
    engine.dispose()
    return totals


RESULTS: list[dict] = []  # one entry per question: question, correct, references refused by the compiler


@pytest.fixture(scope="module", autouse=True)
def eval_report():
    """`make eval` sets TESSERA_EVAL_REPORT: write what the golden set measured."""
    yield
    target = os.environ.get("TESSERA_EVAL_REPORT")
    if target:
        passed = sum(r["correct"] for r in RESULTS)
        report = {"model": os.environ.get("TESSERA_AGENT_MODEL_URL") or "embedded", "questions": len(GOLDEN),
                  "checked": len(RESULTS), "correct": passed,
                  "correct_ratio": round(passed / len(GOLDEN), 3) if GOLDEN else 0.0,
                  "fabricated_or_out_of_slice_references": sum(r["refused_references"] for r in RESULTS),
                  "results": RESULTS}
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(json.dumps(report, indent=2) + "\n")


@pytest.mark.parametrize("case", GOLDEN, ids=[c["question"][:40] for c in GOLDEN])
def test_golden_question(case, running_set, credentials, cert_dir, warehouse_url, first_region):
    from shared.actors import assert_actor
    from shared.certs import load_signing_key, signing_key_path

    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "golden", "acme")
    question = case["question"].replace("{region}", first_region)
    session, events = ask(running_set, credentials, person, question)
    done = events[-1].done
    committed = [e.surface_committed for e in events if e.WhichOneof("event") == "surface_committed"]
    fabricated = [d for c in committed for d in c.diagnostics if d.code.startswith("catalog.")]
    result = {"question": question, "correct": False, "refused_references": len(fabricated)}
    RESULTS.append(result)
    assert not fabricated, "out-of-slice or fabricated references"
    if case["kind"] == "refused":
        result["correct"] = done.outcome == agent_pb2.TURN_OUTCOME_NOT_ANSWERABLE and not done.revision_ids
        assert result["correct"], done.answer
        return
    assert done.outcome == agent_pb2.TURN_OUTCOME_ANSWERED and len(done.revision_ids) == 1, done.answer
    if case["kind"] == "listing":
        result["correct"] = True
        return
    node = "figure" if case["kind"] == "total" else "table"
    rows = window(running_set, credentials, person, session, done.revision_ids[0], node)
    expected = expected_figures(warehouse_url, case["expect"], first_region)
    got = {"all": Decimal(str(rows[0][0]))} if node == "figure" else {
        r[0]: Decimal(str(r[1] if r[1] is not None else 0)) for r in rows}
    result["correct"] = got.keys() == expected.keys() and all(
        abs(got[k] - expected[k]) < Decimal("0.01") for k in expected)
    assert result["correct"], (question, sorted(got.items())[:3], sorted(expected.items())[:3])
