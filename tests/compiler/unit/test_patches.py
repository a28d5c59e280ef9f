"""Patches, sequence by sequence: each compiles exactly as the snapshot of the document it produces.

The base is the full proposal: main → title, intro, figures → total, tabs → c1, t1, note → ev, warn,
controls → pick, export, rule.
"""

from __future__ import annotations

import json

import pytest

from tests.compiler.unit.patch_model import BASE_REVISION, assert_patch_matches_model, assert_same_compile, run_patch
from tests.fixtures.ui import full_proposal


def _blocks(ids, *block_ids: str, **children: list[str]) -> list[dict]:
    """Blocks of the full proposal, by id, with their children replaced where given."""
    originals = {b["id"]: b for b in full_proposal(ids)["blocks"]}
    out = []
    for block_id in block_ids:
        block = {k: v for k, v in originals[block_id].items() if k != "children"}
        if children.get(block_id, originals[block_id].get("children")):
            block["children"] = children.get(block_id, originals[block_id].get("children"))
        out.append(block)
    return out


def _snapshot(ids, blocks: list[dict]) -> str:
    return json.dumps({"version": 1, "id": "answer", "title": "Revenue by region", "blocks": blocks})


def _main(ids, children: list[str]) -> dict:
    return {"op": "put-block", "block": {"id": "main", "component": ids["Column"], "data": {"gap": "medium"},
                                         "children": children}}


def test_a_reput_keeps_a_child_it_adopts_from_a_subtree_it_drops(compiler, frozen, ids):
    # main no longer lists tabs (so tabs and t1 go) but lists c1, which sat under tabs: c1 stays.
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), [_main(ids, ["title", "c1"])])
    written_out = compiler.compile(frozen, _snapshot(ids, _blocks(ids, "main", "title", "c1",
                                                                  main=["title", "c1"])))
    assert result.outcome == "compiled" and [b["id"] for b in result.document["blocks"]] == ["main", "title", "c1"]
    assert_same_compile(result, written_out)


@pytest.mark.parametrize("removed,left", [("c1", ["main", "title"]), ("title", ["main", "c1"])])
def test_a_remove_after_such_a_put_applies(compiler, frozen, ids, removed, left):
    operations = [_main(ids, ["title", "c1"]), {"op": "remove-block", "id": removed}]
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), operations)
    assert result.outcome == "compiled" and [b["id"] for b in result.document["blocks"]] == left


def test_removing_the_block_that_adopted_takes_the_adopted_child_along(compiler, frozen, ids):
    # This walk over main's subtree used to meet c1 half-deleted and raise KeyError inside the compiler.
    side = {"op": "put-block", "block": {"id": "side", "component": ids["Text"], "data": {"text": "Aside."}}}
    operations = [side, _main(ids, ["title", "c1"]), {"op": "remove-block", "id": "main"}]
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), operations)
    assert result.outcome == "compiled" and [b["id"] for b in result.document["blocks"]] == ["side"]


def test_removing_every_block_is_refused_as_an_empty_snapshot_is(compiler, frozen, ids):
    operations = [_main(ids, ["title", "c1"]), {"op": "remove-block", "id": "main"}]
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), operations)
    assert [d.code for d in result.diagnostics] == ["proposal.empty"]
    assert_same_compile(result, compiler.compile(frozen, _snapshot(ids, [])))


def test_a_removed_block_can_be_put_again(compiler, frozen, ids):
    operations = [{"op": "remove-block", "id": "tabs"},
                  {"op": "put-block", "block": {"id": "tabs", "component": ids["Text"], "data": {"text": "Back."}},
                   "parent": "main", "index": 2}]
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), operations)
    main = result.document["blocks"][0]
    assert result.outcome == "compiled"
    assert main["children"] == ["title", "intro", "tabs", "figures", "note", "controls", "rule"]
    assert not {"c1", "t1"} & {b["id"] for b in result.document["blocks"]}


def test_a_move_into_a_removed_parent_is_refused_at_that_move(compiler, frozen, ids):
    operations = [{"op": "remove-block", "id": "note"}, {"op": "move-block", "id": "rule", "parent": "note"}]
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), operations)
    assert [(d.code, d.location) for d in result.diagnostics] == [("patch.unknown-block",
                                                                   "/patch/operations/1/parent")]


def test_a_cycle_one_move_makes_the_next_can_undo(compiler, frozen, ids):
    # main into note (its own child) cuts both off the page; note to the top puts them back, the other way round.
    operations = [{"op": "move-block", "id": "main", "parent": "note"}, {"op": "move-block", "id": "note"}]
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), operations)
    assert result.outcome == "compiled" and result.document["top"] == ["note"]
    assert result.document["blocks"][0]["children"] == ["ev", "warn", "main"]


def test_a_cycle_left_in_place_is_refused_as_in_a_snapshot(compiler, frozen, ids):
    adopt_parent = [{"op": "put-block", "block": {"id": "total", "component": ids["Column"], "data": {},
                                                  "children": ["figures"]}}]
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), adopt_parent)
    assert [(d.code, d.location) for d in result.diagnostics] == [("proposal.children-cycle",
                                                                   "/patch/operations/0/block/children/0")]
    cyclic = _blocks(ids, "total", "figures", total=["figures"], figures=["total"])
    cyclic[0]["component"] = ids["Column"]
    assert_same_compile(result, compiler.compile(frozen, _snapshot(ids, cyclic)))


def test_a_block_put_inside_a_child_it_drops_goes_with_that_child(compiler, frozen, ids):
    # figures moves under total and, in the same put, drops total: all that was under total goes, figures too.
    operations = [{"op": "put-block", "block": {"id": "figures", "component": ids["Row"], "data": {}},
                   "parent": "total"}]
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), operations)
    assert result.outcome == "compiled" and not {"figures", "total"} & {b["id"] for b in result.document["blocks"]}


def test_too_many_blocks_are_refused_as_in_a_snapshot(compiler, frozen, ids):
    operations = [{"op": "put-block", "block": {"id": f"n{i}", "component": ids["Divider"], "data": {}}}
                  for i in range(18)]  # 15 + 18 > 32
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), operations)
    assert [d.code for d in result.diagnostics] == ["proposal.too-many-blocks"]


@pytest.mark.parametrize("operation,code,location", [
    ({"op": "put-block", "block": {"id": "rule", "component": "x", "data": {}}, "colour": "red"},
     "patch.operation-invalid", "/patch/operations/0"),
    ({"op": "move-block", "id": "rule", "parent": "rule"}, "proposal.children-cycle", "/patch/operations/0/parent"),
    ({"op": "move-block", "id": "rule", "index": -1}, "patch.operation-invalid", "/patch/operations/0/index"),
    ({"op": "move-block", "id": "rule", "index": True}, "patch.operation-invalid", "/patch/operations/0/index"),
    ({"op": "put-block", "block": {"id": "n1", "component": "x", "data": {}, "children": ["ghost"]}},
     "patch.unknown-block", "/patch/operations/0/block/children/0"),
])
def test_an_operation_wrong_in_itself_is_refused_where_it_is_written(compiler, frozen, ids, operation, code,
                                                                     location):
    result, _, _ = run_patch(compiler, frozen, full_proposal(ids), [operation])
    assert [(d.code, d.location) for d in result.diagnostics] == [(code, location)]


@pytest.mark.parametrize("base_document", [
    {"version": 1, "id": "answer", "top": ["main"], "blocks": []},
    {"version": 1, "id": "answer", "top": ["a"], "blocks": [{"id": "a", "component": "Text", "data": {},
                                                             "children": ["a"]}]},
    {"version": 1, "id": "answer", "top": ["a"], "blocks": [{"id": "a", "component": ["Text"], "data": {}}]},
    {"version": 1, "id": "answer", "blocks": [{"id": "a", "component": "Text", "data": {}}]},
])
def test_a_damaged_base_document_is_refused_not_crashed_on(compiler, frozen, base_document):
    patch = {"version": 1, "patch": {"base_revision": BASE_REVISION, "operations": [
        {"op": "remove-block", "id": "a"}]}}
    result = compiler.compile(frozen, json.dumps(patch), base_document=base_document,
                              base_revision_id=BASE_REVISION)
    assert result.outcome == "rejected" and [d.code for d in result.diagnostics] == ["patch.base-invalid"]
    assert not result.diagnostics[0].model_correctable


@pytest.mark.parametrize("block_id,data", [
    ("t1", {"resource": {"resource": "res_1"}, "columns": ["region"]}),  # the stored offer is missing
    ("t1", {"resource": {"resource": ["res_1"]}, "columns": ["region"]}),
    ("intro", ["not", "props"]),
    ("note", None),
])
def test_damaged_data_in_a_base_block_fails_that_block_only(compiler, frozen, ids, block_id, data):
    base = compiler.compile(frozen, json.dumps(full_proposal(ids))).document
    next(b for b in base["blocks"] if b["id"] == block_id)["data"] = data
    patch = {"version": 1, "patch": {"base_revision": BASE_REVISION, "operations": [
        {"op": "remove-block", "id": "rule"}]}}
    result = compiler.compile(frozen, json.dumps(patch), base_document=base, base_revision_id=BASE_REVISION)
    assert result.outcome == "partial" and len(result.diagnostics) == 1
    assert result.diagnostics[0].code in ("component.prop-invalid", "catalog.resource-not-offered")
    assert {b["id"]: b for b in result.document["blocks"]}[block_id]["component"] == "Placeholder"


def test_a_malformed_stored_placeholder_is_not_passed_through(compiler, frozen, ids):
    proposal = full_proposal(ids)
    proposal["blocks"][8]["data"]["title"] = "<i>x</i>"  # note becomes a placeholder
    base = compiler.compile(frozen, json.dumps(proposal)).document
    next(b for b in base["blocks"] if b["id"] == "note")["data"] = {"reason": "<script>alert(1)</script>"}
    patch = {"version": 1, "patch": {"base_revision": BASE_REVISION, "operations": [
        {"op": "remove-block", "id": "rule"}]}}
    result = compiler.compile(frozen, json.dumps(patch), base_document=base, base_revision_id=BASE_REVISION)
    note = {b["id"]: b for b in result.document["blocks"]}["note"]
    assert [d.code for d in result.diagnostics] == ["component.prop-invalid"]
    assert note["data"] == {"reason": "This element could not be displayed.", "code": "component.prop-invalid"}


def test_a_block_put_inside_its_own_new_child_can_be_moved_back_out(compiler, frozen, ids):
    # figures adopts rule and goes under it (a cycle), then returns to the page above it.
    operations = [
        {"op": "put-block", "block": {"id": "figures", "component": ids["Row"], "data": {},
                                      "children": ["rule", "total"]}, "parent": "rule"},
        {"op": "remove-block", "id": "total"},
        {"op": "move-block", "id": "figures", "parent": "main", "index": 0}]
    result = assert_patch_matches_model(compiler, frozen, full_proposal(ids), operations)
    blocks = {b["id"]: b for b in result.document["blocks"]}
    assert result.outcome == "compiled" and blocks["main"]["children"][0] == "figures"
    assert blocks["figures"]["children"] == ["rule"] and "total" not in blocks
