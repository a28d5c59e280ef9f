"""The action policy loader refuses an input schema that admits unbounded values, naming action and path.

Regression for issue #13: `record_id` had no maximum, so 2^63 passed the schema and overflowed
SQLite's 64-bit integers in the broker (HTTP 500 at web).
"""

from __future__ import annotations

import json

import grpc
import pytest
import yaml

from services.capabilities.config import CapabilitiesSettings
from services.capabilities.intents import action_input
from services.capabilities.policy import INT64_MAX, INT64_MIN, ActionPolicy, PolicyError, unbounded_property
from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal

SHIPPED = CapabilitiesSettings.model_fields["actions_file"].default
BOUNDED_INT = {"type": "integer", "minimum": 1, "maximum": 100}


def _load(tmp_path, input_schema: dict) -> ActionPolicy:
    policy = {"version": 1, "actions": {"demo.act": {
        "title": "Demo", "description": "A test action.", "effect": "reversible-write", "approval": "required",
        "executor": "data-change", "input_schema": input_schema}}}
    path = tmp_path / "actions.yaml"
    path.write_text(yaml.safe_dump(policy))
    return ActionPolicy.load(path)


def _root(**properties) -> dict:
    return {"type": "object", "additionalProperties": False, "properties": properties}


def _changes(item: dict) -> dict:
    """An array of objects, as records.propose_changes has: the refusal must reach inside both."""
    return _root(changes={"type": "array", "maxItems": 5, "items": _root(value=item)})


UNBOUNDED = [
    ("integer without maximum", _root(n={"type": "integer", "minimum": 1}), "$.n", "an integer needs minimum"),
    ("integer without minimum", _root(n={"type": "integer", "maximum": 5}), "$.n", "an integer needs minimum"),
    ("integer maximum past 64 bits", _root(n={"type": "integer", "minimum": 0, "maximum": INT64_MAX + 1}),
     "$.n", "64-bit signed range"),
    ("integer minimum past 64 bits", _root(n={"type": "integer", "minimum": INT64_MIN - 1, "maximum": 0}),
     "$.n", "64-bit signed range"),
    ("number without bounds", _root(x={"type": "number"}), "$.x", "a number needs minimum and maximum"),
    ("string without maxLength", _root(s={"type": "string", "minLength": 1}), "$.s", "a string needs maxLength"),
    ("array without maxItems", _root(a={"type": "array", "items": BOUNDED_INT}), "$.a", "an array needs maxItems"),
    ("array of unbounded items", _root(a={"type": "array", "maxItems": 3, "items": {"type": "string"}}),
     "$.a[*]", "a string needs maxLength"),
    ("array without an items schema", _root(a={"type": "array", "maxItems": 3}), "$.a[*]",
     "a schema of `true` accepts any value"),
    ("open object", {"type": "object", "properties": {"n": BOUNDED_INT}}, "$.*", "additionalProperties: false"),
    ("schema without a type", _root(v={"minLength": 1}), "$.v", "a schema without a type"),
    ("true schema", _root(v=True), "$.v", "a schema of `true` accepts any value"),
    ("nested number", _changes({"type": ["string", "number"], "maxLength": 10}), "$.changes[*].value",
     "a number needs minimum and maximum"),
    ("nested string among types", _changes({"type": ["string", "null"]}), "$.changes[*].value",
     "a string needs maxLength"),
    ("nested open object", _root(o={"type": "object", "properties": {}}), "$.o.*", "additionalProperties"),
    ("one unbounded alternative", _root(v={"anyOf": [BOUNDED_INT, {"type": "string"}]}), "$.v",
     "a string needs maxLength"),
    ("unbounded definition", {**_root(v={"$ref": "#/definitions/big"}),
                              "definitions": {"big": {"type": "integer"}}}, "$.v", "an integer needs"),
    ("tuple with open tail", _root(t={"type": "array", "maxItems": 3, "items": [BOUNDED_INT]}), "$.t[*]",
     "items after the listed ones"),
    ("closed value past 64 bits", _root(e={"enum": [1, 2**64]}), "$.e", "enum or const is outside the 64-bit"),
    ("odd property name", _root(**{"a b": {"type": "string"}}), '$["a b"]', "a string needs maxLength"),
]


@pytest.mark.parametrize(("schema", "path", "why"), [case[1:] for case in UNBOUNDED],
                         ids=[case[0] for case in UNBOUNDED])
def test_an_unbounded_input_schema_stops_the_load_naming_action_and_path(tmp_path, schema, path, why):
    with pytest.raises(PolicyError) as refused:
        _load(tmp_path, schema)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / 'actions.yaml'}: action demo.act: input {path} is unbounded: "), message
    assert why in message and "\n" not in message


BOUNDED = [
    ("closed values", _root(e={"enum": ["a", "b"]}, c={"const": 7})),
    ("exclusive bounds", _root(x={"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1})),
    ("the 64-bit range itself", _root(n={"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX})),
    ("bounds from allOf", _root(n={"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 9}]})),
    ("bounded alternatives", _root(v={"oneOf": [BOUNDED_INT, {"type": "string", "maxLength": 4}]})),
    ("a recursive tree", {**_root(tree={"$ref": "#/definitions/node"}), "definitions": {"node": _root(
        label={"type": "string", "maxLength": 9},
        kids={"type": "array", "maxItems": 4, "items": {"$ref": "#/definitions/node"}})}}),
    ("a bounded map", _root(m={"type": "object", "maxProperties": 4, "propertyNames": {"maxLength": 10},
                              "additionalProperties": BOUNDED_INT})),
    ("a closed tuple", _root(t={"type": "array", "maxItems": 2, "items": [BOUNDED_INT], "additionalItems": False})),
    ("booleans and nulls", _root(b={"type": ["boolean", "null"]})),
]


@pytest.mark.parametrize("schema", [case[1] for case in BOUNDED], ids=[case[0] for case in BOUNDED])
def test_bounded_schemas_load(tmp_path, schema):
    assert _load(tmp_path, schema).actions["demo.act"].contract.input_schema == schema


def test_an_unbounded_map_needs_both_a_size_and_name_bound():
    free = {"type": "object", "maxProperties": 4, "additionalProperties": BOUNDED_INT}
    assert unbounded_property(free) == ("$.*", "open-ended property names need propertyNames with maxLength")


def test_the_shipped_policy_loads_with_every_action_bounded():
    policy = ActionPolicy.load(SHIPPED)
    assert set(policy.actions) == {"records.propose_changes", "orders.flag_for_review"}
    for action in policy.actions.values():
        assert unbounded_property(action.spec.input_schema) is None, action.action_id


@pytest.mark.parametrize(("action_id", "value"), [
    ("orders.flag_for_review", {"record_id": 2**63}),
    ("orders.flag_for_review", {"record_id": -(2**63) - 1}),
    ("records.propose_changes", {"entity": "order", "changes": [{"record_id": 2**64, "field": "f", "value": 1}]}),
    ("records.propose_changes", {"entity": "order", "changes": [{"record_id": 1, "field": "f", "value": 2**63}]}),
    ("records.propose_changes", {"entity": "order", "changes": [{"record_id": 1, "field": "f", "value": -1e300}]}),
])
def test_integers_past_64_bits_are_refused_as_input_before_any_database(action_id, value):
    action = ActionPolicy.load(SHIPPED).actions[action_id]
    # The input check is the broker's first step of SubmitIntent; it needs nothing but the action.
    with pytest.raises(Refusal) as refused:
        action_input(action, json.dumps(value))
    assert (status_of(refused.value).code, refused.value.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INPUT_INVALID")
    assert "must be at most" in refused.value.message or "must be at least" in refused.value.message
