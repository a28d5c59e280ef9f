"""Component contracts, the catalog and its A2UI export, frozen slices and the present_ui schema."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest
import yaml

from shared.ui.a2ui import catalog_document
from shared.ui.contracts import DEFAULT_CATALOG, MAX_COMPONENTS, ContractError, load_catalog, reserved_keywords
from shared.ui.slice import SliceRequest, freeze_slice, model_view, present_ui_schema, slice_hash
from tests.fixtures.ui import OFFER_HASH, descriptor, full_proposal


def test_the_data_catalog(catalog):
    assert catalog.catalog_id == "tessera.data/v1" and "tessera.data/v1" in catalog.a2ui_catalog_id
    expected = {"Column", "Row", "Card", "Tabs", "Divider", "Heading", "Text", "Callout", "Metric", "DataTable",
                "Chart", "EvidenceNote", "ActionButton", "FilterSelect", "Placeholder", "FigureText"}
    assert set(catalog.contracts) == expected and len(catalog.contracts) <= MAX_COMPONENTS
    assert catalog.contracts["Placeholder"].host_only
    recipes = set(catalog.contracts["Chart"].recipes)
    assert recipes >= {"bar", "grouped_bar", "stacked_bar", "line", "area", "scatter", "donut", "heatmap"}
    assert len(catalog.catalog_hash) == 64
    assert all(not reserved_keywords(c.props) for c in catalog.contracts.values())


def test_the_a2ui_export_is_a_loadable_catalog(catalog):
    from a2ui.core import Catalog as A2uiCatalog

    document = catalog_document(catalog)
    assert document["catalogId"] == catalog.a2ui_catalog_id
    loaded = A2uiCatalog.from_json(json.loads(json.dumps(document)))
    assert loaded is not None and set(document["components"]) == set(catalog.contracts)


@pytest.mark.parametrize("schema,where", [
    ({"type": "object", "$ref": "#/x"}, "/$ref"),
    ({"type": "object", "properties": {"a": {"$id": "x"}}}, "/properties/a/$id"),
    ({"type": "object", "properties": {"a": {"items": {"$anchor": "x"}}}}, "/properties/a/items/$anchor"),
    ({"type": "object", "oneOf": [{"$dynamicRef": "#x"}]}, "/oneOf/0/$dynamicRef"),
    ({"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"}, "/$schema"),
    ({"type": "object", "properties": {"a": {"not": {"$async": True}}}}, "/properties/a/not/$async"),
    ({"type": "object", "definitions": {"a": {}}}, "/definitions"),
    ({"type": "object", "additionalProperties": {"$recursiveRef": "#"}}, "/additionalProperties/$recursiveRef"),
])
def test_reserved_keywords_are_found_wherever_they_are_keywords(schema, where):
    assert reserved_keywords(schema) == [where]


def test_property_names_and_values_are_not_keywords():
    schema = {"type": "object", "properties": {"$ref": {"type": "string", "enum": ["$ref"]}},
              "required": ["$ref"]}
    assert reserved_keywords(schema) == []


def _catalog_copy(tmp_path):
    target = tmp_path / "catalog"
    shutil.copytree(DEFAULT_CATALOG, target)
    return target


@pytest.mark.parametrize("change,expected", [
    (lambda c: c["props"]["properties"].update({"x": {"$ref": "#/definitions/y"}}), "props/properties/x/$ref"),
    (lambda c: c["props"].update({"type": "array"}), "schema root must be"),
    (lambda c: c["props"]["properties"].update({"x": {"type": "strnig"}}), "not a valid draft-07 schema"),
    (lambda c: c.update({"colour": "red"}), "colour"),
    (lambda c: c.update({"name": "lower"}), "PascalCase"),
])
def test_an_invalid_contract_stops_startup_naming_the_file(tmp_path, change, expected):
    directory = _catalog_copy(tmp_path)
    path = directory / "components" / "text.yaml"
    contract = yaml.safe_load(path.read_text())
    change(contract)
    path.write_text(yaml.safe_dump(contract))
    with pytest.raises(ContractError) as error:
        load_catalog(directory)
    assert str(error.value).startswith(str(path)) and expected in str(error.value)


def test_at_most_32_components(tmp_path):
    directory = _catalog_copy(tmp_path)
    source = (directory / "components" / "divider.yaml").read_text()
    for index in range(MAX_COMPONENTS):
        (directory / "components" / f"extra{index}.yaml").write_text(source.replace("Divider", f"Extra{index}"))
    with pytest.raises(ContractError, match="at most 32"):
        load_catalog(directory)


def test_slices_are_deterministic_and_hash_everything(catalog, frozen):
    again = freeze_slice(catalog, SliceRequest(components=list(reversed(list(catalog.contracts))),
                                               resources=[], evidence=[], actions=[], state=[]))
    assert [c.slice_id for c in again.components] == [f"component-{i:06d}" for i in range(1, len(again.components) + 1)]
    assert "Placeholder" not in {c.component for c in frozen.components}
    assert "Metric" not in {c.component for c in again.components}  # nothing to bind to: not offered
    assert slice_hash(frozen) == frozen.slice_hash and frozen.slice_id.endswith(frozen.slice_hash[:16])
    tampered = type(frozen)()
    tampered.CopyFrom(frozen)
    tampered.resources[0].selector.column_ids.append("secret")
    assert slice_hash(tampered) != frozen.slice_hash


def test_the_model_view_has_no_values_and_no_hashes_but_offer_tags(catalog, frozen):
    view = json.dumps(model_view(catalog, frozen))
    assert OFFER_HASH not in view and OFFER_HASH[:16] in view
    assert "res_1" not in view and "f" * 64 not in view and "q" * 64 not in view
    assert '"label": "Net revenue"' in view and "DataTable" in view


def test_the_present_ui_schema_is_strict_and_local(catalog, frozen, ids):
    schema = present_ui_schema(catalog, frozen)
    jsonschema.Draft7Validator.check_schema(schema)
    text = json.dumps(schema)
    assert '"$ref"' not in text and '"$id"' not in text
    validator = jsonschema.Draft7Validator(schema)
    assert validator.is_valid(full_proposal(ids))
    bad = full_proposal(ids)
    bad["blocks"][2]["data"]["colour"] = "red"  # no merged prop bags: Text has no colour
    assert not validator.is_valid(bad)
    bad = full_proposal(ids)
    bad["blocks"][7]["data"]["resource"]["ref"] = "resource-000009"
    assert not validator.is_valid(bad)
    assert not validator.is_valid({**full_proposal(ids), "blocks": full_proposal(ids)["blocks"] * 3})


def test_descriptor_fixture_has_the_columns_the_tests_rely_on():
    assert [c.column_id for c in descriptor().columns] == ["region", "month", "revenue", "orders", "secret"]
