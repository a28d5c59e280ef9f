"""Reused results (issue 42): an analysis asked again with the same resolved draft, catalog, row cap and data is
answered from the rows read before, by any replica, within the model's `freshness.cache_seconds`; the caption says
when they were read, and the analysis still counts against the budgets."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import time
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from services.resources import probes
from services.resources.freshness import DataVersion
from services.resources.gateway import Gateway
from services.resources.ports import CachedResult
from services.resources.result_cache import ResultCache
from services.resources.store import ResourceStore, migrate
from services.resources.warehouse import Warehouse
from shared.data import db
from shared.rpc.refusals import Refusal
from tests.fixtures.postgres import BACKENDS, database_url
from tests.resources.conftest import Session, make_gateway

RETAIL = Path(__file__).resolve().parents[3] / "deploy" / "semantic-models" / "retail.yaml"


class Clock:
    """Seconds since the epoch that a test moves on."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def units_by_region(s: Session, since: str = "2023-01-01") -> dict:
    return {"mode": "aggregate", "output": "table",
            "measures": [{"id": "units", "metric": s.metric("order_items", "units_sold")}],
            "dimensions": [{"id": "region", "field": s.field("regions", "name")}],
            "filter": {"field": s.field("orders", "ordered_at"), "op": "gte", "value": since}}


def counting_reads(gateway: Gateway) -> list[str]:
    """One entry per statement the gateway's analyses run on the warehouse (the data version's look is none)."""
    reads: list[str] = []
    fetch = gateway.warehouse.fetch_with_fingerprint

    def counted(statement, max_rows):
        reads.append(str(statement))
        return fetch(statement, max_rows)

    gateway.warehouse.fetch_with_fingerprint = counted
    return reads


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cached(warehouse, cert_dir, tmp_path, clock):
    gateway = make_gateway(warehouse, cert_dir, tmp_path, clock=clock, result_cache=True)
    yield gateway
    gateway.close()


def test_an_analysis_asked_again_reuses_the_rows_read_with_the_first_reads_time_and_caption(cached, clock):
    reads = counting_reads(cached)
    first_person, second_person = Session(cached), Session(cached)
    first = first_person.analyze(units_by_region(first_person))
    clock.now += 30  # half a minute later, someone else asks the same
    second = second_person.analyze(units_by_region(second_person))
    assert len(reads) == 1  # read once
    assert second.result.rows == first.result.rows and second.result.content_hash == first.result.content_hash
    assert second.descriptor.version_id == first.descriptor.version_id
    # A copy pinned for the second person's turn: one result per offer, owned by the turn it was offered to.
    assert second.result.resource_id != first.result.resource_id
    assert (second.result.session_id, cached.store.get(second.result.resource_id).session_id) == (
        second_person.session_id, second_person.session_id)
    assert cached.store.get(second.result.resource_id).rows == first.result.rows
    # "Read from the warehouse on …" is when the rows were read, not when they were reused.
    assert second.evidence.observed_at == first.evidence.observed_at
    assert second.evidence.observed_at.ToDatetime().timestamp() == pytest.approx(clock.now - 30, abs=1e-3)
    assert (second.evidence.query_fingerprint, second.evidence.elapsed) == (
        first.evidence.query_fingerprint, first.evidence.elapsed)
    assert second.interpretation == first.interpretation
    # The offer is the second turn's own, signed now.
    assert second.offer != first.offer and second.evidence.resource_id == second.result.resource_id
    assert cached.results.counts().hits == 1 and cached.results.counts().misses == 1


def test_another_filter_or_period_reads_the_warehouse(cached):
    reads = counting_reads(cached)
    s = Session(cached)
    s.analyze(units_by_region(s))
    s.analyze(units_by_region(s, since="2024-01-01"))
    assert len(reads) == 2
    quarter = {**units_by_region(s), "filter": {"field": s.field("orders", "ordered_at"), "op": "previous",
                                                "unit": "quarter"}}
    s.analyze(quarter)  # its reference date (the latest order) is read too, and kept a minute
    assert len(reads) > 2
    read = len(reads)
    s.analyze(quarter)  # the same quarter, resolved to the same dates
    assert len(reads) == read


def test_a_reuse_is_an_analysis_of_the_budgets_and_is_refused_when_they_are_spent(warehouse, cert_dir, tmp_path):
    gateway = make_gateway(warehouse, cert_dir, tmp_path, result_cache=True, analyses_per_turn=2)
    try:
        reads = counting_reads(gateway)
        s = Session(gateway)
        draft = json.dumps(units_by_region(s))
        remaining = [gateway.analyze(s.session_id, "turn-a", draft, s.capability).analyses_remaining
                     for _ in range(2)]
        assert remaining == [1, 0] and len(reads) == 1
        with pytest.raises(Refusal) as refused:
            gateway.analyze(s.session_id, "turn-a", draft, s.capability)
        assert refused.value.reason == "ANALYSIS_BUDGET_SPENT"
        assert gateway.budget.session_remaining(s.session_id) == 100_000 - 2
        # Scope is checked before anything is reused: a capability that never saw the ids is refused.
        with pytest.raises(Refusal) as out_of_scope:
            gateway.analyze(s.session_id, "turn-b", draft, s.empty)
        assert out_of_scope.value.reason == "ID_NOT_IN_SCOPE"
    finally:
        gateway.close()


def test_an_entry_is_reused_until_the_models_cache_seconds_have_passed(cached, clock):
    reads = counting_reads(cached)
    s = Session(cached)
    first = s.analyze(units_by_region(s))
    clock.now += cached.model.freshness.cache_seconds - 1
    assert s.analyze(units_by_region(s)).evidence.observed_at == first.evidence.observed_at
    clock.now += 2
    again = s.analyze(units_by_region(s))
    assert len(reads) == 2 and again.evidence.observed_at.ToDatetime().timestamp() == pytest.approx(clock.now)


def test_two_gateways_over_one_store_reuse_what_either_read(warehouse, cert_dir, tmp_path):
    one, other = (make_gateway(warehouse, cert_dir, tmp_path, result_cache=True) for _ in range(2))
    try:
        reads_one, reads_other = counting_reads(one), counting_reads(other)
        s = Session(one)  # both replicas sign capabilities with the deployment's one secret
        first = one.analyze(s.session_id, "t-1", json.dumps(units_by_region(s)), s.capability)
        second = other.analyze(s.session_id, "t-2", json.dumps(units_by_region(s)), s.capability)
        assert (len(reads_one), len(reads_other)) == (1, 0)
        assert second.result.rows == first.result.rows
        assert one.store.get(second.result.resource_id).turn_id == "t-2"  # the copy is in the shared store
    finally:
        one.close()
        other.close()


def test_a_model_with_cache_seconds_0_reads_every_time_and_keeps_its_ids(warehouse, cert_dir, tmp_path):
    model = tmp_path / "retail.yaml"
    model.write_text(RETAIL.read_text().replace("freshness: {cache_seconds: 300}", "freshness: {cache_seconds: 0}"))
    plain = make_gateway(warehouse, cert_dir, tmp_path / "a", result_cache=True)
    uncached = make_gateway(warehouse, cert_dir, tmp_path / "b", result_cache=True, semantic_model=model)
    try:
        assert uncached.model.freshness.cache_seconds == 0
        assert uncached.catalog.fingerprint == plain.catalog.fingerprint  # tuning reuse renames nothing
        reads = counting_reads(uncached)
        s = Session(uncached)
        s.analyze(units_by_region(s))
        s.analyze(units_by_region(s))
        assert len(reads) == 2 and uncached.results.counts().bypassed == 2
    finally:
        plain.close()
        uncached.close()


def test_a_store_that_fails_at_the_lookup_costs_the_reuse_not_the_answer(cached, caplog, monkeypatch):
    caplog.set_level(logging.WARNING, logger="tessera.resources.cache")
    reads = counting_reads(cached)
    s = Session(cached)
    s.analyze(units_by_region(s))

    def failing(key, now):
        raise sa.exc.OperationalError("SELECT", {}, Exception("disk I/O error"))

    monkeypatch.setattr(cached.store, "cached", failing)
    cached.results._memo.clear()  # what this replica remembers would answer before the store is asked
    answered = s.analyze(units_by_region(s))
    assert len(reads) == 2 and answered.result.rows
    assert cached.results.counts().bypassed == 1
    assert any("result cache not looked up" in r.getMessage() for r in caplog.records)


def test_a_key_is_the_draft_with_its_periods_as_resolved_the_catalog_the_cap_and_the_data():
    version = type("Fixed", (), {"token": lambda self: "v1"})()
    cache = ResultCache(index=None, version=version, lifetime_seconds=60)
    draft = {"mode": "aggregate", "measures": [{"id": "n", "metric": "met_aaaaaaaaaaaa"}]}
    key = cache.key(draft, [["/filter", "2024-04-01", "2024-07-01", False, "2024-08-20", "latest_data"]], "fp", 1000)
    assert key == cache.key(json.loads(json.dumps(draft, sort_keys=True)),
                            [["/filter", "2024-04-01", "2024-07-01", False, "2024-08-20", "latest_data"]], "fp", 1000)
    others = [cache.key(draft, [["/filter", "2024-07-01", "2024-10-01", False, "2024-11-20", "latest_data"]], "fp",
                        1000),
              cache.key(draft, [], "fp", 1000), cache.key(draft, [], "other", 1000), cache.key(draft, [], "fp", 10)]
    assert len({key, *others}) == 5
    version.token = lambda: "v2"
    assert cache.key(draft, [], "fp", 1000) != others[1]


# --- the data version -------------------------------------------------------


def test_a_write_to_a_sqlite_warehouse_changes_its_version_and_the_next_analysis_reads_it(
        seeded, cert_dir, tmp_path):
    if not seeded.startswith("sqlite"):
        pytest.skip("a SQLite file of its own to write to; PostgreSQL and DuckDB are tested below")
    copy = tmp_path / "warehouse.sqlite"
    shutil.copy(sa.make_url(seeded).database, copy)
    gateway = make_gateway(f"sqlite:///{copy}", cert_dir, tmp_path, result_cache=True)
    try:
        reads = counting_reads(gateway)
        s = Session(gateway)
        before = s.analyze(units_by_region(s))
        with sqlite3.connect(copy) as writer:
            writer.execute("UPDATE order_items SET quantity = quantity + 1")
        after = s.analyze(units_by_region(s))
        assert len(reads) == 2 and after.result.content_hash != before.result.content_hash
    finally:
        gateway.close()


def test_a_write_to_a_postgresql_table_of_the_model_changes_the_version(seeded, warehouse):
    if not seeded.startswith("postgresql"):
        pytest.skip("PostgreSQL's table statistics")
    reader = Warehouse(warehouse, 30.0, connections=1)
    try:
        version = DataVersion(reader, ["regions", "order_items"])
        before = version.token()
        assert version.token() == before
        owner = sa.create_engine(seeded)
        with owner.begin() as connection:  # every row updated to itself: counted, and no other test's data moves
            connection.execute(sa.text("UPDATE regions SET name = name"))
        owner.dispose()  # the backend reports its counts as it goes
        deadline = time.monotonic() + 15
        while version.token() == before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert version.token() != before
    finally:
        reader.close()


def test_a_write_to_a_duckdb_file_changes_its_version(tmp_path):
    path = tmp_path / "small.duckdb"
    with duckdb.connect(str(path)) as connection:
        connection.execute("CREATE TABLE t (n INTEGER)")
    reader = Warehouse(f"duckdb:///{path}", 30.0, connections=1)
    version = DataVersion(reader, ["t"])
    before = version.token()
    reader.close()  # DuckDB lets one process write only when no one else holds the file
    with duckdb.connect(str(path)) as connection:
        connection.execute("INSERT INTO t VALUES (1)")
    reader = Warehouse(f"duckdb:///{path}", 30.0, connections=1)
    try:
        assert DataVersion(reader, ["t"]).token() != before
    finally:
        reader.close()


# --- the store's index --------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path, clock):
    engine = db.engine_for(database_url(request, tmp_path, "cache"))
    migrate(engine)
    yield ResourceStore(engine, 3_600.0, clock=clock)
    engine.dispose()


def test_the_store_keeps_an_entry_until_it_expires_and_copies_its_result_for_another_turn(store, clock):
    from services.resources.query_compiler import OutputColumn

    columns = [OutputColumn(id="n", label="N", type="integer", role="measure", semantic_id="met_aaaaaaaaaaaa")]
    pinned = store.pin("s-1", "t-1", columns, [[1], [2]], False)
    entry = CachedResult("k" * 64, pinned.resource_id, 100.0, 160.0, "f" * 64, 0.25, b"caption")
    store.keep(entry)
    assert store.cached("k" * 64, 159.0) == entry and store.cached("k" * 64, 160.0) is None
    store.keep(CachedResult("k" * 64, pinned.resource_id, 150.0, 210.0, "f" * 64, 0.5, b"newer"))
    assert store.cached("k" * 64, 200.0).interpretation == b"newer"
    copy = store.pin_copy(pinned.resource_id, "s-2", "t-9")
    store._cache.clear()  # read back from the database, not from memory
    again = store.get(copy.resource_id)
    assert (again.session_id, again.turn_id, again.rows, again.content_hash) == (
        "s-2", "t-9", [[1], [2]], pinned.content_hash)
    assert store.pin_copy("res_gone", "s-2", "t-9") is None
    # A sweep forgets the entries that expired (the pinned results stay: offers were made of them).
    store.keep(CachedResult("e" * 64, pinned.resource_id, clock.now, clock.now + 60, "f" * 64, 0.5, b"later"))
    clock.now = 300.0
    store.sweep()
    assert store.cached("k" * 64, 200.0) is None and store.cached("e" * 64, 200.0) is not None
    assert store.get(pinned.resource_id) is not None


def test_a_probe_asked_again_reads_nothing_and_still_spends_a_unit(cached):
    reads = counting_reads(cached)
    s = Session(cached)
    ordered = s.field("orders", "ordered_at")
    first, left_first = cached.probe(s.session_id, "t-1", "time-bounds", ordered, s.capability)
    again, left_again = cached.probe(s.session_id, "t-1", "time-bounds", ordered, s.capability)
    matched, _ = cached.probe(s.session_id, "t-2", "value-match", "", s.capability, text="online orders")
    rematched, _ = cached.probe(s.session_id, "t-3", "value-match", "", s.capability, text="online orders")
    assert again == first and (left_first, left_again) == (1, 0)
    assert rematched[:2] == matched[:2] and rematched[2]  # the same values, and the capability widened again
    reads_after = len(reads)
    with pytest.raises(Refusal) as spent:
        cached.probe(s.session_id, "t-1", "time-bounds", ordered, s.capability)
    assert spent.value.reason == "PROBE_BUDGET_EXHAUSTED" and len(reads) == reads_after
    assert len([r for r in reads if "max(" in r and "min(" in r]) == 1


def test_with_caching_off_every_probe_reads(warehouse, cert_dir, tmp_path):
    gateway = make_gateway(warehouse, cert_dir, tmp_path)
    try:
        reads = counting_reads(gateway)
        s = Session(gateway)
        for turn in ("t-1", "t-2"):
            gateway.probe(s.session_id, turn, "time-bounds", s.field("orders", "ordered_at"), s.capability)
        assert len(reads) == 2
    finally:
        gateway.close()


@pytest.mark.parametrize("text", [
    "Online orders from SMBs, and critical tickets resolved in store", "bought in store", "web or online",
    "net revenue from small-business customers in France and the West", "Units sold by Electronics category",
    "What is our net revenue by region?", "phones and laptops returned as damaged", "stroe sales of grocries"])
def test_a_value_match_over_held_values_finds_what_the_warehouse_scan_finds(gateway, text):
    """The values of a field with few are matched in memory once read (`held`); the scan they spare finds the
    same values with the same words, on every backend."""
    fields = gateway._match_fields("", text, Session(gateway).capability)
    few = lambda field: probes.few_values(gateway.warehouse, field)  # noqa: E731
    scanned = probes.value_match(gateway.warehouse, fields, text, few)
    held = probes.value_match(gateway.warehouse, fields, text, few, held=few)
    assert held == scanned
    assert any(few(field) is not None for field in fields)  # some fields were matched in memory


def test_a_value_match_with_caching_on_scans_only_fields_with_many_values(cached):
    reads = counting_reads(cached)
    s = Session(cached)
    cached.probe(s.session_id, "t-1", "value-match", "", s.capability, text="online orders in France")
    scans = [r for r in reads if "replace(" in r]
    cached.probe(s.session_id, "t-2", "value-match", "", s.capability, text="store orders in Canada")
    fields = cached._match_fields("", "x", s.capability)
    many = [f for f in fields if probes.few_values(cached.warehouse, f) is None]
    assert len(scans) == len(many) < len(fields)
    assert len([r for r in reads if "replace(" in r]) == 2 * len(many)
