"""Proposal envelopes: snapshots, patches, and the block tree (§6).

Turns untrusted proposal JSON into an ordered tree of raw blocks, or rejects
the envelope. Per-block checks happen later (compile.py); here only what
makes a surface impossible is refused: bad JSON, bounds, duplicate ids,
children that do not form a tree, too many blocks, a patch on the wrong base.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from services.compiler.diagnostics import Finding, Rejected
from shared.bounded_json import BoundedJsonError, parse
from shared.ui.slice import MAX_PATCH_OPERATIONS

BLOCK_ID = re.compile(r"[a-z][a-z0-9-]{0,31}")  # used with fullmatch: no trailing newline slips through
RESERVED_IDS = frozenset({"root"})  # the synthesized A2UI root
MAX_DEPTH = 8
_JSON_CODES = {"json.syntax": "proposal.not-json", "json.duplicate-key": "proposal.duplicate-key",
               "json.non-finite": "proposal.not-json", "json.lone-surrogate": "proposal.invalid-text",
               "json.encoding": "proposal.invalid-text", "json.non-json-type": "proposal.not-json"}


@dataclass
class RawBlock:
    id: str
    component: str  # a slice id from the proposal, or a contract name from the base document
    data: object
    children: list[str]
    pointer: str  # where the block came from, for diagnostics
    from_base: bool = False


@dataclass
class Tree:
    document_id: str
    title: str | None
    blocks: dict[str, RawBlock]
    top: list[str] = field(default_factory=list)

    def ordered(self) -> list[RawBlock]:
        """Depth-first, in document order: the canonical block order."""
        out: list[RawBlock] = []

        def visit(block_id: str) -> None:
            out.append(self.blocks[block_id])
            for child in self.blocks[block_id].children:
                visit(child)

        for block_id in self.top:
            visit(block_id)
        return out


def _reject(phase: str, code: str, message: str, location: str = "", hint: str = "",
            correctable: bool = True) -> Rejected:
    return Rejected(Finding(phase, code, message, location, hint, model_correctable=correctable))


def decode(text: str, max_bytes: int, max_blocks: int) -> object:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise _reject("bounds", "proposal.too-large", f"the proposal is {size} bytes; the limit is {max_bytes}",
                      hint="send fewer or smaller blocks")
    try:
        return parse(text)
    except BoundedJsonError as exc:
        code = _JSON_CODES.get(exc.code, "proposal.too-large")
        raise _reject("decode", code, str(exc), exc.pointer) from None


def _raw_block(value: object, pointer: str) -> RawBlock:
    if not isinstance(value, dict):
        raise _reject("envelope", "proposal.block-invalid", "a block is an object", pointer)
    block_id = value.get("id")
    if not isinstance(block_id, str) or not BLOCK_ID.fullmatch(block_id) or block_id in RESERVED_IDS:
        raise _reject("envelope", "proposal.block-invalid",
                      "a block id is 1-32 characters a-z, 0-9 and '-', starting with a letter (not 'root')",
                      f"{pointer}/id")
    extra = set(value) - {"id", "component", "data", "children"}
    if extra:
        raise _reject("envelope", "proposal.block-invalid", f"unknown block key {sorted(extra)[0]!r}", pointer)
    children = value.get("children", [])
    if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
        raise _reject("envelope", "proposal.block-invalid", "children is a list of block ids", f"{pointer}/children")
    component = value.get("component")
    return RawBlock(block_id, component if isinstance(component, str) else "", value.get("data"), list(children),
                    pointer)


def _check_tree(tree: Tree, max_blocks: int, where: str) -> Tree:
    if len(tree.blocks) > max_blocks:
        raise _reject("limits", "proposal.too-many-blocks",
                      f"{len(tree.blocks)} blocks; a surface holds at most {max_blocks}", where)
    parent: dict[str, str] = {}
    for block in tree.blocks.values():
        for index, child in enumerate(block.children):
            if child not in tree.blocks:
                raise _reject("envelope", "proposal.unknown-child", f"block {block.id!r} lists unknown child "
                                                                    f"{child!r}", f"{block.pointer}/children/{index}")
            if child in parent or child == block.id:
                raise _reject("envelope", "proposal.children-cycle" if child == block.id else
                              "proposal.child-reused", f"block {child!r} has more than one parent",
                              f"{block.pointer}/children/{index}")
            parent[child] = block.id
    tree.top = [b for b in tree.top if b not in parent] if tree.top else [b for b in tree.blocks if b not in parent]
    reached = 0
    depth_seen = 0
    stack = [(b, 1) for b in tree.top]
    while stack:
        block_id, depth = stack.pop()
        reached += 1
        depth_seen = max(depth_seen, depth)
        stack.extend((c, depth + 1) for c in tree.blocks[block_id].children)
    if reached != len(tree.blocks):
        raise _reject("envelope", "proposal.children-cycle", "children form a cycle; blocks must form a tree", where)
    if depth_seen > MAX_DEPTH:
        raise _reject("limits", "proposal.too-deep", f"blocks nest {depth_seen} deep; the limit is {MAX_DEPTH}",
                      where)
    if not tree.top:
        raise _reject("envelope", "proposal.empty", "the proposal has no blocks", where)
    return tree


def snapshot_tree(raw: dict, max_blocks: int) -> Tree:
    extra = set(raw) - {"version", "id", "title", "blocks"}
    if extra:
        raise _reject("envelope", "proposal.envelope-invalid", f"unknown key {sorted(extra)[0]!r}", "")
    document_id, title, blocks = raw.get("id"), raw.get("title"), raw.get("blocks")
    if not isinstance(document_id, str) or not 1 <= len(document_id) <= 64:
        raise _reject("envelope", "proposal.envelope-invalid", "id is a non-empty string (≤ 64)", "/id")
    if title is not None and (not isinstance(title, str) or not 1 <= len(title) <= 120):
        raise _reject("envelope", "proposal.envelope-invalid", "title is a string of 1-120 characters", "/title")
    if not isinstance(blocks, list) or not blocks:
        raise _reject("envelope", "proposal.envelope-invalid", "blocks is a non-empty list", "/blocks")
    if len(blocks) > max_blocks:
        raise _reject("limits", "proposal.too-many-blocks", f"{len(blocks)} blocks; at most {max_blocks}", "/blocks")
    tree = Tree(document_id, title, {})
    for index, value in enumerate(blocks):
        block = _raw_block(value, f"/blocks/{index}")
        if block.id in tree.blocks:
            raise _reject("envelope", "proposal.duplicate-block-id", f"block id {block.id!r} is used twice",
                          f"/blocks/{index}/id")
        tree.blocks[block.id] = block
    return _check_tree(tree, max_blocks, "/blocks")


def base_tree(document: dict) -> Tree:
    """The host-stored canonical document a patch applies to (trusted, already compiled)."""
    tree = Tree(document["id"], document.get("title"), {})
    for index, block in enumerate(document["blocks"]):
        tree.blocks[block["id"]] = RawBlock(block["id"], block["component"], block["data"],
                                            list(block.get("children", [])), f"/base/blocks/{index}", from_base=True)
    tree.top = list(document.get("top", []))
    return tree


def apply_patch(raw: dict, base: dict | None, base_revision_id: str, max_blocks: int) -> Tree:
    extra = set(raw) - {"version", "patch"}
    patch = raw.get("patch")
    if extra or not isinstance(patch, dict) or set(patch) - {"base_revision", "operations"}:
        raise _reject("envelope", "proposal.envelope-invalid", "a patch is {version: 1, patch: {base_revision, "
                                                               "operations}}", "/patch")
    if base is None:
        raise _reject("patch", "patch.no-base", "there is no revision to patch yet; send a snapshot", "/patch")
    if patch.get("base_revision") != base_revision_id:
        raise _reject("patch", "patch.base-mismatch",
                      f"the patch is based on {patch.get('base_revision')!r} but the current revision is "
                      f"{base_revision_id!r}", "/patch/base_revision", hint="patch the current revision")
    operations = patch.get("operations")
    if not isinstance(operations, list) or not 1 <= len(operations) <= MAX_PATCH_OPERATIONS:
        raise _reject("envelope", "proposal.envelope-invalid",
                      f"operations is a list of 1-{MAX_PATCH_OPERATIONS}", "/patch/operations")
    tree = base_tree(base)
    parent_of = {c: b.id for b in tree.blocks.values() for c in b.children}

    def siblings(parent: str | None, pointer: str) -> list[str]:
        if parent is None:
            return tree.top
        if parent not in tree.blocks:
            raise _reject("patch", "patch.unknown-block", f"no block {parent!r} to put children in", pointer)
        return tree.blocks[parent].children

    def detach(block_id: str) -> None:
        holder = siblings(parent_of.get(block_id), "")
        holder.remove(block_id)
        parent_of.pop(block_id, None)

    def attach(block_id: str, parent: object, index: object, pointer: str) -> None:
        if parent is not None and not isinstance(parent, str):
            raise _reject("patch", "patch.operation-invalid", "parent is a block id or null", f"{pointer}/parent")
        if parent in tree.blocks and tree.blocks[parent].from_base and tree.blocks[parent].component == "Placeholder":
            raise _reject("patch", "patch.operation-invalid", "a placeholder takes no new children",
                          f"{pointer}/parent")
        holder = siblings(parent, f"{pointer}/parent")
        position = len(holder) if index is None else index
        if not isinstance(position, int) or isinstance(position, bool) or position < 0:
            raise _reject("patch", "patch.operation-invalid", "index is a whole number ≥ 0", f"{pointer}/index")
        holder.insert(min(position, len(holder)), block_id)
        if parent is not None:
            parent_of[block_id] = parent

    def subtree(block_id: str) -> list[str]:
        found = [block_id]
        for child in tree.blocks[block_id].children:
            found += subtree(child)
        return found

    for index, operation in enumerate(operations):
        pointer = f"/patch/operations/{index}"
        op = operation.get("op") if isinstance(operation, dict) else None
        if op == "put-block":
            block = _raw_block(operation.get("block"), f"{pointer}/block")
            ancestors: set[str] = set()
            cursor = operation.get("parent") if block.id not in tree.blocks else parent_of.get(block.id)
            while isinstance(cursor, str) and cursor in tree.blocks and cursor not in ancestors:
                ancestors.add(cursor)
                cursor = parent_of.get(cursor)
            for child in block.children:
                if child not in tree.blocks:
                    raise _reject("patch", "patch.unknown-block", f"no block {child!r}", f"{pointer}/block/children")
                if child == block.id or child in ancestors:
                    raise _reject("patch", "proposal.children-cycle", "a block cannot contain itself or its parents",
                                  f"{pointer}/block/children")
            if block.id in tree.blocks:
                place = parent_of.get(block.id)
                position = siblings(place, pointer).index(block.id)
                old_children = tree.blocks[block.id].children
                tree.blocks[block.id] = block
                for child in old_children:  # children the new version drops go with it
                    if child not in block.children:
                        for gone in subtree(child):
                            tree.blocks.pop(gone, None)
                            parent_of.pop(gone, None)
                if "parent" in operation or "index" in operation:
                    detach(block.id)
                    attach(block.id, operation.get("parent", place), operation.get("index", position), pointer)
            else:
                tree.blocks[block.id] = block
                attach(block.id, operation.get("parent"), operation.get("index"), pointer)
            for child in block.children:
                if parent_of.get(child) not in (None, block.id):
                    detach(child)
                elif child in tree.top:
                    tree.top.remove(child)
                parent_of[child] = block.id
        elif op == "remove-block":
            block_id = operation.get("id")
            if not isinstance(block_id, str) or block_id not in tree.blocks:
                raise _reject("patch", "patch.unknown-block", f"no block {block_id!r} to remove", f"{pointer}/id")
            detach(block_id)
            for gone in subtree(block_id):
                tree.blocks.pop(gone)
                parent_of.pop(gone, None)
        elif op == "move-block":
            block_id, parent = operation.get("id"), operation.get("parent")
            if not isinstance(block_id, str) or block_id not in tree.blocks:
                raise _reject("patch", "patch.unknown-block", f"no block {block_id!r} to move", f"{pointer}/id")
            if parent is not None and not isinstance(parent, str):
                raise _reject("patch", "patch.operation-invalid", "parent is a block id or null", f"{pointer}/parent")
            if parent is not None and parent in subtree(block_id):
                raise _reject("patch", "proposal.children-cycle", "a block cannot move inside itself",
                              f"{pointer}/parent")
            detach(block_id)
            attach(block_id, parent, operation.get("index"), pointer)
        else:
            raise _reject("patch", "patch.operation-invalid", "op is put-block, remove-block or move-block",
                          f"{pointer}/op")
    return _check_tree(tree, max_blocks, "/patch")
