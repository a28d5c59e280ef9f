"""Data-plane benchmarks for `make bench` (issue: Resource Gateway).

- heavy aggregate over 1M order items: Analyze over gRPC (parse, plan, run,
  pin, sign) vs the identical compiled SQL on the raw driver, interleaved;
- draft compile time (bounded parse + schema + catalog checks + plan), p50;
- a 1,000-row window: ResolveWindow over gRPC vs fetching the same rows with
  the raw driver;
- peak RSS of the resources process.
Each backend runs its own resources process; PostgreSQL only when reachable.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import json
import random
import secrets
import sqlite3
import statistics
import time
from pathlib import Path

import duckdb
import psycopg
import sqlalchemy as sa

from cli.launcher import ServiceSet, cli_credentials
from cli.seed import seed
from services.resources.catalog import Catalog
from services.resources.draft import build_draft, parse_draft
from services.resources.query_compiler import OutputColumn, QueryCompiler
from services.resources.results import normalize_rows
from services.resources.store import open_store
from shared.identity import tokens
from shared.identity.certs import load_signing_key, signing_key_path
from shared.paths import REPO_ROOT, default_warehouse
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from shared.semantic.model import load_semantic_model
from tessera.common.v1 import common_pb2
from tessera.resources.v1 import resources_pb2

SCALE = 1_000_000
ROUNDS = 9
MAX_ROUNDS = 41
ROUND_BUDGET_SECONDS = 4.0  # time the raw query may take over all rounds, before the RPC's share
QUESTION = "net revenue, units sold and return rate by month and product category; order time and sales channel"
PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
RETAIL_MODEL = REPO_ROOT / "deploy" / "semantic-models" / "retail.yaml"


def _find(entities, label):
    for entity in entities:
        for item in [*entity.fields, *entity.metrics]:
            if item.label == label:
                return getattr(item, "field_id", "") or item.metric_id
    raise LookupError(label)


def _drafts(entities):
    heavy = {"mode": "aggregate", "output": "table",
             "measures": [{"id": "revenue", "metric": _find(entities, "Net revenue")},
                          {"id": "units", "metric": _find(entities, "Units sold")},
                          {"id": "return_rate", "metric": _find(entities, "Return rate")}],
             "dimensions": [{"id": "month", "field": _find(entities, "Order time"), "grain": "month"},
                            {"id": "category", "field": _find(entities, "Product category")}]}
    window = {"mode": "records", "entity": next(e.entity_id for e in entities if e.label == "Order"),
              "fields": [{"id": "when", "field": _find(entities, "Order time")},
                         {"id": "channel", "field": _find(entities, "Sales channel")}],
              "order_by": [{"output": "when", "direction": "desc"}]}
    return heavy, window


def _raw_runner(url: str):
    """The raw DB-API driver on the same warehouse, with its own connection."""
    parsed = sa.make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        connection = sqlite3.connect(f"file:{parsed.database}?mode=ro", uri=True)
    elif backend == "duckdb":
        connection = duckdb.connect(parsed.database, read_only=True)
    else:
        connection = psycopg.connect(parsed.set(drivername="postgresql").render_as_string(hide_password=False))

    def run(sql: str) -> int:
        cursor = connection.cursor()
        cursor.execute(sql)
        rows = cursor.fetchall()
        cursor.close()
        return len(rows)

    return run, connection.close


def _compiled_sql(url: str, draft: dict, row_cap: int, carry: bool = True, model: Path = RETAIL_MODEL) -> str:
    """The statement Analyze runs for `draft` over the semantic model `model` (with `carry`, its span and count
    ride along: what Analyze sends); without, the bare rows."""
    engine = sa.create_engine(url, connect_args={"read_only": True} if url.startswith("duckdb") else {})
    try:
        catalog = Catalog(load_semantic_model(model), engine)
        plan = QueryCompiler(catalog, engine.dialect.name).plan(build_draft(draft, catalog), row_cap, carry=carry)
        return str(plan.statement.compile(engine, compile_kwargs={"literal_binds": True}))
    finally:
        engine.dispose()


def _grant(cert_dir: Path, descriptor) -> common_pb2.SignedToken:
    now = dt.datetime.now(dt.UTC)
    binding = common_pb2.TokenBinding(subject="bench", audience="resources", nonce=secrets.token_hex(8))
    binding.issued_at.FromDatetime(now)
    binding.expires_at.FromDatetime(now + dt.timedelta(minutes=10))
    claims = common_pb2.WindowGrantClaims(
        binding=binding, grant_id=secrets.token_hex(6), resource_id=descriptor.resource_id,
        version_id=descriptor.version_id, content_hash=descriptor.content_hash,
        column_ids=[c.column_id for c in descriptor.columns], max_window_rows=1000)
    return tokens.sign(load_signing_key(signing_key_path(cert_dir, "host")), tokens.PURPOSE_WINDOW_GRANT, claims)


def _side_by_side(rpc, raw, budget: float = ROUND_BUDGET_SECONDS, least: int = ROUNDS,
                  most: int = MAX_ROUNDS) -> tuple[float, float, int]:
    """Median milliseconds of each, over alternating rounds: at least `least`, more where a query is quick
    (DuckDB's ~0.1 s), since a median over a few rounds on a shared 2-core machine moves by more than the
    10% it is held to; `budget` is the time the raw query may take over all rounds, up to `most` rounds."""
    rpc()  # warm both: caches, plans, pages
    started = time.perf_counter()
    raw()
    rounds = max(least, min(most, int(budget / max(time.perf_counter() - started, 1e-3))))
    times: dict[str, list[float]] = {"rpc": [], "raw": []}
    for number in range(rounds):
        pair = [("rpc", rpc), ("raw", raw)]
        for label, call in pair if number % 2 == 0 else pair[::-1]:
            started = time.perf_counter()
            call()
            times[label].append(time.perf_counter() - started)
    return statistics.median(times["rpc"]) * 1000, statistics.median(times["raw"]) * 1000, rounds


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _service_env(name: str, url: str, work: Path) -> dict[str, str]:
    return {"TESSERA_RESOURCES_WAREHOUSE_URL": url,
            "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{work / f'store-{name}.sqlite'}",
            "TESSERA_RESOURCES_STATEMENT_TIMEOUT_SECONDS": "300",
            # Every round reads the warehouse: the figure is a read against the raw driver's, not a reuse.
            "TESSERA_RESOURCES_RESULT_CACHE": "false",
            # Every round is an analysis of the one session "bench" (up to MAX_ROUNDS + 2): more than a person's 60.
            "TESSERA_RESOURCES_ANALYSES_PER_SESSION": str(10 * MAX_ROUNDS)}


def bench_backend(name: str, url: str, cert_dir: Path, work: Path) -> tuple[list[dict], float]:
    services = ServiceSet(cert_dir, work / f"run-{name}", names=("resources",), ephemeral_ports=True,
                          extra_env=_service_env(name, url, work))
    services.start(timeout=120)
    results = []
    try:
        address = services.handles["resources"].address
        with sync_channel(address, cli_credentials(cert_dir, "agent"), "resources") as agent, \
                sync_channel(address, cli_credentials(cert_dir, "host"), "resources") as host:
            turn = resources_pb2.TurnRef(session_id="bench", turn_id="t1")
            context = invoke(agent, "resources", "InspectContext", resources_pb2.InspectContextRequest(turn=turn))
            catalog = invoke(agent, "resources", "InspectCatalog", resources_pb2.InspectCatalogRequest(
                turn=turn, question=QUESTION, capability_token=context.capability_token))
            heavy, window_draft = _drafts(catalog.entities)
            # Compile first: DuckDB allows one in-process configuration per file at a time.
            sql = _compiled_sql(url, heavy, 1000)
            # LIMIT 1000, the bare rows: what a window reads, read straight from the warehouse.
            window_sql = _compiled_sql(url, window_draft, 999, carry=False)
            raw, close = _raw_runner(url)

            turns = itertools.count(2)

            def analyze(draft):  # each in a turn of its own: a turn's analysis budget would stop the rounds
                fresh = resources_pb2.TurnRef(session_id="bench", turn_id=f"t{next(turns)}")
                return invoke(agent, "resources", "Analyze", resources_pb2.AnalyzeRequest(
                    turn=fresh, draft_json=json.dumps(draft), capability_token=catalog.capability_token),
                    timeout=600)

            rpc_ms, raw_ms, rounds = _side_by_side(lambda: analyze(heavy), lambda: raw(sql))
            results.append({"name": f"analyze_heavy_aggregate_1m_{name}", "value": round(rpc_ms, 1), "unit": "ms",
                            "baseline": round(raw_ms, 1), "ratio": round(rpc_ms / raw_ms, 3), "goal_ratio": 1.10,
                            "description": f"Analyze RPC (revenue, units, return rate by month x category over 1M "
                                           f"order items) vs the identical compiled SQL on the raw driver; medians "
                                           f"of {rounds} alternating rounds"})

            records = analyze(window_draft)
            grant = _grant(cert_dir, records.descriptor)
            window_rpc, window_raw = [], []
            for _ in range(20):
                started = time.perf_counter()
                reply = invoke(host, "resources", "ResolveWindow", resources_pb2.ResolveWindowRequest(
                    grant=grant, offset=0, limit=1000))
                window_rpc.append(time.perf_counter() - started)
                assert len(reply.rows) == 1000
                started = time.perf_counter()
                assert raw(window_sql) == 1000
                window_raw.append(time.perf_counter() - started)
            w_rpc, w_raw = statistics.median(window_rpc) * 1000, statistics.median(window_raw) * 1000
            results.append({"name": f"window_1000_rows_{name}", "value": round(w_rpc, 2), "unit": "ms",
                            "baseline": round(w_raw, 2), "ratio": round(w_rpc / w_raw, 3),
                            "description": "ResolveWindow RPC of 1,000 pinned rows vs fetching the same rows "
                                           "with the raw driver"})
            close()
        rss = _peak_rss_mb(services.handles["resources"].pid)
    finally:
        services.stop()
    return results, rss


def bench_compile(url: str) -> list[dict]:
    engine = sa.create_engine(url)
    catalog = Catalog(load_semantic_model(RETAIL_MODEL), engine)
    planner = QueryCompiler(catalog, engine.dialect.name)
    entities = catalog.entities

    class _E:  # adapt catalog objects to the label lookup used above
        def __init__(self, entity):
            self.entity_id = entity.id
            self.label = entity.spec.label
            self.fields = [type("F", (), {"label": f.spec.label, "field_id": f.id})() for f in entity.fields.values()]
            self.metrics = [type("M", (), {"label": m.spec.label, "metric_id": m.id, "field_id": ""})()
                            for m in entity.metrics.values()]

    adapted = [_E(e) for e in entities.values()]
    heavy, _ = _drafts(adapted)
    typical = {"mode": "aggregate", "output": "ranking",
               "measures": [{"id": "revenue", "metric": _find(adapted, "Net revenue")}],
               "dimensions": [{"id": "region", "field": _find(adapted, "Region name")}],
               "order_by": [{"output": "revenue", "direction": "desc"}]}
    results = []
    for name, draft in (("typical", typical), ("heavy", heavy)):
        text = json.dumps(draft)
        samples = []
        for _ in range(2000):
            planner._plans.clear()  # a new draft each time: the plan cache would skip what is measured
            started = time.perf_counter()
            planner.plan(build_draft(parse_draft(text), catalog), 1000)
            samples.append(time.perf_counter() - started)
        p50 = statistics.median(samples) * 1000
        results.append({"name": f"draft_compile_p50_{name}", "value": round(p50, 3), "unit": "ms", "baseline": 1.0,
                        "ratio": round(p50, 3), "goal_ratio": 1.0,
                        "description": f"bounded parse + JSON Schema + catalog checks + plan of the {name} draft "
                                       "(typical: one metric by one dimension; heavy: three measures at two grains "
                                       "incl. a derived ratio, by month x category); baseline is the 1 ms goal"})
    engine.dispose()
    return results


def bench_pinning(work: Path) -> list[dict]:
    """Normalising and pinning 1,000 result rows: the per-result cost after the query, before the reply.

    Rows shaped like a grouped result's (a month, a category, money, a count, a ratio), pinned in a SQLite
    result store on disk, as a single replica runs it."""
    rng = random.Random(7)
    rows = [(dt.datetime(2021 + i % 5, 1 + i % 12, 1), f"category {i % 37}",
             decimal.Decimal(rng.randint(0, 10**9)) / 1000, rng.randint(0, 10**6), rng.random()) for i in range(1000)]
    kinds = ["timestamp", "string", "decimal", "integer", "float"]
    columns = [OutputColumn(f"c{i}", f"Column {i}", kind, "measure", "bench") for i, kind in enumerate(kinds)]
    store = open_store(f"sqlite:///{work / 'pin-bench.sqlite'}", 3600)
    samples = []
    try:
        for _ in range(200):
            started = time.perf_counter()
            store.pin("bench", "t1", columns, normalize_rows(rows, kinds), False)
            samples.append(time.perf_counter() - started)
    finally:
        store.close()
    p50 = statistics.median(samples) * 1000
    return [{"name": "normalize_and_pin_1000_rows_p50", "value": round(p50, 3), "unit": "ms", "baseline": 3.0,
             "ratio": round(p50 / 3.0, 3), "goal_ratio": 1.0,
             "description": "normalising 1,000 five-column rows and pinning them in the SQLite result store "
                            "(canonical JSON, hash, compressed blob, one committed insert); baseline is the 3 ms "
                            "goal"}]


def _postgres_url(work: Path) -> str | None:
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text('DROP DATABASE IF EXISTS "tessera_bench" WITH (FORCE)'))
            connection.execute(sa.text('CREATE DATABASE "tessera_bench"'))
    except sa.exc.OperationalError:
        print("PostgreSQL not reachable at 127.0.0.1:5432: PostgreSQL benchmarks skipped")
        return None
    finally:
        admin.dispose()
    return sa.make_url(PG_ADMIN).set(database="tessera_bench").render_as_string(hide_password=False)


def _settle(url: str) -> None:
    """Vacuum, analyse and checkpoint a freshly loaded PostgreSQL warehouse before anything is timed: left
    to autovacuum, that work ran during the other backends' rounds and took a core from them."""
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql("VACUUM ANALYZE")
            connection.exec_driver_sql("CHECKPOINT")
    finally:
        engine.dispose()


def run(work: Path, cert_dir: Path) -> list[dict]:
    sqlite_url = f"sqlite:///{default_warehouse()}"
    if not default_warehouse().exists():
        seed(sqlite_url, SCALE, progress=False)
    warehouses = {"sqlite": sqlite_url}
    duck = work / "warehouse.duckdb"
    seed(f"duckdb:///{duck}", SCALE, progress=False)
    warehouses["duckdb"] = f"duckdb:///{duck}"
    pg = _postgres_url(work)
    if pg:
        seed(pg, SCALE, progress=False)
        _settle(pg)
        warehouses["postgresql"] = pg
    results = bench_compile(sqlite_url) + bench_pinning(work)
    peak = 0.0
    for name, url in warehouses.items():
        print(f"data plane on {name} ...", flush=True)
        backend_results, rss = bench_backend(name, url, cert_dir, work)
        results += backend_results
        peak = max(peak, rss)
    results.append({"name": "resources_peak_rss", "value": round(peak, 1), "unit": "MB", "baseline": 500.0,
                    "ratio": round(peak / 500.0, 3), "goal_ratio": 1.0,
                    "description": "largest VmHWM of the resources processes; baseline is the 500 MB goal"})
    return results
