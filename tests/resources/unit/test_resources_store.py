"""The gateway's store, as replicas share it: migrations, the probe budget under races, expiry,
revocations, and a store that goes away and comes back. On SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from cli.launcher import free_ports
from services.resources.query_compiler import OutputColumn
from services.resources.store import CACHE_ENTRIES, ResourceStore, StoreUnavailable, engine_for, migrate, open_store
from shared.rpc.errors import status_of
from shared.rpc.refusals import Unavailable
from tests.fixtures.postgres import BACKENDS, database_url, postgres_database
from tests.fixtures.store_outage import allow_connections

DAY = 86_400.0
COLUMNS = [OutputColumn(id="channel", label="Channel", type="string", role="dimension", semantic_id="fld_x")]


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):
    return database_url(request, tmp_path, "resources")


@pytest.fixture
def replicas(url):
    """Two stores on one database, as two gateway replicas hold them."""
    stores = [open_store(url, DAY), open_store(url, DAY)]
    yield stores
    for store in stores:
        store.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_result_pinned_by_one_replica_is_read_by_the_other(replicas):
    a, b = replicas
    pinned = a.pin("s1", "t1", COLUMNS, [["web"], ["store"]], truncated=False)
    found = b.get(pinned.resource_id)
    assert found == pinned and found.rows == [["web"], ["store"]]
    assert b.get("res_missing") is None


def test_a_replica_keeps_only_the_recently_used_results_in_memory_and_reads_the_rest(replicas):
    a, _ = replicas
    first = a.pin("s1", "t1", COLUMNS, [["first"]], truncated=False)
    for number in range(CACHE_ENTRIES):
        a.get(first.resource_id)  # used all along: stays in memory
        a.pin("s1", "t1", COLUMNS, [[f"row {number}"]], truncated=False)
    assert len(a._cache) == CACHE_ENTRIES and first.resource_id in a._cache
    evicted = a.pin("s1", "t1", COLUMNS, [["gone from memory"]], truncated=False)
    for number in range(CACHE_ENTRIES):
        a.pin("s1", "t1", COLUMNS, [[f"later {number}"]], truncated=False)
    assert evicted.resource_id not in a._cache and a.get(evicted.resource_id) == evicted  # read back from the store


def _legacy_store(url: str) -> None:
    """The store as `create_all` made it before migrations existed, with one result in it."""
    legacy = sa.MetaData()
    sa.Table(
        "pinned_results", legacy,
        sa.Column("resource_id", sa.String(40), primary_key=True),
        sa.Column("version_id", sa.String(40), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False), sa.Column("turn_id", sa.String(128), nullable=False),
        sa.Column("columns_json", sa.Text, nullable=False), sa.Column("rows_blob", sa.LargeBinary, nullable=False),
        sa.Column("row_count", sa.Integer, nullable=False), sa.Column("truncated", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False))
    engine = sa.create_engine(url)
    legacy.create_all(engine)
    engine.dispose()


def test_a_store_made_by_create_all_is_adopted_with_its_results(url):
    _legacy_store(url)
    before = open_store(url, DAY)  # adopts the table as 0001, then upgrades
    pinned = before.pin("s1", "t1", COLUMNS, [["web"]], truncated=True)
    before.close()
    again = open_store(url, DAY)  # idempotent
    assert again.get(pinned.resource_id) == pinned
    assert again.spend("probe", "s1", "t1", 2) == 1
    with again.engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "0005"
    again.close()


def test_a_foreign_table_of_the_same_name_is_refused_not_adopted(url):
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE pinned_results (resource_id VARCHAR(40) PRIMARY KEY, other TEXT)")
    engine.dispose()
    with pytest.raises(StoreUnavailable, match="not the gateway's table") as refused:
        open_store(url, DAY)
    assert not refused.value.unreachable


def test_migrating_from_0001_keeps_pinned_results(url):
    engine = engine_for(url)
    migrate(engine, "0001")
    first = ResourceStore(engine, DAY)
    pinned = first.pin("s1", "t1", COLUMNS, [["web"]], truncated=False)
    migrate(engine)
    assert ResourceStore(engine, DAY).get(pinned.resource_id) == pinned
    engine.dispose()


def test_migrating_from_0002_keeps_the_probes_spent_and_budgets_kinds_apart(url):
    engine = engine_for(url)
    migrate(engine, "0002")
    with engine.begin() as connection:
        connection.execute(sa.text("INSERT INTO probe_budgets (session_id, turn_id, used, updated_at) "
                                   "VALUES ('s1', 't1', 2, :now)"), {"now": time.time()})
    migrate(engine)
    store = ResourceStore(engine, DAY)
    assert store.used("probe", "s1", "t1") == 2 and store.spend("probe", "s1", "t1", 2) is None
    assert store.spend("analysis", "s1", "t1", 2) == 1 and store.used("probe", "s1", "t1") == 2
    engine.dispose()


def test_racing_replicas_never_spend_more_than_the_budget(replicas):
    budget, racers = 2, 16
    barrier = threading.Barrier(racers)

    def spend(index: int) -> int | None:
        barrier.wait()
        return replicas[index % 2].spend("probe", "s-race", "t-race", budget)

    with ThreadPoolExecutor(racers) as pool:
        outcomes = list(pool.map(spend, range(racers)))
    assert sorted(o for o in outcomes if o is not None) == [1, 2]
    assert outcomes.count(None) == racers - budget
    assert replicas[0].used("probe", "s-race", "t-race") == budget


def test_the_budget_is_per_turn_and_a_refund_gives_a_unit_back(replicas):
    a, b = replicas
    assert [a.spend("probe", "s", "t1", 2), b.spend("probe", "s", "t1", 2),
            a.spend("probe", "s", "t1", 2)] == [1, 2, None]
    assert b.spend("probe", "s", "t2", 2) == 1 and a.spend("probe", "other", "t1", 2) == 1
    b.refund("probe", "s", "t1")
    assert a.used("probe", "s", "t1") == 1 and a.spend("probe", "s", "t1", 2) == 2
    assert a.spend("probe", "s", "t3", 0) is None and a.used("probe", "s", "t3") == 0


def test_old_turns_and_expired_revocations_are_swept(url):
    clock = Clock()
    store = ResourceStore(engine_for(url), DAY, clock)
    migrate(store.engine)
    store.spend("probe", "s", "old", 2)
    store.revoke("grant-old", clock.now + DAY)
    clock.now += DAY - 1
    store.spend("probe", "s", "recent", 2)
    store.revoke("grant-recent", clock.now + 600)
    clock.now += 2  # "old" is now idle for more than a day, "grant-old" long expired
    assert store.sweep() == (1, 1)
    assert store.used("probe", "s", "old") == 0 and store.used("probe", "s", "recent") == 1
    assert store.revoked_among(["grant-old", "grant-recent"]) == {"grant-recent"}
    clock.now += 120  # the next spend runs the sweep itself, at most once a minute
    store.revoke("grant-x", clock.now - 1)
    store.spend("probe", "s", "new", 2)
    assert store.revoked_among(["grant-x"]) == set()
    store.close()


def test_a_revocation_on_one_replica_holds_on_the_other(replicas):
    a, b = replicas
    assert b.revoked_among(["gnt_1"]) == set()
    assert a.revoke("gnt_1", 4_102_444_800.0) is True
    assert b.revoked_among(["gnt_1"]) == {"gnt_1"} and b.revoke("gnt_1", 4_102_444_800.0) is False


def test_a_lost_store_refuses_with_unavailable_and_comes_back(request):
    url = postgres_database(request, "tessera_resources_lost")
    store = open_store(url, DAY)
    pinned = store.pin("s1", "t1", COLUMNS, [["web"]], truncated=False)
    database = sa.make_url(url).database
    allow_connections(database, False)
    request.addfinalizer(lambda: allow_connections(database, True))
    assert "result store unreachable" in store.ping()
    calls = [lambda: store.spend("probe", "s1", "t1", 2), lambda: store.used("probe", "s1", "t1"),
             lambda: store.pin("s1", "t1", COLUMNS, [["x"]], truncated=False), lambda: store.revoked_among(["g"]),
             lambda: store.revoke("g", 4_102_444_800.0), lambda: store.get("res_not_cached")]
    for call in calls:
        with pytest.raises(Unavailable) as refused:  # the interceptor answers it as UNAVAILABLE
            call()
        assert refused.value.reason == "DATABASE_UNAVAILABLE"
        assert status_of(refused.value).metadata["next_step"].startswith("Try again shortly")  # as a model reads it
    allow_connections(database, True)
    assert store.ping() is None  # the same store object, no restart
    assert store.spend("probe", "s1", "t1", 2) == 1 and store.get(pinned.resource_id) == pinned
    store.close()


def test_a_store_that_does_not_answer_at_start_is_worth_waiting_for(tmp_path):
    port, = free_ports(1)  # nobody listens there
    with pytest.raises(StoreUnavailable, match="TESSERA_RESOURCES_STORE_URL") as waiting:
        open_store(f"postgresql+psycopg://postgres@127.0.0.1:{port}/results", DAY)
    assert waiting.value.unreachable
    with pytest.raises(StoreUnavailable) as refused:  # a directory where the file should be: not worth waiting
        open_store(f"sqlite:///{tmp_path}", DAY)
    assert not refused.value.unreachable


@pytest.mark.parametrize(("url", "says"), [("duckdb:///results.duckdb", "not duckdb"),
                                           ("no url at all", "not a database URL")])
def test_a_store_url_of_another_kind_is_a_clear_startup_error(url, says):
    with pytest.raises(StoreUnavailable, match=says) as refused:
        open_store(url, DAY)
    assert not refused.value.unreachable
