"""The information budget (§5, docs/information-budget.md): what analyses reveal is bounded, not only what they
return. A session's analyses are budgeted (beside the turn's), threshold search is refused ORACLE_PATTERN, and
every refusal is audited in the store and the log, with fingerprints and counts only.

The attack of issue 38: a model that never sees a value binary-searches a hidden total through the row count (0 or
1) of drafts that differ only in a `having` bound. Here it is run for real against the gateway, at its default
bounds, and must be stopped, audited, before it narrows the total below 1% of its magnitude.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from services.resources.config import ResourcesSettings
from services.resources.ports import AnalysisLimits, Search
from services.resources.server import ResourceGatewayService
from services.resources.shapes import shape_of
from services.resources.store import ResourceStore, open_store
from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal
from tessera.resources.v1 import resources_pb2
from tests.fixtures.postgres import BACKENDS, database_url
from tests.resources.conftest import UNBOUNDED_SESSIONS, Session, in_process, make_gateway
from tests.resources.unit.test_refusal_walk import _check as check_refusal_for_a_model
from tests.resources.unit.test_resources_store import DAY, Clock

# The deployment's own bounds for sessions, not the tests' unbounded ones.
DEFAULTS = {name: ResourcesSettings.model_fields[name].default for name in UNBOUNDED_SESSIONS}
CALLS = 60  # the attack's calls (issue 38: 57 reconstructed a total to the cent)


@pytest.fixture(scope="module")
def defaults(warehouse, cert_dir, tmp_path_factory):
    """A gateway with the default information budget."""
    built = make_gateway(warehouse, cert_dir, tmp_path_factory.mktemp("budget-store"), **DEFAULTS)
    yield built
    built.close()


def _turn() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def _refused(call) -> Refusal:
    with pytest.raises(Refusal) as caught:
        call()
    return caught.value


def hidden_total(s: Session, output: str = "revenue", **parts) -> dict:
    return {"mode": "aggregate", "measures": [{"id": output, "metric": s.metric("order_items", "net_revenue")}],
            "output": "scalar", **parts}


def true_total(gateway) -> float:
    """What the model never sees: the total, read from the pinned result (a test may look; a model cannot)."""
    s = Session(gateway)
    return float(gateway.analyze(s.session_id, _turn(), json.dumps(hidden_total(s)), s.capability).result.rows[0][0])


class ThresholdSearch:
    """A model-like client: it learns whether the hidden total is above a bound from the row count of a draft that
    keeps the total only when it passes (1 row or 0), each call in a turn of its own so no turn budget stops it,
    and disguises each call as it can: a new output name, the bound tested from the other side in turn."""

    def __init__(self, gateway, low: float = 0.0, high: float | None = None) -> None:
        self.gateway = gateway
        self.session = Session(gateway)
        self.low, self.high = low, high
        self.answered: list[float] = []
        self.refusals: list[Refusal] = []
        self.tried: list[float] = []

    def draft(self, call: int, bound: float) -> tuple[dict, bool]:
        """The call's draft, and whether its one row (rather than none) says the total is above the bound."""
        output, op = f"total_{call}", ("gt" if call % 2 == 0 else "lte")
        return hidden_total(self.session, output, having={"output": output, "op": op, "value": bound}), op == "gt"

    def _above(self, bound: float) -> bool | None:
        call = len(self.tried)
        self.tried.append(bound)
        draft, keeps_above = self.draft(call, bound)
        try:
            analysis = self.gateway.analyze(self.session.session_id, _turn(), json.dumps(draft),
                                            self.session.capability)
        except Refusal as refused:
            self.refusals.append(refused)
            return None
        self.answered.append(bound)
        return (analysis.descriptor.row_count == 1) == keeps_above

    def run(self, calls: int = CALLS) -> None:
        for _ in range(calls):
            # Double until the total is below the bound, then halve the interval.
            bound = (2 * self.low or 1.0) if self.high is None else (self.low + self.high) / 2
            above = self._above(bound)
            if above is None:
                continue  # refused: try again with the same interval (a model would)
            if above:
                self.low = bound
            else:
                self.high = bound


def _assert_audited(gateway, search: ThresholdSearch, caplog) -> None:
    records = gateway.store.refusals(search.session.session_id)
    assert len(records) == len(search.refusals) > 0  # every refusal, once
    first = records[0]
    assert (first.reason, first.budget, first.count, first.bound) == ("ORACLE_PATTERN", "target", 5, 5)
    assert len(first.shape) == 64 and {r.shape for r in records} == {first.shape}  # one target, however disguised
    logged = [r for r in caplog.records if getattr(r, "fields", {}).get("event") == "analysis-refused"
              and r.fields["session_id"] == search.session.session_id]
    assert len(logged) == len(records)
    assert {(r.fields["reason"], r.fields["shape"], r.fields["count"]) for r in logged} == {
        ("ORACLE_PATTERN", first.shape, 5)}
    assert all(r.fields["turn_id"] for r in logged)
    text = " ".join(r.getMessage() + json.dumps(r.fields) for r in logged)
    assert not any(repr(bound) in text or str(int(bound)) in text for bound in search.tried if bound >= 1000)


def test_a_binary_search_on_a_hidden_total_is_stopped_and_audited_before_it_narrows_it_to_one_percent(
        defaults, caplog):
    caplog.set_level(logging.WARNING, logger="tessera.resources.audit")
    total = true_total(defaults)
    assert total > 1_000
    search = ThresholdSearch(defaults)
    search.run()
    assert len(search.answered) == DEFAULTS["oracle_variants_per_shape"] == 5
    assert len(search.refusals) == CALLS - 5
    refusal = search.refusals[0]
    assert (status_of(refusal).code, refusal.reason) == (grpc.StatusCode.PERMISSION_DENIED, "ORACLE_PATTERN")
    assert refusal.metadata["budget"] == "target" and refusal.metadata["bound"] == "5"
    assert "present_ui" in refusal.metadata["next_step"]
    check_refusal_for_a_model("ORACLE_PATTERN", refusal, None)  # about the call as a whole, with its next step
    assert defaults.budget.session_remaining(search.session.session_id) == 60 - 5  # a refused draft costs nothing
    # What it learnt is true, and far from the total: five doublings from 1 say only "above 16".
    assert (search.low, search.high) == (16.0, None) and total > search.low
    _assert_audited(defaults, search, caplog)


def test_a_search_that_knows_the_total_within_a_factor_of_two_still_stops_above_one_percent(defaults, caplog):
    """The strongest prior a model could plausibly have (its order of magnitude and then some): five answers
    narrow [total/2, 2 total] to 1.5 total / 32, about 4.7% of the total."""
    caplog.set_level(logging.WARNING, logger="tessera.resources.audit")
    total = true_total(defaults)
    search = ThresholdSearch(defaults, low=total / 2, high=2 * total)
    search.run()
    assert len(search.answered) == 5 and search.refusals[0].reason == "ORACLE_PATTERN"
    assert search.low <= total <= search.high
    width = search.high - search.low
    assert width == pytest.approx(1.5 * total / 32) and width > 0.01 * total
    _assert_audited(defaults, search, caplog)


def test_a_search_disguised_as_many_shapes_is_bounded_per_session(defaults):
    """Each condition that selects other rows makes another shape with its own five variants; all shapes together
    get oracle_searches_per_session (20) answers, then ORACLE_PATTERN (budget: searches)."""
    s = Session(defaults)
    channel = s.field("orders", "channel")
    answered = 0
    for index, value in enumerate(["web", "store", "phone", "marketplace", "web-x"]):
        for step in range(5):
            draft = hidden_total(s, having={"output": "revenue", "op": "gt", "value": 1_000 * (step + 1)},
                                 filter={"field": channel, "op": "neq", "value": value})
            try:
                defaults.analyze(s.session_id, _turn(), json.dumps(draft), s.capability)
                answered += 1
            except Refusal as refused:
                assert (index, step) == (4, 0), (index, step, refused)
                assert (refused.reason, refused.metadata["budget"], refused.metadata["bound"]) == (
                    "ORACLE_PATTERN", "searches", "20")
                records = defaults.store.refusals(s.session_id)
                assert [(r.budget, r.count, r.bound) for r in records] == [("searches", 20, 20)]
                return
    pytest.fail(f"{answered} searched variants were answered")


HUGE = 1e18  # a bound no total reaches: a condition that changes nothing


def _web(s: Session, call: int) -> dict:
    """The web channel's rows, written another way on every call: eq, in of one, in with the value twice, the
    condition twice, not-neq, or an alternative that never holds; always beside a never-true neq filter, in either
    order (each call its own literal, so each is a new whole-draft shape)."""
    channel = s.field("orders", "channel")
    eq, nonce = {"field": channel, "op": "eq", "value": "web"}, f"zz{call}"
    forms = [eq, {"field": channel, "op": "in", "values": ["web"]},
             {"field": channel, "op": "in", "values": ["web", "web"]}, {"all": [eq, eq]},
             {"not": {"field": channel, "op": "neq", "value": "web"}},
             {"any": [eq, {"field": channel, "op": "eq", "value": nonce}]}]
    items = [forms[call % len(forms)], {"field": channel, "op": "neq", "value": nonce}]
    return {"all": items if call % 2 else items[::-1]}


def _above(output: str, call: int, bound: float) -> tuple[dict, bool]:
    """`having` that keeps the total when it is above `bound` (True) or when it is not (False), written another way
    in turn: gt, lte, between, the condition twice, gte plus lte a bound never reached, reordered, not gt."""
    def at(op: str, value: float) -> dict:
        return {"output": output, "op": op, "value": value}
    forms = [(at("gt", bound), True), (at("lte", bound), False),
             ({"output": output, "op": "between", "values": [bound, HUGE]}, True),
             ({"all": [at("gt", bound), at("gt", bound)]}, True),
             ({"all": [at("lte", HUGE), at("gte", bound)]}, True), ({"not": at("gt", bound)}, False)]
    return forms[(call // 2) % len(forms)]


class DisguisedSearch(ThresholdSearch):
    """The same search on the web channel's hidden total, every call disguised as a new draft shape: a new output
    name, the channel condition and the bound each written another way, a never-true filter with a new value,
    items reordered. None of it changes the answer."""

    def draft(self, call: int, bound: float) -> tuple[dict, bool]:
        output = f"web_{call}"
        having, keeps_above = _above(output, call, bound)
        return hidden_total(self.session, output, having=having, filter=_web(self.session, call)), keeps_above


def test_a_search_disguised_on_every_call_is_still_stopped_per_searched_target_above_one_percent(defaults, caplog):
    """Issue 38's review: disguises that change no answer made each call a new whole-draft shape, so only the
    session's 20 searches were left, and 20 answers pin a value far below 1% of it. Variants are counted per
    searched target (what the bound is compared with, and how), whatever the rest of the draft says."""
    caplog.set_level(logging.WARNING, logger="tessera.resources.audit")
    s = Session(defaults)
    web = float(defaults.analyze(s.session_id, _turn(), json.dumps(hidden_total(s, filter={
        "field": s.field("orders", "channel"), "op": "eq", "value": "web"})), s.capability).result.rows[0][0])
    assert web > 1_000
    search = DisguisedSearch(defaults, low=web / 2, high=2 * web)
    search.run()
    width = search.high - search.low
    print(f"\ndisguised search: {len(search.answered)} answered, {len(search.refusals)} refused, "
          f"width {width / web:.3e} of the value")
    assert search.low <= web <= search.high  # every disguise answered truly
    assert len(search.answered) == 5 and len(search.refusals) == CALLS - 5
    assert width == pytest.approx(1.5 * web / 32) and width > 0.01 * web
    refusal = search.refusals[0]
    assert (status_of(refusal).code, refusal.reason) == (grpc.StatusCode.PERMISSION_DENIED, "ORACLE_PATTERN")
    assert (refusal.metadata["budget"], refusal.metadata["bound"]) == ("target", "5")
    check_refusal_for_a_model("ORACLE_PATTERN", refusal, None)
    _assert_audited(defaults, search, caplog)


def test_asking_the_same_bound_again_costs_no_variant(defaults):
    s = Session(defaults)
    for bound in (100, 200, 300, 400, 500, 100, 500, 300):
        defaults.analyze(s.session_id, _turn(), json.dumps(hidden_total(
            s, having={"output": "revenue", "op": "gte", "value": bound})), s.capability)
    assert defaults.store.refusals(s.session_id) == []


def test_ordinary_exploration_is_not_refused(defaults):
    """Other measures, breakdowns and periods; a handful of values of a field the model saw; top-N of several
    sizes; one threshold question per channel, and a few bounds of one: none is a search, none is refused."""
    s = Session(defaults)
    field, metric = s.field, s.metric
    revenue = {"id": "revenue", "metric": metric("order_items", "net_revenue")}
    orders = {"id": "orders", "metric": metric("orders", "order_count")}
    region = {"id": "region", "field": field("regions", "name")}
    channel = field("orders", "channel")
    drafts = [
        {"mode": "aggregate", "measures": [revenue], "dimensions": [region]},
        {"mode": "aggregate", "measures": [orders], "dimensions": [{"id": "c", "field": channel}]},
        {"mode": "aggregate", "measures": [revenue, orders],
         "dimensions": [{"id": "month", "field": field("orders", "ordered_at"), "grain": "month"}], "output": "series"},
        {"mode": "aggregate", "measures": [{"id": "customers", "metric": metric("customers", "customer_count")}],
         "dimensions": [{"id": "segment", "field": field("customers", "segment")}]},
    ]
    for year in (2021, 2022, 2023, 2024, 2025):  # a period change
        drafts.append({"mode": "aggregate", "measures": [revenue], "output": "scalar", "filter": {
            "field": field("orders", "ordered_at"), "op": "between", "values": [f"{year}-01-01", f"{year}-12-31"]}})
    for months in (3, 6, 12):
        drafts.append({"mode": "aggregate", "measures": [revenue], "dimensions": [region], "filter": {
            "field": field("orders", "ordered_at"), "op": "trailing", "unit": "month", "count": months}})
    for value in ("web", "store", "phone", "marketplace"):
        drafts.append({"mode": "aggregate", "measures": [revenue], "dimensions": [region],
                       "filter": {"field": channel, "op": "eq", "value": value}})
        drafts.append({"mode": "aggregate", "measures": [revenue], "dimensions": [region],  # one threshold each
                       "filter": {"field": channel, "op": "eq", "value": value},
                       "having": {"output": "revenue", "op": "gt", "value": 10_000}})
    for limit in (3, 5, 10):
        drafts.append({"mode": "aggregate", "measures": [revenue], "dimensions": [region],
                       "order_by": [{"output": "revenue", "direction": "desc"}], "limit": limit})
    for bound in (1_000, 50_000, 100_000):  # "regions above 1k … above 100k": a few bounds of one question
        drafts.append({"mode": "aggregate", "measures": [revenue], "dimensions": [region],
                       "having": {"output": "revenue", "op": "gt", "value": bound}})
    for draft in drafts:
        defaults.analyze(s.session_id, _turn(), json.dumps(draft), s.capability)
    assert defaults.store.refusals(s.session_id) == []
    assert defaults.budget.session_remaining(s.session_id) == DEFAULTS["analyses_per_session"] - len(drafts)


def _context(gateway, session_id: str, turn_id: str):
    """InspectContext through the servicer, in process."""
    request = resources_pb2.InspectContextRequest(turn=resources_pb2.TurnRef(session_id=session_id, turn_id=turn_id))
    with ThreadPoolExecutor(1) as pool:
        return asyncio.run(ResourceGatewayService(in_process(gateway, pool)).InspectContext(request, None))


def test_a_session_has_an_analysis_budget_beside_the_turns_shared_by_replicas_and_audited(
        warehouse, cert_dir, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="tessera.resources.audit")
    small = {**DEFAULTS, "analyses_per_turn": 2, "analyses_per_session": 3}
    one, other = (make_gateway(warehouse, cert_dir, tmp_path, **small) for _ in range(2))  # one store: replicas
    try:
        s = Session(one)
        orders = s.metric("orders", "order_count")
        draft = json.dumps({"mode": "aggregate", "measures": [{"id": "n", "metric": orders}]})
        bad = json.dumps({"mode": "aggregate", "measures": [{"id": "n", "metric": "met_aaaaaaaaaaaa"}]})
        assert _refused(lambda: one.analyze(s.session_id, "turn-a", bad, s.capability)).reason == "UNKNOWN_ID"
        first = one.analyze(s.session_id, "turn-a", draft, s.capability)
        second = other.analyze(s.session_id, "turn-a", draft, s.capability)  # the other replica counts the same
        assert [(a.analyses_remaining, a.session_analyses_remaining) for a in (first, second)] == [(1, 2), (0, 1)]
        by_turn = _refused(lambda: one.analyze(s.session_id, "turn-a", draft, s.capability))
        assert (by_turn.reason, by_turn.metadata["budget"], by_turn.metadata["bound"]) == (
            "ANALYSIS_BUDGET_SPENT", "turn", "2")
        assert other.analyze(s.session_id, "turn-b", draft, s.capability).session_analyses_remaining == 0
        by_session = _refused(lambda: other.analyze(s.session_id, "turn-c", draft, s.capability))
        assert (status_of(by_session).code, by_session.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED, "ANALYSIS_BUDGET_SPENT")
        assert by_session.metadata["budget"] == "session" and by_session.metadata["bound"] == "3"
        assert "per session" in by_session.message and "session" in by_session.metadata["next_step"]
        check_refusal_for_a_model("ANALYSIS_BUDGET_SPENT", by_session, None)
        # Reported where the turn's figures are, and another session is untouched.
        context = _context(one, s.session_id, "turn-d")
        assert (context.analyses_remaining, context.analyses_per_turn) == (2, 2)
        assert (context.session_analyses_remaining, context.analyses_per_session) == (0, 3)
        fresh = Session(one)
        assert one.analyze(fresh.session_id, "turn-a", draft, fresh.capability).session_analyses_remaining == 2
        # Both refusals audited once, whichever replica refused; the log says the same.
        records = other.store.refusals(s.session_id)
        assert [(r.reason, r.budget, r.turn_id, r.count, r.bound) for r in records] == [
            ("ANALYSIS_BUDGET_SPENT", "turn", "turn-a", 2, 2), ("ANALYSIS_BUDGET_SPENT", "session", "turn-c", 3, 3)]
        assert records[0].shape == records[1].shape == shape_of(one.check_draft(draft, s.capability)).fingerprint
        logged = [r.fields for r in caplog.records if getattr(r, "fields", {}).get("session_id") == s.session_id]
        assert [(f["budget"], f["turn_id"], f["count"]) for f in logged] == [("turn", "turn-a", 2),
                                                                            ("session", "turn-c", 3)]
    finally:
        one.close()
        other.close()


# --- shapes --------------------------------------------------------------------------------------------------


def _shape(gateway, s: Session, draft: dict):
    return shape_of(gateway.check_draft(json.dumps(draft), s.capability))


def test_a_shape_is_the_draft_without_its_searched_literals_and_without_presentation(gateway):
    s = Session(gateway)
    channel = s.field("orders", "channel")
    region = {"id": "region", "field": s.field("regions", "name")}

    def threshold(bound, name="revenue", op="gt", **parts) -> dict:
        having = {"output": name, "op": op, "value": bound}
        return {"mode": "aggregate", "measures": [{"id": name, "metric": s.metric("order_items", "net_revenue")}],
                "dimensions": [region], "having": parts.pop("having", having), **parts}

    base = _shape(gateway, s, threshold(100))
    assert base.oracle_prone
    alike = [threshold(100, name="total"), threshold(100, op="lte"),
             threshold(100, having={"not": {"output": "revenue", "op": "gt", "value": 100}}),
             threshold(100, having={"all": [{"output": "revenue", "op": "gte", "value": 100}]}),
             threshold(100, order_by=[{"output": "revenue", "direction": "desc"}], limit=3, output="table"),
             {**threshold(100), "measures": [{"id": "revenue", "metric": s.metric("order_items", "net_revenue")},
                                             {"id": "orders", "metric": s.metric("orders", "order_count")}]}]
    for draft in alike:  # renamed, the other side, negated, grouped, ordered and cut, another measure beside
        assert _shape(gateway, s, draft) == base, draft
    moved = _shape(gateway, s, threshold(101))
    assert moved.fingerprint == base.fingerprint and moved.variant != base.variant
    web = _shape(gateway, s, threshold(100, filter={"field": channel, "op": "eq", "value": "web"}))
    store = _shape(gateway, s, threshold(100, filter={"field": channel, "op": "eq", "value": "store"}))
    assert len({web.fingerprint, store.fingerprint, base.fingerprint}) == 3  # which rows: part of the shape
    both = [{"field": channel, "op": "in", "values": ["web", "store"]},
            {"field": s.field("orders", "ordered_at"), "op": "gte", "value": "2024-01-01"}]
    assert _shape(gateway, s, threshold(100, filter={"all": both})) == \
        _shape(gateway, s, threshold(100, filter={"all": [both[1], {**both[0], "values": ["store", "web"]}]}))
    later = _shape(gateway, s, threshold(100, filter={"all": [both[0], {**both[1], "value": "2025-01-01"}]}))
    assert later.fingerprint == _shape(gateway, s, threshold(100, filter={"all": both})).fingerprint
    # No number tested against a measure, no hidden field: nothing to search (row counts of seen things).
    plain = {"mode": "aggregate", "measures": [{"id": "n", "metric": s.metric("orders", "order_count")}],
             "dimensions": [region], "filter": both[1]}
    assert not _shape(gateway, s, plain).oracle_prone
    text = {**plain, "dimensions": [{"id": "c", "field": channel}],
            "having": {"output": "c", "op": "eq", "value": "web"}}
    assert not _shape(gateway, s, text).oracle_prone


def test_a_searched_target_is_what_the_bound_is_compared_with_whatever_the_rest_of_the_draft_says(gateway):
    """Targets (what detection counts) do not move with disguises; the variant does (it costs the search one more);
    the shape is normalised (repeated items, `in` of one value, not-neq)."""
    s = Session(gateway)
    channel, region = s.field("orders", "channel"), s.field("regions", "name")
    revenue = s.metric("order_items", "net_revenue")

    def draft(having: dict, filter: dict | None = None, name: str = "r", **parts) -> dict:
        return {"mode": "aggregate", "measures": [{"id": name, "metric": revenue}], "having": having,
                **({"filter": filter} if filter else {}), **parts}

    def gt(bound: float, name: str = "r") -> dict:
        return {"output": name, "op": "gt", "value": bound}

    base = _shape(gateway, s, draft(gt(100)))
    assert len(base.targets) == 1
    web = {"field": channel, "op": "eq", "value": "web"}
    disguised = [draft({"all": [gt(100), gt(100)]}),
                 draft(gt(100), {"field": channel, "op": "neq", "value": "zz1"}),
                 draft({"output": "r", "op": "between", "values": [100, 1e18]}),
                 draft(gt(100, "other"), name="other"),
                 draft(gt(100), {"all": [{"field": channel, "op": "neq", "value": "zz2"}, web]}),
                 draft(gt(100), dimensions=[{"id": "region", "field": region}]),
                 draft(gt(250), {"field": s.field("orders", "ordered_at"), "op": "gte", "value": "2024-01-01"})]
    shapes = [_shape(gateway, s, d) for d in disguised]
    assert all(shape.targets == base.targets for shape in shapes)  # one hidden value searched, however written
    assert shapes[0] == shapes[3] == base  # an item twice is once; a renamed output is the same
    others = shapes[1:3] + shapes[4:]  # a new whole-draft shape each, and each costs a variant of the target
    assert len({base.fingerprint, *(shape.fingerprint for shape in others)}) == len(others) + 1
    assert len({base.variant, *(shape.variant for shape in others)}) == len(others) + 1
    # Normalised shapes: `in` of one value is eq, also with a repeat; an item twice; not-neq is eq.
    forms = [web, {"field": channel, "op": "in", "values": ["web"]}, {"field": channel, "op": "in",
             "values": ["web", "web"]}, {"all": [web, web]}, {"not": {"field": channel, "op": "neq", "value": "web"}}]
    assert len({_shape(gateway, s, draft(gt(100), f)) for f in forms}) == 1
    # Which rows is not another variant (a threshold per channel), but another asked draft.
    store = _shape(gateway, s, draft(gt(100), {**web, "value": "store"}))
    web_shape = _shape(gateway, s, draft(gt(100), web))
    assert store.variant == web_shape.variant and store.asked != web_shape.asked
    assert store.targets == base.targets
    # Another measure, or the other comparison family, is another target; the same aggregation spelled as a
    # metric or as a draft's own measure is one; a cumulative of the measure searches the measure.
    orders = {"mode": "aggregate", "measures": [{"id": "n", "metric": s.metric("orders", "order_count")}],
              "having": gt(100, "n")}
    counted = {**orders, "measures": [{"id": "n", "aggregation": "count", "entity": s.entity("orders")}]}
    assert _shape(gateway, s, orders).targets == _shape(gateway, s, counted).targets != base.targets
    assert _shape(gateway, s, draft({"output": "r", "op": "eq", "value": 100})).targets != base.targets
    month = {"id": "month", "field": s.field("orders", "ordered_at"), "grain": "month"}
    cumulative = draft(gt(100, "c"), dimensions=[month],
                       calculations=[{"id": "c", "kind": "cumulative", "of": "r", "time": "month"}])
    assert _shape(gateway, s, cumulative).targets == base.targets


def test_a_condition_on_a_filter_only_field_is_a_search_whatever_its_operator(supply_gateway):
    s = Session(supply_gateway)
    stock = s.field("part_suppliers", "available_quantity")
    count = [{"id": "n", "metric": next(m.id for m in supply_gateway.catalog.entities["part_suppliers"]
                                        .metrics.values())}]
    shapes = [_shape(supply_gateway, s, {"mode": "aggregate", "measures": count,
                                         "filter": {"field": stock, "op": "eq", "value": v}}) for v in (10, 20)]
    assert all(shape.oracle_prone for shape in shapes)
    assert shapes[0].fingerprint == shapes[1].fingerprint and shapes[0].variant != shapes[1].variant


# --- the store, as replicas share it ---------------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def store_url(request, tmp_path):
    return database_url(request, tmp_path, "resources")


LIMITS = AnalysisLimits(per_turn=100, per_session=5, variants_per_target=3, searches_per_session=100)


def _search(variant: str, targets: tuple[str, ...] = ("target",)) -> Search:
    return Search(targets, variant, f"asked-{variant}")


def test_racing_replicas_never_admit_more_than_a_sessions_budget_or_a_shapes_variants(store_url):
    replicas = [open_store(store_url, DAY), open_store(store_url, DAY)]
    racers = 16
    try:
        for session, variant_of, expected in (("s-budget", lambda i: None, 5),
                                              ("s-target", lambda i: _search(str(i)), 3)):
            barrier = threading.Barrier(racers)

            def admit(index: int, session=session, variant_of=variant_of, barrier=barrier) -> bool:
                barrier.wait()
                admission = replicas[index % 2].admit(session, f"t{index}", "shape", variant_of(index), LIMITS)
                return admission.refused is None

            with ThreadPoolExecutor(racers) as pool:
                assert sum(pool.map(admit, range(racers))) == expected
            assert len(replicas[0].refusals(session)) == racers - expected
        assert replicas[1].session_used("s-budget") == 5 and replicas[1].session_used("s-target") == 3
    finally:
        for store in replicas:
            store.close()


def test_a_sessions_budget_and_shapes_are_renewed_after_their_period_and_a_release_gives_a_unit_back(store_url):
    clock = Clock()
    store = open_store(store_url, DAY)
    renewing = ResourceStore(store.engine, DAY, clock, session_lifetime=3_600.0)
    try:
        for index in range(3):
            assert renewing.admit("s1", f"t{index}", "shape", _search(f"v{index}"), LIMITS).refused is None
        assert renewing.admit("s1", "t3", "shape", _search("v3"), LIMITS).refused.budget == "target"
        renewing.release("s1", "t2")
        assert renewing.session_used("s1") == 2
        clock.now += 3_601.0
        renewing.sweep()
        assert renewing.session_used("s1") == 0
        assert renewing.admit("s1", "t4", "shape", _search("v4"), LIMITS).refused is None  # a new period
        assert [r.budget for r in renewing.refusals("s1")] == ["target"]  # the audit outlives the period
    finally:
        store.close()
