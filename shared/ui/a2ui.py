"""The catalog as an A2UI v0.9 catalog document, so standard A2UI tooling can
check the streams the compiler emits.

Components become closed objects (`additionalProperties: false`) with `id`,
a `component` const and their own props; slots become `ChildList`s; props
that bind an offered resource, evidence or state become A2UI data bindings
(`{"path": "/resources/<id>"}`); an action binding is the action id.
"""

from __future__ import annotations

import copy

from shared.ui.contracts import Catalog, ComponentContract

A2UI_VERSION = "v0.9"
COMMON_TYPES = "https://a2ui.org/specification/v0_9/common_types.json#/$defs/"
BINDING_ROOTS = {"resource": "/resources", "evidence": "/evidence", "state": "/state"}


def _component_schema(contract: ComponentContract) -> dict:
    props = copy.deepcopy(contract.props.get("properties", {}))
    for prop, spec in contract.bindings.items():
        if spec.kind == "cells":  # a map of figures, each a data binding to a result plus its row and column
            props[prop]["additionalProperties"]["properties"]["resource"] = {"$ref": COMMON_TYPES + "DataBinding"}
            continue
        props[prop] = {"type": "string", "minLength": 1} if spec.kind == "action" else {
            "$ref": COMMON_TYPES + "DataBinding"}
    properties = {"id": {"$ref": COMMON_TYPES + "ComponentId"}, "component": {"const": contract.name},
                  "accessibility": {"$ref": COMMON_TYPES + "AccessibilityAttributes"}, **props}
    properties.update({name: {"const": value} for name, value in contract.display_props.items()})
    required = ["id", "component", *contract.props.get("required", []), *contract.display_props]
    if "children" in contract.slots:
        properties["children"] = {"$ref": COMMON_TYPES + "ChildList"}
        required.append("children")
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False,
            "description": contract.summary}


def catalog_document(catalog: Catalog) -> dict:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": catalog.a2ui_catalog_id,
        "catalogId": catalog.a2ui_catalog_id,
        "title": catalog.title,
        "description": f"{catalog.catalog_id} (catalog hash {catalog.catalog_hash})",
        "components": {name: _component_schema(c) for name, c in sorted(catalog.contracts.items())},
    }
