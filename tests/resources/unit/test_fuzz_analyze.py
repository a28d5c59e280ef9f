"""Hostile analysis drafts through the Resource Gateway's Analyze path, in process, on every backend.

Whatever the model sends, Analyze either answers or refuses with a TesseraError whose status is
not INTERNAL or UNKNOWN (the servicer turns any other exception into INTERNAL), and within a
deadline. Drafts are written with id placeholders (`@f:orders.channel`) so strategies need no
gateway; each example resolves them against the catalog it runs on.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cli.seed import READER_ROLE, seed
from services.resources.gateway import Analysis
from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal
from tests.fixtures.fuzz import fuzz_settings
from tests.fixtures.postgres import postgres_database
from tests.resources.conftest import Session, make_gateway

CALL_DEADLINE = 20.0  # seconds; the gateway's own statement timeout is 5 s here, so more is a hang
BAD_CODES = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
REASON = re.compile(r"^[A-Z][A-Z0-9_]*$")


def seeded_gateway(kind: str, request, cert_dir, tmp_path_factory):
    """A gateway on a small demo warehouse of `kind` (sqlite, duckdb or postgresql), with a 5 s statement timeout."""
    if kind == "postgresql":
        owner = postgres_database(request, "tessera_fuzz")
        seed(owner, scale=2_000, progress=False)
        import sqlalchemy as sa

        url = sa.make_url(owner).set(username=READER_ROLE).render_as_string(hide_password=False)
    else:
        suffix = "sqlite" if kind == "sqlite" else "duckdb"
        url = f"{kind}:///{tmp_path_factory.mktemp(f'fuzz-{kind}') / f'warehouse.{suffix}'}"
        seed(url, scale=2_000, progress=False)
    return make_gateway(url, cert_dir, tmp_path_factory.mktemp("fuzz-store"), statement_timeout_seconds=5)


@pytest.fixture(scope="module", params=["sqlite", "duckdb", "postgresql"])
def gateway(request, cert_dir, tmp_path_factory):
    built = seeded_gateway(request.param, request, cert_dir, tmp_path_factory)
    yield built
    built.close()


@pytest.fixture(scope="module")
def session(gateway) -> Session:
    return Session(gateway)


@pytest.fixture(scope="module")
def worker():
    # Calls run here so a hang fails the example after CALL_DEADLINE instead of stalling the suite.
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fuzz-analyze")
    yield pool
    pool.shutdown(wait=False, cancel_futures=True)


# --- drafts ---------------------------------------------------------------------------------------------------

IDS = ["@f:orders.channel", "@f:orders.status", "@f:orders.ordered_at", "@f:regions.name", "@f:products.category",
       "@f:products.name", "@f:customers.signup_date", "@f:customers.email", "@f:order_items.quantity",
       "@f:products.list_price", "@m:order_items.net_revenue", "@m:orders.order_count",
       "@m:products.average_list_price", "@m:customers.customer_count", "@e:orders", "@e:order_items"]
TEMPLATES = [
    {"mode": "aggregate", "measures": [{"id": "revenue", "metric": "@m:order_items.net_revenue"}],
     "dimensions": [{"id": "region", "field": "@f:regions.name"}],
     "order_by": [{"output": "revenue", "direction": "desc"}], "output": "ranking"},
    {"mode": "aggregate", "measures": [{"id": "orders", "metric": "@m:orders.order_count"}],
     "dimensions": [{"id": "month", "field": "@f:orders.ordered_at", "grain": "month"}],
     "filter": {"all": [{"field": "@f:orders.channel", "op": "in", "values": ["web", "store"]},
                        {"not": {"field": "@f:orders.status", "op": "is_null"}},
                        {"field": "@f:orders.ordered_at", "op": "between",
                         "values": ["2020-01-01", "2030-12-31T23:59:59Z"]}]},
     "output": "series"},
    {"mode": "aggregate", "measures": [{"id": "units", "aggregation": "sum", "field": "@f:order_items.quantity"},
                                       {"id": "n", "aggregation": "count", "entity": "@e:order_items"}],
     "dimensions": [{"id": "cat", "field": "@f:products.category"}],
     "filter": {"any": [{"field": "@f:products.name", "op": "contains", "value": "a"},
                        {"field": "@f:products.category", "op": "neq", "value": "x"}]},
     "order_by": [{"output": "cat"}], "output": "table"},
    {"mode": "aggregate", "measures": [{"id": "price", "metric": "@m:products.average_list_price"}],
     "filter": {"field": "@f:products.category", "op": "in", "values": ["a", "b"]}, "output": "scalar"},
    {"mode": "aggregate", "measures": [{"id": "customers", "metric": "@m:customers.customer_count"}],
     "dimensions": [{"id": "segment", "field": "@f:customers.segment"}],
     "filter": {"field": "@f:customers.signup_date", "op": "gte", "value": "2001-02-03"}},
    {"mode": "records", "entity": "@e:orders",
     "fields": [{"id": "channel", "field": "@f:orders.channel"}, {"id": "at", "field": "@f:orders.ordered_at"}],
     "filter": {"field": "@f:orders.status", "op": "neq", "value": "cancelled"},
     "order_by": [{"output": "at", "direction": "desc"}]},
]
VOCABULARY = ["mode", "measures", "dimensions", "filter", "order_by", "output", "id", "metric", "field",
              "aggregation", "entity", "grain", "all", "any", "not", "op", "value", "values", "fields", "direction"]
WORDS = ["aggregate", "records", "eq", "in", "between", "is_null", "contains", "gt", "month", "hour", "desc",
         "series", "ranking", "scalar", "count", "sum", "min", "max"]
HUGE = [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**30, -(10**40), 1e308, -1e308, 5e-324, -0.0,
        9.223372036854776e18]
TIMES = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0001-01-01", "9999-12-31", "2024-02-30",
         "2024-01-01T25:00", "2024-06-01T12:00:00.123456+14:00", "-2024-01-01", "2024-W01", ""]

unknown_ids = st.from_regex(r"\A(fld|met|ent|rel)_[a-z2-7]{12}\Z")
leaves = (st.none() | st.booleans() | st.integers() | st.sampled_from(HUGE)
          | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
          | st.sampled_from(IDS + WORDS + TIMES) | unknown_ids)
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(VOCABULARY) | st.text(max_size=6), inner, max_size=5), max_leaves=20)


def _paths(value, prefix=()) -> list[tuple]:
    """Every place inside `value` (keys and indexes from the root), the root itself excluded."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found.append((*prefix, key))
        found += _paths(child, (*prefix, key))
    return found


def _retype(value):
    """The same content as another JSON type: what a careless or hostile model sends."""
    if isinstance(value, str):
        return [[value], {"value": value}, len(value), None]
    if isinstance(value, list):
        return [{str(i): v for i, v in enumerate(value)}, value[0] if value else "", json.dumps(value)]
    if isinstance(value, dict):
        return [[value], list(value.values()), json.dumps(value)[:200], True]
    return [str(value), [value], {"value": value}]


@st.composite
def mutated_drafts(draw) -> dict:
    draft = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(draft)
        if not paths:
            break
        *parent_path, key = draw(st.sampled_from(paths))
        parent = draft
        for step in parent_path:
            parent = parent[step]
        how = draw(st.sampled_from(["retype", "replace", "swap", "swap", "huge", "time", "delete", "add"]))
        if how == "swap":  # a value of the same kind: keeps the shape, so the catalog and planner checks run
            current = parent[key]
            parent[key] = draw(st.sampled_from(IDS) | unknown_ids if str(current).startswith("@") else
                               st.sampled_from(WORDS + TIMES) if isinstance(current, str) else json_values)
        elif how == "retype":
            parent[key] = draw(st.sampled_from(_retype(parent[key])))
        elif how == "replace":
            parent[key] = draw(json_values)
        elif how == "huge":
            parent[key] = draw(st.sampled_from(HUGE))
        elif how == "time":
            parent[key] = draw(st.sampled_from(TIMES))
        elif how == "delete":
            del parent[key]
        elif isinstance(parent[key], dict):
            parent[key][draw(st.sampled_from(VOCABULARY) | st.text(max_size=6))] = draw(json_values)
    return draft


BOUNDED_FIELDS = ["@f:regions.name", "@f:regions.country", "@f:customers.segment", "@f:customers.signup_date",
                  "@f:products.name", "@f:products.category", "@f:orders.ordered_at", "@f:orders.channel",
                  "@f:orders.status", "@f:returns.returned_at", "@f:returns.reason", "@f:support_tickets.priority"]
AGGREGATE_ONLY = ["@f:customers.customer_id", "@f:products.list_price", "@f:orders.order_id",
                  "@f:order_items.quantity", "@f:order_items.discount", "@f:returns.quantity"]
METRICS = ["@m:order_items.net_revenue", "@m:order_items.units_sold", "@m:order_items.return_rate",
           "@m:orders.order_count", "@m:orders.cancelled_orders", "@m:orders.average_order_value",
           "@m:customers.customer_count", "@m:products.average_list_price", "@m:returns.return_count",
           "@m:support_tickets.ticket_count", "@m:regions.region_count"]
ENTITIES = ["@e:orders", "@e:order_items", "@e:customers", "@e:products", "@e:returns", "@e:regions"]
# Output ids are the model's words: reserved words of any backend among them (DuckDB's `at` was one).
OUTPUT_IDS = ["at", "select", "order", "group", "qualify", "pivot", "user", "value", "n", "x1", "a_b"]
scalars = (st.text(max_size=12) | st.sampled_from(TIMES + ["%", "_", "'", "\\", "web", "%_'\"", "\u00e9\u4e2d"])
           | st.integers() | st.sampled_from(HUGE) | st.floats(allow_nan=False, allow_infinity=False) | st.booleans())
comparisons = st.one_of(
    st.fixed_dictionaries({"field": st.sampled_from(BOUNDED_FIELDS),
                           "op": st.sampled_from(["eq", "neq", "gt", "gte", "lt", "lte", "contains"]),
                           "value": scalars}),
    st.fixed_dictionaries({"field": st.sampled_from(BOUNDED_FIELDS), "op": st.just("in"),
                           "values": st.lists(scalars, min_size=1, max_size=4)}),
    st.fixed_dictionaries({"field": st.sampled_from(BOUNDED_FIELDS), "op": st.just("between"),
                           "values": st.lists(scalars, min_size=2, max_size=2)}),
    st.fixed_dictionaries({"field": st.sampled_from(BOUNDED_FIELDS), "op": st.just("is_null")}))
predicates = st.recursive(comparisons, lambda inner: st.one_of(
    st.fixed_dictionaries({"all": st.lists(inner, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"any": st.lists(inner, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"not": inner})), max_leaves=6)
measures = st.one_of(
    st.fixed_dictionaries({"metric": st.sampled_from(METRICS)}),
    st.fixed_dictionaries({"aggregation": st.sampled_from(["count", "count_distinct", "sum", "avg", "min", "max"]),
                           "field": st.sampled_from(AGGREGATE_ONLY + BOUNDED_FIELDS)}),
    st.fixed_dictionaries({"aggregation": st.just("count"), "entity": st.sampled_from(ENTITIES)}))
dimensions = st.fixed_dictionaries({"field": st.sampled_from(BOUNDED_FIELDS)}, optional={
    "grain": st.sampled_from(["hour", "day", "week", "month", "quarter", "year"])})


@st.composite
def well_formed_drafts(draw) -> dict:
    """Drafts the schema accepts, with hostile choices inside: the catalog, planner and backends see them."""
    ids = draw(st.lists(st.sampled_from(OUTPUT_IDS), min_size=1, max_size=4, unique=True))
    order = [{"output": draw(st.sampled_from(ids)), "direction": draw(st.sampled_from(["asc", "desc"]))}]
    if draw(st.booleans()):
        draft = {"mode": "records", "entity": draw(st.sampled_from(ENTITIES)), "order_by": order,
                 "fields": [{"id": i, "field": draw(st.sampled_from(BOUNDED_FIELDS))} for i in ids]}
    else:
        split = draw(st.integers(1, len(ids)))
        draft = {"mode": "aggregate", "measures": [{"id": i, **draw(measures)} for i in ids[:split]]}
        if ids[split:]:
            draft["dimensions"] = [{"id": i, **draw(dimensions)} for i in ids[split:]]
        draft |= draw(st.fixed_dictionaries({}, optional={
            "order_by": st.just(order), "output": st.sampled_from(["scalar", "table", "series", "ranking"])}))
    if draw(st.booleans()):
        draft["filter"] = draw(predicates)
    return draft


def _nested(depth: int, kind: str) -> object:
    node: object = {"field": "@f:orders.channel", "op": "eq", "value": "web"}
    for level in range(depth):
        node = {"not": node} if kind == "not" else {kind: [node]} if kind in ("all", "any") else [node]
        if kind == "mixed":
            node = {("all", "any", "not")[level % 3]: node if level % 3 == 2 else [node]}
    return node


# --- one call ------------------------------------------------------------------------------------------------


def _resolve(value, session: Session):
    if isinstance(value, dict):
        return {k: _resolve(v, session) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, session) for v in value]
    if isinstance(value, str) and value[:3] in ("@f:", "@m:", "@e:"):
        entity, _, name = value[3:].partition(".")
        kind = {"@f:": session.field, "@m:": session.metric}.get(value[:3])
        return kind(entity, name) if kind else session.entity(entity)
    return value


def analyze(session: Session, worker, text: str, capability=None) -> Analysis | Refusal:
    """Run Analyze; fail unless it answers, or refuses precisely, within the deadline."""
    call = worker.submit(session.gateway.analyze, session.session_id, f"t-{uuid.uuid4().hex[:8]}", text,
                         capability or session.capability)
    try:
        outcome = call.result(timeout=CALL_DEADLINE)
    except Refusal as refused:
        assert status_of(refused).code not in BAD_CODES, (refused, text[:500])
        assert REASON.match(refused.reason), (refused, text[:500])
        if status_of(refused).code == grpc.StatusCode.INVALID_ARGUMENT and refused.reason.startswith("DRAFT_"):
            pointer = refused.metadata["pointer"]
            assert pointer == "" or pointer.startswith("/"), (refused, text[:500])
            assert refused.metadata["next_step"], refused
        return refused
    except TimeoutError:
        pytest.fail(f"Analyze did not answer within {CALL_DEADLINE} s: {text[:500]}")
    except Exception as crash:  # anything else is INTERNAL at the servicer
        pytest.fail(f"Analyze raised {type(crash).__name__}: {crash} for {text[:500]}")
    assert outcome.descriptor.row_count == len(outcome.result.rows)
    return outcome


# --- tests ---------------------------------------------------------------------------------------------------


def test_the_templates_are_valid_drafts(session, worker):
    """The mutation fuzz starts from drafts that run: otherwise it would only ever test refusals."""
    for template in TEMPLATES:
        assert isinstance(analyze(session, worker, json.dumps(_resolve(template, session))), Analysis), template


@fuzz_settings(40)
@given(draft=json_values)
# Issue #13: a list or an object as mode raised TypeError in the draft parser (gRPC INTERNAL).
@example(draft={"mode": ["aggregate"], "measures": [{"id": "n", "metric": "@m:orders.order_count"}]})
@example(draft={"mode": {"aggregate": 1}})
@example(draft={"mode": "records", "entity": ["@e:orders"]})
# A time zone that pushes a date out of the calendar when converted to UTC raised OverflowError.
@example(draft={"mode": "aggregate", "measures": [{"id": "n", "metric": "@m:orders.order_count"}],
                "filter": {"field": "@f:orders.ordered_at", "op": "gte", "value": "0001-01-01T00:00:00+05:00"}})
@example(draft={"mode": "aggregate", "measures": [{"id": "n", "metric": "@m:orders.order_count"}],
                "filter": {"field": "@f:customers.signup_date", "op": "lt", "value": "9999-12-31T23:59:59-05:00"}})
def test_random_json_is_answered_or_refused_precisely(session, worker, draft):
    analyze(session, worker, json.dumps(_resolve(draft, session)))


@fuzz_settings(60)
@given(draft=mutated_drafts(), narrow=st.sampled_from([False, False, False, True]))
def test_mutated_valid_drafts_are_answered_or_refused_precisely(session, worker, draft, narrow):
    # narrow: a capability that has seen no ids, so scope checks meet every mutation too.
    analyze(session, worker, json.dumps(_resolve(draft, session)), session.empty if narrow else None)


@fuzz_settings(60)
@given(draft=well_formed_drafts())
def test_well_formed_drafts_with_hostile_choices_are_answered_or_refused_precisely(session, worker, draft):
    analyze(session, worker, json.dumps(_resolve(draft, session)))


@fuzz_settings(15)
@given(depth=st.integers(1, 80), kind=st.sampled_from(["all", "any", "not", "mixed", "list"]),
       template=st.sampled_from(range(len(TEMPLATES))))
def test_deep_nesting_is_refused_not_recursed_into(session, worker, depth, kind, template):
    draft = {**_resolve(TEMPLATES[template], session), "filter": _resolve(_nested(depth, kind), session)}
    outcome = analyze(session, worker, json.dumps(draft))
    if depth > 8 and kind != "list":
        assert isinstance(outcome, Refusal) and status_of(outcome).code == grpc.StatusCode.INVALID_ARGUMENT


@fuzz_settings(20)
@given(text=st.text(max_size=80) | st.sampled_from(TEMPLATES).map(json.dumps).flatmap(
    lambda whole: st.integers(0, len(whole)).map(lambda cut: whole[:cut])))
@example(text='{"mode": "aggregate", "measures": [{"id": "n", "metric": ' + "9" * 5000 + "}]}")
@example(text='{"mode": "aggregate", "mode": ["records"]}')
@example(text='{"mode": NaN}')
@example(text="[" * 100 + "]" * 100)
def test_text_that_is_not_a_draft_is_refused_precisely(session, worker, text):
    outcome = analyze(session, worker, text)
    assert isinstance(outcome, Refusal) and status_of(outcome).code == grpc.StatusCode.INVALID_ARGUMENT
