"""Closed tool contracts (shared/tools/tool_contracts.py): an external tool's arguments are checked against its
pinned schema with every property the schema does not declare refused, also where the schema does not say
`additionalProperties: false` — so a server that added a parameter after review never receives it."""

from __future__ import annotations

import copy

import pytest

from shared.tools.tool_contracts import ToolContract, ToolSchemaError

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
# `lookup` as the drift server's SDK describes it, and as it was pinned: no additionalProperties anywhere.
PINNED_LOOKUP = {"type": "object", "title": "lookupArguments", "required": ["term"],
                 "properties": {"term": {"title": "Term", "type": "string"}}}


def refusals(schema: dict, arguments: dict, closed: bool = True) -> list[tuple[str, str]]:
    contract = ToolContract("drift.lookup", "Our text.", schema, closed=closed)
    return [(v.pointer, v.message) for v in contract.violations(arguments)]


def pointers(schema: dict, arguments: dict) -> list[str]:
    return [pointer for pointer, _ in refusals(schema, arguments)]


def test_a_parameter_the_pinned_schema_lacks_is_refused_with_a_pointer():
    assert refusals(PINNED_LOOKUP, {"term": "lamps"}) == []
    assert refusals(PINNED_LOOKUP, {"term": "lamps", "scope": "all"}) == [
        ("/scope", "$.scope: 'scope' is not a property the schema declares")]
    # An open contract (the broker's own action contracts) keeps the schema's own meaning.
    assert refusals(PINNED_LOOKUP, {"term": "lamps", "scope": "all"}, closed=False) == []
    # The schema's own problems come first, as before; the schema and the contract's copy stay untouched.
    assert pointers(PINNED_LOOKUP, {"term": 3, "scope": "all"}) == ["/term"]
    pinned = copy.deepcopy(PINNED_LOOKUP)
    contract = ToolContract("drift.lookup", "Our text.", pinned, closed=True)
    assert pinned == PINNED_LOOKUP and contract.input_schema == PINNED_LOOKUP  # what the model is shown


@pytest.mark.parametrize("extra", [{"additionalProperties": True}, {"additionalProperties": {"type": "string"}},
                                   {"unevaluatedProperties": True}, {}])
def test_the_top_level_is_closed_whatever_the_schema_says(extra):
    schema = {**PINNED_LOOKUP, **extra}
    assert pointers(schema, {"term": "x", "scope": "all"}) == ["/scope"]
    assert pointers({"type": "object"}, {"anything": 1}) == ["/anything"]  # a tool without parameters


def test_top_level_patterns_and_required_names_count_as_declared():
    schema = {"type": "object", "properties": {"a": {}}, "required": ["b"], "patternProperties": {"^x-": {}}}
    assert pointers(schema, {"a": 1, "b": 2, "x-trace": "t"}) == []
    assert pointers(schema, {"b": 2, "y-trace": "t"}) == ["/y-trace"]


def test_nested_objects_are_closed_unless_their_schema_says_otherwise():
    def nested(**rest):
        return {"type": "object", "properties": {"filter": {"type": "object", "properties": {"a": {}}, **rest}}}

    assert pointers(nested(), {"filter": {"a": 1}}) == []
    assert refusals(nested(), {"filter": {"a": 1, "b": 2}}) == [
        ("/filter/b", "$.filter.b: 'b' is not a property the schema declares")]
    for says in ({"additionalProperties": True}, {"additionalProperties": {"type": "integer"}},
                 {"patternProperties": {"^b": {}}}, {"unevaluatedProperties": True}):
        assert pointers(nested(**says), {"filter": {"a": 1, "b": 2}}) == [], says
    free_form = {"type": "object", "properties": {"labels": {"type": "object"}}}  # no properties: left open
    assert pointers(free_form, {"labels": {"any": "thing"}}) == []


def test_compositions_declare_the_union_of_their_branches():
    all_of = {"type": "object", "allOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]}
    assert pointers(all_of, {"a": 1, "b": 2}) == []  # closing each branch alone would refuse both
    assert pointers(all_of, {"a": 1, "c": 3}) == ["/c"]
    one_of = {"type": "object", "properties": {"shape": {"type": "object", "oneOf": [
        {"properties": {"kind": {"const": "circle"}, "radius": {}}, "required": ["kind"]},
        {"properties": {"kind": {"const": "square"}, "side": {}}, "required": ["kind"]}]}}}
    assert pointers(one_of, {"shape": {"kind": "circle", "radius": 2}}) == []
    assert pointers(one_of, {"shape": {"kind": "square", "side": 2, "colour": "red"}}) == ["/shape/colour"]
    conditional = {"type": "object", "properties": {"kind": {}},
                   "if": {"properties": {"kind": {"const": "a"}}}, "then": {"properties": {"a_only": {}}},
                   "else": {"properties": {"other": {}}}, "dependentSchemas": {"kind": {"properties": {"why": {}}}}}
    assert pointers(conditional, {"kind": "a", "a_only": 1, "why": "w"}) == []
    assert pointers(conditional, {"kind": "b", "other": 1, "zzz": 1}) == ["/zzz"]


def test_optional_references_as_pydantic_writes_them():
    schema = {"type": "object", "properties": {"opt": {"anyOf": [{"$ref": "#/$defs/Foo"}, {"type": "null"}],
                                                       "default": None}},
              "$defs": {"Foo": {"type": "object", "properties": {"x": {}, "inner": {"properties": {"y": {}}}}}}}
    assert pointers(schema, {"opt": None}) == [] and pointers(schema, {"opt": {"x": 1, "inner": {"y": 2}}}) == []
    assert pointers(schema, {"opt": {"x": 1, "z": 2}}) == ["/opt/z"]
    # Refused inside an anyOf branch: the undeclared property is named, not "valid under none of the branches".
    assert refusals(schema, {"opt": {"inner": {"y": 1, "w": 2}}}) == [
        ("/opt/inner/w", "$.opt.inner.w: 'w' is not a property the schema declares")]


def test_a_shared_definition_is_closed_where_it_is_used_not_where_it_is_written():
    """Foo is a whole value at /a and one branch of an allOf at /b: closing Foo itself would refuse /b's
    `extra`, which the other branch declares."""
    schema = {"type": "object", "definitions": {"Foo": {"type": "object", "properties": {"x": {}}}},
              "properties": {"a": {"$ref": "#/definitions/Foo", "description": "draft-07 ignores this sibling"},
                             "b": {"allOf": [{"$ref": "#/definitions/Foo"}, {"properties": {"extra": {}}}]}}}
    assert pointers(schema, {"a": {"x": 1}, "b": {"x": 1, "extra": 2}}) == []
    assert pointers(schema, {"a": {"x": 1, "extra": 2}}) == ["/a/extra"]
    assert pointers(schema, {"b": {"x": 1, "more": 2}}) == ["/b/more"]


def test_arrays_recursion_and_the_2020_12_dialect():
    rows = {"$schema": DRAFT_2020_12, "type": "object", "properties": {
        "rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}},
        "pair": {"type": "array", "prefixItems": [{"properties": {"k": {}}}, {"type": "integer"}]}},
        "$defs": {"Row": {"type": "object", "properties": {"k": {}}}}}
    assert pointers(rows, {"rows": [{"k": 1}], "pair": [{"k": 1}, 2]}) == []
    assert pointers(rows, {"rows": [{"k": 1}, {"k": 2, "j": 3}]}) == ["/rows/1/j"]
    assert pointers(rows, {"pair": [{"k": 1, "j": 2}, 2]}) == ["/pair/0/j"]
    tree = {"type": "object", "properties": {"name": {}, "children": {"type": "array", "items": {"$ref": "#"}}}}
    assert pointers(tree, {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}) == []
    assert pointers(tree, {"name": "a", "children": [{"name": "b", "children": [{"bad": 1}]}]}) == [
        "/children/0/children/0/bad"]  # once, though the root and the item both refuse it


def test_closing_leaves_negations_alone():
    """A stricter schema under `not` would accept more; nothing is closed there, and `not` means what it says."""
    schema = {"type": "object", "properties": {"v": {"not": {"type": "object", "properties": {"k": {"const": 1}},
                                                             "required": ["k"]}}}}
    assert pointers(schema, {"v": {"k": 2, "z": 1}}) == []
    assert pointers(schema, {"v": {"k": 1}}) == ["/v"]  # refused by the schema itself


def test_a_schema_cannot_bring_our_marker():
    own = {"x-tessera-declared": {"names": [], "patterns": []}}
    schema = {"type": "object", "properties": {"a": {}, "b": {"x-tessera-declared": {"names": ["evil"],
                                                                                      "patterns": [""]}},
                                               "c": {"type": "object", "if": {"type": "object", **own},
                                                     "else": {"required": ["never"]}}},
              "x-tessera-declared": {"names": ["a", "evil"], "patterns": [".*"]}}
    assert pointers(schema, {"a": 1, "evil": 2}) == ["/evil"]
    assert pointers(schema, {"c": {"x": 1}}) == []  # `if` not turned around by a marker of the schema's own


@pytest.mark.parametrize("where", [{"$anchor": "foo"}, {"$id": "https://example.com/a"}, {"$dynamicRef": "#x"}])
def test_schemas_whose_references_cannot_be_read_off_the_text_are_refused(where):
    schema = {"$schema": DRAFT_2020_12, "type": "object", "properties": {"a": {"type": "object", **where}}}
    with pytest.raises(ToolSchemaError, match="drift.lookup: cannot close"):
        ToolContract("drift.lookup", "Our text.", schema, closed=True)
    if "$dynamicRef" not in where:
        ToolContract("drift.lookup", "Our text.", schema)  # an open contract does not need to tell


def test_a_reference_to_a_schema_outside_the_definitions_is_refused_when_closing():
    """Only schemas under $defs/definitions (and the root) are walked and marked: a $ref elsewhere would leave
    its target open to undeclared properties, so the contract cannot be built (the tool is denied)."""
    schema = {"type": "object", "properties": {"x": {"$ref": "#/components/X"}},
              "components": {"X": {"type": "object", "properties": {"a": {"type": "object",
                                                                           "properties": {"b": {}}}}}}}
    with pytest.raises(ToolSchemaError, match="points outside"):
        ToolContract("x.lookup", "ours", schema, closed=True)
    ToolContract("x.lookup", "ours", schema)  # an open contract (our own actions) is unaffected
