"""Patches: put-block, remove-block and move-block applied to the base document (§6).

The whole patch is applied to the base first; the document it produces is
then checked once, by the same `check_tree` a snapshot goes through, so a
patch compiles exactly as the snapshot of its result does. An operation
checks only itself: its shape, and that the blocks it names exist when it
runs (and that a placeholder kept from the base gets no new children).
Between operations the blocks may take any shape (a cycle one move makes,
the next may undo), so the edits rely on nothing structural: the children
lists are the only record of where a block sits (no parent map to drift
out of step) and every walk carries a seen-set.

What the operations do (an index past the end means the end):
- put-block: the new version replaces the block's record. Then, in order:
  the blocks it lists as children are taken from wherever they are; the
  block is placed — a new one under `parent` (absent or null: the top
  level) at `index` (default: the end), an existing one moved only if
  `parent` or `index` is given (defaults: where it is); last, every old
  child it no longer lists goes, with everything under it. So a child
  adopted from a subtree the same put drops stays (issue #13).
- remove-block: the block and everything under it go.
- move-block: the block goes under `parent` (absent or null: the top level)
  at `index` (default: the end).
A block listed as its own child, or put or moved inside itself, is refused
at that operation: that is wrong whatever the document looks like.
"""

from __future__ import annotations

from collections.abc import Callable

from services.compiler.diagnostics import Rejected
from services.compiler.proposal import BLOCK_KEYS, RawBlock, Tree, check_tree, is_block_id, raw_block, reject
from shared.ui.slice import MAX_PATCH_OPERATIONS

PLACEHOLDER = "Placeholder"


def _base_invalid(message: str, location: str) -> Rejected:
    return reject("patch", "patch.base-invalid", f"the base document is not a compiled document: {message}",
                  location, correctable=False)


def _base_block(value: object, pointer: str) -> RawBlock:
    if not isinstance(value, dict) or set(value) - BLOCK_KEYS or not is_block_id(value.get("id")) \
            or not isinstance(value.get("component"), str):
        raise _base_invalid("a block is {id, component, data, children?}", pointer)
    children = value.get("children", [])
    if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
        raise _base_invalid("children is a list of block ids", f"{pointer}/children")
    return RawBlock(value["id"], value["component"], value.get("data"), list(children), pointer, from_base=True)


def base_tree(document: object) -> Tree:
    """The host-stored canonical document a patch applies to: trusted, but checked, so no shape crashes us."""
    if not isinstance(document, dict) or not isinstance(document.get("id"), str) \
            or not isinstance(document.get("blocks"), list) or not isinstance(document.get("top"), list) \
            or not all(isinstance(b, str) for b in document["top"]) \
            or not isinstance(document.get("title"), str | None):
        raise _base_invalid("it needs id, top, blocks and an optional title", "/base")
    tree = Tree(document["id"], document.get("title"), {}, top=list(document["top"]))
    for index, value in enumerate(document["blocks"]):
        block = _base_block(value, f"/base/blocks/{index}")
        if block.id in tree.blocks:
            raise _base_invalid(f"block id {block.id!r} is used twice", f"/base/blocks/{index}/id")
        tree.blocks[block.id] = block
    try:
        return check_tree(tree, len(tree.blocks), "/base")
    except Rejected as rejected:
        raise _base_invalid(rejected.finding.message, rejected.finding.location) from None


def _operations(raw: dict, base: object, base_revision_id: str) -> list:
    patch = raw.get("patch")
    if set(raw) - {"version", "patch"} or not isinstance(patch, dict) or set(patch) - {"base_revision", "operations"}:
        raise reject("envelope", "proposal.envelope-invalid", "a patch is {version: 1, patch: {base_revision, "
                                                              "operations}}", "/patch")
    if base is None:
        raise reject("patch", "patch.no-base", "there is no revision to patch yet; send a snapshot", "/patch")
    if patch.get("base_revision") != base_revision_id:
        shown = patch.get("base_revision")
        raise reject("patch", "patch.base-mismatch",
                     f"the patch is based on {str(shown)[:80]!r} but the current revision is {base_revision_id!r}",
                     "/patch/base_revision", hint="patch the current revision")
    operations = patch.get("operations")
    if not isinstance(operations, list) or not 1 <= len(operations) <= MAX_PATCH_OPERATIONS:
        raise reject("envelope", "proposal.envelope-invalid",
                     f"operations is a list of 1-{MAX_PATCH_OPERATIONS}", "/patch/operations")
    return operations


def apply_patch(raw: dict, base: object, base_revision_id: str, max_blocks: int) -> Tree:
    """The document a patch makes of the base, checked as a snapshot's would be; Rejected says why not."""
    operations = _operations(raw, base, base_revision_id)
    patched = PatchedTree(base_tree(base))
    for index, operation in enumerate(operations):
        patched.apply(operation, f"/patch/operations/{index}")
    return patched.checked(max_blocks)


class PatchedTree:
    """The base document, edited by one operation after another; `checked` is the document they made.

    The children lists (and the explicit top level) are the only record of where a block sits; `placed`
    keeps which pointer placed each block last, for the diagnostics of the final check.
    """

    def __init__(self, base: Tree) -> None:
        self.tree = base
        self.blocks = base.blocks
        self.top = base.top = base.top if base.top is not None else []  # a patched document has an explicit top

    def checked(self, max_blocks: int) -> Tree:
        return check_tree(self.tree, max_blocks, "/patch")

    def apply(self, operation: object, pointer: str) -> None:
        """One operation, after checking its op and keys; its own checks refuse the rest."""
        op = operation.get("op") if isinstance(operation, dict) else None
        entry = _OPERATIONS.get(op) if isinstance(op, str) else None
        if entry is None:
            raise reject("patch", "patch.operation-invalid", "op is put-block, remove-block or move-block",
                         f"{pointer}/op")
        keys, handler = entry
        extra = set(operation) - keys
        if extra:
            raise reject("patch", "patch.operation-invalid", f"unknown key {sorted(extra)[0][:40]!r} in {op}",
                         pointer)
        handler(self, operation, pointer)

    # --- the three operations ---------------------------------------------------------------------------

    def put(self, operation: dict, pointer: str) -> None:
        block = raw_block(operation.get("block"), f"{pointer}/block")
        old = self.blocks.get(block.id)
        place, position = self._place_of(block.id) if old is not None else (None, None)
        self.blocks[block.id] = block  # replaces the old version in place (its position in the dict too)
        self._check_children(block, pointer)
        moves = old is None or "parent" in operation or "index" in operation
        if moves:  # checked before anything changes: adopting removes no block, so the answers still hold below
            parent = self._parent(operation.get("parent", place), pointer, place)
            index = _index(operation, pointer, position)
            if parent == block.id:
                raise reject("patch", "proposal.children-cycle", "a block cannot go inside itself",
                             f"{pointer}/parent")
        self._adopt(block, pointer)
        if moves:
            self._detach(block.id)
            self._attach(block.id, parent, index, pointer)
        if old is not None:
            kept = set(block.children)
            self._delete([child for child in old.children if child not in kept])

    def remove(self, operation: dict, pointer: str) -> None:
        self._delete([self._named(operation, pointer, "remove")])

    def move(self, operation: dict, pointer: str) -> None:
        block_id = self._named(operation, pointer, "move")
        current, _ = self._place_of(block_id)
        parent = self._parent(operation.get("parent"), pointer, current)  # absent or null: the top level
        if parent == block_id:
            raise reject("patch", "proposal.children-cycle", "a block cannot go inside itself", f"{pointer}/parent")
        index = _index(operation, pointer, None)
        self._detach(block_id)
        self._attach(block_id, parent, index, pointer)

    # --- what an operation checks -----------------------------------------------------------------------

    def _check_children(self, block: RawBlock, pointer: str) -> None:
        for index, child in enumerate(block.children):
            if child == block.id:  # wrong whatever the document looks like: refused here, where it is written
                raise reject("patch", "proposal.children-cycle", "a block cannot be its own child",
                             f"{pointer}/block/children/{index}")
            if child not in self.blocks:
                raise reject("patch", "patch.unknown-block", f"no block {child[:40]!r} to take as a child",
                             f"{pointer}/block/children/{index}")

    def _named(self, operation: dict, pointer: str, verb: str) -> str:
        block_id = operation.get("id")
        if not isinstance(block_id, str):
            raise reject("patch", "patch.operation-invalid", "id is a block id", f"{pointer}/id")
        if block_id not in self.blocks:
            raise reject("patch", "patch.unknown-block", f"no block {block_id[:40]!r} to {verb}", f"{pointer}/id")
        return block_id

    def _parent(self, parent: object, pointer: str, current: str | None) -> str | None:
        """The checked target parent (None: the top level); `current` is where the block sits now."""
        if parent is None:
            return None
        if not isinstance(parent, str):
            raise reject("patch", "patch.operation-invalid", "parent is a block id or null", f"{pointer}/parent")
        holder = self.blocks.get(parent)
        if holder is None:
            raise reject("patch", "patch.unknown-block", f"no block {parent[:40]!r} to put children in",
                         f"{pointer}/parent")
        if parent != current and holder.from_base and holder.component == PLACEHOLDER:
            raise reject("patch", "patch.operation-invalid", "a placeholder takes no new children",
                         f"{pointer}/parent")
        return parent

    # --- edits of the children lists ----------------------------------------------------------------------

    def _lists(self) -> list[list[str]]:
        return [self.top, *(block.children for block in self.blocks.values())]

    def _place_of(self, block_id: str) -> tuple[str | None, int | None]:
        """The parent (None: top level) and position of a block; (None, None) if it is listed nowhere."""
        if block_id in self.top:
            return None, self.top.index(block_id)
        for block in self.blocks.values():
            if block_id in block.children:
                return block.id, block.children.index(block_id)
        return None, None

    def _detach(self, block_id: str) -> None:
        for names in self._lists():
            while block_id in names:
                names.remove(block_id)

    def _attach(self, block_id: str, parent: str | None, index: int | None, pointer: str) -> None:
        """Insert under a parent the caller has just checked exists (None: the top level)."""
        names = self.top if parent is None else self.blocks[parent].children
        names.insert(len(names) if index is None else min(index, len(names)), block_id)
        self._placed(block_id, pointer)

    def _placed(self, block_id: str, pointer: str) -> None:
        self.tree.placed.pop(block_id, None)  # re-inserted: the dict's order is the order of placement
        self.tree.placed[block_id] = pointer

    def _adopt(self, block: RawBlock, pointer: str) -> None:
        """Take the listed children from wherever they are, before anything is dropped (they may sit in a
        subtree the same put drops: adopted, they stay)."""
        children, block.children = block.children, []
        for child in dict.fromkeys(children):
            self._detach(child)
        block.children = children
        for index, child in enumerate(children):
            self._placed(child, f"{pointer}/block/children/{index}")

    def _delete(self, roots: list[str]) -> None:
        """Remove the roots and everything under them, and every mention of them."""
        gone: set[str] = set()
        stack = list(roots)
        while stack:
            block_id = stack.pop()
            if block_id in gone or block_id not in self.blocks:
                continue
            gone.add(block_id)
            stack.extend(self.blocks[block_id].children)
        for block_id in gone:
            self.blocks.pop(block_id, None)
            self.tree.placed.pop(block_id, None)
        for names in self._lists():
            names[:] = [name for name in names if name not in gone]


def _index(operation: dict, pointer: str, default: int | None) -> int | None:
    index = operation.get("index")
    if index is None:
        return default
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise reject("patch", "patch.operation-invalid", "index is a whole number ≥ 0", f"{pointer}/index")
    return index


_OPERATIONS: dict[str, tuple[frozenset[str], Callable[[PatchedTree, dict, str], None]]] = {
    "put-block": (frozenset({"op", "block", "parent", "index"}), PatchedTree.put),
    "remove-block": (frozenset({"op", "id"}), PatchedTree.remove),
    "move-block": (frozenset({"op", "id", "parent", "index"}), PatchedTree.move),
}
