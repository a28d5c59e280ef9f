"""Compile: valid proposals, every diagnostic code, per-element failure, A2UI validity."""

from __future__ import annotations

import copy
import json

import pytest

from tests.fixtures.ui import RESOURCE, dumps, full_proposal


def compile_(compiler, frozen, proposal, **kwargs):
    text = proposal if isinstance(proposal, str) else dumps(proposal)
    return compiler.compile(frozen, text, surface_id="surface-1", **kwargs)


def test_a_full_proposal_compiles_to_a_valid_a2ui_stream(compiler, frozen, ids, a2ui_check):
    result = compile_(compiler, frozen, full_proposal(ids))
    assert result.outcome == "compiled" and result.diagnostics == []
    a2ui_check(result.messages)
    kinds = [next(k for k in m if k != "version") for m in result.messages]
    assert kinds[:2] == ["createSurface", "updateComponents"] and set(kinds[2:]) == {"updateDataModel"}
    components = {c["id"]: c for c in result.messages[1]["updateComponents"]["components"]}
    assert components["root"]["children"] == ["main"]
    assert components["t1"]["resource"] == {"path": "/resources/res_1"}
    assert components["export"]["action"] == "export_csv"
    data_model = {m["updateDataModel"]["path"]: m["updateDataModel"]["value"] for m in result.messages[2:]}
    assert data_model["/state/state-000001"] == "all"
    assert [c["id"] for c in data_model["/resources/res_1"]["columns"]][:3] == ["region", "month", "revenue"]
    assert {b.kind for b in result.bindings} == {"resource", "evidence", "action", "state"}
    table = next(b for b in result.bindings if b.block_id == "t1")
    assert table.column_ids == ["region", "revenue"]
    # Stored documents carry ids that outlive the slice, never slice ids for bindings.
    stored = {b["id"]: b for b in result.document["blocks"]}
    assert stored["t1"]["data"]["resource"] == {"resource": "res_1", "offer": RESOURCE["offer"]}
    assert stored["t1"]["component"] == "DataTable"


def test_compiling_is_deterministic(compiler, frozen, ids):
    first = compile_(compiler, frozen, full_proposal(ids))
    second = compile_(compiler, frozen, full_proposal(ids))
    assert first.content_hash == second.content_hash and first.messages == second.messages


def _with_block(ids, block_id, data=None, component=None):
    proposal = full_proposal(ids)
    block = next(b for b in proposal["blocks"] if b["id"] == block_id)
    if data is not None:
        block["data"] = data
    if component is not None:
        block["component"] = component
    return proposal


BLOCK_CASES = [
    ("catalog.component-not-offered", "intro", None, "component-000099"),
    ("catalog.component-not-offered", "intro", None, "Text"),
    ("component.prop-invalid", "intro", {"text": "<b>bold</b>"}, None),
    ("component.prop-invalid", "intro", {"text": "see https://evil.example/x"}, None),
    ("component.prop-invalid", "intro", {"text": "click javascript:alert(1)"}, None),
    ("component.prop-invalid", "intro", {"text": "ok", "style": "color: red"}, None),
    ("component.prop-invalid", "intro", {"text": "West,1,2\nEast,3,4\nNorth,5,6\n"}, None),
    ("component.prop-invalid", "intro", {"text": "x" * 2001}, None),
    ("component.prop-invalid", "total", {"label": "x", "resource": RESOURCE, "column": "revenue",
                                         "rows": [[1, 2]]}, None),
    ("catalog.resource-not-offered", "t1", {"resource": {"ref": "resource-000002", "offer": RESOURCE["offer"]},
                                            "columns": ["region"]}, None),
    ("resource.offer-hash-denied", "t1", {"resource": {"ref": "resource-000001", "offer": "0" * 16},
                                          "columns": ["region"]}, None),
    ("resource.column-not-offered", "t1", {"resource": RESOURCE, "columns": ["secret"]}, None),
    ("resource.column-not-offered", "t1", {"resource": RESOURCE, "columns": ["nonexistent"]}, None),
    ("resource.sort-not-allowed", "t1", {"resource": RESOURCE, "columns": ["region"],
                                         "sort": {"column": "region"}}, None),
    ("resource.page-size-exceeded", "t1", {"resource": RESOURCE, "columns": ["region"], "page_size": 100}, None),
    ("chart.column-incompatible", "c1", {"resource": RESOURCE, "spec": {"recipe": "line", "x": "region",
                                                                         "y": ["revenue"]}}, None),
    ("chart.column-incompatible", "c1", {"resource": RESOURCE, "spec": {"recipe": "donut", "category": "region",
                                                                         "value": "region"}}, None),
    ("component.prop-invalid", "c1", {"resource": RESOURCE, "spec": {"recipe": "pie", "x": "region"}}, None),
    ("catalog.evidence-not-offered", "ev", {"evidence": "evidence-000002"}, None),
    ("catalog.action-not-offered", "export", {"label": "Go", "action": "action-000002"}, None),
    ("action.input-invalid", "export", {"label": "Go", "action": "action-000001", "input": {"format": "pdf"}}, None),
    ("catalog.state-not-offered", "pick", {"label": "R", "state": "state-000003",
                                           "options": [{"label": "a", "value": "all"}]}, None),
    ("state.option-invalid", "pick", {"label": "R", "state": "state-000001",
                                      "options": [{"label": "a", "value": "west"}]}, None),
    ("component.slot-invalid", "tabs", {"labels": ["Only one", "Two", "Three"]}, None),
]


@pytest.mark.parametrize("code,block_id,data,component", BLOCK_CASES, ids=[f"{c[0]}:{i}" for i, c in
                                                                           enumerate(BLOCK_CASES)])
def test_a_bad_block_becomes_a_placeholder_and_the_rest_compiles(compiler, frozen, ids, a2ui_check, code,
                                                                 block_id, data, component):
    proposal = _with_block(ids, block_id, data, component)
    if component in ("Text",):
        proposal = _with_block(ids, block_id, None, component)
    result = compile_(compiler, frozen, proposal)
    assert result.outcome == "partial"
    assert [d.code for d in result.diagnostics] == [code]
    finding = result.diagnostics[0]
    assert finding.recoverable and finding.model_correctable and finding.location.startswith("/blocks/")
    blocks = {b["id"]: b for b in result.document["blocks"]}
    assert blocks[block_id]["component"] == "Placeholder" and blocks[block_id]["data"]["code"] == code
    assert sum(b["component"] == "Placeholder" for b in blocks.values()) == 1
    assert not [b for b in result.bindings if b.block_id == block_id]
    a2ui_check(result.messages)


def test_a_failed_container_keeps_its_valid_children(compiler, frozen, ids, a2ui_check):
    proposal = _with_block(ids, "note", {"title": "<i>x</i>"})
    result = compile_(compiler, frozen, proposal)
    blocks = {b["id"]: b for b in result.document["blocks"]}
    assert blocks["note"]["component"] == "Placeholder" and blocks["note"]["children"] == ["ev", "warn"]
    assert blocks["ev"]["component"] == "EvidenceNote"
    a2ui_check(result.messages)


def _rejected(result, code):
    assert result.outcome == "rejected" and result.document is None and result.messages == []
    assert [d.code for d in result.diagnostics] == [code]
    assert not result.diagnostics[0].recoverable


def test_envelope_errors_reject_the_whole_proposal(compiler, frozen, ids):
    base = full_proposal(ids)
    cases = {
        "proposal.not-json": "{",
        "proposal.duplicate-key": '{"version": 1, "version": 1}',
        "proposal.envelope-invalid": dumps({**base, "version": 2}),
        "proposal.too-large": dumps({**base, "title": "x" * 300_000}),
    }
    duplicate = copy.deepcopy(base)
    duplicate["blocks"].append({"id": "intro", "component": ids["Divider"], "data": {}})
    cases["proposal.duplicate-block-id"] = dumps(duplicate)
    many = {"version": 1, "id": "x", "blocks": [{"id": f"b{i}", "component": ids["Divider"], "data": {}}
                                                 for i in range(33)]}
    cases["proposal.too-many-blocks"] = dumps(many)
    cycle = {"version": 1, "id": "x", "blocks": [
        {"id": "a", "component": ids["Column"], "data": {}, "children": ["b"]},
        {"id": "b", "component": ids["Column"], "data": {}, "children": ["a"]}]}
    cases["proposal.children-cycle"] = dumps(cycle)
    unknown = copy.deepcopy(base)
    unknown["blocks"][0]["children"].append("ghost")
    cases["proposal.unknown-child"] = dumps(unknown)
    reused = copy.deepcopy(base)
    reused["blocks"][0]["children"].append("intro")
    reused["blocks"][0]["children"] = reused["blocks"][0]["children"]
    reused["blocks"][3]["children"].append("intro")
    cases["proposal.child-reused"] = dumps(reused)
    cases["proposal.block-invalid"] = dumps({**base, "blocks": [{"component": ids["Divider"], "data": {}}]})
    for code, text in cases.items():
        _rejected(compile_(compiler, frozen, text), code)


def test_patches_apply_to_the_base_revision_only(compiler, frozen, ids):
    base = compile_(compiler, frozen, full_proposal(ids)).document
    patch = {"version": 1, "patch": {"base_revision": "rev-1", "operations": [{"op": "remove-block", "id": "rule"}]}}
    _rejected(compile_(compiler, frozen, patch), "patch.no-base")
    _rejected(compile_(compiler, frozen, patch, base_document=base, base_revision_id="rev-2"), "patch.base-mismatch")
    ghost = {"version": 1, "patch": {"base_revision": "rev-1", "operations": [{"op": "remove-block", "id": "x"}]}}
    _rejected(compile_(compiler, frozen, ghost, base_document=base, base_revision_id="rev-1"), "patch.unknown-block")
    done = compile_(compiler, frozen, patch, base_document=base, base_revision_id="rev-1")
    assert done.outcome == "compiled" and "rule" not in {b["id"] for b in done.document["blocks"]}


def test_a_stored_binding_that_is_no_longer_offered_fails_that_element(compiler, frozen, ids, catalog):
    from shared.ui.slice import SliceRequest, freeze_slice

    base = compile_(compiler, frozen, full_proposal(ids)).document
    narrower = freeze_slice(catalog, SliceRequest(components=list(catalog.contracts)))  # no offers at all
    new_ids = {o.component: o.slice_id for o in narrower.components}
    patch = {"version": 1, "patch": {"base_revision": "rev-1", "operations": [
        {"op": "put-block", "block": {"id": "intro", "component": new_ids["Text"], "data": {"text": "Updated."}}}]}}
    result = compiler.compile(narrower, json.dumps(patch), base_document=base, base_revision_id="rev-1")
    codes = {d.code for d in result.diagnostics}
    assert result.outcome == "partial"
    assert {"catalog.component-not-offered"} <= codes  # Metric, Chart … are not offered without resources
    assert {b["id"]: b for b in result.document["blocks"]}["intro"]["data"] == {"text": "Updated."}
