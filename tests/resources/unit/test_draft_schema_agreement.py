"""The compiled fast check and jsonschema agree on every draft: the fast path never accepts more; and the
schema check refuses a malformed draft of any shape with its JSON path, never with another exception."""

from __future__ import annotations

import grpc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from services.resources.draft import _FAST_CHECKS, _VALIDATORS, schema_check
from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal

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


# Any JSON value at all as the mode, and anywhere else: issue #13's list-or-object mode raised TypeError.
any_mode = values | st.sampled_from(["aggregate", "records"])


@settings(max_examples=200, deadline=None)
@given(draft=values, mode=any_mode)
@example(draft={}, mode=["aggregate"])
@example(draft={"measures": [{"id": "v", "metric": METRIC}]}, mode={"aggregate": True})
def test_the_schema_check_refuses_anything_with_a_path_and_never_raises_otherwise(draft, mode):
    if isinstance(draft, dict):
        draft = {**draft, "mode": mode}
    try:
        assert schema_check(draft) in ("aggregate", "records")
    except Refusal as refused:
        assert (status_of(refused).code, refused.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "DRAFT_SCHEMA")
        pointer = refused.metadata["pointer"]
        assert (pointer == "" or pointer.startswith("/")) and refused.message.startswith("$")
        assert refused.metadata["keyword"] and refused.metadata["next_step"]


@pytest.mark.parametrize(("mode", "got"), [(["aggregate"], "array"), ({"aggregate": 1}, "object"), (1, "number"),
                                           (None, "null"), (False, "boolean")])
def test_a_mode_of_the_wrong_type_names_its_path_and_types(mode, got):
    with pytest.raises(Refusal) as refused:
        schema_check({"mode": mode, "measures": [{"id": "v", "metric": METRIC}]})
    assert refused.value.message == f"$.mode must be a string, got {got} (at /mode)"
    assert {k: refused.value.metadata[k] for k in ("pointer", "keyword", "allowed")} == {
        "pointer": "/mode", "keyword": "type", "allowed": '["string"]'}
