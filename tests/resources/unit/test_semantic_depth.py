"""Semantic layer depth (issue #16): roles, top-N, having, shares and ranks, on every backend.

Most tests run on the second, normalised schema (tests/fixtures/supply_warehouse.py, model
tests/resources/models/supply.yaml), where a line item reaches a nation two ways: through its
order's customer and through its supplier. Expected values come from hand-written SQL over the
physical tables, never from the gateway's compiler.
"""

from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal

import grpc
import pytest

from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal
from tests.resources.unit.test_semantic_suite import by_output, close, raw_rows

LINE_REVENUE = "l.l_extendedprice * (1 - l.l_discount)"


def refused(session, draft: dict) -> Refusal:
    with pytest.raises(Refusal) as error:
        session.analyze(draft)
    return error.value


def revenue(session) -> dict:
    return {"id": "revenue", "metric": session.metric("line_items", "revenue")}


def nation_by(session, role: str | None, output: str = "nation") -> dict:
    dimension = {"id": output, "field": session.field("nations", "name")}
    if role:
        dimension["via"] = [session.relationship(role)]
    return dimension


def sql_revenue_by(supply_raw, nation_join: str) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for name, value in raw_rows(supply_raw, f"""
            SELECT n.n_name, {LINE_REVENUE} FROM sup_lineitem l {nation_join}"""):
        totals[name] += Decimal(str(value))
    return totals


THROUGH_CUSTOMER = """JOIN sup_orders o ON o.o_orderkey = l.l_orderkey
    JOIN sup_customer c ON c.c_custkey = o.o_custkey JOIN sup_nation n ON n.n_nationkey = c.c_nationkey"""
THROUGH_SUPPLIER = """JOIN sup_supplier s ON s.s_suppkey = l.l_suppkey
    JOIN sup_nation n ON n.n_nationkey = s.s_nationkey"""


# --- 1. no silent path choice ---------------------------------------------------


def test_two_paths_to_one_entity_are_refused_naming_both_roles(supply):
    error = refused(supply, {"mode": "aggregate", "measures": [revenue(supply)],
                             "dimensions": [nation_by(supply, None)]})
    assert (status_of(error).code, error.reason, error.metadata["pointer"]) == (
        grpc.StatusCode.INVALID_ARGUMENT, "AMBIGUOUS_PATH", "/dimensions/0")
    # Each way is named by the relationship that tells it apart, by label and by id.
    assert "'Nation of the customer'" in str(error) and "'Nation of the supplier'" in str(error)
    assert sorted(json.loads(error.metadata["allowed"])) == sorted([[supply.relationship("customer_nation")],
                                                                   [supply.relationship("supplier_nation")]])
    # A filter is held to the same rule.
    error = refused(supply, {"mode": "aggregate", "measures": [revenue(supply)],
                             "filter": {"field": supply.field("nations", "name"), "op": "eq", "value": "Canada"}})
    assert (error.reason, error.metadata["pointer"]) == ("AMBIGUOUS_PATH", "/filter")


@pytest.mark.parametrize("role,join", [("customer_nation", THROUGH_CUSTOMER), ("supplier_nation", THROUGH_SUPPLIER)])
def test_a_named_role_answers_its_own_question(supply, supply_raw, role, join):
    expected = sql_revenue_by(supply_raw, join)
    analysis = supply.analyze({"mode": "aggregate", "measures": [revenue(supply)],
                               "dimensions": [nation_by(supply, role)]})
    rows = by_output(analysis)
    assert {r["nation"] for r in rows} == set(expected)
    assert all(close(r["revenue"], expected[r["nation"]]) for r in rows)
    label = supply.gateway.catalog.relationships[role].spec.label
    assert analysis.result.columns[0].label == f"Nation name ({label})"
    assert f"by Nation name ({label})" in analysis.interpretation.text


def test_both_roles_in_one_answer_are_two_different_nations(supply, supply_raw):
    """Customer nation × supplier nation: the same table joined twice, once per role."""
    expected: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for customer_nation, supplier_nation, value in raw_rows(supply_raw, f"""
            SELECT cn.n_name, sn.n_name, {LINE_REVENUE} FROM sup_lineitem l
            JOIN sup_orders o ON o.o_orderkey = l.l_orderkey JOIN sup_customer c ON c.c_custkey = o.o_custkey
            JOIN sup_nation cn ON cn.n_nationkey = c.c_nationkey
            JOIN sup_supplier s ON s.s_suppkey = l.l_suppkey JOIN sup_nation sn ON sn.n_nationkey = s.s_nationkey"""):
        expected[(customer_nation, supplier_nation)] += Decimal(str(value))
    analysis = supply.analyze({
        "mode": "aggregate", "measures": [revenue(supply)],
        "dimensions": [nation_by(supply, "customer_nation", "buyer"), nation_by(supply, "supplier_nation", "seller")],
        "filter": {"field": supply.field("nations", "name"), "via": [supply.relationship("supplier_nation")],
                   "op": "eq", "value": "United States"}})
    rows = by_output(analysis)
    us_supplied = {key: value for key, value in expected.items() if key[1] == "United States"}
    assert len(rows) == len(us_supplied) > 3
    assert all(close(r["revenue"], us_supplied[(r["buyer"], r["seller"])]) for r in rows)
    assert "Nation name (Nation of the supplier) is “United States”" in analysis.interpretation.filters


def test_a_role_that_is_not_on_any_path_is_refused(supply):
    error = refused(supply, {"mode": "aggregate", "measures": [{"id": "n", "metric": supply.metric("orders",
                                                                                               "order_count")}],
                             "dimensions": [{"id": "region", "field": supply.field("regions", "name"),
                                             "via": [supply.relationship("item_part")]}]})
    assert (error.reason, error.metadata["pointer"]) == ("ROLE_NOT_ON_PATH", "/dimensions/0/via")
    assert "'Part on the line' does not lead from Order to Region" in str(error)


def test_a_path_of_two_steps_is_ambiguous_with_a_direct_one(session):
    """Retail: a ticket's customer is the one who opened it, or the one who placed the order it is about."""
    tickets = {"id": "tickets", "metric": session.metric("support_tickets", "ticket_count")}
    segment = {"id": "segment", "field": session.field("customers", "segment")}
    error = refused(session, {"mode": "aggregate", "measures": [tickets], "dimensions": [segment]})
    assert error.reason == "AMBIGUOUS_PATH"
    assert "'Customer who opened the ticket'" in str(error) and "'Customer who placed the order'" in str(error)
    opened = session.analyze({"mode": "aggregate", "measures": [tickets],
                              "dimensions": [{**segment, "via": [session.relationship("ticket_customer")]}]})
    about = session.analyze({"mode": "aggregate", "measures": [tickets],
                             "dimensions": [{**segment, "via": [session.relationship("order_customer")]}]})
    assert sum(r["tickets"] for r in by_output(opened)) == sum(r["tickets"] for r in by_output(about)) > 0


# --- 2. post-aggregation ------------------------------------------------------------


def part_revenue(supply_raw) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for name, value in raw_rows(supply_raw, f"""
            SELECT p.p_name, {LINE_REVENUE} FROM sup_lineitem l JOIN sup_part p ON p.p_partkey = l.l_partkey"""):
        totals[name] += Decimal(str(value))
    return totals


@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_top_and_bottom_ten_return_ten_rows_not_a_truncated_thousand(supply, supply_raw, statements, direction):
    expected = part_revenue(supply_raw)
    ranked = sorted(expected, key=lambda name: (expected[name], name), reverse=direction == "desc")
    analysis = supply.analyze({"mode": "aggregate", "output": "ranking", "measures": [revenue(supply)],
                               "dimensions": [{"id": "part", "field": supply.field("parts", "name")}],
                               "order_by": [{"output": "revenue", "direction": direction}], "limit": 10})
    rows = by_output(analysis)
    assert len(rows) == 10 and not analysis.descriptor.truncated
    assert all(close(r["revenue"], expected[r["part"]]) for r in rows)
    assert [round(expected[r["part"]], 2) for r in rows] == [round(expected[n], 2) for n in ranked[:10]]
    assert analysis.interpretation.truncation == f"top 10 of {len(expected)}"
    order = "highest" if direction == "desc" else "lowest"
    assert f"{order} Revenue first" in analysis.interpretation.text


def test_a_limit_larger_than_the_rows_says_nothing_was_left_out(supply):
    analysis = supply.analyze({"mode": "aggregate", "measures": [revenue(supply)],
                               "dimensions": [{"id": "mode", "field": supply.field("line_items", "ship_mode")}],
                               "order_by": [{"output": "revenue", "direction": "desc"}], "limit": 50})
    assert analysis.descriptor.row_count == 5 and analysis.interpretation.truncation == ""


def test_having_keeps_the_groups_whose_value_passes(supply, supply_raw):
    expected = sql_revenue_by(supply_raw, THROUGH_SUPPLIER)
    threshold = sorted(expected.values())[len(expected) // 2]  # about half the nations pass
    analysis = supply.analyze({
        "mode": "aggregate", "measures": [revenue(supply)], "dimensions": [nation_by(supply, "supplier_nation")],
        "having": {"output": "revenue", "op": "gte", "value": float(threshold)}})
    kept = {r["nation"] for r in by_output(analysis)}
    assert kept == {name for name, value in expected.items() if value >= threshold}
    assert 0 < len(kept) < len(expected)
    assert any(f.startswith("only where Revenue at least ") for f in analysis.interpretation.filters)


def test_share_of_total_and_rank_within_a_breakdown(supply, supply_raw):
    """Each supplier nation's share of its region's revenue, and its rank there."""
    by_nation: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for region, nation, value in raw_rows(supply_raw, f"""
            SELECT r.r_name, n.n_name, {LINE_REVENUE} FROM sup_lineitem l {THROUGH_SUPPLIER}
            JOIN sup_region r ON r.r_regionkey = n.n_regionkey"""):
        by_nation[(region, nation)] += Decimal(str(value))
    region_total: dict[str, Decimal] = defaultdict(Decimal)
    for (region, _), value in by_nation.items():
        region_total[region] += value
    grand_total = sum(region_total.values())
    analysis = supply.analyze({
        "mode": "aggregate", "measures": [revenue(supply)],
        "dimensions": [{"id": "region", "field": supply.field("regions", "name"),
                        "via": [supply.relationship("supplier_nation")]}, nation_by(supply, "supplier_nation")],
        "calculations": [{"id": "share", "kind": "share_of_total", "of": "revenue", "within": ["region"]},
                         {"id": "overall", "kind": "share_of_total", "of": "revenue"},
                         {"id": "place", "kind": "rank", "of": "revenue", "within": ["region"]}],
        "order_by": [{"output": "region"}, {"output": "place"}]})
    rows = by_output(analysis)
    assert len(rows) == len(by_nation)
    for row in rows:
        value = by_nation[(row["region"], row["nation"])]
        assert close(row["share"], value / region_total[row["region"]], Decimal("0.000001"))
        assert close(row["overall"], value / grand_total, Decimal("0.000001"))
        higher = sum(1 for (region, _), other in by_nation.items() if region == row["region"] and other > value)
        assert row["place"] == higher + 1
    columns = {c.id: c for c in analysis.result.columns}
    assert columns["share"].label.startswith("Share of Revenue within each Region name")
    assert columns["share"].format == {"style": "percent", "decimals": 1} and not columns["share"].additive
    assert columns["overall"].additive
    # Shares of one total add up to 1 within each region.
    for region in region_total:
        assert close(sum(r["share"] for r in rows if r["region"] == region), 1, Decimal("0.000001"))


def test_a_top_n_by_rank_keeps_the_shares_of_the_whole(supply, supply_raw):
    """Shares are of all groups: a limit or having after them does not change the total they divide by."""
    expected = part_revenue(supply_raw)
    total = sum(expected.values())
    analysis = supply.analyze({
        "mode": "aggregate", "measures": [revenue(supply)],
        "dimensions": [{"id": "part", "field": supply.field("parts", "name")}],
        "calculations": [{"id": "share", "kind": "share_of_total", "of": "revenue"}],
        "having": {"output": "share", "op": "gt", "value": 0.001},
        "order_by": [{"output": "share", "direction": "desc"}], "limit": 3})
    rows = by_output(analysis)
    assert len(rows) == 3
    assert all(close(r["share"], expected[r["part"]] / total, Decimal("0.000001")) for r in rows)
    assert "only where Share of Revenue above 0.1%" in analysis.interpretation.filters


# --- 8. the same answer on every plan -------------------------------------------------


def test_sums_and_counts_over_no_rows_are_zero_on_every_plan(session):
    """One measure (a single query) and two measures of different grains (a union) agree."""
    nothing = {"field": session.field("orders", "channel"), "op": "eq", "value": "no such channel"}
    revenue_ = {"id": "revenue", "metric": session.metric("order_items", "net_revenue")}
    orders = {"id": "orders", "metric": session.metric("orders", "order_count")}
    single = by_output(session.analyze({"mode": "aggregate", "measures": [revenue_], "filter": nothing}))
    union = by_output(session.analyze({"mode": "aggregate", "measures": [revenue_, orders], "filter": nothing}))
    assert close(single[0]["revenue"], 0) and close(union[0]["revenue"], 0) and union[0]["orders"] == 0


# --- 3. metric grammar ----------------------------------------------------------------


@pytest.fixture(scope="module")
def supply_rows():
    """The generated rows themselves (the generator is deterministic): expected values in plain Python."""
    from tests.fixtures import supply_warehouse

    data = supply_warehouse.generate()
    parts = {p["p_partkey"]: p for p in data["sup_part"]}
    orders = {o["o_orderkey"]: o for o in data["sup_orders"]}
    return data, parts, orders


def metrics(session, entity: str, *names: str) -> list[dict]:
    return [{"id": name, "metric": session.metric(entity, name)} for name in names]


def test_filtered_measures_text_matching_and_date_functions(supply, supply_rows):
    data, parts, orders = supply_rows
    lines = data["sup_lineitem"]

    def line_revenue(line) -> Decimal:
        return Decimal(line["l_extendedprice"]) * (1 - Decimal(line["l_discount"]))

    expected = {
        "revenue": sum(line_revenue(line) for line in lines),
        "promo_revenue": sum(line_revenue(line) for line in lines
                             if parts[line["l_partkey"]]["p_type"].startswith("PROMO")),
        "brass_quantity": sum(line["l_quantity"] for line in lines
                              if parts[line["l_partkey"]]["p_type"].endswith("BRASS")),
        "late_lines": sum(1 for line in lines if line["l_receiptdate"] > line["l_commitdate"]),
        "rail_or_road_lines": sum(1 for line in lines if line["l_shipmode"] in ("RAIL", "ROAD")),
        "large_container_lines": sum(1 for line in lines
                                     if parts[line["l_partkey"]]["p_container"].startswith("LARGE")),
        "percent_sign_lines": 0,  # '%' is matched as a character, not as "anything"
        "lower_case_lines": 0,  # case-sensitive on SQLite too, as on PostgreSQL and DuckDB
        "average_days_to_ship": sum((line["l_shipdate"] - orders[line["l_orderkey"]]["o_orderdate"]).days
                                    for line in lines) / len(lines),
        "shipped_in_december": sum(1 for line in lines if line["l_shipdate"].month == 12),
        "retail_value": sum(line["l_quantity"] * Decimal(parts[line["l_partkey"]]["p_retailprice"]) for line in lines),
    }
    expected["promo_revenue_share"] = expected["promo_revenue"] / expected["revenue"]
    assert 0 < expected["promo_revenue"] < expected["revenue"] and expected["late_lines"] > 0
    analysis = supply.analyze({"mode": "aggregate", "output": "scalar", "measures": [
        *metrics(supply, "line_items", *[name for name in expected if name != "promo_revenue_share"]),
        {"id": "promo_revenue_share", "metric": supply.metric("line_items", "promo_revenue_share")}]})
    row = by_output(analysis)[0]
    for name, value in expected.items():
        assert close(row[name], value, Decimal("0.0001")), (name, row[name], value)


def test_membership_and_date_parts_on_orders(supply, supply_rows):
    data, _, _ = supply_rows
    placed = data["sup_orders"]
    expected = {
        "urgent_orders": sum(1 for o in placed if o["o_orderpriority"] in ("1-URGENT", "2-HIGH")),
        "orders_in_2023": sum(1 for o in placed if o["o_orderdate"].year == 2023),
        "fourth_quarter_orders": sum(1 for o in placed if o["o_orderdate"].month >= 10),
        "active_months": len({(o["o_orderdate"].year, o["o_orderdate"].month) for o in placed}),
    }
    row = by_output(supply.analyze({"mode": "aggregate", "measures": metrics(supply, "orders", *expected)}))[0]
    assert row == {name: value for name, value in expected.items()}


def test_ratios_of_filtered_measures_across_entities_by_a_role(supply, supply_rows):
    """Orders per customer, the urgent share and late lines per order, by the customer's nation."""
    data, _, orders = supply_rows
    nation_names = {n["n_nationkey"]: n["n_name"] for n in data["sup_nation"]}
    customer_nation = {c["c_custkey"]: nation_names[c["c_nationkey"]] for c in data["sup_customer"]}
    counts = defaultdict(lambda: defaultdict(int))
    for customer in data["sup_customer"]:
        counts[customer_nation[customer["c_custkey"]]]["customers"] += 1
    for order in data["sup_orders"]:
        nation = customer_nation[order["o_custkey"]]
        counts[nation]["orders"] += 1
        counts[nation]["urgent"] += order["o_orderpriority"] in ("1-URGENT", "2-HIGH")
    for line in data["sup_lineitem"]:
        counts[customer_nation[orders[line["l_orderkey"]]["o_custkey"]]]["late"] += \
            line["l_receiptdate"] > line["l_commitdate"]
    analysis = supply.analyze({
        "mode": "aggregate",
        "measures": [{"id": "per_customer", "metric": supply.metric("orders", "orders_per_customer")},
                     {"id": "urgent", "metric": supply.metric("orders", "urgent_share")},
                     {"id": "late", "metric": supply.metric("line_items", "late_share_of_orders")}],
        "dimensions": [nation_by(supply, "customer_nation")]})
    rows = by_output(analysis)
    assert {r["nation"] for r in rows} == set(counts)
    for row in rows:
        c = counts[row["nation"]]
        assert close(row["per_customer"], Decimal(c["orders"]) / c["customers"], Decimal("0.000001"))
        assert close(row["urgent"], Decimal(c["urgent"]) / c["orders"], Decimal("0.000001"))
        assert close(row["late"], Decimal(c["late"]) / c["orders"], Decimal("0.000001"))


@pytest.mark.parametrize("expression,problem", [
    ("count(where=nations.name == 'Japan')", "nations.name is reached from line_items through 2 paths"),
    ("sum(orders.total_price)", None),
])
def test_a_metric_reads_related_fields_through_one_safe_path_only(supply_gateway, tmp_path, expression, problem):
    """Checked when the catalog is built: a metric cannot silently pick one of two meanings."""
    from services.resources.catalog import Catalog
    from shared.semantic.model import SemanticModelError, load_semantic_model
    from tests.resources.conftest import SUPPLY_MODEL

    text = SUPPLY_MODEL.read_text().replace("expression: count(where=receipt_date > commit_date)",
                                            f'expression: "{expression}"')
    path = tmp_path / "model.yaml"
    path.write_text(text)
    model = load_semantic_model(path)
    engine = supply_gateway.warehouse.engine
    if problem is None:
        Catalog(model, engine)
        return
    with pytest.raises(SemanticModelError) as error:
        Catalog(model, engine)
    assert str(error.value).startswith("entities.line_items.metrics.late_lines.expression: ") and problem in \
        str(error.value)
    # …and one that repeats rows: a customer has many orders.
    reversed_text = SUPPLY_MODEL.read_text().replace(
        "customer_count: {label: Number of customers, synonyms: [customers], expression: count(), type: integer}",
        "customer_count: {label: Number of customers, expression: sum(orders.total_price), type: integer}")
    path.write_text(reversed_text)
    with pytest.raises(SemanticModelError, match="through a path that repeats rows"):
        Catalog(load_semantic_model(path), engine)


# --- 4. conditions ------------------------------------------------------------------------


def test_comparing_two_fields_and_two_roles(supply, supply_rows):
    data, _, orders = supply_rows
    lines = data["sup_lineitem"]
    customer_nation = {c["c_custkey"]: c["c_nationkey"] for c in data["sup_customer"]}
    supplier_nation = {s["s_suppkey"]: s["s_nationkey"] for s in data["sup_supplier"]}
    late = sum(1 for line in lines if line["l_receiptdate"] > line["l_commitdate"])
    local = [line for line in lines
             if customer_nation[orders[line["l_orderkey"]]["o_custkey"]] == supplier_nation[line["l_suppkey"]]]
    count = [{"id": "lines", "metric": supply.metric("line_items", "line_count")}]
    analysis = supply.analyze({"mode": "aggregate", "measures": count, "filter": {
        "field": supply.field("line_items", "receipt_date"), "op": "gt",
        "compare_to": {"field": supply.field("line_items", "commit_date")}}})
    assert by_output(analysis)[0]["lines"] == late
    assert analysis.interpretation.filters == ["Receipt date after Commit date"]
    name = supply.field("nations", "name")
    analysis = supply.analyze({"mode": "aggregate", "measures": count, "filter": {
        "field": name, "via": [supply.relationship("customer_nation")], "op": "eq",
        "compare_to": {"field": name, "via": [supply.relationship("supplier_nation")]}}})
    assert by_output(analysis)[0]["lines"] == len(local) and 0 < len(local) < len(lines)
    assert analysis.interpretation.filters == [
        "Nation name (Nation of the customer) is the same as Nation name (Nation of the supplier)"]


def test_has_at_least_one_is_a_semi_join(supply, supply_rows):
    """Customers with at least one urgent order, with none, and with a line shipped by air of a brand."""
    data, parts, orders = supply_rows
    urgent = {o["o_custkey"] for o in data["sup_orders"] if o["o_orderpriority"] == "1-URGENT"}
    by_air = {orders[line["l_orderkey"]]["o_custkey"] for line in data["sup_lineitem"]
              if line["l_shipmode"] == "AIR" and parts[line["l_partkey"]]["p_brand"] == "Cedar"}
    customers = [{"id": "customers", "metric": supply.metric("customers", "customer_count")}]
    is_urgent = {"field": supply.field("orders", "priority"), "op": "eq", "value": "1-URGENT"}
    analysis = supply.analyze({"mode": "aggregate", "measures": customers, "filter": {"has": is_urgent}})
    assert by_output(analysis)[0]["customers"] == len(urgent)
    assert analysis.interpretation.filters == ["has at least one Order where Order priority is “1-URGENT”"]
    analysis = supply.analyze({"mode": "aggregate", "measures": customers, "filter": {"not": {"has": is_urgent}}})
    assert by_output(analysis)[0]["customers"] == len(data["sup_customer"]) - len(urgent)
    assert analysis.interpretation.filters == ["has no Order where Order priority is “1-URGENT”"]
    # Two steps of "many" (customer → orders → lines), and a field of what each line belongs to (its part).
    analysis = supply.analyze({"mode": "aggregate", "measures": customers, "filter": {"has": {"all": [
        {"field": supply.field("line_items", "ship_mode"), "op": "eq", "value": "AIR"},
        {"field": supply.field("parts", "brand"), "op": "eq", "value": "Cedar"}]}}})
    assert by_output(analysis)[0]["customers"] == len(by_air) > 0
    # By segment too: the breakdown joins normally, the has stays a semi-join (no count is inflated).
    segments = defaultdict(int)
    for customer in data["sup_customer"]:
        segments[customer["c_mktsegment"]] += customer["c_custkey"] in urgent
    rows = by_output(supply.analyze({"mode": "aggregate", "measures": customers, "filter": {"has": is_urgent},
                                     "dimensions": [{"id": "segment", "field": supply.field("customers",
                                                                                            "segment")}]}))
    assert {r["segment"]: r["customers"] for r in rows} == {k: v for k, v in segments.items() if v}


def test_text_filters_match_the_value_as_written(supply, supply_rows):
    _, parts, _ = supply_rows
    count = [{"id": "parts", "metric": supply.metric("parts", "part_count")}]
    part_type = supply.field("parts", "part_type")
    for op, value, expected in [
            ("starts_with", "promo", sum(p["p_type"].startswith("PROMO") for p in parts.values())),
            ("ends_with", "Brass", sum(p["p_type"].endswith("BRASS") for p in parts.values())),
            ("starts_with", "%", 0), ("contains", "_", 0)]:
        analysis = supply.analyze({"mode": "aggregate", "measures": count,
                                   "filter": {"field": part_type, "op": op, "value": value}})
        assert by_output(analysis)[0]["parts"] == expected, (op, value)
    assert expected == 0 and "Part type contains “_”" in analysis.interpretation.filters
    analysis = supply.analyze({"mode": "aggregate", "measures": count,
                               "filter": {"field": part_type, "op": "starts_with", "value": "promo"}})
    assert analysis.interpretation.filters == ["Part type starts with “promo”"]


@pytest.mark.parametrize("name,filter_,reason,path", [
    ("each line has one order", lambda s: {"has": {"field": s.field("orders", "priority"), "op": "eq",
                                                   "value": "1-URGENT"}}, "HAS_NOT_MANY", "/filter/has"),
    ("has in has", lambda s: {"has": {"has": {"field": s.field("orders", "priority"), "op": "eq",
                                              "value": "x"}}}, "DRAFT_SCHEMA", "/filter/has/has"),
    ("a date compared with text", lambda s: {"field": s.field("line_items", "ship_date"), "op": "eq",
                                             "compare_to": {"field": s.field("line_items", "ship_mode")}},
     "OPERATOR_TYPE", "/filter/compare_to/field"),
    ("starts_with on a date", lambda s: {"field": s.field("line_items", "ship_date"), "op": "starts_with",
                                         "value": "2024"}, "OPERATOR_TYPE", "/filter/op"),
])
def test_conditions_refuse_what_they_cannot_mean(supply, name, filter_, reason, path):
    error = refused(supply, {"mode": "aggregate", "measures": [revenue(supply)], "filter": filter_(supply)})
    assert (status_of(error).code, error.reason, error.metadata["pointer"]) == (
        grpc.StatusCode.INVALID_ARGUMENT, reason, path)


# --- 5. time intelligence -----------------------------------------------------------------


def monthly_orders(data, segment: str | None = None) -> dict[tuple[int, int], int]:
    counts: dict[tuple[int, int], int] = defaultdict(int)
    segments = {c["c_custkey"]: c["c_mktsegment"] for c in data["sup_customer"]}
    for order in data["sup_orders"]:
        if segment is None or segments[order["o_custkey"]] == segment:
            counts[(order["o_orderdate"].year, order["o_orderdate"].month)] += 1
    return counts


def order_count(session) -> list[dict]:
    return [{"id": "orders", "metric": session.metric("orders", "order_count")}]


@pytest.mark.parametrize("relative,unit,count,first,last", [
    ("trailing", "month", 12, (2024, 1, 1), (2024, 12, 31)),
    ("previous", "quarter", 1, (2024, 7, 1), (2024, 9, 30)),
    ("to_date", "year", 1, (2024, 1, 1), (2024, 12, 31)),
    ("previous", "year", 2, (2022, 1, 1), (2023, 12, 31)),
    ("trailing", "day", 45, (2024, 11, 17), (2024, 12, 31)),
])
def test_relative_periods_count_back_from_the_latest_date_in_the_data(supply, supply_rows, relative, unit, count,
                                                                      first, last):
    import datetime as dt

    data, _, _ = supply_rows
    latest = max(o["o_orderdate"] for o in data["sup_orders"])
    assert latest == dt.date(2024, 12, 31), "the generator's last order day anchors the expected spans"
    start, end = dt.date(*first), dt.date(*last)
    expected = sum(1 for o in data["sup_orders"] if start <= o["o_orderdate"] <= end)
    draft = {"mode": "aggregate", "measures": order_count(supply),
             "filter": {"field": supply.field("orders", "order_date"), "op": relative, "unit": unit}}
    if relative != "to_date":
        draft["filter"]["count"] = count
    analysis = supply.analyze(draft)
    assert by_output(analysis)[0]["orders"] == expected > 0
    [words] = analysis.interpretation.filters
    assert words.endswith("), counted from the latest data (31 Dec 2024)") and f"{start.day} {start:%b %Y}" in words
    assert f"{end.day} {end:%b %Y}" in words


def test_a_relative_period_without_a_reference_date_is_refused(supply, monkeypatch):
    monkeypatch.setattr(supply.gateway, "_reference", lambda field: None)
    error = refused(supply, {"mode": "aggregate", "measures": order_count(supply), "filter": {"all": [
        {"field": supply.field("orders", "order_date"), "op": "previous", "unit": "quarter"}]}})
    assert (status_of(error).code, error.reason, error.metadata["pointer"]) == (
        grpc.StatusCode.FAILED_PRECONDITION, "NO_REFERENCE_DATE", "/filter/all/0")


def test_period_over_period_reads_the_earlier_period_even_outside_the_filter(supply, supply_rows):
    """Orders by month in 2024 with the previous month and the same month of 2023 beside them."""
    data, _, _ = supply_rows
    counts = monthly_orders(data)
    analysis = supply.analyze({
        "mode": "aggregate", "measures": order_count(supply),
        "dimensions": [{"id": "month", "field": supply.field("orders", "order_date"), "grain": "month"}],
        "filter": {"field": supply.field("orders", "order_date"), "op": "between",
                   "values": ["2024-01-01", "2024-12-31"]},
        "calculations": [{"id": "before", "kind": "prior", "of": "orders", "against": "previous_period"},
                         {"id": "change", "kind": "change", "of": "orders", "against": "previous_period"},
                         {"id": "yoy", "kind": "growth", "of": "orders", "against": "same_period_last_year"},
                         {"id": "so_far", "kind": "cumulative", "of": "orders"}],
        "order_by": [{"output": "month"}]})
    rows = by_output(analysis)
    assert len(rows) == 12
    running = 0
    for row in rows:
        year, month = int(row["month"][:4]), int(row["month"][5:7])
        previous = (year, month - 1) if month > 1 else (year - 1, 12)
        running += counts[(year, month)]
        assert row["orders"] == counts[(year, month)]
        assert row["before"] == counts[previous] > 0, "January 2024 compares with December 2023"
        assert row["change"] == counts[(year, month)] - counts[previous]
        assert close(row["yoy"], Decimal(counts[(year, month)]) / counts[(year - 1, month)] - 1, Decimal("1e-9"))
        assert row["so_far"] == running
    columns = {c.id: c for c in analysis.result.columns}
    assert columns["before"].label == "Number of orders in the previous period"
    assert columns["yoy"].label == "Growth in Number of orders from the same period last year"
    assert columns["yoy"].format == {"style": "percent", "decimals": 1}
    assert columns["so_far"].label == "Running total of Number of orders from the earliest Order date (month) matched"


def test_period_over_period_within_another_breakdown(supply, supply_rows):
    """Year over year by quarter and market segment: each segment compares with itself."""
    data, _, _ = supply_rows
    quarters: dict[tuple[str, int, int], int] = defaultdict(int)
    for segment in {c["c_mktsegment"] for c in data["sup_customer"]}:
        for (year, month), n in monthly_orders(data, segment).items():
            quarters[(segment, year, (month - 1) // 3 + 1)] += n
    analysis = supply.analyze({
        "mode": "aggregate", "measures": order_count(supply),
        "dimensions": [{"id": "quarter", "field": supply.field("orders", "order_date"), "grain": "quarter"},
                       {"id": "segment", "field": supply.field("customers", "segment")}],
        "filter": {"field": supply.field("orders", "order_date"), "op": "previous", "unit": "year"},
        "calculations": [{"id": "last_year", "kind": "prior", "of": "orders", "against": "same_period_last_year"},
                         {"id": "last_quarter", "kind": "prior", "of": "orders", "against": "previous_period",
                          "time": "quarter"}]})
    rows = by_output(analysis)
    assert {int(r["quarter"][:4]) for r in rows} == {2023}, "the previous year of 31 Dec 2024 is 2023"
    assert len(rows) == 4 * 5
    for row in rows:
        quarter = (int(row["quarter"][5:7]) - 1) // 3 + 1
        assert row["orders"] == quarters[(row["segment"], 2023, quarter)]
        assert row["last_year"] == quarters[(row["segment"], 2022, quarter)]
        earlier = (2023, quarter - 1) if quarter > 1 else (2022, 4)
        assert row["last_quarter"] == quarters[(row["segment"], *earlier)]


@pytest.mark.parametrize("name,extra,reason,path", [
    ("no time breakdown", {"calculations": [{"id": "p", "kind": "prior", "of": "orders",
                                             "against": "previous_period"}]}, "CALCULATION_NEEDS_TIME",
     "/calculations/0"),
    ("prior without against", {"calculations": [{"id": "p", "kind": "prior", "of": "orders"}],
                               "dimensions": [{"id": "m", "field": "order_date", "grain": "month"}]},
     "DRAFT_SCHEMA", "/calculations/0/against"),
    ("against on a share", {"calculations": [{"id": "p", "kind": "share_of_total", "of": "orders",
                                              "against": "previous_period"}]}, "DRAFT_SCHEMA",
     "/calculations/0/against"),
    ("time names no time breakdown", {"calculations": [{"id": "p", "kind": "cumulative", "of": "orders",
                                                        "time": "segment"}],
                                      "dimensions": [{"id": "segment", "field": "segment"}]},
     "CALCULATION_NEEDS_TIME", "/calculations/0/time"),
    ("a running total of a ratio", {"measures": [{"id": "orders", "metric": "urgent_share"}],
                                    "calculations": [{"id": "p", "kind": "cumulative", "of": "orders"}],
                                    "dimensions": [{"id": "m", "field": "order_date", "grain": "month"}]},
     "CALCULATION_NOT_ADDITIVE", "/calculations/0/of"),
    ("to date counts nothing", {"filter": {"field": "order_date", "op": "to_date", "unit": "year", "count": 2}},
     "DRAFT_SCHEMA", "/filter/count"),
    ("a period of text", {"filter": {"field": "segment", "op": "trailing", "unit": "year"}}, "OPERATOR_TYPE",
     "/filter/op"),
    ("a period of 121 months", {"filter": {"field": "order_date", "op": "trailing", "unit": "month", "count": 121}},
     "DRAFT_SCHEMA", "/filter/count"),
])
def test_time_intelligence_refuses_what_it_cannot_mean(supply, name, extra, reason, path):
    ids = {"order_date": supply.field("orders", "order_date"), "segment": supply.field("customers", "segment"),
           "urgent_share": supply.metric("orders", "urgent_share")}

    def resolved(value):
        if isinstance(value, dict):
            return {k: resolved(v) if k not in ("field", "metric") else ids.get(v, v) for k, v in value.items()}
        return [resolved(v) for v in value] if isinstance(value, list) else value

    draft = {"mode": "aggregate", "measures": order_count(supply), **resolved(extra)}
    error = refused(supply, draft)
    assert (error.reason, error.metadata["pointer"]) == (reason, path), error


# --- 6. composite keys and filter-only fields ------------------------------------------------


def test_a_composite_relationship_joins_on_every_key_field(supply, supply_rows):
    """Lines reach their part offer by (part, supplier): supply cost and profit, by ship mode."""
    data, _, _ = supply_rows
    cost = {(o["ps_partkey"], o["ps_suppkey"]): Decimal(o["ps_supplycost"]) for o in data["sup_partsupp"]}
    expected: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for line in data["sup_lineitem"]:
        line_cost = line["l_quantity"] * cost[(line["l_partkey"], line["l_suppkey"])]
        revenue_ = Decimal(line["l_extendedprice"]) * (1 - Decimal(line["l_discount"]))
        expected[line["l_shipmode"]]["cost"] += line_cost
        expected[line["l_shipmode"]]["profit"] += revenue_ - line_cost
    analysis = supply.analyze({
        "mode": "aggregate", "measures": metrics(supply, "line_items", "supply_cost", "profit"),
        "dimensions": [{"id": "mode", "field": supply.field("line_items", "ship_mode")}]})
    rows = by_output(analysis)
    assert {r["mode"] for r in rows} == set(expected)
    for row in rows:
        assert close(row["supply_cost"], expected[row["mode"]]["cost"], Decimal("0.01"))
        assert close(row["profit"], expected[row["mode"]]["profit"], Decimal("0.01"))


def test_a_filter_only_field_filters_and_does_nothing_else(supply, supply_rows):
    data, _, _ = supply_rows
    scarce = {(o["ps_partkey"], o["ps_suppkey"]) for o in data["sup_partsupp"] if o["ps_availqty"] < 2_000}
    expected = sum(1 for line in data["sup_lineitem"] if (line["l_partkey"], line["l_suppkey"]) in scarce)
    available = supply.field("part_suppliers", "available_quantity")
    lines = [{"id": "lines", "metric": supply.metric("line_items", "line_count")}]
    analysis = supply.analyze({"mode": "aggregate", "measures": lines,
                               "filter": {"field": available, "op": "lt", "value": 2_000}})
    assert by_output(analysis)[0]["lines"] == expected > 0
    assert analysis.interpretation.filters == ["Available quantity below 2,000"]
    for name, draft, path in [
            ("grouped", {"mode": "aggregate", "measures": lines, "dimensions": [{"id": "q", "field": available}]},
             "/dimensions/0/field"),
            ("summed", {"mode": "aggregate", "measures": [{"id": "q", "aggregation": "sum", "field": available}]},
             "/measures/0/field"),
            ("listed", {"mode": "records", "entity": supply.entity("part_suppliers"),
                        "fields": [{"id": "q", "field": available}], "order_by": [{"output": "q"}]},
             "/fields/0/field")]:
        error = refused(supply, draft)
        assert (error.reason, error.metadata["pointer"]) == ("FIELD_NOT_EXPOSED", path), name
        assert "may only be filtered on" in str(error)
    for kind in ("value-domain", "field-profile", "time-bounds"):
        with pytest.raises(Refusal) as probe:
            supply.gateway.probe(supply.session_id, "t-probe", kind, available, supply.capability)
        assert probe.value.reason == "PROBE_NOT_ALLOWED", kind


def test_records_of_a_composite_key_entity_are_in_a_stable_order(supply, supply_statements):
    """Ties in the asked order are broken by every field of the key, in the key's order."""
    draft = {"mode": "records", "entity": supply.entity("line_items"),
             "fields": [{"id": "mode", "field": supply.field("line_items", "ship_mode")}],
             "order_by": [{"output": "mode"}], "limit": 50}
    first, second = supply.analyze(draft), supply.analyze(draft)
    assert first.descriptor.row_count == 50 and first.descriptor.content_hash == second.descriptor.content_hash
    main = next(text for text in supply_statements if "l_shipmode" in text and "LIMIT" in text.upper())
    order = main[main.upper().index("ORDER BY"):]
    assert order.index("l_orderkey") < order.index("l_linenumber"), order


def test_the_same_row_by_two_roles_is_compared_by_its_key(supply, supply_rows):
    """"Lines whose supplier is in the customer's nation": keys compared, never shown."""
    data, _, orders = supply_rows
    customer_nation = {c["c_custkey"]: c["c_nationkey"] for c in data["sup_customer"]}
    supplier_nation = {s["s_suppkey"]: s["s_nationkey"] for s in data["sup_supplier"]}
    local = sum(1 for line in data["sup_lineitem"]
                if customer_nation[orders[line["l_orderkey"]]["o_custkey"]] == supplier_nation[line["l_suppkey"]])
    same = {"same": supply.entity("nations"), "via": [[supply.relationship("customer_nation")],
                                                      [supply.relationship("supplier_nation")]]}
    analysis = supply.analyze({"mode": "aggregate", "filter": same,
                               "measures": [{"id": "lines", "metric": supply.metric("line_items", "line_count")}]})
    assert by_output(analysis)[0]["lines"] == local > 0
    assert analysis.interpretation.filters == [
        "the same Nation by 'Nation of the customer' and by 'Nation of the supplier'"]
    error = refused(supply, {"mode": "aggregate", "measures": [revenue(supply)],
                             "filter": {**same, "via": [same["via"][0], same["via"][0]]}})
    assert (error.reason, error.metadata["pointer"]) == ("DRAFT_SCHEMA", "/filter/via")  # the schema says unique
    both = [supply.relationship("customer_nation"), supply.relationship("supplier_nation")]
    error = refused(supply, {"mode": "aggregate", "measures": [revenue(supply)],
                             "filter": {**same, "via": [both, both[::-1]]}})
    assert (error.reason, error.metadata["pointer"]) == ("SAME_ROLE", "/filter/via")


def test_inner_joins_where_the_filter_needs_a_match_and_no_order_for_one_row(supply, supply_statements):
    """A condition on the customer's nation joins it inner (outer where any/not could keep a missing one);
    a single-row answer has no ORDER BY and no subquery around it."""
    nation = {"field": supply.field("nations", "name"), "via": [supply.relationship("customer_nation")]}

    def main_statement() -> str:  # the one carrying the answer (a time span asked apart would be another)
        return next(text.upper() for text in supply_statements if "SUM(" in text.upper())

    supply.analyze({"mode": "aggregate", "measures": [revenue(supply)],
                    "filter": {**nation, "op": "eq", "value": "Japan"}})
    main = main_statement()
    assert " LEFT OUTER JOIN " not in main and main.count(" JOIN ") == 3 and "ORDER BY" not in main
    assert main.count("SELECT") == 1, "one SELECT: no subquery wraps a single-grain answer"
    supply_statements.clear()
    supply.analyze({"mode": "aggregate", "measures": [revenue(supply)],
                    "filter": {"any": [{**nation, "op": "eq", "value": "Japan"}, {**nation, "op": "is_null"}]}})
    assert main_statement().count(" LEFT OUTER JOIN ") == 3


def test_many_analyses_at_once_each_get_their_own_connection(session):
    """More threads than connections (an answer whose time span is asked apart asks it beside it): every answer
    arrives, and the same. SQLAlchemy's per-thread SQLite pool closed other threads' connections once
    more threads than its size had used it, which crashed the service under load."""
    from concurrent.futures import ThreadPoolExecutor

    draft = {"mode": "aggregate", "measures": [{"id": "orders", "metric": session.metric("orders", "order_count")}],
             "dimensions": [{"id": "channel", "field": session.field("orders", "channel")}]}
    with ThreadPoolExecutor(16) as pool:
        hashes = list(pool.map(lambda _: session.analyze(draft).descriptor.content_hash, range(64)))
    assert len(set(hashes)) == 1


def test_has_finds_the_rows_it_looks_for_whatever_the_order_of_its_fields(supply, supply_rows):
    """Parts with at least one line shipped by air to a Retail customer: the line is what is looked for,
    its order's customer hangs off it (two steps, each its own alias), in either order of writing."""
    data, _, orders = supply_rows
    segment = {c["c_custkey"]: c["c_mktsegment"] for c in data["sup_customer"]}
    expected = {line["l_partkey"] for line in data["sup_lineitem"]
                if line["l_shipmode"] == "AIR" and segment[orders[line["l_orderkey"]]["o_custkey"]] == "Retail"}
    by_air = {"field": supply.field("line_items", "ship_mode"), "op": "eq", "value": "AIR"}
    retail = {"field": supply.field("customers", "segment"), "op": "eq", "value": "Retail"}
    parts = [{"id": "parts", "metric": supply.metric("parts", "part_count")}]
    for items in ([by_air, retail], [retail, by_air]):
        analysis = supply.analyze({"mode": "aggregate", "measures": parts, "filter": {"has": {"all": items}}})
        assert by_output(analysis)[0]["parts"] == len(expected) > 0
        assert analysis.interpretation.filters[0].startswith("has at least one Line item where ")


def test_has_names_the_role_of_the_rows_it_looks_for(supply, supply_rows):
    """Nations with at least one urgent order: through their customers (the only way orders are reached)."""
    data, _, _ = supply_rows
    nation_of = {c["c_custkey"]: c["c_nationkey"] for c in data["sup_customer"]}
    urgent = {nation_of[o["o_custkey"]] for o in data["sup_orders"] if o["o_orderpriority"] == "1-URGENT"}
    nations = [{"id": "n", "aggregation": "count_distinct", "field": supply.field("nations", "name")}]
    is_urgent = {"field": supply.field("orders", "priority"), "op": "eq", "value": "1-URGENT"}
    analysis = supply.analyze({"mode": "aggregate", "measures": nations, "filter": {
        "has": is_urgent, "via": [supply.relationship("customer_nation")]}})
    assert by_output(analysis)[0]["n"] == len(urgent)
    assert analysis.interpretation.filters == [
        "has at least one Order (Nation of the customer) where Order priority is “1-URGENT”"]
    error = refused(supply, {"mode": "aggregate", "measures": nations, "filter": {
        "has": is_urgent, "via": [supply.relationship("item_part")]}})
    assert (error.reason, error.metadata["pointer"]) == ("ROLE_NOT_ON_PATH", "/filter/has/via")


def test_an_hour_of_a_date_is_refused(supply):
    error = refused(supply, {"mode": "aggregate", "measures": order_count(supply), "dimensions": [
        {"id": "h", "field": supply.field("orders", "order_date"), "grain": "hour"}]})
    assert (error.reason, error.metadata["pointer"]) == ("GRAIN_NOT_TEMPORAL", "/dimensions/0/grain")


def test_the_reference_moment_keeps_its_fractions_of_a_second():
    import datetime as dt

    from services.resources.gateway import _moment

    late = dt.datetime(2024, 12, 31, 23, 59, 59, 700_000)
    assert _moment(late, "timestamp") == late
    assert _moment("2024-12-31 23:59:59.700000", "timestamp") == late
    assert _moment(late.replace(tzinfo=dt.timezone(dt.timedelta(hours=1))), "timestamp") == \
        late - dt.timedelta(hours=1)
    assert _moment("2024-12-31", "date") == dt.date(2024, 12, 31) and _moment(None, "date") is None


def test_grammar_conditions_and_periods_agree_with_hand_written_sql(supply, supply_raw):
    """The same figures as above, this time from SQL written here over the physical tables (on each backend)."""
    def one(sql: str):
        return raw_rows(supply_raw, sql)[0][0]

    expected = {
        "promo_revenue": one(f"""SELECT SUM({LINE_REVENUE}) FROM sup_lineitem l JOIN sup_part p
                                 ON p.p_partkey = l.l_partkey WHERE p.p_type LIKE 'PROMO%'"""),
        "late_lines": one("SELECT COUNT(*) FROM sup_lineitem WHERE l_receiptdate > l_commitdate"),
        "rail_or_road_lines": one("SELECT COUNT(*) FROM sup_lineitem WHERE l_shipmode IN ('RAIL', 'ROAD')"),
        "supply_cost": one("""SELECT SUM(l.l_quantity * ps.ps_supplycost) FROM sup_lineitem l JOIN sup_partsupp ps
                              ON ps.ps_partkey = l.l_partkey AND ps.ps_suppkey = l.l_suppkey"""),
    }
    row = by_output(supply.analyze({"mode": "aggregate", "measures": metrics(supply, "line_items", *expected)}))[0]
    for name, value in expected.items():
        assert close(row[name], value, Decimal("0.01")), (name, row[name], value)
    urgent_customers = one("""SELECT COUNT(*) FROM sup_customer c WHERE EXISTS (SELECT 1 FROM sup_orders o
                              WHERE o.o_custkey = c.c_custkey AND o.o_orderpriority = '1-URGENT')""")
    analysis = supply.analyze({"mode": "aggregate", "measures": [{"id": "n", "metric": supply.metric(
        "customers", "customer_count")}], "filter": {"has": {"field": supply.field("orders", "priority"),
                                                             "op": "eq", "value": "1-URGENT"}}})
    assert by_output(analysis)[0]["n"] == urgent_customers
    # The previous quarter of the latest order day, 31 Dec 2024, is Q3 2024.
    q3 = one("SELECT COUNT(*) FROM sup_orders WHERE o_orderdate >= '2024-07-01' AND o_orderdate < '2024-10-01'")
    analysis = supply.analyze({"mode": "aggregate", "measures": order_count(supply), "filter": {
        "field": supply.field("orders", "order_date"), "op": "previous", "unit": "quarter"}})
    assert by_output(analysis)[0]["orders"] == q3 > 0


# --- ratios of measures, and a text breakdown kept after the calculations (the planner's shares) ----------


def test_the_share_of_orders_that_are_cancelled_by_region(session, raw_engine):
    """Each region's cancelled orders as a share of its orders: shares of all statuses, then only 'cancelled'."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for region, status in raw_rows(raw_engine, """SELECT r.name, o.status FROM orders o
            JOIN customers c ON c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id"""):
        counts[(region, status)] += 1
    analysis = session.analyze({
        "mode": "aggregate", "measures": [{"id": "orders", "metric": session.metric("orders", "order_count")}],
        "dimensions": [{"id": "region", "field": session.field("regions", "name")},
                       {"id": "status", "field": session.field("orders", "status")}],
        "calculations": [{"id": "share", "kind": "share_of_total", "of": "orders", "within": ["region"]}],
        "having": {"output": "status", "op": "eq", "value": "cancelled"}})
    rows = by_output(analysis)
    regions = {region for region, status in counts if status == "cancelled"}  # a region with none has no row
    assert {r["region"] for r in rows} == regions and {r["status"] for r in rows} == {"cancelled"}
    for row in rows:
        total = sum(n for (region, _), n in counts.items() if region == row["region"])
        assert row["orders"] == counts[(row["region"], "cancelled")]
        assert close(row["share"], Decimal(counts[(row["region"], "cancelled")]) / total, Decimal("0.000001"))
    assert "only where Order status is \u201ccancelled\u201d" in analysis.interpretation.filters


def test_a_ratio_of_two_measures_row_by_row(session, raw_engine):
    """Orders per customer by segment: the segment's orders over its customers (a customer with none counts)."""
    orders = dict(raw_rows(raw_engine, """SELECT c.segment, count(*) FROM orders o
            JOIN customers c ON c.customer_id = o.customer_id GROUP BY c.segment"""))
    customers = dict(raw_rows(raw_engine, "SELECT segment, count(*) FROM customers GROUP BY segment"))
    analysis = session.analyze({
        "mode": "aggregate",
        "measures": [{"id": "orders", "metric": session.metric("orders", "order_count")},
                     {"id": "customers", "metric": session.metric("customers", "customer_count")}],
        "dimensions": [{"id": "segment", "field": session.field("customers", "segment")}],
        "calculations": [{"id": "per", "kind": "ratio", "of": "orders", "to": "customers"}]})
    rows = by_output(analysis)
    assert {r["segment"] for r in rows} == set(customers)
    for row in rows:
        assert close(row["per"], Decimal(orders[row["segment"]]) / customers[row["segment"]], Decimal("0.000001"))
    column = next(c for c in analysis.descriptor.columns if c.column_id == "per")
    assert column.label == "Number of orders \u00f7 Number of customers"


@pytest.mark.parametrize(("change", "reason", "path"), [
    ({"calculations": [{"id": "per", "kind": "ratio", "of": "orders"}]}, "DRAFT_SCHEMA", "/calculations/0/to"),
    ({"calculations": [{"id": "per", "kind": "share_of_total", "of": "orders", "to": "orders"}]},
     "DRAFT_SCHEMA", "/calculations/0/to"),
    ({"calculations": [{"id": "per", "kind": "ratio", "of": "orders", "to": "status"}]}, "UNKNOWN_OUTPUT",
     "/calculations/0/to"),
    ({"calculations": [{"id": "per", "kind": "ratio", "of": "orders", "to": "orders", "within": ["status"]}]},
     "DRAFT_SCHEMA", "/calculations/0/within"),
    ({"having": {"output": "status", "op": "gt", "value": 3}}, "UNKNOWN_OUTPUT", "/having/output"),
    ({"having": {"output": "orders", "op": "eq", "value": "cancelled"}}, "UNKNOWN_OUTPUT", "/having/output"),
    ({"having": {"output": "status", "op": "eq", "value": "can\u0000celled"}}, "DRAFT_SCHEMA", "/having/value"),
])
def test_ratio_and_text_having_refusals(session, change, reason, path):
    draft = {"mode": "aggregate", "measures": [{"id": "orders", "metric": session.metric("orders", "order_count")}],
             "dimensions": [{"id": "status", "field": session.field("orders", "status")}], **change}
    error = refused(session, draft)
    assert (status_of(error).code, error.reason, error.metadata.get("pointer")) == (
        grpc.StatusCode.INVALID_ARGUMENT, reason, path)
