"""The compiled fast check and jsonschema agree on every draft: the fast path never accepts more."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.resources.draft import _FAST_CHECKS, _VALIDATORS

FIELD = "fld_abcdefghijkl"
METRIC = "met_abcdefghijkl"
leaf = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6) | st.sampled_from(
    [FIELD, METRIC, "ent_abcdefghijkl", "eq", "in", "between", "is_null", "month", "asc", "desc", "table",
     "aggregate", "records", "v"])
values = st.recursive(leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(["mode", "measures", "dimensions", "filter", "order_by", "output", "id", "metric", "field",
                     "aggregation", "entity", "grain", "all", "any", "not", "op", "value", "values", "fields",
                     "direction", "x"]), inner, max_size=5), max_leaves=25)


@settings(max_examples=600, deadline=None)
@given(draft=values, mode=st.sampled_from(["aggregate", "records"]))
def test_fast_and_reference_validators_agree(draft, mode):
    if isinstance(draft, dict):
        draft = {**draft, "mode": mode}
    fast_valid = _FAST_CHECKS[mode](draft) is None
    reference_valid = _VALIDATORS[mode].is_valid(draft)
    assert fast_valid == reference_valid, draft


def test_a_valid_draft_passes_both():
    draft = {"mode": "aggregate", "measures": [{"id": "v", "metric": METRIC}],
             "dimensions": [{"id": "g", "field": FIELD, "grain": "month"}],
             "filter": {"all": [{"field": FIELD, "op": "in", "values": ["a", "b"]}, {"not": {"field": FIELD,
                                                                                              "op": "is_null"}}]},
             "order_by": [{"output": "v", "direction": "desc"}], "output": "table"}
    assert _FAST_CHECKS["aggregate"](draft) is None and _VALIDATORS["aggregate"].is_valid(draft)
