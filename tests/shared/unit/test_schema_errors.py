"""Schema violations explained where they are, with what is allowed there (shared/data/schema_errors.py), on the
published draft schema: a value that fits none of a oneOf's shapes is explained in the shape it was meant to be."""

from __future__ import annotations

import jsonschema
import pytest

from shared.data.analysis_draft import DRAFT_SCHEMA
from shared.data.schema_errors import explain

F, M = "fld_abcdefghijkl", "met_abcdefghijkl"
MEASURE = {"id": "n", "metric": M}
VALIDATOR = jsonschema.Draft7Validator(DRAFT_SCHEMA)


def first(draft: dict):
    return explain(VALIDATOR.iter_errors(draft), DRAFT_SCHEMA, limit=1)[0]


@pytest.mark.parametrize(("draft", "pointer", "keyword", "says"), [
    # the op names the shape: `in` takes values, so value is the stray key, and the keys of `in` are listed
    ({"filter": {"field": F, "op": "in", "value": "web"}}, "/filter/value", "additionalProperties", "values"),
    # an op no shape has: every op any shape allows is listed
    ({"filter": {"field": F, "op": "equals", "value": "web"}}, "/filter/op", "enum", "'starts_with'"),
    # the kind names the shape: growth needs against
    ({"calculations": [{"id": "g", "kind": "growth", "of": "n"}]}, "/calculations/0/against", "required", ""),
    # only keys missing, and several shapes fit: the shapes are listed
    ({"measures": [{"id": "n"}]}, "/measures/0", "oneOf", "{id, metric}"),
    # of no shape's type at all
    ({"measures": ["n"]}, "/measures/0", "type", "must be an object, got string"),
    # a bound, said without echoing the value
    ({"measures": [MEASURE] * 17}, "/measures", "maxItems", "takes at most 16 items"),
    # a condition: only under output scalar
    ({"output": "scalar", "dimensions": [{"id": "d", "field": F}]}, "/dimensions", "maxItems",
     "when output is 'scalar'"),
    # a key that needs another
    ({"limit": 5}, "/order_by", "required", "with limit"),
])
def test_a_violation_is_explained_in_the_shape_it_was_meant_to_be(draft, pointer, keyword, says):
    problem = first({"mode": "aggregate", "measures": [MEASURE], **draft})
    assert (problem.pointer, problem.keyword) == (pointer, keyword), problem
    assert says in problem.message or says in str(problem.allowed), problem


def test_what_is_allowed_comes_as_data():
    unknown_op = first({"mode": "aggregate", "measures": [MEASURE], "filter": {"field": F, "op": "x", "value": 1}})
    assert {"eq", "in", "between", "is_null", "trailing", "to_date"} <= set(unknown_op.allowed)
    stray = first({"mode": "aggregate", "measures": [MEASURE], "sql": "SELECT 1"})
    assert (stray.pointer, stray.allowed[:2]) == ("/sql", ("mode", "measures"))
    bound = first({"mode": "aggregate", "measures": [MEASURE], "order_by": [{"output": "n"}], "limit": 20_001})
    assert (bound.pointer, bound.bound) == ("/limit", 20_000)


def test_a_valid_draft_has_no_problems_and_the_limit_holds():
    assert explain(VALIDATOR.iter_errors({"mode": "aggregate", "measures": [MEASURE]}), DRAFT_SCHEMA) == []
    many = {"mode": "aggregate", "measures": [MEASURE], "x": 1, "y": 2, "z": 3, "w": 4}
    assert len(explain(VALIDATOR.iter_errors(many), DRAFT_SCHEMA, limit=2)) == 2
