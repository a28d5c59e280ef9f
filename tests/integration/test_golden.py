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


RESULTS: list[dict] = []  # one entry per question: question, correct, references refused by the compiler


@pytest.fixture(scope="module", autouse=True)
def eval_report():
    """`make eval` sets TESSERA_EVAL_REPORT: write what the golden set measured."""
    yield
    target = os.environ.get("TESSERA_EVAL_REPORT")
    if target:
        passed = sum(r["correct"] for r in RESULTS)
        proposing = [r for r in RESULTS if r["proposals"]]
        needing_repair = [r for r in proposing if not r["first_proposal_valid"]]
        calls = sum(r["tool_calls"] for r in RESULTS)

        def ratio(part: int, whole: int) -> float | None:
            return round(part / whole, 3) if whole else None

        report = {"model": os.environ.get("TESSERA_AGENT_MODEL_URL") or "embedded", "questions": len(GOLDEN),
                  "checked": len(RESULTS), "correct": passed,
                  "correct_ratio": round(passed / len(GOLDEN), 3) if GOLDEN else 0.0,
                  # the provider took our tool schemas (no 4xx refusal of the request)
                  "provider_schema_acceptance": ratio(sum(not r["provider_refused_request"] for r in RESULTS),
                                                      len(RESULTS)),
                  "tool_argument_validity": ratio(calls - sum(r["invalid_arguments"] for r in RESULTS), calls),
                  "first_proposal_validity": ratio(sum(r["first_proposal_valid"] for r in proposing),
                                                   len(proposing)),
                  "commit_after_repair": ratio(sum(r["committed_after_repair"] for r in needing_repair),
                                               len(needing_repair)),
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
    result = {"question": question, "correct": False, "refused_references": len(fabricated), **_model_conduct(events)}
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


# JSON Schema vocabulary of our own contracts (e.g. an enum of chart recipes), never data.
_SCHEMA_KEYWORDS = {"enum", "const", "type", "pattern", "format", "required", "$schema"}


def _leaves(value, key=""):
    """(key, leaf) for every string and number in a JSON value, schema keywords aside."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in _SCHEMA_KEYWORDS:
                yield from _leaves(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        yield key, value


def test_nothing_handed_to_the_model_carries_warehouse_values(model_transcript, warehouse_url, first_region):
    """Every tool result every model received in this test session (the golden set included): no warehouse
    value except what a value-domain probe returned as untrusted values, and no figure the answers showed."""
    records = [json.loads(line) for line in model_transcript.read_text().splitlines()]
    results = [json.loads(r["text"]) for r in records if r["kind"].startswith("result:")]
    assert len({r["turn_id"] for r in records}) >= len(GOLDEN), "run the whole module: the scan covers its turns"
    probed = {v for result in results for v in result.get("untrusted_values", [])}
    engine = sa.create_engine(warehouse_url)
    cells: set[str] = set()
    numbers: set[Decimal] = set()
    with engine.connect() as connection:
        for table in sa.inspect(connection).get_table_names():
            for row in connection.execute(sa.text(f"SELECT * FROM {table}")):  # noqa: S608 (our own names)
                for cell in row:
                    if isinstance(cell, str) and not cell.replace("-", "").replace(":", "").replace(" ", "").isdigit():
                        cells.add(cell)
                    elif isinstance(cell, (float, Decimal)) and Decimal(str(cell)) % 1:
                        numbers.add(Decimal(str(cell)).quantize(Decimal("0.01")))
    engine.dispose()
    for case in GOLDEN:  # the figures the committed surfaces show
        if case.get("expect"):
            numbers |= {v.quantize(Decimal("0.01")) for v in
                        expected_figures(warehouse_url, case["expect"], first_region).values() if v % 1}
    leaked = []
    for result in results:
        for key, leaf in _leaves(result):
            if key == "untrusted_values":
                continue
            if isinstance(leaf, str) and leaf in cells - probed:
                leaked.append((key, leaf))
            elif isinstance(leaf, str) and any(len(c) >= 12 and c in leaf for c in cells - probed):
                leaked.append((key, leaf[:80]))
            elif isinstance(leaf, (int, float)) and Decimal(str(leaf)).quantize(Decimal("0.01")) in numbers \
                    and key != "coverage":
                leaked.append((key, leaf))
    assert not leaked, leaked[:10]
