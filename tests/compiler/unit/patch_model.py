"""What a patch means, written out plainly: the oracle the patch tests compare the compiler with.

`Model` applies operations to proposal blocks by the rules in
services/compiler/patch.py and gives the resulting document as a snapshot
proposal (or the code of the operation that must refuse it). Compiling that
snapshot is what compiling the patch must equal, outcome, diagnostics,
document, content hash, A2UI messages and bindings alike.
"""

from __future__ import annotations

import copy
import json

BASE_REVISION = "rev-1"


class Model:
    """What a patch means (the rules in services/compiler/patch.py), written out plainly over proposal blocks.

    It yields the document a patch should produce, as a snapshot proposal, or the code of the operation that
    should refuse it. Compiling that snapshot is the oracle for compiling the patch.
    """

    def __init__(self, proposal: dict) -> None:
        self.blocks = {b["id"]: {**copy.deepcopy(b), "children": list(b.get("children", []))}
                       for b in proposal["blocks"]}
        listed = {child for b in self.blocks.values() for child in b["children"]}
        self.top = [block_id for block_id in self.blocks if block_id not in listed]  # as a snapshot's top
        self.document = {"id": proposal["id"], "title": proposal["title"]}

    def _lists(self) -> list[list[str]]:
        return [self.top, *(b["children"] for b in self.blocks.values())]

    def _place(self, block_id: str) -> tuple[str | None, int | None]:
        for parent, names in [(None, self.top), *((key, b["children"]) for key, b in self.blocks.items())]:
            if block_id in names:
                return parent, names.index(block_id)
        return None, None

    def _take(self, block_id: str) -> None:
        for names in self._lists():
            names[:] = [name for name in names if name != block_id]

    def _insert(self, block_id: str, parent: str | None, index: int | None) -> None:
        names = self.top if parent is None else self.blocks[parent]["children"]
        names.insert(len(names) if index is None else min(index, len(names)), block_id)

    def _drop(self, roots: list[str]) -> None:
        gone: set[str] = set()
        while roots:
            block_id = roots.pop()
            if block_id in self.blocks and block_id not in gone:
                gone.add(block_id)
                roots += self.blocks[block_id]["children"]
        for block_id in gone:
            del self.blocks[block_id]
        for names in self._lists():
            names[:] = [name for name in names if name not in gone]

    def below(self, block_id: str) -> set[str]:
        """The block and everything under it (for drawing operations that keep the tree a tree)."""
        found: set[str] = set()
        stack = [block_id]
        while stack:
            current = stack.pop()
            if current in self.blocks and current not in found:
                found.add(current)
                stack += self.blocks[current]["children"]
        return found

    def apply(self, op: dict) -> str | None:
        """Apply one operation; the code it is refused with, if it is."""
        if op["op"] == "remove-block":
            if op["id"] not in self.blocks:
                return "patch.unknown-block"
            self._drop([op["id"]])
            return None
        if op["op"] == "move-block":
            parent = op.get("parent")
            if op["id"] not in self.blocks or (parent is not None and parent not in self.blocks):
                return "patch.unknown-block"
            if parent == op["id"]:
                return "proposal.children-cycle"
            self._take(op["id"])
            self._insert(op["id"], parent, op.get("index"))
            return None
        return self._put(op)

    def _put(self, op: dict) -> str | None:
        block = copy.deepcopy(op["block"])
        block_id, children = block["id"], block.get("children", [])
        old = self.blocks.get(block_id)
        old_parent, old_index = self._place(block_id) if old else (None, None)
        self.blocks[block_id] = {**block, "children": []}
        for child in children:
            if child == block_id:
                return "proposal.children-cycle"
            if child not in self.blocks:
                return "patch.unknown-block"
        moves = old is None or "parent" in op or "index" in op
        parent = op.get("parent", old_parent)
        if moves and parent is not None and parent not in self.blocks:
            return "patch.unknown-block"
        if moves and parent == block_id:
            return "proposal.children-cycle"
        for child in children:  # adopted before anything is dropped
            self._take(child)
        self.blocks[block_id]["children"] = list(children)
        if moves:
            self._take(block_id)
            self._insert(block_id, parent, op["index"] if op.get("index") is not None else old_index)
        if old:
            self._drop([child for child in old["children"] if child not in children])
        return None

    def snapshot(self) -> dict:
        """The resulting document as a snapshot: depth-first from the top, then any block a cycle cut off."""
        order: list[str] = []

        def visit(block_id: str) -> None:
            if block_id in self.blocks and block_id not in order:
                order.append(block_id)
                for child in self.blocks[block_id]["children"]:
                    visit(child)

        for block_id in self.top:
            visit(block_id)
        order += [block_id for block_id in self.blocks if block_id not in order]
        blocks = [{key: value for key, value in self.blocks[b].items() if key != "children" or value} for b in order]
        return {"version": 1, **self.document, "blocks": blocks}


def assert_same_compile(patched, snapshot) -> None:
    assert patched.outcome == snapshot.outcome, (patched.diagnostics, snapshot.diagnostics)
    if patched.outcome == "rejected":  # locations differ by construction (/patch/... and /blocks/...)
        assert [(d.phase, d.code) for d in patched.diagnostics] == [(d.phase, d.code) for d in snapshot.diagnostics]
        return
    assert [(d.phase, d.code, d.message) for d in patched.diagnostics] == \
        [(d.phase, d.code, d.message) for d in snapshot.diagnostics]
    assert patched.document == snapshot.document and patched.content_hash == snapshot.content_hash
    assert patched.messages == snapshot.messages and patched.bindings == snapshot.bindings


def run_patch(compiler, frozen, base_proposal: dict, operations: list[dict]):
    """Compile `operations` against the compiled base; return the result, the model and the refused op (if any)."""
    base = compiler.compile(frozen, json.dumps(base_proposal))
    assert base.outcome == "compiled", base.diagnostics
    model = Model(base_proposal)
    assert model.top == base.document["top"]
    refused = next(((index, code) for index, op in enumerate(operations) if (code := model.apply(op))), None)
    patch = {"version": 1, "patch": {"base_revision": BASE_REVISION, "operations": operations}}
    result = compiler.compile(frozen, json.dumps(patch), base_document=base.document,
                              base_revision_id=BASE_REVISION)
    return result, model, refused


def assert_patch_matches_model(compiler, frozen, base_proposal: dict, operations: list[dict]):
    result, model, refused = run_patch(compiler, frozen, base_proposal, operations)
    if refused is not None:
        index, code = refused
        assert result.outcome == "rejected" and [d.code for d in result.diagnostics] == [code], result.diagnostics
        assert result.diagnostics[0].location.startswith(f"/patch/operations/{index}/")
        return result
    assert_same_compile(result, compiler.compile(frozen, json.dumps(model.snapshot())))
    return result
