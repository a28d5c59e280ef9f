"""Compile an untrusted proposal against one frozen slice (§6).

bounds → decode → envelope (snapshot, or patch applied to the base) →
per-block contract validation → binding legality → canonical document,
content hash, A2UI v0.9 messages, bindings for the host, diagnostics.
Fail the element, not the surface: a bad block becomes a Placeholder with a
diagnostic and everything else compiles. Only ids offered in this slice are
accepted; nothing is ever looked up anywhere else.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import re
import unicodedata
from dataclasses import dataclass, field

import fastjsonschema
import jsonschema

from services.compiler import a2ui
from services.compiler.diagnostics import Finding, Rejected
from services.compiler.patch import apply_patch
from services.compiler.proposal import RawBlock, Tree, decode, snapshot_tree
from shared.data.bounded_json import canonical
from shared.data.caches import SharedMemo, bounded_lru
from shared.data.schema_check import Check, compile_check
from shared.ui.contracts import Catalog, ComponentContract, reserved_keywords
from shared.ui.slice import MAX_PROPOSAL_BYTES, column_role, column_type, offer_tag, slice_hash
from shared.ui.template import TemplateError, slot_names
from tessera.compiler.v1 import compiler_pb2

PLACEHOLDER = "Placeholder"
logger = logging.getLogger("tessera.compiler")
# Every alternative is anchored at a token boundary, so matching stays linear on long text.
_MARKUP = re.compile(
    r"<\s*[A-Za-z!/?]"                                    # tags, comments, processing instructions
    r"|\b(?:javascript|vbscript|data|mailto|file)\s*:"    # script and other URL schemes
    r"|(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://"  # any scheme://
    r"|(?<![\w/])//[\w-]"                                  # protocol-relative //host
    r"|\bwww\.[a-z0-9-]+\."                                 # www.host.
    r"|\b[a-z0-9-]{1,63}\.(?:com|net|org|io|dev|app|co|info|biz|xyz|ru|cn|me|ly|gg|sh|ai)\b"  # bare domains
    r"|\bexpression\s*\(|\burl\s*\(",                      # CSS expressions
    re.IGNORECASE)
_ROW_DELIMITERS = (",", "\t", "|", ";")
# What the person reads as computed (§10b): a bound component's caption and formats come from the Resource
# Gateway's interpretation of the executed draft and the semantic model, never from a proposal.
_TRUSTED_PROPS = {
    "caption": "caption", "captions": "caption", "interpretation": "caption", "computed": "caption",
    "subtitle": "caption", "footnote": "caption", "description": "caption",
    "format": "format", "formats": "format", "number_format": "format", "unit": "format", "units": "format",
}
_SCHEMA_CACHE = 256


class SliceRefused(Exception):
    """The slice itself does not fit this compiler (wrong catalog, tampered hash, bad schema)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class Binding:
    block_id: str
    prop: str
    kind: str
    slice_id: str
    column_ids: list[str] = field(default_factory=list)
    row: int | None = None  # a figure: the one row it shows
    first_offset: int = 0  # the window the block shows first (the host sends it with the revision)
    first_rows: int = 0


@dataclass
class CompileResult:
    outcome: str  # compiled, partial, rejected
    document: dict | None = None
    content_hash: str = ""
    messages: list[dict] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    diagnostics: list[Finding] = field(default_factory=list)


def _compiled(schema_json: str) -> Check:
    """An offered action or state schema, checked and compiled (once per schema: the compiler memoises it)."""
    schema = json.loads(schema_json)
    if not isinstance(schema, dict) or reserved_keywords(schema):
        raise SliceRefused("SLICE_SCHEMA_INVALID", "an offered schema uses references or identifiers")
    try:
        return compile_check(schema)
    except (jsonschema.SchemaError, fastjsonschema.JsonSchemaDefinitionException) as exc:
        raise SliceRefused("SLICE_SCHEMA_INVALID", f"an offered schema is invalid: {exc}") from None


def content_hash(document: dict) -> str:
    return hashlib.sha256(canonical(document).encode()).hexdigest()


_MARKUP_HINTS = frozenset("<:/.(")


def _may_be_markup(text: str) -> bool:
    """Every _MARKUP alternative needs one of these characters; most labels and keys have none."""
    return not _MARKUP_HINTS.isdisjoint(text)


def _nfkc(text: str) -> str:
    # ASCII is already in NFKC; only other text can hide look-alikes such as "＜".
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def _strings(value, pointer: str):
    """Every text of a value, keys included, NFKC-normalized so look-alike characters are caught."""
    if isinstance(value, str):
        yield _nfkc(value), pointer
    elif isinstance(value, dict):
        for key, item in value.items():
            yield _nfkc(key), f"{pointer}/{key}"
            yield from _strings(item, f"{pointer}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{pointer}/{index}")


def _looks_like_rows(text: str) -> bool:
    if text.count("\n") < 2:
        return False
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 3:
        return False
    for delimiter in _ROW_DELIMITERS:
        counts = [line.count(delimiter) for line in lines]
        if min(counts) >= 2 and len(set(counts)) == 1:
            return True
    return False


def _first_window(spec, data: dict) -> tuple[int, int]:
    """(offset, rows) of the window a bound block shows first, from its contract and props."""
    if not spec.first_rows:
        return 0, 0
    rows = data.get(spec.page_size, spec.first_rows) if spec.page_size else spec.first_rows
    return (data.get(spec.offset, 0) if spec.offset else 0), rows


def _get_path(data: dict, dotted: str) -> list[str]:
    """Values at a dotted prop path (a string, or each string of a list)."""
    value: object = data
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return []
        value = value[part]
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class _BlockError(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class Compiler:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        # Compiles run in a thread pool: the memos are shared (shared/data/caches.py).
        self._schemas = SharedMemo(bounded_lru(_SCHEMA_CACHE))  # schema JSON → its compiled check
        self._verified_slices = SharedMemo(bounded_lru(_SCHEMA_CACHE))  # serialized slice → True once checked

    # --- slice checks ----------------------------------------------------

    def check_slice(self, frozen: compiler_pb2.CatalogSlice) -> None:
        if frozen.catalog_id != self.catalog.catalog_id or frozen.catalog_hash != self.catalog.catalog_hash:
            raise SliceRefused("SLICE_CATALOG_MISMATCH", f"the slice is for catalog {frozen.catalog_id} "
                                                         f"{frozen.catalog_hash[:12]}, this compiler has "
                                                         f"{self.catalog.catalog_id} {self.catalog.catalog_hash[:12]}")
        # The host sends the same slice for every repair round: it is checked once.
        self._verified_slices.get_or_build(frozen.SerializeToString(deterministic=True), lambda: self._verify(frozen))

    def _verify(self, frozen: compiler_pb2.CatalogSlice) -> bool:
        for offered in frozen.components:
            contract = self.catalog.contracts.get(offered.component)
            if contract is None or self.catalog.contract_hashes[contract.name] != offered.contract_hash \
                    or contract.host_only:
                raise SliceRefused("SLICE_CATALOG_MISMATCH", f"{offered.slice_id} offers {offered.component!r}, "
                                                             "which this compiler cannot offer")
        if slice_hash(frozen) != frozen.slice_hash:
            raise SliceRefused("SLICE_HASH_MISMATCH", "the slice does not match its slice_hash")
        for schema_json in [a.input_schema_json for a in frozen.actions] + [s.value_schema_json for s in frozen.state]:
            self._check_for(schema_json)
        return True

    def _check_for(self, schema_json: str) -> Check:
        return self._schemas.get_or_build(schema_json, lambda: _compiled(schema_json))

    # --- compile ---------------------------------------------------------

    def compile(self, frozen: compiler_pb2.CatalogSlice, proposal_json: str, *, base_document: dict | None = None,
                base_revision_id: str = "", surface_id: str = "surface") -> CompileResult:
        self.check_slice(frozen)
        max_blocks = frozen.limits.max_blocks or 32
        try:
            raw = decode(proposal_json, frozen.limits.max_proposal_bytes or MAX_PROPOSAL_BYTES)
            if not isinstance(raw, dict) or raw.get("version") != 1:
                raise Rejected(Finding("envelope", "proposal.envelope-invalid",
                                       "a proposal is an object with version 1", "/version"))
            if "patch" in raw:
                tree = apply_patch(raw, base_document, base_revision_id, max_blocks)
            else:
                tree = snapshot_tree(raw, max_blocks)
            for text, pointer in _strings({"id": tree.document_id, "title": tree.title or ""}, ""):
                if _MARKUP.search(text):
                    raise Rejected(Finding("envelope", "proposal.envelope-invalid",
                                           "the document id and title are plain text", pointer))
            return self._compile_tree(frozen, tree, surface_id)
        except Rejected as rejected:
            return CompileResult("rejected", diagnostics=[rejected.finding])
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError, IndexError):
            # Defence in depth: every shape is meant to be refused by a check above with a precise code (the
            # fuzz tests assert this branch is never taken); should one slip through, refuse, never crash.
            logger.exception("unforeseen proposal shape")
            return CompileResult("rejected", diagnostics=[Finding(
                "envelope", "proposal.unprocessable", "the proposal could not be processed", "",
                recoverable=False, model_correctable=False)])

    def _compile_tree(self, frozen, tree: Tree, surface_id: str) -> CompileResult:
        offers = _Offers(self.catalog, frozen)
        findings: list[Finding] = []
        bindings: list[Binding] = []
        blocks = []
        failed = 0
        for raw in tree.ordered():
            try:
                name, data, block_bindings = self._block(raw, offers)
            except _BlockError as error:
                failed += 1
                findings.append(error.finding)
                name, block_bindings = PLACEHOLDER, []
                data = {"reason": "This element could not be displayed.", "code": error.finding.code}
            block = {"id": raw.id, "component": name, "data": data}
            if raw.children:
                block["children"] = list(raw.children)
            blocks.append(block)
            bindings += block_bindings
        document = {"version": 1, "id": tree.document_id, "top": list(tree.top), "blocks": blocks}
        if tree.title is not None:
            document["title"] = tree.title
        result = CompileResult("partial" if failed else "compiled", document, content_hash(document),
                               bindings=bindings, diagnostics=findings)
        result.messages = a2ui.messages(self.catalog, frozen, document, surface_id)
        return result

    # --- one block -------------------------------------------------------

    def _block(self, raw: RawBlock, offers: _Offers) -> tuple[str, dict, list[Binding]]:
        if raw.from_base and raw.component == PLACEHOLDER:
            # Stored by an earlier compile, yet published as it is: so checked like any other block.
            self._check_props(PLACEHOLDER, raw.data, raw.pointer)
            return PLACEHOLDER, raw.data, []
        contract = offers.component(raw)
        data = raw.data
        where = raw.pointer if raw.from_base else f"{raw.pointer}/data"
        if raw.from_base:
            data = offers.to_slice_refs(contract, data, raw)
        if contract.bindings and isinstance(data, dict):
            self._refuse_trusted_props(contract, data, where)
        self._check_props(contract.name, data, where)
        self._check_slots(contract, raw, data)
        bindings = []
        canonical_data = dict(data)  # the parsed proposal is ours: binding props are replaced, nothing mutated
        for prop, spec in contract.bindings.items():
            if prop not in data:
                continue
            prop_pointer = f"{where}/{prop}"
            if spec.kind == "cells":
                figures = offers.check_figures(self, spec, data, prop, prop_pointer, where)
                bindings += [Binding(raw.id, f"/{prop}/{name}", "resource", slice_id, [column], row, row, 1)
                             for name, slice_id, column, row in figures]
                canonical_data[prop] = {
                    name: {"resource": offers.canonical_ref("resource", data[prop][name]["resource"]), "row": row,
                           "column": column} for name, _, column, row in figures}
                continue
            slice_id, columns = offers.check_binding(self, contract, spec, data, prop, prop_pointer)
            first_offset, first_rows = _first_window(spec, data)
            # A block that shows one cell (a Metric) is bound to that row only: its grants read nothing else.
            one_row = first_offset if spec.kind == "resource" and spec.offset and first_rows == 1 else None
            bindings.append(Binding(raw.id, f"/{prop}", spec.kind, slice_id, columns, one_row, first_offset,
                                    first_rows))
            canonical_data[prop] = offers.canonical_ref(spec.kind, data[prop])
        return contract.name, canonical_data, bindings

    def _refuse_trusted_props(self, contract: ComponentContract, data: dict, where: str) -> None:
        """A caption or a format on a data-bound component is the gateway's to write, never the model's."""
        if not any(spec.kind in ("resource", "evidence") for spec in contract.bindings.values()):
            return
        for key in data:
            kind = _TRUSTED_PROPS.get(key.lower()) if isinstance(key, str) else None
            if kind is not None:
                self._fail("binding", f"component.{kind}-not-settable",
                           f"{contract.name}: the {kind} of a bound result is written from the executed analysis "
                           "and the semantic model; a proposal cannot set, change or hide it", f"{where}/{key}",
                           f"remove {key!r}; give the block a title or label in your own words instead")

    def _check_props(self, name: str, data: object, where: str) -> None:
        """The contract's prop schema, then the text screen: no markup, links or rows written out as text."""
        if not isinstance(data, dict):
            self._fail("contract", "component.prop-invalid", "data is an object of props", where)
        error = self.catalog.checks[name](data)
        if error is not None:
            path, message = error
            self._fail("contract", "component.prop-invalid", f"{name}: {message[:200]}", where + path)
        for text, pointer in _strings(data, where):
            if _may_be_markup(text) and _MARKUP.search(text):
                self._fail("contract", "component.prop-invalid", f"{name}: text may not contain markup, "
                                                                 "scripts, links or styles", pointer,
                           "write plain text")
            if _looks_like_rows(text):
                self._fail("contract", "component.prop-invalid", f"{name}: text looks like rows of data",
                           pointer, "bind the analysis result to a DataTable instead of writing its rows")

    def _check_slots(self, contract: ComponentContract, raw: RawBlock, data: dict) -> None:
        slot = contract.slots.get("children")
        count = len(raw.children)
        if slot is None and count:
            self._fail("contract", "component.slot-invalid", f"{contract.name} takes no children",
                       f"{raw.pointer}/children")
        if slot is not None and not slot.min <= count <= slot.max:
            self._fail("contract", "component.slot-invalid",
                       f"{contract.name} takes {slot.min}-{slot.max} children, not {count}", f"{raw.pointer}/children")
        if contract.slot_labels and len(data.get(contract.slot_labels, [])) != count:
            self._fail("contract", "component.slot-invalid",
                       f"{contract.name} needs one {contract.slot_labels} entry per child", f"{raw.pointer}/data")

    @staticmethod
    def _fail(phase: str, code: str, message: str, location: str, hint: str = "") -> None:
        raise _BlockError(Finding(phase, code, message, location, hint))


class _Offers:
    """The slice's offers, by slice id and by the ids stored in canonical documents."""

    def __init__(self, catalog: Catalog, frozen: compiler_pb2.CatalogSlice) -> None:
        self.catalog = catalog
        self.frozen = frozen
        self.components = {c.slice_id: c for c in frozen.components}
        self.components_by_name = {c.component: c for c in frozen.components}
        self.resources = {r.slice_id: r for r in frozen.resources}
        self.evidence = {e.slice_id: e for e in frozen.evidence}
        self.actions = {a.slice_id: a for a in frozen.actions}
        self.state = {s.slice_id: s for s in frozen.state}
        self._by_global = {
            "resource": {r.descriptor.resource_id: r.slice_id for r in frozen.resources},
            "evidence": {e.evidence.evidence_id: e.slice_id for e in frozen.evidence},
            "action": {a.action_id: a.slice_id for a in frozen.actions},
            "state": {s.slice_id: s.slice_id for s in frozen.state},
        }

    def component(self, raw: RawBlock):
        offered = (self.components_by_name if raw.from_base else self.components).get(raw.component)
        if offered is None:
            raise _BlockError(Finding("binding", "catalog.component-not-offered",
                                      f"component {raw.component or '(none)'!r} is not offered in this slice",
                                      f"{raw.pointer}/component", "use a component id from the slice"))
        return self.catalog.contracts[offered.component]

    def canonical_ref(self, kind: str, value):
        """Slice-independent ids for the stored document (slice ids are per call)."""
        if kind == "resource":
            offered = self.resources[value["ref"]]
            return {"resource": offered.descriptor.resource_id, "offer": value["offer"]}
        if kind == "evidence":
            return {"evidence": self.evidence[value].evidence.evidence_id}
        if kind == "action":
            return {"action": self.actions[value].action_id}
        return {"state": value}

    def to_slice_refs(self, contract: ComponentContract, data: dict, raw: RawBlock) -> dict:
        """A base block's stored bindings, as this slice's ids (or a failure if no longer offered)."""
        if not isinstance(data, dict):
            return data  # refused as "data is an object of props" by the caller
        data = copy.deepcopy(data)
        for prop, spec in contract.bindings.items():
            if prop not in data:
                continue
            stored = data[prop]
            if spec.kind == "cells":
                data[prop] = self._figures_to_slice_refs(stored, f"{raw.pointer}/data/{prop}")
                continue
            global_id = stored.get(spec.kind) if isinstance(stored, dict) else None
            slice_id = self._by_global[spec.kind].get(global_id) if isinstance(global_id, str) else None
            if slice_id is None:
                raise _BlockError(Finding("binding", f"catalog.{spec.kind}-not-offered",
                                          f"the {spec.kind} this block showed is not offered any more",
                                          f"{raw.pointer}/data/{prop}", "bind a current result or remove the block"))
            # A missing offer stays missing: the contract check then refuses the block, naming the prop.
            data[prop] = {"ref": slice_id, "offer": stored.get("offer")} if spec.kind == "resource" else slice_id
        return data

    def _figures_to_slice_refs(self, stored, pointer: str):
        """A stored block's figures, bound again to this slice's ids (a figure whose result is gone fails)."""
        if not isinstance(stored, dict):
            return stored  # the contract check refuses it, naming the prop
        figures = {}
        for name, figure in stored.items():
            reference = figure.get("resource") if isinstance(figure, dict) else None
            global_id = reference.get("resource") if isinstance(reference, dict) else None
            slice_id = self._by_global["resource"].get(global_id) if isinstance(global_id, str) else None
            if slice_id is None:
                raise _BlockError(Finding("binding", "catalog.resource-not-offered",
                                          f"the result figure {name!r} showed is not offered any more",
                                          f"{pointer}/{name}", "bind a current result or remove the block"))
            figures[name] = {**figure, "resource": {"ref": slice_id, "offer": reference.get("offer")}}
        return figures

    def check_figures(self, compiler: Compiler, spec, data: dict, prop: str, pointer: str, where: str):
        """Each figure names an offered result, an offered column and a row it has; the template uses exactly
        the figures bound. Returns (name, slice id, column, row) per figure."""
        template = data.get(spec.template, "")
        try:
            used = slot_names(template)
        except TemplateError as error:
            compiler._fail("binding", "text.template-invalid", str(error), f"{where}/{spec.template}",
                           "write {name} where a figure goes")
        figures = data[prop]
        for name in used:
            if name not in figures:
                compiler._fail("binding", "text.figure-unknown", f"the text names {{{name}}}, which no figure binds",
                               f"{where}/{spec.template}", f"bind {name!r} under {prop} or remove it from the text")
        out = []
        for name, figure in figures.items():
            here = f"{pointer}/{name}"
            if name not in used:
                compiler._fail("binding", "text.figure-unused", f"figure {name!r} is bound but the text never "
                                                                "shows it", here, f"write {{{name}}} in the text")
            reference = figure["resource"]
            offered = self.resources.get(reference["ref"])
            if offered is None:
                compiler._fail("binding", "catalog.resource-not-offered",
                               f"{reference['ref']} is not offered in this slice", f"{here}/resource/ref")
            if reference["offer"] != offer_tag(offered.offer_hash):
                compiler._fail("binding", "resource.offer-hash-denied", "the offer quoted does not match the offer "
                                                                        f"of {reference['ref']}",
                               f"{here}/resource/offer", "copy the offer tag from the slice")
            column = figure["column"]
            if column not in offered.selector.column_ids or column not in {c.column_id for c in
                                                                           offered.descriptor.columns}:
                compiler._fail("binding", "resource.column-not-offered",
                               f"column {column!r} is not selectable from {reference['ref']}", f"{here}/column")
            row = figure.get("row", 0)
            if row >= offered.descriptor.row_count:
                compiler._fail("binding", "resource.row-out-of-range",
                               f"{reference['ref']} has {offered.descriptor.row_count} rows; there is no row {row}",
                               f"{here}/row", "rows count from 0")
            out.append((name, reference["ref"], column, row))
        return out

    def check_binding(self, compiler: Compiler, contract, spec, data: dict, prop: str, pointer: str):
        value = data[prop]
        if spec.kind == "resource":
            offered = self.resources.get(value["ref"])
            if offered is None:
                compiler._fail("binding", "catalog.resource-not-offered", f"{value['ref']} is not offered in this "
                                                                          "slice", f"{pointer}/ref")
            if value["offer"] != offer_tag(offered.offer_hash):
                compiler._fail("binding", "resource.offer-hash-denied", "the offer quoted does not match the offer "
                                                                        f"of {value['ref']}", f"{pointer}/offer",
                               "copy the offer tag from the slice")
            return value["ref"], self._check_columns(compiler, contract, spec, offered, data, pointer)
        table = {"evidence": self.evidence, "action": self.actions, "state": self.state}[spec.kind]
        if value not in table:
            compiler._fail("binding", f"catalog.{spec.kind}-not-offered", f"{value} is not offered in this slice",
                           pointer)
        if spec.kind == "action" and spec.input:
            error = compiler._check_for(table[value].input_schema_json)(data.get(spec.input, {}))
            if error is not None:
                path, message = error
                compiler._fail("binding", "action.input-invalid", f"input for {value}: {message[:200]}",
                               pointer.rsplit("/", 1)[0] + f"/{spec.input}{path}")
        if spec.kind == "state" and spec.options:
            check = compiler._check_for(table[value].value_schema_json)
            for index, option in enumerate(data.get(spec.options, [])):
                if check(option.get("value")) is not None:
                    compiler._fail("binding", "state.option-invalid", f"option {index} is not a value of {value}",
                                   pointer.rsplit("/", 1)[0] + f"/{spec.options}/{index}/value")
        return value, []

    def _check_columns(self, compiler: Compiler, contract, spec, offered, data: dict, pointer: str) -> list[str]:
        base = pointer.rsplit("/", 1)[0]
        allowed = set(offered.selector.column_ids)
        described = {c.column_id: c for c in offered.descriptor.columns}
        used: list[str] = []
        for path in spec.columns:
            for column in _get_path(data, path):
                if column not in allowed or column not in described:
                    compiler._fail("binding", "resource.column-not-offered",
                                   f"column {column!r} is not selectable from {data['resource']['ref']}",
                                   f"{base}/{path.replace('.', '/')}")
                if column not in used:
                    used.append(column)
        if spec.sort and spec.sort in data and not offered.selector.allow_sort:
            compiler._fail("binding", "resource.sort-not-allowed", "this result may not be re-sorted",
                           f"{base}/{spec.sort}")
        if spec.page_size and data.get(spec.page_size, 0) > offered.selector.max_page_size:
            compiler._fail("binding", "resource.page-size-exceeded",
                           f"page size is at most {offered.selector.max_page_size}", f"{base}/{spec.page_size}")
        if contract.recipes:
            recipe = data["spec"]["recipe"]
            for role_field, rule in contract.recipes[recipe].items():
                for column in _get_path(data, f"spec.{role_field}"):
                    descriptor = described[column]
                    role, kind = column_role(descriptor.role), column_type(descriptor.type)
                    if role not in rule.roles or kind not in rule.types:
                        compiler._fail("binding", "chart.column-incompatible",
                                       f"a {recipe} chart takes a {'/'.join(rule.roles)} column of type "
                                       f"{'/'.join(rule.types)} as {role_field}; {column!r} is a {role} {kind}",
                                       f"{base}/spec/{role_field}")
        return used or [c.column_id for c in offered.descriptor.columns if c.column_id in allowed]

