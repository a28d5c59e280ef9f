"""Proposal envelopes and the block tree (§6).

Turns untrusted proposal JSON into an ordered tree of raw blocks, or rejects
the envelope. Per-block checks happen later (compile.py); patches are
applied in patch.py. Here only what makes a surface impossible is refused:
bad JSON, bounds, duplicate ids, children that do not form a tree, too many
blocks. `check_tree` is the one structural check: a snapshot and a patched
document both go through it, so both fail (or pass) for the same reasons.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from services.compiler.diagnostics import Finding, Rejected
from shared.data.bounded_json import BoundedJsonError, parse

BLOCK_ID = re.compile(r"[a-z][a-z0-9-]{0,31}")  # used with fullmatch: no trailing newline slips through
RESERVED_IDS = frozenset({"root"})  # the synthesized A2UI root
MAX_DEPTH = 8
BLOCK_KEYS = frozenset({"id", "component", "data", "children"})
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
    top: list[str] | None = None  # None: the blocks nobody lists as a child, in the order given (snapshots)
    # Block id → the patch operation that last placed it (most recent last): where structural findings point.
    placed: dict[str, str] = field(default_factory=dict)

    def location_of(self, block_id: str) -> str:
        block = self.blocks.get(block_id)
        return self.placed.get(block_id) or (block.pointer if block is not None else "")

    def ordered(self) -> list[RawBlock]:
        """Depth-first, in document order: the canonical block order (each block once, known ids only)."""
        out: list[RawBlock] = []
        seen: set[str] = set()
        stack = list(reversed(self.top or []))
        while stack:
            block_id = stack.pop()
            if block_id in seen or block_id not in self.blocks:
                continue
            seen.add(block_id)
            out.append(self.blocks[block_id])
            stack.extend(reversed(self.blocks[block_id].children))
        return out


def reject(phase: str, code: str, message: str, location: str = "", hint: str = "",
           correctable: bool = True) -> Rejected:
    return Rejected(Finding(phase, code, message, location, hint, model_correctable=correctable))


def decode(text: str, max_bytes: int) -> object:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise reject("bounds", "proposal.too-large", f"the proposal is {size} bytes; the limit is {max_bytes}",
                     hint="send fewer or smaller blocks")
    try:
        return parse(text)
    except BoundedJsonError as exc:
        code = _JSON_CODES.get(exc.code, "proposal.too-large")
        raise reject("decode", code, str(exc), exc.pointer) from None


def is_block_id(value: object) -> bool:
    return isinstance(value, str) and BLOCK_ID.fullmatch(value) is not None and value not in RESERVED_IDS


def raw_block(value: object, pointer: str) -> RawBlock:
    if not isinstance(value, dict):
        raise reject("envelope", "proposal.block-invalid", "a block is an object", pointer)
    if not is_block_id(value.get("id")):
        raise reject("envelope", "proposal.block-invalid",
                     "a block id is 1-32 characters a-z, 0-9 and '-', starting with a letter (not 'root')",
                     f"{pointer}/id")
    extra = set(value) - BLOCK_KEYS
    if extra:
        raise reject("envelope", "proposal.block-invalid", f"unknown block key {sorted(extra)[0]!r}", pointer)
    children = value.get("children", [])
    if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
        raise reject("envelope", "proposal.block-invalid", "children is a list of block ids", f"{pointer}/children")
    component = value.get("component")
    return RawBlock(value["id"], component if isinstance(component, str) else "", value.get("data"),
                    list(children), pointer)


def check_tree(tree: Tree, max_blocks: int, where: str) -> Tree:
    """Blocks form one ordered forest: known children, one parent each, no cycles, bounded depth and count.

    Which code is reported does not depend on the order blocks are listed in,
    so a patch and the snapshot of the document it produces are refused alike.
    """
    if len(tree.blocks) > max_blocks:
        raise reject("limits", "proposal.too-many-blocks",
                     f"{len(tree.blocks)} blocks; a surface holds at most {max_blocks}", where)
    parent = _parents(tree)
    if tree.top is None:
        tree.top = [b for b in tree.blocks if b not in parent]
    _check_top(tree, parent, where)
    _check_reach(tree, where)
    return tree


def _parents(tree: Tree) -> dict[str, str]:
    edges = [(block, index, child) for block in tree.blocks.values() for index, child in enumerate(block.children)]

    def location(block: RawBlock, index: int) -> str:
        return tree.placed.get(block.children[index]) or f"{block.pointer}/children/{index}"

    for block, index, child in edges:
        if child not in tree.blocks:
            raise reject("envelope", "proposal.unknown-child",
                         f"block {block.id!r} lists unknown child {child[:40]!r}", f"{block.pointer}/children/{index}")
    for block, index, child in edges:
        if child == block.id:
            raise reject("envelope", "proposal.children-cycle", f"block {child!r} lists itself as a child",
                         location(block, index))
    parent: dict[str, str] = {}
    for block, index, child in edges:
        if child in parent:
            raise reject("envelope", "proposal.child-reused", f"block {child!r} has more than one parent",
                         f"{block.pointer}/children/{index}")
        parent[child] = block.id
    return parent


def _check_top(tree: Tree, parent: dict[str, str], where: str) -> None:
    seen: set[str] = set()
    for index, block_id in enumerate(tree.top or []):
        if block_id not in tree.blocks:
            raise reject("envelope", "proposal.unknown-child",
                         f"the top level lists unknown block {block_id[:40]!r}", f"{where}/top/{index}")
        if block_id in parent or block_id in seen:
            raise reject("envelope", "proposal.child-reused", f"block {block_id!r} has more than one parent",
                         tree.location_of(block_id))
        seen.add(block_id)


def _check_reach(tree: Tree, where: str) -> None:
    seen: set[str] = set()
    too_deep = ""
    stack = [(block_id, 1) for block_id in reversed(tree.top or [])]
    while stack:
        block_id, depth = stack.pop()
        if block_id in seen or block_id not in tree.blocks:  # ruled out above; keeps the walk total regardless
            continue
        seen.add(block_id)
        if depth > MAX_DEPTH and not too_deep:
            too_deep = block_id
        stack.extend((child, depth + 1) for child in reversed(tree.blocks[block_id].children))
    unreached = [block_id for block_id in tree.blocks if block_id not in seen]
    if unreached:
        cut_off = set(unreached)  # a patch points at the operation that placed one of them last: it closed the cycle
        latest = [pointer for block_id, pointer in tree.placed.items() if block_id in cut_off]
        raise reject("envelope", "proposal.children-cycle",
                     f"block {unreached[0]!r} is inside a cycle of children; blocks must form a tree",
                     latest[-1] if latest else tree.location_of(unreached[0]))
    if too_deep:
        raise reject("limits", "proposal.too-deep", f"block {too_deep!r} nests deeper than {MAX_DEPTH} levels",
                     tree.location_of(too_deep))
    if not tree.top:
        raise reject("envelope", "proposal.empty", "the proposal has no blocks", where)


def snapshot_tree(raw: dict, max_blocks: int) -> Tree:
    extra = set(raw) - {"version", "id", "title", "blocks"}
    if extra:
        raise reject("envelope", "proposal.envelope-invalid", f"unknown key {sorted(extra)[0]!r}", "")
    document_id, title, blocks = raw.get("id"), raw.get("title"), raw.get("blocks")
    if not isinstance(document_id, str) or not 1 <= len(document_id) <= 64:
        raise reject("envelope", "proposal.envelope-invalid", "id is a non-empty string (≤ 64)", "/id")
    if title is not None and (not isinstance(title, str) or not 1 <= len(title) <= 120):
        raise reject("envelope", "proposal.envelope-invalid", "title is a string of 1-120 characters", "/title")
    if not isinstance(blocks, list):
        raise reject("envelope", "proposal.envelope-invalid", "blocks is a non-empty list", "/blocks")
    if not blocks:  # the same finding a patch that removes every block gets
        raise reject("envelope", "proposal.empty", "the proposal has no blocks", "/blocks")
    if len(blocks) > max_blocks:
        raise reject("limits", "proposal.too-many-blocks", f"{len(blocks)} blocks; at most {max_blocks}", "/blocks")
    tree = Tree(document_id, title, {})
    for index, value in enumerate(blocks):
        block = raw_block(value, f"/blocks/{index}")
        if block.id in tree.blocks:
            raise reject("envelope", "proposal.duplicate-block-id", f"block id {block.id!r} is used twice",
                         f"/blocks/{index}/id")
        tree.blocks[block.id] = block
    return check_tree(tree, max_blocks, "/blocks")
