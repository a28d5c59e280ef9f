"""Captions and formats of bound results are the gateway's (§10b): a proposal can neither set nor hide them."""

from __future__ import annotations

import pytest

from tests.fixtures.ui import INTERPRETATION, dumps, full_proposal


def compile_(compiler, frozen, proposal):
    return compiler.compile(frozen, dumps(proposal), surface_id="surface-1")


def _data_model(result) -> dict:
    return {m["updateDataModel"]["path"]: m["updateDataModel"]["value"] for m in result.messages
            if "updateDataModel" in m}


def test_a_heading_that_claims_a_filter_still_sits_over_the_unfiltered_caption(compiler, frozen, ids):
    proposal = full_proposal(ids)
    heading = next(b for b in proposal["blocks"] if b["id"] == "title")
    heading["data"]["text"] = "Net revenue by region in 2025"
    result = compile_(compiler, frozen, proposal)
    assert result.outcome == "compiled"
    resource = _data_model(result)["/resources/res_1"]
    assert resource["interpretation"]["text"] == INTERPRETATION.text
    assert resource["interpretation"]["filters"] == [] and "no filter" in resource["interpretation"]["text"]
    # The evidence note of the same result says the same in words.
    assert _data_model(result)["/evidence/ev_1"]["computed"] == INTERPRETATION.text
    # Formats come with the columns, from the descriptor (the semantic model), not from the proposal.
    revenue = next(c for c in resource["columns"] if c["id"] == "revenue")
    assert revenue["format"] == {"style": "currency", "currency": "USD"}


@pytest.mark.parametrize("block_id,prop,value,code", [
    ("total", "caption", "Net revenue in 2025", "component.caption-not-settable"),
    ("total", "Interpretation", {"text": "filtered"}, "component.caption-not-settable"),
    ("total", "format", "currency", "component.format-not-settable"),
    ("c1", "subtitle", "2025 only", "component.caption-not-settable"),
    ("t1", "footnote", "", "component.caption-not-settable"),
    ("t1", "formats", {"revenue": "percent"}, "component.format-not-settable"),
    ("ev", "caption", "Audited figures", "component.caption-not-settable"),
])
def test_a_caption_or_format_in_a_proposal_is_refused_with_its_own_code(compiler, frozen, ids, block_id, prop,
                                                                         value, code):
    proposal = full_proposal(ids)
    block = next(b for b in proposal["blocks"] if b["id"] == block_id)
    block["data"][prop] = value
    result = compile_(compiler, frozen, proposal)
    assert result.outcome == "partial"
    [finding] = result.diagnostics
    assert finding.code == code and finding.location == f"/blocks/{proposal['blocks'].index(block)}/data/{prop}"
    # The block fails alone; the caption of the result still reaches the others bound to it.
    blocks = {b["id"]: b for b in result.document["blocks"]}
    assert blocks[block_id]["component"] == "Placeholder"
    assert _data_model(result)["/resources/res_1"]["interpretation"]["text"] == INTERPRETATION.text


def test_unbound_text_may_still_say_caption_in_its_words(compiler, frozen, ids):
    proposal = full_proposal(ids)
    intro = next(b for b in proposal["blocks"] if b["id"] == "intro")
    intro["data"]["text"] = "The caption under each chart says what was computed."
    assert compile_(compiler, frozen, proposal).outcome == "compiled"
