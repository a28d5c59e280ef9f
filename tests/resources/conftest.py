"""The Resource Gateway's domain over every backend: SQLite, DuckDB, PostgreSQL.

Each backend gets the same small demo warehouse (deterministic seed), and the
same tests run against each. PostgreSQL tests skip, visibly, when no server
answers at 127.0.0.1:5432.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from cli.seed import READER_ROLE, seed
from services.resources.config import ResourcesSettings
from services.resources.gateway import Gateway
from services.resources.wiring import ResourcesParts, open_gateway
from shared.config import load_settings
from shared.rpc.runtime import Lifecycle
from tessera.common.v1 import common_pb2
from tests.fixtures import supply_warehouse
from tests.fixtures.postgres import postgres_database

SCALE = 5_000
BACKENDS = ["sqlite", "duckdb", "postgresql"]


@pytest.fixture(scope="session", params=BACKENDS)
def seeded(request, tmp_path_factory) -> str:
    """URL (owner's credentials) of a seeded warehouse for one backend."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('wh-sqlite') / 'warehouse.sqlite'}"
    elif request.param == "duckdb":
        url = f"duckdb:///{tmp_path_factory.mktemp('wh-duckdb') / 'warehouse.duckdb'}"
    else:
        url = postgres_database(request, "tessera_test")
    seed(url, scale=SCALE, progress=False)
    return url


@pytest.fixture(scope="session")
def warehouse(seeded) -> str:
    """The URL the gateway uses: on PostgreSQL, the read-only role the seeder set up."""
    if seeded.startswith("postgresql"):
        return sa.make_url(seeded).set(username=READER_ROLE).render_as_string(hide_password=False)
    return seeded


# A session's bounds (tested on their own: test_information_budget.py, with the defaults) limit no test of anything
# else: one test session asks far more drafts, and more alike, than a person's would.
UNBOUNDED_SESSIONS = {"analyses_per_session": 100_000, "oracle_variants_per_shape": 1_000,
                      "oracle_searches_per_session": 100_000}
# Nor does the result cache (tested on its own: test_result_cache.py): a test that counts the statements an
# analysis sends would otherwise see none when an earlier test asked the same draft.
UNCACHED = {"result_cache": False}


def make_gateway(warehouse_url: str, cert_dir, store_dir, today=None, clock=None, **overrides) -> Gateway:
    """A gateway over `warehouse_url` with settings `overrides`; `today` (a function) stands in for its date, and
    `clock` (a function) for its time."""
    env = {"TESSERA_CERT_DIR": str(cert_dir), "TESSERA_RESOURCES_WAREHOUSE_URL": warehouse_url,
           "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{store_dir / 'results.sqlite'}"}
    chosen = {**UNBOUNDED_SESSIONS, **UNCACHED, **overrides}
    env.update({f"TESSERA_RESOURCES_{k.upper()}": str(v) for k, v in chosen.items()})
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        settings = load_settings("resources", ResourcesSettings)
    stand_ins = {name: value for name, value in (("today", today), ("clock", clock)) if value is not None}
    return open_gateway(settings, **stand_ins)


def in_process(gateway: Gateway, pool) -> ResourcesParts:
    """The servicer's parts over a test's gateway and pool, served in process (no probes, no background work)."""
    return ResourcesParts(info=common_pb2.ServiceInfo(name="resources"), gateway=gateway, pool=pool,
                          lifecycle=Lifecycle())


@pytest.fixture(scope="session")
def gateway(warehouse, cert_dir, tmp_path_factory) -> Gateway:
    built = make_gateway(warehouse, cert_dir, tmp_path_factory.mktemp("store"))
    yield built
    built.close()


def recorded_statements(engine: sa.Engine):
    """Every statement sent on `engine` while the generator is suspended (a fixture's body)."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


@pytest.fixture
def statements(gateway):
    """Every statement the gateway sends to the warehouse during the test."""
    yield from recorded_statements(gateway.warehouse.engine)


@pytest.fixture(scope="session")
def raw_engine(seeded):
    """An independent read connection for the expected values (not the gateway's)."""
    # DuckDB refuses a second in-process connection with another configuration.
    args = {"read_only": True} if seeded.startswith("duckdb") else {}
    engine = sa.create_engine(seeded, connect_args=args)
    yield engine
    engine.dispose()


class Session:
    """A model session: a capability that has seen the whole catalog."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.session_id = f"s-{uuid.uuid4().hex[:8]}"
        token = gateway.fresh_token(self.session_id)
        ids = set(gateway.catalog.by_id)
        self.capability = gateway.open_capability(
            gateway.capabilities.mint(gateway.catalog.fingerprint, self.session_id, ids), self.session_id)
        self.empty = gateway.open_capability(token, self.session_id)

    @property
    def turn_id(self) -> str:
        """A new turn for every use: the per-turn budgets (tested on their own) limit no test of anything else."""
        return f"t-{uuid.uuid4().hex[:8]}"

    def field(self, entity: str, name: str) -> str:
        return self.gateway.catalog.entities[entity].fields[name].id

    def metric(self, entity: str, name: str) -> str:
        return self.gateway.catalog.entities[entity].metrics[name].id

    def relationship(self, name: str) -> str:
        return self.gateway.catalog.relationships[name].id

    def entity(self, name: str) -> str:
        return self.gateway.catalog.entities[name].id

    def analyze(self, draft: dict):
        import json

        return self.gateway.analyze(self.session_id, self.turn_id, json.dumps(draft), self.capability)


@pytest.fixture
def session(gateway) -> Session:
    return Session(gateway)


SUPPLY_MODEL = Path(__file__).parent / "models" / "supply.yaml"


@pytest.fixture(scope="session")
def supply_warehouse_url(seeded, warehouse, tmp_path_factory) -> tuple[str, str]:
    """The second, normalised schema (orders, lines, parts, suppliers, customers, nations): URLs for its
    owner and for the gateway.

    On PostgreSQL it lives in the retail warehouse's database under its own table names (read through
    the same read-only role); SQLite and DuckDB get a file of their own, since DuckDB refuses a second
    in-process connection to a file the retail gateway holds open read-only.
    """
    if seeded.startswith("postgresql"):
        supply_warehouse.build(seeded)
        return seeded, warehouse
    backend = seeded.split(":", 1)[0]
    url = f"{backend}:///{tmp_path_factory.mktemp('wh-supply') / f'supply.{backend}'}"
    supply_warehouse.build(url)
    return url, url


@pytest.fixture(scope="session")
def supply_gateway(supply_warehouse_url, cert_dir, tmp_path_factory) -> Gateway:
    built = make_gateway(supply_warehouse_url[1], cert_dir, tmp_path_factory.mktemp("supply-store"),
                         semantic_model=SUPPLY_MODEL)
    yield built
    built.close()


@pytest.fixture(scope="session")
def supply_raw(supply_warehouse_url, supply_gateway):
    """An independent read connection to the supply warehouse, for expected values (after the gateway
    opened it: DuckDB then allows a second read-only connection)."""
    url = supply_warehouse_url[0]
    engine = sa.create_engine(url, connect_args={"read_only": True} if url.startswith("duckdb") else {})
    yield engine
    engine.dispose()


@pytest.fixture
def supply(supply_gateway) -> Session:
    return Session(supply_gateway)


@pytest.fixture
def supply_statements(supply_gateway):
    """Every statement the supply gateway sends to its warehouse during the test."""
    yield from recorded_statements(supply_gateway.warehouse.engine)
