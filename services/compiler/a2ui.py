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
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2

ROOT_ID = "root"


def _component(catalog: Catalog, block: dict) -> dict:
    contract = catalog.contracts[block["component"]]
    props = dict(block["data"])  # binding props are replaced, nothing nested is mutated
    for prop, spec in contract.bindings.items():
        if prop not in props:
            continue
        stored = props[prop]
        if spec.kind == "cells":
            props[prop] = {name: {**figure, "resource": {"path": f"{BINDING_ROOTS['resource']}/"
                                                                 f"{figure['resource']['resource']}"}}
                           for name, figure in stored.items()}
        elif spec.kind == "action":
            props[prop] = stored["action"]
        else:
            props[prop] = {"path": f"{BINDING_ROOTS[spec.kind]}/{stored[spec.kind]}"}
    component = {"id": block["id"], "component": block["component"], **props, **contract.display_props}
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
            bound = [stored["resource"]] if spec.kind == "resource" else [
                figure["resource"]["resource"] for figure in stored.values()] if spec.kind == "cells" else []
            for resource_id in bound:
                if resource_id in resources:
                    entries[f"/resources/{resource_id}"] = _descriptor_entry(resources[resource_id])
            if spec.kind in ("resource", "cells"):
                continue
            if spec.kind == "evidence" and stored["evidence"] in evidence:
                e = evidence[stored["evidence"]].evidence
                source = resources.get(e.resource_id)
                entries[f"/evidence/{e.evidence_id}"] = {
                    "catalogFingerprint": e.catalog_fingerprint, "queryFingerprint": e.query_fingerprint,
                    "observedAt": e.observed_at.ToJsonString(), "rowCount": e.row_count,
                    "elapsedMs": round(e.elapsed.ToMilliseconds(), 3),
                    "computed": source.interpretation.text if source is not None else ""}
            elif spec.kind == "state" and stored["state"] in state:
                entries[f"/state/{stored['state']}"] = json.loads(state[stored["state"]].initial_value_json)
    return sorted(entries.items())


def _descriptor_entry(offered: compiler_pb2.OfferedResource) -> dict:
    d = offered.descriptor
    return {"columns": [{"id": c.column_id, "label": c.label, "type": column_type(c.type), "role": column_role(c.role),
                         "format": value_format(c.format), "additive": c.additive} for c in d.columns],
            "rowCount": d.row_count, "truncated": d.truncated, "version": d.version_id,
            "interpretation": interpretation(offered.interpretation)}


_STYLES = {common_pb2.FORMAT_STYLE_INTEGER: "integer", common_pb2.FORMAT_STYLE_DECIMAL: "decimal",
           common_pb2.FORMAT_STYLE_CURRENCY: "currency", common_pb2.FORMAT_STYLE_PERCENT: "percent",
           common_pb2.FORMAT_STYLE_DATE: "date", common_pb2.FORMAT_STYLE_TEXT: "text"}


def value_format(fmt: common_pb2.ValueFormat) -> dict:
    """A column's display format for the renderer; {} when the gateway named none."""
    out: dict = {}
    if fmt.style in _STYLES:
        out["style"] = _STYLES[fmt.style]
    if fmt.currency:
        out["currency"] = fmt.currency
    if fmt.HasField("decimals"):
        out["decimals"] = fmt.decimals
    if fmt.grain:
        out["grain"] = fmt.grain
    return out


def interpretation(found: common_pb2.Interpretation) -> dict:
    """The gateway's caption of a result; the page shows it once per answer (and under a block whose result's
    caption is another)."""
    return {"text": found.text, "measures": list(found.measures), "dimensions": list(found.dimensions),
            "filters": list(found.filters), "ordering": found.ordering, "truncation": found.truncation,
            "coverage": found.coverage}


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
