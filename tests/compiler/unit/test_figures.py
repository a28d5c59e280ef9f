"""FigureText (§10b): the answer states its figures by binding result cells; the compiler checks every
placeholder against the slice's offers, and a bad figure fails its element alone, located."""

from __future__ import annotations

import copy

import pytest

from shared.ui.template import TemplateError, fill, parse_template, slot_names
from tests.fixtures.ui import RESOURCE, dumps, full_proposal

SENTENCE = {"id": "answer-text", "data": {
    "text": "{region} leads with {revenue} from {orders} orders.",
    "figures": {"region": {"resource": RESOURCE, "row": 0, "column": "region"},
                "revenue": {"resource": RESOURCE, "row": 0, "column": "revenue"},
                "orders": {"resource": RESOURCE, "column": "orders"}}}}


def with_sentence(ids, **changes) -> dict:
    proposal = full_proposal(ids)
    block = copy.deepcopy(SENTENCE)
    block["component"] = ids["FigureText"]
    for key, value in changes.items():
        block["data"][key] = value
    proposal["blocks"].append(block)
    proposal["blocks"][0]["children"].insert(1, "answer-text")
    return proposal


def compile_(compiler, frozen, proposal):
    return compiler.compile(frozen, dumps(proposal), surface_id="surface-1")


def test_figures_bind_cells_and_the_stream_carries_bindings_not_values(compiler, frozen, ids, a2ui_check):
    result = compile_(compiler, frozen, with_sentence(ids))
    assert result.outcome == "compiled", result.diagnostics
    a2ui_check(result.messages)
    figures = sorted((b.prop, b.column_ids, b.row) for b in result.bindings if b.block_id == "answer-text")
    assert figures == [("/figures/orders", ["orders"], 0), ("/figures/region", ["region"], 0),
                       ("/figures/revenue", ["revenue"], 0)]
    component = next(c for c in result.messages[1]["updateComponents"]["components"] if c["id"] == "answer-text")
    assert component["figures"]["revenue"] == {"resource": {"path": "/resources/res_1"}, "row": 0,
                                               "column": "revenue"}
    stored = next(b for b in result.document["blocks"] if b["id"] == "answer-text")
    assert stored["data"]["figures"]["orders"] == {"resource": {"resource": "res_1", "offer": RESOURCE["offer"]},
                                                   "row": 0, "column": "orders"}


def test_a_patch_keeps_a_stored_sentence_bound_to_the_same_cells(compiler, frozen, ids):
    first = compile_(compiler, frozen, with_sentence(ids))
    patch = {"version": 1, "patch": {"base_revision": "rev-1", "operations": [{"op": "remove-block", "id": "rule"}]}}
    second = compiler.compile(frozen, dumps(patch), base_document=first.document, base_revision_id="rev-1",
                              surface_id="surface-1")
    assert second.outcome == "compiled", second.diagnostics
    assert [b for b in second.bindings if b.block_id == "answer-text"] == \
        [b for b in first.bindings if b.block_id == "answer-text"]


def _figure(name, **changes):
    figures = copy.deepcopy(SENTENCE["data"]["figures"])
    figures[name].update(changes)
    return figures


@pytest.mark.parametrize("changes,code,where", [
    ({"text": "{region} leads with {revenu}."}, "text.figure-unknown", "/text"),
    ({"text": "{region} leads with {revenue}."}, "text.figure-unused", "/figures/orders"),
    ({"text": "{region} leads {with {revenue} {orders}."}, "text.template-invalid", "/text"),
    ({"figures": _figure("revenue", column="secret")}, "resource.column-not-offered", "/figures/revenue/column"),
    ({"figures": _figure("revenue", column="nope")}, "resource.column-not-offered", "/figures/revenue/column"),
    ({"figures": _figure("orders", row=12)}, "resource.row-out-of-range", "/figures/orders/row"),
    ({"figures": _figure("region", resource={"ref": "resource-000009", "offer": RESOURCE["offer"]})},
     "catalog.resource-not-offered", "/figures/region/resource/ref"),
    ({"figures": _figure("region", resource={"ref": "resource-000001", "offer": "0" * 16})},
     "resource.offer-hash-denied", "/figures/region/resource/offer"),
])
def test_a_bad_figure_fails_its_element_alone_with_a_located_diagnostic(compiler, frozen, ids, changes, code,
                                                                         where):
    proposal = with_sentence(ids, **changes)
    result = compile_(compiler, frozen, proposal)
    assert result.outcome == "partial"
    [finding] = result.diagnostics
    index = next(i for i, b in enumerate(proposal["blocks"]) if b["id"] == "answer-text")
    assert (finding.code, finding.location) == (code, f"/blocks/{index}/data{where}")
    blocks = {b["id"]: b["component"] for b in result.document["blocks"]}
    assert blocks["answer-text"] == "Placeholder" and blocks["t1"] == "DataTable"
    assert not [b for b in result.bindings if b.block_id == "answer-text"]


def test_a_sentence_cannot_smuggle_values_or_more_than_eight_figures(compiler, frozen, ids):
    many = {f"f{i}": {"resource": RESOURCE, "column": "orders"} for i in range(9)}
    proposal = with_sentence(ids, text=" ".join(f"{{f{i}}}" for i in range(9)), figures=many)
    [finding] = compile_(compiler, frozen, proposal).diagnostics
    assert finding.code == "component.prop-invalid"
    rows = "a,b,c\n1,2,3\n4,5,6\n7,8,9"
    [finding] = compile_(compiler, frozen, with_sentence(ids, text=rows + " {region} {revenue} {orders}")).diagnostics
    assert finding.code == "component.prop-invalid" and "rows" in finding.message


def test_templates_parse_and_fill():
    assert slot_names("{a} and {{literal}} and {b_2}") == ["a", "b_2"]
    assert fill("{a} of {{b}}", {"a": "3,284"}) == "3,284 of {b}"
    assert fill("{a} then {b}", {"a": "1"}) == "1 then …"
    assert parse_template("plain") == ["plain"]
    for bad in ("{A}", "a } b", "{", "{ a }"):
        with pytest.raises(TemplateError):
            parse_template(bad)
