"""A compiled document as A2UI v0.9 messages (createSurface, updateComponents, updateDataModel).

The stream carries structure, literal props and data-model bindings; it
carries no rows. Resource entries in the data model are descriptors only —
the host adds windows later, under grants.
"""

from __future__ import annotations

import json

from shared.ui.a2ui import A2UI_VERSION, BINDING_ROOTS
from shared.ui.contracts import Catalog
from shared.ui.slice import column_role, column_type
from tessera.compiler.v1 import compiler_pb2

ROOT_ID = "root"


def _component(catalog: Catalog, block: dict) -> dict:
    contract = catalog.contracts[block["component"]]
    props = dict(block["data"])  # binding props are replaced, nothing nested is mutated
    for prop, spec in contract.bindings.items():
        if prop not in props:
            continue
        stored = props[prop]
        if spec.kind == "action":
            props[prop] = stored["action"]
        else:
            props[prop] = {"path": f"{BINDING_ROOTS[spec.kind]}/{stored[spec.kind]}"}
    component = {"id": block["id"], "component": block["component"], **props}
    if "children" in contract.slots:
        component["children"] = list(block.get("children", []))
    return component


def _data_model(frozen: compiler_pb2.CatalogSlice, document: dict, catalog: Catalog) -> list[tuple[str, object]]:
    """Descriptors of bound resources, bound evidence, and literal state: never rows."""
    resources = {r.descriptor.resource_id: r for r in frozen.resources}
    evidence = {e.evidence.evidence_id: e for e in frozen.evidence}
    state = {s.slice_id: s for s in frozen.state}
    entries: dict[str, object] = {}
    for block in document["blocks"]:
        contract = catalog.contracts[block["component"]]
        for prop, spec in contract.bindings.items():
            stored = block["data"].get(prop)
            if not isinstance(stored, dict):
                continue
            if spec.kind == "resource" and stored["resource"] in resources:
                d = resources[stored["resource"]].descriptor
                entries[f"/resources/{d.resource_id}"] = {
                    "columns": [{"id": c.column_id, "label": c.label, "type": column_type(c.type),
                                 "role": column_role(c.role)} for c in d.columns],
                    "rowCount": d.row_count, "truncated": d.truncated, "version": d.version_id}
            elif spec.kind == "evidence" and stored["evidence"] in evidence:
                e = evidence[stored["evidence"]].evidence
                entries[f"/evidence/{e.evidence_id}"] = {
                    "catalogFingerprint": e.catalog_fingerprint, "queryFingerprint": e.query_fingerprint,
                    "observedAt": e.observed_at.ToJsonString(), "rowCount": e.row_count,
                    "elapsedMs": round(e.elapsed.ToMilliseconds(), 3)}
            elif spec.kind == "state" and stored["state"] in state:
                entries[f"/state/{stored['state']}"] = json.loads(state[stored["state"]].initial_value_json)
    return sorted(entries.items())


def messages(catalog: Catalog, frozen: compiler_pb2.CatalogSlice, document: dict, surface_id: str) -> list[dict]:
    components = [{"id": ROOT_ID, "component": "Column", "children": list(document["top"])}]
    components += [_component(catalog, block) for block in document["blocks"]]
    out = [
        {"version": A2UI_VERSION, "createSurface": {"surfaceId": surface_id, "catalogId": catalog.a2ui_catalog_id}},
        {"version": A2UI_VERSION, "updateComponents": {"surfaceId": surface_id, "components": components}},
    ]
    out += [{"version": A2UI_VERSION, "updateDataModel": {"surfaceId": surface_id, "path": path, "value": value}}
            for path, value in _data_model(frozen, document, catalog)]
    return out
