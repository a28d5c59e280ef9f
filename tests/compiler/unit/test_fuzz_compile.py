"""Fuzz the Compile path with structured but hostile proposals, patches and base documents.

Whatever arrives, compile answers compiled, partial or rejected with
diagnostics, quickly: no exception escapes, the catch-all for unforeseen
shapes (`proposal.unprocessable`) is never needed, and the Compile RPC never
answers INTERNAL or UNKNOWN. The inputs are built from a valid proposal, so
most of them get past decoding and reach the envelope, patch and block checks.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from services.compiler.server import CompilerService
from services.compiler.wiring import CompilerParts
from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal
from shared.rpc.runtime import Lifecycle
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2
from tests.fixtures.fuzz import fuzz_settings
from tests.fixtures.ui import full_proposal

BASE_REVISION = "rev-1"
BLOCK_IDS = ["main", "title", "intro", "figures", "total", "tabs", "c1", "t1", "note", "ev", "warn", "controls",
             "pick", "export", "rule"]
# Strategies cannot see fixtures, so proposals name components "@Column" …; `_offered` swaps in the slice ids.
SYMBOLIC = {name: f"@{name}" for name in ["Column", "Row", "Heading", "Text", "Metric", "Tabs", "Chart", "DataTable",
                                          "Card", "EvidenceNote", "Callout", "FilterSelect", "ActionButton", "Divider",
                                          "Placeholder"]}
TEMPLATES = full_proposal(SYMBOLIC)["blocks"]
CODE = re.compile(r"[a-z]+(\.[a-z-]+)+")  # dotted and stable (§4)
SECONDS_PER_COMPILE = 5.0  # far above the few milliseconds one takes: only a stall trips it

scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=20))
hostile = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def _nested(depth: int) -> object:
    value: object = "x"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


# Values at or past the bounds: long text (the byte limit is 256 KiB), deep nesting (the JSON depth limit is 64),
# many values (the limit is 10,000), huge numbers.
huge = st.one_of(st.integers(0, 300_000).map(lambda n: "w" * n), st.integers(1, 80).map(_nested),
                 st.integers(0, 12_000).map(lambda n: list(range(n))), st.just(10**300), st.just(-1e308))
anything = hostile | huge


@st.composite
def rarely(draw, usual: st.SearchStrategy, odd: st.SearchStrategy, odds: int = 8) -> object:
    """Mostly `usual`, one time in `odds` something `odd`: a proposal wrong in one place gets past the envelope,
    so the deeper checks are fuzzed too."""
    return draw(odd) if draw(st.integers(1, odds)) == 1 else draw(usual)


# Containers twice as often: re-putting one drops and adopts subtrees, where patches used to go wrong.
known_ids = st.sampled_from([*BLOCK_IDS, "n1", "n2", "n3"]) | st.sampled_from(["main", "figures", "tabs", "note",
                                                                                "controls"])
bad_ids = st.sampled_from(["ghost", "root", "Bad Id", "", "a" * 33, "intro\n"]) | hostile
block_ids = rarely(known_ids, bad_ids, odds=25)
indices = rarely(st.integers(0, 8), st.integers(-2, 40) | st.sampled_from([True, 1.5, "0", 10**30]) | hostile)
components = st.sampled_from([*SYMBOLIC.values(), *SYMBOLIC, "component-000777", ""]) | anything


@st.composite
def blocks(draw) -> object:
    """A block of the valid proposal, re-identified and re-parented at will, with a part sometimes replaced."""
    if draw(st.integers(0, 31)) == 0:
        return draw(anything)
    block = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    block["id"] = draw(block_ids)
    if "children" in block or draw(st.integers(0, 3)) == 0:
        block["children"] = draw(rarely(st.lists(known_ids, max_size=4, unique=True),
                                        st.lists(block_ids, max_size=5) | anything))
    while draw(st.integers(0, 4)) == 0:
        part = draw(st.sampled_from(["component", "data", "prop", "prop", "extra", "drop"]))
        if part == "component":
            block["component"] = draw(components)
        elif part == "data":
            block["data"] = draw(anything)
        elif part == "prop" and isinstance(block.get("data"), dict):
            block["data"][draw(st.sampled_from(["text", "resource", "columns", "spec", "label", "x"]))] = \
                draw(anything)
        elif part == "extra":
            block[draw(st.text(max_size=8))] = draw(hostile)
        elif block:
            del block[draw(st.sampled_from(sorted(block)))]
    return block


_where = {"parent": rarely(known_ids | st.none(), bad_ids), "index": indices}
operations = rarely(st.one_of(
    st.fixed_dictionaries({"op": st.just("put-block"), "block": blocks()}, optional=_where),
    st.fixed_dictionaries({"op": st.just("remove-block"), "id": block_ids}),
    st.fixed_dictionaries({"op": st.just("move-block"), "id": block_ids}, optional=_where)),
    st.fixed_dictionaries({"op": st.sampled_from(["put-block", "remove-block", "move-block", "Put-Block"]) | hostile},
                          optional={"block": anything, "id": anything, "parent": hostile, "extra": hostile})
    | anything, odds=24)


def _extra_key(usual: st.SearchStrategy) -> st.SearchStrategy:
    return rarely(usual, st.builds(lambda value, key, extra: {**value, key: extra}, usual, st.text(max_size=8),
                                   hostile), odds=16)




@st.composite
def edited_snapshots(draw) -> dict:
    """The valid proposal (some top-level blocks left out) with a few blocks replaced or added."""
    proposal = full_proposal(SYMBOLIC)
    main = proposal["blocks"][0]
    main["children"] = draw(st.lists(st.sampled_from(main["children"]), min_size=1, unique=True))
    for _ in range(draw(st.integers(0, 4))):
        block = draw(blocks())
        if draw(st.booleans()):
            proposal["blocks"][draw(st.integers(0, len(proposal["blocks"]) - 1))] = block
        else:
            proposal["blocks"].append(block)
    return proposal


snapshots = rarely(_extra_key(st.fixed_dictionaries(
    {"version": st.just(1), "id": rarely(st.just("answer"), anything),
     "blocks": rarely(st.lists(blocks(), min_size=1, max_size=40), anything)},
    optional={"title": rarely(st.just("Revenue"), anything)})) | _extra_key(edited_snapshots()), anything, odds=16)
patches = rarely(_extra_key(st.fixed_dictionaries(
    {"version": st.just(1),
     "patch": rarely(_extra_key(st.fixed_dictionaries(
         {"base_revision": rarely(st.just(BASE_REVISION), hostile, odds=16),
          "operations": rarely(st.lists(operations, min_size=1, max_size=70), anything, odds=16)})),
         anything, odds=16)})), anything, odds=16)


def _offered(proposal: object, ids: dict) -> str:
    text = json.dumps(proposal)
    for name, symbol in SYMBOLIC.items():
        text = text.replace(json.dumps(symbol), json.dumps(ids.get(name, name)))
    return text


def _timed_compile(compiler, frozen, text: str, base: dict | None):
    started = time.perf_counter()
    result = compiler.compile(frozen, text, base_document=base, base_revision_id=BASE_REVISION)
    assert time.perf_counter() - started < SECONDS_PER_COMPILE
    return result


def assert_contained(result, a2ui_check) -> None:
    """A well-formed answer: the outcome agrees with the diagnostics, and the safety net stayed unused."""
    codes = [d.code for d in result.diagnostics]
    assert "proposal.unprocessable" not in codes, "an input reached the catch-all for unforeseen shapes"
    assert all(CODE.fullmatch(code) for code in codes), codes
    assert all(d.location == "" or d.location.startswith("/") for d in result.diagnostics)
    if result.outcome == "rejected":
        assert result.document is None and result.messages == []
        assert len(result.diagnostics) == 1 and not result.diagnostics[0].recoverable
        return
    assert result.outcome in ("compiled", "partial") and len(result.content_hash) == 64
    assert (result.outcome == "partial") == bool(codes)
    assert all(d.recoverable for d in result.diagnostics)
    a2ui_check(result.messages)


@pytest.fixture(scope="module")
def bases(compiler, frozen, ids) -> list[dict]:
    """A clean base document, and one holding a placeholder (a failed block, kept with its children)."""
    clean = compiler.compile(frozen, json.dumps(full_proposal(ids))).document
    failed = full_proposal(ids)
    failed["blocks"][8]["data"]["title"] = "<i>x</i>"
    return [clean, compiler.compile(frozen, json.dumps(failed)).document]


@fuzz_settings(60)
@given(proposal=snapshots)
def test_hostile_snapshots_are_contained(compiler, frozen, ids, a2ui_check, proposal):
    assert_contained(_timed_compile(compiler, frozen, _offered(proposal, ids), None), a2ui_check)


ISSUE_13 = [  # re-put a block adopting a grandchild from a subtree the same put drops, then remove a block
    {"op": "put-block", "block": {"id": "main", "component": "@Column", "data": {}, "children": ["title", "c1"]}},
    {"op": "remove-block", "id": "main"}]
CYCLE_UNDONE = [  # a put into its own new child (a cycle), then moved out: recursed without end before the fix
    {"op": "put-block", "block": {"id": "figures", "component": "@Row", "data": {}, "children": ["rule", "total"]},
     "parent": "rule", "index": 4},
    {"op": "remove-block", "id": "total"},
    {"op": "move-block", "id": "figures", "parent": "main", "index": 0},
    {"op": "put-block", "block": {"id": "figures", "component": "@Column", "data": {}, "children": ["rule"]}}]


@fuzz_settings(80)
@given(base=st.sampled_from([0, 1]), patch=patches)
@example(base=0, patch={"version": 1, "patch": {"base_revision": BASE_REVISION, "operations": ISSUE_13}})
@example(base=0, patch={"version": 1, "patch": {"base_revision": BASE_REVISION, "operations": CYCLE_UNDONE}})
def test_hostile_patches_are_contained(compiler, frozen, ids, a2ui_check, bases, base, patch):
    assert_contained(_timed_compile(compiler, frozen, _offered(patch, ids), bases[base]), a2ui_check)


@fuzz_settings(40)
@given(cut=st.integers(0, 10_000), insert=st.text(max_size=3), patch=st.booleans())
def test_damaged_json_text_is_contained(compiler, frozen, ids, a2ui_check, bases, cut, insert, patch):
    proposal = full_proposal(ids) if not patch else {"version": 1, "patch": {
        "base_revision": BASE_REVISION, "operations": [{"op": "move-block", "id": "rule", "parent": "note"}]}}
    text = json.dumps(proposal)
    cut %= len(text) + 1
    assert_contained(_timed_compile(compiler, frozen, text[:cut] + insert + text[cut:], bases[0]), a2ui_check)


# --- the RPC, in process -------------------------------------------------


@pytest.fixture(scope="module")
def servicer(compiler):
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield CompilerService(CompilerParts(info=common_pb2.ServiceInfo(name="compiler"), compiler=compiler,
                                            pool=pool, lifecycle=Lifecycle()))


def _status(servicer, request) -> tuple[grpc.StatusCode, compiler_pb2.CompileResponse | None]:
    """What a client would see: the interceptor sends a refusal as its status and anything else as INTERNAL."""
    try:
        reply = asyncio.run(asyncio.wait_for(servicer.Compile(request, None), SECONDS_PER_COMPILE))
    except Refusal as error:
        return status_of(error).code, None
    except Exception:  # noqa: BLE001 - precisely what would reach the client as INTERNAL
        return grpc.StatusCode.INTERNAL, None
    return grpc.StatusCode.OK, reply


@st.composite
def base_documents(draw, bases: list[dict]) -> str:
    """Base documents as the host might send them: stored ones, ones damaged at any level, and not-JSON."""
    base = copy.deepcopy(bases[draw(st.integers(0, len(bases) - 1))])
    level = draw(st.sampled_from(["stored", "document", "block", "text"]))
    if level == "document":
        base[draw(st.sampled_from(["id", "top", "blocks", "title", "version", "extra"]))] = draw(anything)
    elif level == "block":
        block = base["blocks"][draw(st.integers(0, len(base["blocks"]) - 1))]
        block[draw(st.sampled_from(["id", "component", "data", "children", "extra"]))] = draw(anything)
        if draw(st.booleans()) and isinstance(block["data"], dict):
            block["data"][draw(st.sampled_from(["resource", "evidence", "action", "state", "reason", "x"]))] = \
                draw(anything)
    elif level == "text":
        return draw(st.sampled_from(["", "{", "[1, 2", '{"a": 1, "a": 2}', "null", "[]"]))
    return json.dumps(base)


@fuzz_settings(60)
@given(data=st.data(), proposal=patches | snapshots)
def test_the_compile_rpc_never_answers_internal(servicer, frozen, ids, bases, data, proposal):
    request = compiler_pb2.CompileRequest(
        slice=frozen, proposal_json=_offered(proposal, ids), base_document_json=data.draw(base_documents(bases)),
        base_revision_id=data.draw(st.sampled_from([BASE_REVISION, ""]) | st.text(max_size=10)),
        surface_id=data.draw(st.sampled_from(["", "surface-1"]) | st.text(max_size=300)))
    code, reply = _status(servicer, request)
    assert code in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT), code
    if reply is not None:
        assert reply.outcome != compiler_pb2.COMPILE_OUTCOME_UNSPECIFIED
        assert "proposal.unprocessable" not in [d.code for d in reply.diagnostics]
