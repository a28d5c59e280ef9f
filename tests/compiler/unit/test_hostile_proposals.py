"""Hostile proposals refused quickly and cleanly: inputs that once stalled or crashed the compiler, or slipped
markup through."""

from __future__ import annotations

import json
import time

import pytest

from tests.fixtures.ui import full_proposal


def test_long_text_does_not_stall_the_markup_screen(compiler, frozen, ids):
    proposal = full_proposal(ids)
    proposal["blocks"][2]["data"]["text"] = "a" * 1999
    export = next(b for b in proposal["blocks"] if b["id"] == "export")
    export["data"]["input"] = {"format": "csv", "note": "b" * 60_000}
    started = time.perf_counter()
    result = compiler.compile(frozen, json.dumps(proposal))
    assert time.perf_counter() - started < 2.0
    assert [d.code for d in result.diagnostics] == ["action.input-invalid"]


@pytest.mark.parametrize("operations", [
    [{"op": "remove-block", "id": ["not", "a", "string"]}],
    [{"op": "move-block", "id": "intro", "parent": {"x": 1}}],
    [{"op": "move-block", "id": "figures", "parent": "total"}],
    [{"op": "put-block", "block": {"id": "figures", "component": "component-000012", "data": {},
                                   "children": ["figures"]}}],
    [{"op": "put-block", "block": {"id": "total", "component": "component-000011", "data": {},
                                   "children": ["figures"]}}],
    [{"op": "put-block", "block": {"id": "main", "component": "component-000005", "data": {}, "children": ["c1"]}},
     {"op": "move-block", "id": "tabs", "parent": "c1"}],
])
def test_hostile_patches_are_rejected_not_crashing(compiler, frozen, ids, operations):
    base = compiler.compile(frozen, json.dumps(full_proposal(ids))).document
    patch = {"version": 1, "patch": {"base_revision": "r", "operations": operations}}
    result = compiler.compile(frozen, json.dumps(patch), base_document=base, base_revision_id="r")
    assert result.outcome == "rejected" and result.document is None
    assert result.diagnostics[0].code in ("patch.operation-invalid", "patch.unknown-block", "proposal.children-cycle")
    assert result.diagnostics[0].location.startswith("/patch/operations/")


@pytest.mark.parametrize("title", ["<img src=x onerror=alert(1)>", "see evil.com/reset", "＜script＞"])
def test_the_title_is_screened(compiler, frozen, ids, title):
    proposal = full_proposal(ids)
    proposal["title"] = title
    result = compiler.compile(frozen, json.dumps(proposal))
    assert result.outcome == "rejected" and result.diagnostics[0].location == "/title"


def test_markup_in_keys_and_look_alikes_is_caught(compiler, frozen, ids):
    proposal = full_proposal(ids)
    proposal["blocks"][2]["data"]["text"] = "mailto:someone@example"
    assert [d.code for d in compiler.compile(frozen, json.dumps(proposal)).diagnostics] == ["component.prop-invalid"]


def test_block_ids_with_a_trailing_newline_are_refused(compiler, frozen, ids):
    proposal = full_proposal(ids)
    proposal["blocks"][0]["children"][1] = "intro\n"
    proposal["blocks"][2]["id"] = "intro\n"
    assert compiler.compile(frozen, json.dumps(proposal)).diagnostics[0].code == "proposal.block-invalid"


def test_no_new_children_under_a_stored_placeholder(compiler, frozen, ids):
    proposal = full_proposal(ids)
    proposal["blocks"][8]["data"]["title"] = "<i>x</i>"  # "note" becomes a placeholder
    base = compiler.compile(frozen, json.dumps(proposal)).document
    patch = {"version": 1, "patch": {"base_revision": "r", "operations": [
        {"op": "move-block", "id": "intro", "parent": "note"}]}}
    result = compiler.compile(frozen, json.dumps(patch), base_document=base, base_revision_id="r")
    assert result.outcome == "rejected" and result.diagnostics[0].code == "patch.operation-invalid"
