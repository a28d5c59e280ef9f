"""Every bounded cache keeps its bound under the one policy of shared/data/caches.py: least recently used first,
expired entries never returned."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from services.capabilities import mcp_gate
from services.compiler import compile as compile_module
from services.web import api
from shared.data.caches import SharedMemo, bounded_lru, expiring, expiring_each
from shared.ui.slice import SliceRequest, freeze_slice
from tests.capabilities.unit.test_tool_gate_relisting import gate


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_least_recently_used_entry_goes_first():
    cache = bounded_lru(3)
    for key in "abc":
        cache[key] = key
    assert cache.get("a") == "a"  # a read makes "a" the most recently used
    cache["d"] = "d"
    assert sorted(cache) == ["a", "c", "d"]
    for key in "efghij":
        cache[key] = key
    assert len(cache) == 3


def test_expiring_entries_are_never_returned_and_stay_bounded():
    clock = Clock()
    cache = expiring(2, ttl=60, timer=clock)
    cache["a"], cache["b"], cache["c"] = 1, 2, 3
    assert sorted(cache) == ["b", "c"]
    clock.now = 59.9
    assert cache.get("b") == 2
    clock.now = 60.0
    assert cache.get("b") is None and len(cache) == 0


def test_each_entry_can_expire_at_its_own_time():
    clock = Clock()
    cache = expiring_each(2, lambda key, value, now: value, timer=clock)
    cache["soon"], cache["late"] = 10.0, 100.0
    clock.now = 10.0
    assert "soon" not in cache and cache.get("late") == 100.0
    cache["x"], cache["y"] = 200.0, 300.0
    assert len(cache) == 2


def test_the_compilers_schema_and_slice_caches_keep_their_bound(monkeypatch, catalog, frozen):
    monkeypatch.setattr(compile_module, "_SCHEMA_CACHE", 3)
    compiler = compile_module.Compiler(catalog)
    schemas = [json.dumps({"type": "integer", "maximum": n}) for n in range(6)]
    for schema in schemas:
        compiler._check_for(schema)
    assert len(compiler._schemas) == 3
    assert compiler._check_for(schemas[-1]) is compiler._check_for(schemas[-1])  # a hit: compiled once
    compiler.check_slice(frozen)
    for name in list(catalog.contracts)[:4]:  # four more distinct slices, each checked once
        compiler.check_slice(freeze_slice(catalog, SliceRequest(components=[name])))
    assert len(compiler._verified_slices) == 3 and len(compiler._schemas) == 3


def test_the_tool_gate_keeps_at_most_its_sessions(monkeypatch, tmp_path):
    monkeypatch.setattr(mcp_gate, "MAX_SESSIONS", 3)
    judge = gate(tmp_path)
    surveys = []

    async def survey():
        surveys.append(1)
        return {}, []

    judge.survey = survey

    async def sessions():
        for number in range(3):
            await judge.start_session(f"s{number}")
        await judge.session("s0")  # in use: s1 is now the least recently used
        await judge.start_session("s3")
        await judge.session("s0")
        assert len(surveys) == 4
        await judge.session("s1")  # forgotten: surveyed afresh
        assert len(surveys) == 5 and len(judge._sessions) == 3

    asyncio.run(sessions())


def test_the_web_api_remembers_at_most_its_host_sessions(monkeypatch):
    monkeypatch.setattr(api, "MAX_REMEMBERED_SESSIONS", 2)
    opened = []

    async def open_session(request, timeout):
        opened.append(request.request_id)
        return request.request_id

    host = SimpleNamespace(OpenSession=open_session)
    assertions = SimpleNamespace(of=lambda person: None)
    web = api.WebApi(host=host, agent=None, capabilities=None, sessions=None, assertions=assertions)

    async def browse():
        for session_id in ["a", "b", "a", "c", "a"]:
            await web._host_session(SimpleNamespace(session_id=session_id, person=None))

    asyncio.run(browse())
    assert opened == ["web-a", "web-b", "web-c"] and len(web._host_sessions) == 2



def test_a_shared_memo_builds_each_key_once_remembers_none_and_keeps_its_bound():
    memo = SharedMemo(bounded_lru(2))
    builds = []

    def build(key):
        builds.append(key)
        return None if key == "empty" else key.upper()

    assert [memo.get_or_build(key, lambda key=key: build(key)) for key in ["a", "empty", "a", "empty"]] == \
        ["A", None, "A", None]
    assert builds == ["a", "empty"]  # a field with no values is remembered as such, not asked again
    memo.get_or_build("b", lambda: build("b"))  # "a" was used less recently than "empty": it goes
    assert "a" not in memo and "empty" in memo and len(memo) == 2 and memo.get("a") is None


def test_threads_sharing_a_memo_each_get_their_own_keys_value_and_the_memo_keeps_its_bound():
    # (The bound would hold without the lock too; what the lock buys, no torn LRU under races, a test cannot
    # show reliably. This shows concurrent builds and reads stay correct.)
    memo = SharedMemo(bounded_lru(50))

    def work(offset):
        for number in range(2_000):
            key = (offset + number) % 120
            assert memo.get_or_build(key, lambda key=key: key * 2) == key * 2

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(work, range(0, 400, 100)))
    assert len(memo) == 50


def test_a_cleared_memo_builds_again():
    memo = SharedMemo(bounded_lru(4))
    assert memo.get_or_build("k", lambda: 1) == 1
    memo.clear()
    assert "k" not in memo and memo.get_or_build("k", lambda: 2) == 2
