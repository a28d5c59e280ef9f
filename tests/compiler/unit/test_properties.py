"""Property tests: no input makes Compile raise, and a patch equals its snapshot."""

from __future__ import annotations

import collections
import copy
import json

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.compiler.unit.patch_model import Model, assert_patch_matches_model
from tests.fixtures.fuzz import fuzz_settings
from tests.fixtures.ui import full_proposal

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=30)


def check_invariants(result, a2ui_check):
    assert result.outcome in ("compiled", "partial", "rejected")
    if result.outcome == "rejected":
        assert result.document is None and result.messages == [] and len(result.diagnostics) == 1
    else:
        assert result.document is not None and len(result.content_hash) == 64
        assert (result.outcome == "partial") == bool(result.diagnostics)
        a2ui_check(result.messages)


@SETTINGS
@given(value=json_values)
def test_random_json_never_escapes(compiler, frozen, a2ui_check, value):
    check_invariants(compiler.compile(frozen, json.dumps(value)), a2ui_check)


@SETTINGS
@given(text=st.text(max_size=200))
def test_random_text_never_escapes(compiler, frozen, a2ui_check, text):
    check_invariants(compiler.compile(frozen, text), a2ui_check)


@SETTINGS
@given(data=st.data())
def test_adversarial_edits_of_a_valid_proposal(compiler, frozen, ids, a2ui_check, data):
    proposal = full_proposal(ids)
    blocks = proposal["blocks"]
    for _ in range(data.draw(st.integers(1, 4))):
        block = blocks[data.draw(st.integers(0, len(blocks) - 1))]
        edit = data.draw(st.sampled_from(["data", "prop", "component", "children", "id", "drop"]))
        if edit == "data":
            block["data"] = data.draw(json_values)
        elif edit == "prop" and isinstance(block.get("data"), dict):
            block["data"][data.draw(st.sampled_from(["text", "resource", "columns", "spec", "label", "x"]))] = \
                data.draw(json_values)
        elif edit == "component":
            block["component"] = data.draw(st.sampled_from([*ids.values(), "Placeholder", "component-000777", ""]))
        elif edit == "children":
            block["children"] = data.draw(st.lists(st.sampled_from([b["id"] for b in blocks] + ["ghost"]),
                                                   max_size=4))
        elif edit == "id":
            block["id"] = data.draw(st.sampled_from(["root", "Bad Id", blocks[0]["id"], "fresh"]))
        elif len(blocks) > 1:
            blocks.remove(block)
    check_invariants(compiler.compile(frozen, json.dumps(proposal)), a2ui_check)


def _variant(ids, order: list[str]) -> dict:
    proposal = full_proposal(ids)
    proposal["blocks"][0]["children"] = order
    keep = set(order)

    def subtree(block_id):
        block = next(b for b in proposal["blocks"] if b["id"] == block_id)
        found = [block_id]
        for child in block.get("children", []):
            found += subtree(child)
        return found

    wanted = {"main"} | {b for top in keep for b in subtree(top)}
    proposal["blocks"] = [b for b in proposal["blocks"] if b["id"] in wanted]
    return proposal


def _patch_from(ids, target: dict, base_doc: dict) -> dict:
    """A patch that turns the base document into the target snapshot."""
    operations = [{"op": "remove-block", "id": child} for child in
                  next(b for b in base_doc["blocks"] if b["id"] == "main").get("children", [])]
    by_id = {b["id"]: b for b in target["blocks"]}
    main = by_id["main"]

    def put(block_id, parent, index):
        block = copy.deepcopy(by_id[block_id])
        children = block.pop("children", [])
        operations.append({"op": "put-block", "block": block, "parent": parent, "index": index})
        for position, child in enumerate(children):
            put(child, block_id, position)

    for position, child in enumerate(main["children"]):
        put(child, "main", position)
    return {"version": 1, "patch": {"base_revision": "rev-1", "operations": operations}}


TOP = ["title", "intro", "figures", "tabs", "note", "controls", "rule"]


@SETTINGS
@given(first=st.permutations(TOP), second=st.permutations(TOP), cut_first=st.integers(1, 7),
       cut_second=st.integers(1, 7))
def test_a_patch_and_its_snapshot_have_the_same_content_hash(compiler, frozen, ids, first, second, cut_first,
                                                             cut_second):
    base = compiler.compile(frozen, json.dumps(_variant(ids, list(first[:cut_first]))))
    target = _variant(ids, list(second[:cut_second]))
    snapshot = compiler.compile(frozen, json.dumps(target))
    patched = compiler.compile(frozen, json.dumps(_patch_from(ids, target, base.document)),
                               base_document=base.document, base_revision_id="rev-1")
    assert snapshot.outcome == patched.outcome == "compiled", (snapshot.diagnostics, patched.diagnostics)
    assert patched.content_hash == snapshot.content_hash
    assert patched.document == snapshot.document


# --- any sequence of operations: the patch compiles as the snapshot of its result ------------------------------

FRESH = ["n1", "n2", "n3"]
ALL_IDS = [b["id"] for b in full_proposal(collections.defaultdict(str))["blocks"]]  # block ids; components unused
KINDS = {"Column": {"gap": "small"}, "Row": {}, "Card": {"title": "Put"}, "Text": {"text": "Put."}, "Divider": {}}


def _put_block(data, ids, block_id: str, children: list[str]) -> dict:
    original = {b["id"]: b for b in full_proposal(ids)["blocks"]}
    kind = data.draw(st.sampled_from([*KINDS, "original"] if block_id in original else list(KINDS)))
    block = {"id": block_id, "component": ids[kind], "data": copy.deepcopy(KINDS[kind])} if kind != "original" \
        else {k: v for k, v in copy.deepcopy(original[block_id]).items() if k != "children"}
    return {**block, "children": children} if children or data.draw(st.booleans()) else block


def draw_operation(data, ids, model: Model) -> dict:
    """Mostly operations that make sense for the document as it is now (and mostly keep it a tree); now and
    then one naming a block that is gone (removed, dropped) or never was, or closing a cycle."""
    existing = sorted(model.blocks) or FRESH
    anywhere = sorted(set(ALL_IDS + FRESH) | set(existing))

    def name(avoid: set[str] = frozenset()) -> str:
        usual = [b for b in existing if b not in avoid] or existing
        return data.draw(st.sampled_from(anywhere if data.draw(st.integers(0, 15)) == 0 else usual))

    kind = data.draw(st.sampled_from(["put", "put", "put", "move", "move", "remove"]))
    block_id = name()
    if kind == "remove":
        return {"op": "remove-block", "id": block_id}
    where = {}
    if data.draw(st.booleans()):
        where["parent"] = None if data.draw(st.integers(0, 3)) == 0 else name(model.below(block_id))
    if data.draw(st.booleans()):
        where["index"] = data.draw(st.integers(0, 6))
    if kind == "move":
        return {"op": "move-block", "id": block_id, **where}
    above = {b for b in model.blocks if block_id in model.below(b)}
    children = [name(above) for _ in range(data.draw(st.integers(0, 4)))]
    if data.draw(st.integers(0, 9)):  # now and then a child listed twice: refused, as in a snapshot
        children = list(dict.fromkeys(children))
    return {"op": "put-block", "block": _put_block(data, ids, block_id, children), **where}


@fuzz_settings(200)  # fixed in `make test`, searched further by `make fuzz`
@given(data=st.data(), top=st.lists(st.sampled_from(TOP), min_size=1, max_size=7, unique=True))
def test_any_sequence_of_operations_compiles_as_its_snapshot(compiler, frozen, ids, data, top):
    base_proposal = _variant(ids, top)
    model = Model(base_proposal)
    operations = []
    for _ in range(data.draw(st.integers(1, 8))):
        operations.append(draw_operation(data, ids, model))
        if model.apply(operations[-1]):
            break  # the patch is refused here: nothing after it counts
    result = assert_patch_matches_model(compiler, frozen, base_proposal, operations)
    event(f"{result.outcome}: {result.diagnostics[0].code if result.diagnostics else 'clean'}")
