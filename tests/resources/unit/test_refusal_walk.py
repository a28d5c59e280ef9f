"""Every refusal the Resource Gateway can give a model, triggered for real: each carries a pointer to the part of
the call at fault ("" for the call as a whole), what is allowed there or the bound where there is one, and the
next step (shared/rpc/next_steps.py). The model reads it under its tool's arguments
(tests/contract/test_refusal_details.py walks the registry itself; this walks the gateway's code).
"""

from __future__ import annotations

import json
import re
import time

import grpc
import pytest

from shared.rpc.errors import status_of
from shared.rpc.next_steps import NEXT_STEPS
from shared.rpc.refusals import Refusal
from shared.tools.tool_results import refused
from tests.contract.test_refusal_details import defined_reasons
from tests.resources.conftest import Session, make_gateway

GATEWAY_FILES = re.compile(r"^services/resources/")
# Refusals the gateway defines that this walk does not trigger, and where they are triggered instead.
ELSEWHERE = {
    "QUERY_TIMEOUT": "tests/resources/unit/test_refusals.py (a statement stopped at the policy timeout)",
    "ORACLE_PATTERN": "tests/resources/unit/test_information_budget.py (a threshold search, at the default "
                      "bounds)",
}


def _catch(call) -> Refusal:
    with pytest.raises(Refusal) as caught:
        call()
    return caught.value


def _draft(s: Session, **parts) -> str:
    return json.dumps({"mode": "aggregate", "measures": [{"id": "n", "metric": s.metric("orders", "order_count")}],
                       **parts})


def _deep(s: Session) -> dict:
    condition = {"field": s.field("orders", "channel"), "op": "eq", "value": "web"}
    for _ in range(9):
        condition = {"not": condition}
    return condition


def retail_cases(g, s: Session) -> dict[str, tuple]:
    """reason → (the call that is refused, the pointer expected: into the draft or the probe, "" the draft as a
    whole, None the call as a whole)."""
    analyze = lambda text, capability=None: lambda: g.analyze(  # noqa: E731
        s.session_id, s.turn_id, text, capability or s.capability)
    _, seen = g.inspect("net revenue by region", s.empty)
    narrow = g.open_capability(seen, s.session_id)
    field, metric = s.field, s.metric
    return {
        "UNKNOWN_ID": (analyze(json.dumps({"mode": "aggregate", "measures": [{"id": "n",
                                                                              "metric": "met_aaaaaaaaaaaa"}]})),
                       "/measures/0/metric"),
        "ID_NOT_IN_SCOPE": (analyze(json.dumps({"mode": "aggregate", "measures": [
            {"id": "n", "metric": metric("support_tickets", "ticket_count")}]}), narrow), "/measures/0/metric"),
        "WRONG_ID_KIND": (lambda: g.describe([field("orders", "channel")], s.capability), "/entity_ids/0"),
        "PROBE_TEXT_UNEXPECTED": (lambda: g.probe(s.session_id, s.turn_id, "field-profile",
                                                  field("orders", "channel"), s.capability, "web"), "/text"),
        "PROBE_TARGET_MISSING": (lambda: g.probe(s.session_id, s.turn_id, "value-domain", "", s.capability),
                                 "/field_id"),
        "PROBE_TEXT_INVALID": (lambda: g.probe(s.session_id, s.turn_id, "value-match", "", s.capability, " "),
                               "/text"),
        "PROBE_NOT_ALLOWED": (lambda: g.probe(s.session_id, s.turn_id, "value-domain",
                                              field("order_items", "quantity"), s.capability), "/field_id"),
        "DRAFT_NOT_JSON": (analyze("{"), ""),
        "DRAFT_TOO_LARGE": (analyze(_draft(s, x="y" * 70_000)), ""),
        "DRAFT_SCHEMA": (analyze(json.dumps({"mode": "aggregate"})), "/measures"),
        "FIELD_NOT_EXPOSED": (analyze(_draft(s, dimensions=[{"id": "q", "field": field("order_items", "quantity")}])),
                              "/dimensions/0/field"),
        "DUPLICATE_OUTPUT": (analyze(_draft(s, dimensions=[{"id": "n", "field": field("orders", "channel")}])),
                             "/dimensions/0/id"),
        "UNKNOWN_OUTPUT": (analyze(_draft(s, order_by=[{"output": "nope"}])), "/order_by/0/output"),
        "AGGREGATION_NOT_ALLOWED": (analyze(json.dumps({"mode": "aggregate", "measures": [
            {"id": "q", "aggregation": "max", "field": field("order_items", "quantity")}]})),
            "/measures/0/aggregation"),
        "AGGREGATION_TYPE": (analyze(json.dumps({"mode": "aggregate", "measures": [
            {"id": "q", "aggregation": "sum", "field": field("orders", "channel")}]})), "/measures/0/aggregation"),
        "GRAIN_NOT_TEMPORAL": (analyze(_draft(s, dimensions=[{"id": "c", "field": field("orders", "channel"),
                                                              "grain": "month"}])), "/dimensions/0/grain"),
        "GRAIN_REQUIRED": (analyze(_draft(s, dimensions=[{"id": "t", "field": field("orders", "ordered_at")}])),
                           "/dimensions/0"),
        "CALCULATION_NEEDS_TIME": (analyze(_draft(s, calculations=[{"id": "p", "kind": "prior", "of": "n",
                                                                    "against": "previous_period"}])),
                                   "/calculations/0"),
        "CALCULATION_NOT_ADDITIVE": (analyze(json.dumps({
            "mode": "aggregate", "measures": [{"id": "n", "aggregation": "avg",
                                                "field": field("order_items", "quantity")}],
            "dimensions": [{"id": "m", "field": field("orders", "ordered_at"), "grain": "month"}],
            "calculations": [{"id": "c", "kind": "cumulative", "of": "n"}]})), "/calculations/0/of"),
        "PREDICATE_TOO_DEEP": (analyze(_draft(s, filter=_deep(s))), "/filter" + "/not" * 8),
        "VALUE_TYPE": (analyze(_draft(s, filter={"field": field("orders", "ordered_at"), "op": "gte", "value": 2024})),
                       "/filter/value"),
        "OPERATOR_TYPE": (analyze(_draft(s, filter={"field": field("orders", "channel"), "op": "gt", "value": "w"})),
                          "/filter/op"),
        "FILTER_THROUGH_FAN_OUT": (analyze(json.dumps({
            "mode": "aggregate", "measures": [{"id": "c", "metric": metric("customers", "customer_count")}],
            "filter": {"not": {"field": field("orders", "channel"), "op": "eq", "value": "web"}}})), "/filter/not"),
        "FAN_OUT": (analyze(_draft(s, dimensions=[{"id": "c", "field": field("products", "category")}])),
                    "/dimensions/0"),
        "ROLE_NOT_ON_PATH": (analyze(_draft(s, dimensions=[{"id": "c", "field": field("orders", "channel"),
                                                            "via": [s.relationship("return_item")]}])),
                             "/dimensions/0/via"),
        "LIMIT_OVER_CAP": (analyze(_draft(s, order_by=[{"output": "n"}], limit=1_001)), "/limit"),
        "CAPABILITY_MISSING": (lambda: g.open_capability("", s.session_id), None),
        "CAPABILITY_INVALID": (lambda: g.open_capability("not.a-token", s.session_id), None),
        "CAPABILITY_EXPIRED": (lambda: g.open_capability(g.capabilities.mint(
            g.catalog.fingerprint, s.session_id, (), int(time.time()) - 1), s.session_id), None),
        "CATALOG_CHANGED": (lambda: g.open_capability(g.capabilities.mint("another", s.session_id, ()),
                                                      s.session_id), None),
    }


def supply_cases(g, s: Session, monkeypatch) -> dict[str, tuple]:
    revenue = {"id": "revenue", "metric": s.metric("line_items", "revenue")}
    analyze = lambda **parts: lambda: g.analyze(  # noqa: E731
        s.session_id, s.turn_id, json.dumps({"mode": "aggregate", "measures": [revenue], **parts}), s.capability)
    both = [s.relationship("customer_nation"), s.relationship("supplier_nation")]
    monkeypatch.setattr(g, "_reference", lambda field: None)  # a date field with no values to count back from
    return {
        "AMBIGUOUS_PATH": (analyze(dimensions=[{"id": "n", "field": s.field("nations", "name")}]), "/dimensions/0"),
        "SAME_ROLE": (analyze(filter={"same": s.entity("nations"), "via": [both, both[::-1]]}), "/filter/via"),
        "HAS_NOT_MANY": (analyze(filter={"has": {"field": s.field("orders", "priority"), "op": "eq",
                                                 "value": "1-URGENT"}}), "/filter/has"),
        "HAS_SHAPE": (analyze(filter={"has": {"all": [
            {"field": s.field("orders", "priority"), "op": "eq", "value": "1-URGENT"},
            {"field": s.field("parts", "brand"), "op": "eq", "value": "x"}]}}), "/filter/has"),
        "NO_REFERENCE_DATE": (analyze(filter={"field": s.field("orders", "order_date"), "op": "previous",
                                              "unit": "quarter"}), "/filter"),
    }


# Two entities with no relationship between them: the only way to ask for what cannot be joined at all.
UNRELATED = """
version: 1
dataset: {label: Unrelated}
entities:
  regions:
    table: regions
    label: Region
    primary_key: region_id
    fields:
      region_id: {type: integer, label: Region id, exposure: never-to-model}
      name: {type: string, label: Region name, exposure: bounded-values}
    metrics:
      region_count: {label: Number of regions, expression: count(), type: integer}
  products:
    table: products
    label: Product
    primary_key: product_id
    fields:
      product_id: {type: integer, label: Product id, exposure: never-to-model}
      category: {type: string, label: Product category, exposure: bounded-values}
"""


def _no_join_path(warehouse: str, cert_dir, tmp_path) -> Refusal:
    tmp_path.mkdir()
    model = tmp_path / "unrelated.yaml"
    model.write_text(UNRELATED)
    apart = make_gateway(warehouse, cert_dir, tmp_path, semantic_model=model)
    try:
        s = Session(apart)
        return _catch(lambda: s.analyze({"mode": "aggregate", "measures": [
            {"id": "n", "metric": s.metric("regions", "region_count")}],
            "dimensions": [{"id": "c", "field": s.field("products", "category")}]}))
    finally:
        apart.close()


def _check(reason: str, error: Refusal, pointer: str | None) -> None:
    assert error.reason == reason, (reason, error)
    assert error.metadata.get("pointer") == pointer, (reason, error.metadata)
    model = refused("c1", "run_analysis", error.reason, error.message, error.metadata, "/draft").refusal()
    assert model["pointer"] == ("" if pointer is None else "/draft" + pointer), model  # under the arguments
    assert model["next_step"] and "{" not in model["next_step"], model


def test_every_gateway_refusal_a_model_can_get_points_at_its_cause_and_says_what_next(
        gateway, warehouse, cert_dir, tmp_path, supply_gateway, monkeypatch):
    s = Session(gateway)
    cases = retail_cases(gateway, s)
    for reason, (call, pointer) in cases.items():
        _check(reason, _catch(call), pointer)
    for _ in range(2):  # the probe budget, then one more
        gateway.probe(s.session_id, "budget", "field-profile", s.field("orders", "channel"), s.capability)
    spent = _catch(lambda: gateway.probe(s.session_id, "budget", "field-profile", s.field("orders", "channel"),
                                         s.capability))
    _check("PROBE_BUDGET_EXHAUSTED", spent, None)
    assert spent.metadata["bound"] == "2"
    _check("NO_JOIN_PATH", _no_join_path(warehouse, cert_dir, tmp_path / "apart"), "/dimensions/0")
    small = make_gateway(warehouse, cert_dir, tmp_path, analyses_per_turn=1)
    try:
        draft = _draft(Session(small))
        small.analyze(s.session_id, "one", draft, Session(small).capability)
        _check("ANALYSIS_BUDGET_SPENT", _catch(lambda: small.analyze(s.session_id, "one", draft,
                                                                     Session(small).capability)), None)
    finally:
        small.close()
    supply = Session(supply_gateway)
    supplied = supply_cases(supply_gateway, supply, monkeypatch)
    for reason, (call, pointer) in supplied.items():
        _check(reason, _catch(call), pointer)
    # What this walk covers is every refusal the gateway's code defines for a model.
    defined = {r for r, where in defined_reasons().items() if GATEWAY_FILES.match(where) and r in NEXT_STEPS}
    walked = set(cases) | set(supplied) | {"PROBE_BUDGET_EXHAUSTED", "ANALYSIS_BUDGET_SPENT", "NO_JOIN_PATH"}
    assert defined - walked == set(ELSEWHERE), defined - walked - set(ELSEWHERE)


def test_what_is_allowed_comes_with_the_refusal_where_there_is_a_choice(gateway):
    s = Session(gateway)
    cases = retail_cases(gateway, s)
    operators = _catch(cases["OPERATOR_TYPE"][0]).metadata
    assert set(json.loads(operators["allowed"])) >= {"eq", "in", "contains"} and "gt" not in operators["allowed"]
    grains = _catch(cases["GRAIN_REQUIRED"][0]).metadata
    assert json.loads(grains["allowed"]) == ["hour", "day", "week", "month", "quarter", "year"]
    unknown = _catch(cases["UNKNOWN_OUTPUT"][0]).metadata
    assert json.loads(unknown["allowed"]) == ["n"]
    assert _catch(cases["LIMIT_OVER_CAP"][0]).metadata["bound"] == "1000"
    scope = _catch(cases["ID_NOT_IN_SCOPE"][0]).metadata
    assert scope["entity"] == s.entity("support_tickets") and s.entity("support_tickets") in scope["next_step"]
    draft = _catch(cases["DRAFT_SCHEMA"][0])
    assert status_of(draft).code == grpc.StatusCode.INVALID_ARGUMENT and draft.metadata["keyword"] == "required"
