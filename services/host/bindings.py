"""What a revision's blocks are bound to, in slice-independent terms: what grants and commands need later.

Stored as JSON in `revisions.bindings` (one object per binding, only the fields of its kind).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

from tessera.compiler.v1 import compiler_pb2


@dataclass(frozen=True)
class Binding:
    node: str
    prop: str
    kind: str  # resource | action | state | evidence
    resource_id: str = ""
    version_id: str = ""
    content_hash: str = ""
    columns: tuple[str, ...] = ()
    action_id: str = ""
    input_schema: str = ""
    state: str = ""
    value_schema: str = ""
    row: int = -1  # a figure bound to one cell: the only row its windows may read
    first_offset: int = 0  # the window the block shows first, sent by the host after the commit
    first_rows: int = 0

    def stored(self) -> dict:
        kept = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name in ("node", "prop", "kind") or getattr(self, f.name) != f.default}
        if "columns" in kept:
            kept["columns"] = list(self.columns)
        return kept


_NAMES = {f.name for f in fields(Binding)}


def dumps(bindings: list[Binding]) -> str:
    return json.dumps([b.stored() for b in bindings])


def loads(text: str) -> list[Binding]:
    return [Binding(**{**{k: v for k, v in entry.items() if k in _NAMES},
                       "columns": tuple(entry.get("columns", ()))}) for entry in json.loads(text or "[]")]


def resolved(frozen: compiler_pb2.CatalogSlice, compiled_bindings) -> list[Binding]:
    """A compiled revision's bindings, with the slice ids replaced by what they stood for."""
    resources = {r.slice_id: r.descriptor for r in frozen.resources}
    actions = {a.slice_id: a for a in frozen.actions}
    states = {st.slice_id: st for st in frozen.state}
    out = []
    for binding in compiled_bindings:
        where = {"node": binding.block_id, "prop": binding.prop}
        if binding.kind == compiler_pb2.BINDING_KIND_RESOURCE:
            d = resources[binding.slice_id]
            out.append(Binding(**where, kind="resource", resource_id=d.resource_id, version_id=d.version_id,
                               content_hash=d.content_hash, columns=tuple(binding.column_ids),
                               row=binding.row if binding.HasField("row") else -1,
                               first_offset=binding.first_offset, first_rows=binding.first_rows))
        elif binding.kind == compiler_pb2.BINDING_KIND_ACTION:
            action = actions[binding.slice_id]
            out.append(Binding(**where, kind="action", action_id=action.action_id,
                               input_schema=action.input_schema_json))
        elif binding.kind == compiler_pb2.BINDING_KIND_STATE:
            out.append(Binding(**where, kind="state", state=binding.slice_id,
                               value_schema=states[binding.slice_id].value_schema_json))
        else:
            out.append(Binding(**where, kind="evidence"))
    return out
