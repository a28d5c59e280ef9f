"""CatalogSetSlice: everything one present_ui call may use, frozen (§6).

The host freezes a slice per present_ui call: the components this actor and
placement may use, the actions, the resource offers of this turn (with their
model-safe descriptors, offer hashes and selector policies), evidence, state
and generation limits. Every entry gets a short deterministic slice id
(`component-000001` …); the slice hash covers all of it. From a slice come
the model-visible view and the one strict `present_ui` input schema.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from google.protobuf.json_format import MessageToDict

from shared.data.bounded_json import canonical
from shared.rpc.field_rules import stated
from shared.ui.contracts import Catalog, ComponentContract
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2
from tessera.host.v1 import host_pb2

MAX_BLOCKS = 32
MAX_PROPOSAL_BYTES = stated(host_pb2.SubmitProposalRequest, "proposal_json", "max_bytes")  # the host's (host.proto)
OFFER_TAG_CHARS = 16
BLOCK_ID_PATTERN = "^[a-z][a-z0-9-]{0,31}$"
MAX_PATCH_OPERATIONS = 64


@dataclass(frozen=True)
class ResourceOffer:
    descriptor: common_pb2.ResourceDescriptor
    offer_hash: str  # SHA-256 hex of the verified signed offer
    column_ids: tuple[str, ...] = ()  # selector policy: projectable columns (default: all)
    allow_sort: bool = True
    max_page_size: int = 100
    # What the result answers, in words, from the verified offer (never from the model).
    interpretation: common_pb2.Interpretation | None = None


@dataclass(frozen=True)
class ActionOffer:
    action_id: str
    input_schema: dict
    effect: int = common_pb2.ACTION_EFFECT_NONE


@dataclass(frozen=True)
class StateOffer:
    value_schema: dict
    initial_value: object = None


@dataclass
class SliceRequest:
    components: list[str]  # contract names allowed for this actor and placement
    resources: list[ResourceOffer] = field(default_factory=list)
    evidence: list[common_pb2.Evidence] = field(default_factory=list)
    actions: list[ActionOffer] = field(default_factory=list)
    state: list[StateOffer] = field(default_factory=list)
    max_blocks: int = MAX_BLOCKS


def _slice_id(kind: str, index: int) -> str:
    return f"{kind}-{index + 1:06d}"


def offer_tag(offer_hash: str) -> str:
    """What a proposal quotes to bind a resource: the offer hash's first 16 hex digits."""
    return offer_hash[:OFFER_TAG_CHARS]


def _satisfiable(contract: ComponentContract, request: SliceRequest) -> bool:
    """A component whose required binding has nothing to bind to is not offered."""
    required = set(contract.props.get("required", ()))
    available = {"resource": request.resources, "evidence": request.evidence, "action": request.actions,
                 "state": request.state, "cells": request.resources}
    return all(available[spec.kind] for prop, spec in contract.bindings.items() if prop in required)


def freeze_slice(catalog: Catalog, request: SliceRequest) -> compiler_pb2.CatalogSlice:
    if not 1 <= request.max_blocks <= MAX_BLOCKS:
        raise ValueError(f"max_blocks must be 1..{MAX_BLOCKS}")
    names = sorted(set(request.components))
    unknown = [n for n in names if n not in catalog.contracts]
    if unknown:
        raise ValueError(f"components not in {catalog.catalog_id}: {', '.join(unknown)}")
    offered = [catalog.contracts[n] for n in names
               if not catalog.contracts[n].host_only and _satisfiable(catalog.contracts[n], request)]
    frozen = compiler_pb2.CatalogSlice(
        catalog_id=catalog.catalog_id, catalog_hash=catalog.catalog_hash,
        components=[compiler_pb2.OfferedComponent(slice_id=_slice_id("component", i), component=c.name,
                                                  version=str(c.revision), contract_hash=c.contract_hash)
                    for i, c in enumerate(offered)],
        actions=[compiler_pb2.OfferedAction(slice_id=_slice_id("action", i), action_id=a.action_id,
                                            input_schema_json=canonical(a.input_schema), effect=a.effect)
                 for i, a in enumerate(sorted(request.actions, key=lambda a: a.action_id))],
        resources=[compiler_pb2.OfferedResource(
            slice_id=_slice_id("resource", i), descriptor=r.descriptor, offer_hash=r.offer_hash,
            selector=compiler_pb2.SelectorPolicy(
                column_ids=list(r.column_ids) or [c.column_id for c in r.descriptor.columns],
                allow_sort=r.allow_sort, max_page_size=r.max_page_size),
            interpretation=r.interpretation)
            for i, r in enumerate(request.resources)],
        evidence=[compiler_pb2.OfferedEvidence(slice_id=_slice_id("evidence", i), evidence=e)
                  for i, e in enumerate(request.evidence)],
        state=[compiler_pb2.OfferedState(slice_id=_slice_id("state", i), value_schema_json=canonical(s.value_schema),
                                         initial_value_json=canonical(s.initial_value))
               for i, s in enumerate(request.state)],
        limits=compiler_pb2.GenerationLimits(max_blocks=request.max_blocks, max_proposal_bytes=MAX_PROPOSAL_BYTES),
    )
    digest = slice_hash(frozen)
    frozen.slice_hash = digest
    frozen.slice_id = f"slice-{digest[:16]}"
    return frozen


def slice_hash(frozen: compiler_pb2.CatalogSlice) -> str:
    """SHA-256 over the canonical JSON of the slice, without its id and hash."""
    content = compiler_pb2.CatalogSlice()
    content.CopyFrom(frozen)
    content.slice_id, content.slice_hash = "", ""
    return hashlib.sha256(canonical(MessageToDict(content, preserving_proto_field_name=True)).encode()).hexdigest()


# --- what the model sees -------------------------------------------------

_ROLE = {common_pb2.COLUMN_ROLE_DIMENSION: "dimension", common_pb2.COLUMN_ROLE_TIME: "time",
         common_pb2.COLUMN_ROLE_MEASURE: "measure", common_pb2.COLUMN_ROLE_ATTRIBUTE: "attribute"}
_TYPE = {common_pb2.COLUMN_TYPE_STRING: "string", common_pb2.COLUMN_TYPE_INTEGER: "integer",
         common_pb2.COLUMN_TYPE_DECIMAL: "decimal", common_pb2.COLUMN_TYPE_FLOAT: "float",
         common_pb2.COLUMN_TYPE_BOOLEAN: "boolean", common_pb2.COLUMN_TYPE_DATE: "date",
         common_pb2.COLUMN_TYPE_TIMESTAMP: "timestamp"}


def column_role(value: int) -> str:
    return _ROLE.get(value, "attribute")


def column_type(value: int) -> str:
    return _TYPE.get(value, "string")


def model_view(catalog: Catalog, frozen: compiler_pb2.CatalogSlice) -> dict:
    """Slice ids, summaries and descriptors: no values, no physical names, no hashes but offer tags."""
    return {
        "slice": frozen.slice_id,
        "catalog": frozen.catalog_id,
        "limits": {"max_blocks": frozen.limits.max_blocks},
        "components": [{
            "id": c.slice_id, "name": c.component, "summary": catalog.contracts[c.component].summary,
            "use_when": list(catalog.contracts[c.component].use_when),
            "avoid_when": list(catalog.contracts[c.component].avoid_when),
            "children": (catalog.contracts[c.component].slots["children"].model_dump()
                         if "children" in catalog.contracts[c.component].slots else None),
        } for c in frozen.components],
        "resources": [{
            "id": r.slice_id, "offer": offer_tag(r.offer_hash), "shape": common_pb2.ResultShape.Name(
                r.descriptor.shape).removeprefix("RESULT_SHAPE_").lower(),
            "rows": r.descriptor.row_count, "truncated": r.descriptor.truncated,
            "columns": [{"id": c.column_id, "label": c.label, "type": column_type(c.type),
                         "role": column_role(c.role)} for c in r.descriptor.columns],
            "selectable_columns": list(r.selector.column_ids), "sortable": r.selector.allow_sort,
            "max_page_size": r.selector.max_page_size,
        } for r in frozen.resources],
        "evidence": [{"id": e.slice_id, "rows": e.evidence.row_count,
                      "resource": next((r.slice_id for r in frozen.resources
                                        if r.descriptor.resource_id == e.evidence.resource_id), None)}
                     for e in frozen.evidence],
        "actions": [{"id": a.slice_id, "action": a.action_id,
                     "effect": common_pb2.ActionEffect.Name(a.effect).removeprefix("ACTION_EFFECT_").lower(),
                     "input_schema": json.loads(a.input_schema_json)} for a in frozen.actions],
        "state": [{"id": s.slice_id, "value_schema": json.loads(s.value_schema_json)} for s in frozen.state],
    }


# --- the present_ui input schema -----------------------------------------


def _narrow(contract: ComponentContract, frozen: compiler_pb2.CatalogSlice) -> dict:
    """The component's own strict props schema, with binding props narrowed to this slice's offers."""
    schema = json.loads(json.dumps(contract.props))
    properties = schema.get("properties", {})
    offered = {"resource": [r.slice_id for r in frozen.resources], "evidence": [e.slice_id for e in frozen.evidence],
               "state": [s.slice_id for s in frozen.state], "action": [a.slice_id for a in frozen.actions]}
    offered["cells"] = offered["resource"]
    for prop, spec in contract.bindings.items():
        ids = offered[spec.kind]
        reference = {"type": "object", "additionalProperties": False, "required": ["ref", "offer"],
                     "properties": {"ref": {"enum": ids} if ids else {"not": {}},
                                    "offer": {"type": "string", "pattern": "^[0-9a-f]{16}$"}}}
        if spec.kind == "resource":
            properties[prop] = reference
        elif spec.kind == "cells":
            properties[prop]["additionalProperties"]["properties"]["resource"] = reference
        else:
            properties[prop] = {"enum": ids} if ids else {"not": {}}
    return schema


def _block_schema(catalog: Catalog, frozen: compiler_pb2.CatalogSlice) -> dict:
    variants = []
    for offered in frozen.components:
        contract = catalog.contracts[offered.component]
        properties = {"id": _BLOCK_ID, "component": {"const": offered.slice_id}, "data": _narrow(contract, frozen)}
        if "children" in contract.slots:
            slot = contract.slots["children"]
            properties["children"] = {**_CHILDREN, "minItems": slot.min, "maxItems": slot.max}
        variants.append({"type": "object", "additionalProperties": False, "required": ["id", "component", "data"],
                         "properties": properties})
    return {"oneOf": variants} if variants else {"not": {}}


_BLOCK_ID = {"description": "The block's id, unique in the display (lower-case letters, digits, dashes).",
             "type": "string", "pattern": BLOCK_ID_PATTERN}
_CHILDREN = {"description": "Ids of the blocks inside this one, in order (only where the component takes children).",
             "type": "array", "uniqueItems": True, "items": _BLOCK_ID}
# Any slice's block, before the slice is known: what present_ui's arguments say statically. Its `data` is checked
# against the component's own schema once the slice is frozen (present_ui without a proposal returns it).
ANY_BLOCK = {
    "description": "One block: an offered component with its props.", "type": "object",
    "additionalProperties": False, "required": ["id", "component", "data"],
    "properties": {
        "id": _BLOCK_ID,
        "component": {"description": "A component id of the frozen slice (component-000001 …).", "type": "string",
                      "pattern": "^component-[0-9]{6}$"},
        "data": {"description": "The component's props, exactly as the slice's schema for this component says "
                                "(results bound by {ref: resource id, offer: offer tag}).",
                 "type": "object", "additionalProperties": {"description": "A prop's value."}},
        "children": {**_CHILDREN, "maxItems": MAX_BLOCKS},
    }}


def proposal_schema(block: dict, max_blocks: int) -> dict:
    """A proposal: a snapshot of the whole display, or a patch of the current revision, with blocks as `block`
    says (any slice's, or one frozen slice's)."""
    block_id = _BLOCK_ID
    snapshot = {"description": "The whole display.", "type": "object", "additionalProperties": False,
                "required": ["version", "id", "blocks"],
                "properties": {"version": {"description": "Always 1.", "const": 1},
                               "id": {"description": "Your id for this proposal.", "type": "string", "minLength": 1,
                                      "maxLength": 64},
                               "title": {"description": "The display's heading, in your words.", "type": "string",
                                         "minLength": 1, "maxLength": 120},
                               "blocks": {"description": f"1-{max_blocks} blocks, flat: nesting is by children ids.",
                                          "type": "array", "minItems": 1, "maxItems": max_blocks, "items": block}}}
    where = {"parent": {"description": "The block to put it in (null: the top level).",
                        "oneOf": [block_id, {"type": "null"}]},
             "index": {"description": "Its place among the parent's children (default: last).", "type": "integer",
                       "minimum": 0}}
    operations = {"oneOf": [
        {"description": "Add or replace a block.", "type": "object", "additionalProperties": False,
         "required": ["op", "block"], "properties": {"op": {"const": "put-block"}, "block": block, **where}},
        {"description": "Remove a block.", "type": "object", "additionalProperties": False,
         "required": ["op", "id"], "properties": {"op": {"const": "remove-block"}, "id": block_id}},
        {"description": "Move a block.", "type": "object", "additionalProperties": False,
         "required": ["op", "id"], "properties": {"op": {"const": "move-block"}, "id": block_id, **where}},
    ]}
    patch = {"description": "Changes to the current revision.", "type": "object", "additionalProperties": False,
             "required": ["version", "patch"],
             "properties": {"version": {"description": "Always 1.", "const": 1}, "patch": {
                 "description": "The revision patched and the operations, in order.", "type": "object",
                 "additionalProperties": False, "required": ["base_revision", "operations"],
                 "properties": {"base_revision": {"description": "The revision present_ui last returned.",
                                                  "type": "string", "minLength": 1, "maxLength": 80},
                                "operations": {"description": f"1-{MAX_PATCH_OPERATIONS} operations.",
                                               "type": "array", "minItems": 1, "maxItems": MAX_PATCH_OPERATIONS,
                                               "items": operations}}}}}
    return {"oneOf": [snapshot, patch]}


def present_ui_schema(catalog: Catalog, frozen: compiler_pb2.CatalogSlice) -> dict:
    """One strict draft-07 schema: a snapshot or a patch, blocks limited to this slice."""
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": f"present_ui ({frozen.slice_id})",
            **proposal_schema(_block_schema(catalog, frozen), frozen.limits.max_blocks)}
