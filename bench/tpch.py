"""TPC-H at scale factor 0.1 through a semantic model, for `make bench` (issue 42, part 6).

Eight TPC-H queries (Q1, Q3, Q5, Q6, Q10, Q12, Q14, Q19), each written as an analysis draft over the TPC-H
semantic model (bench/models/tpch.yaml): Analyze over gRPC (parse, plan, run, pin, sign) against the very
statement the gateway compiles for the draft, run on the raw DB-API driver, interleaved (bench/data_plane.py's
_compiled_sql, _raw_runner and _side_by_side), per query and per backend (DuckDB, SQLite, PostgreSQL when one
answers at 127.0.0.1:5432). Each draft's rows are also checked against TPC-H's own answer for SF0.1 (the
reference answers the generator ships), so an entry never names a query its draft does not answer.

The data comes from `CALL dbgen(sf=0.1)` in a venv of its own (var/tpch/venv) with duckdb 1.2.2, whose wheel
links the tpch extension statically (newer wheels download it; extension autoinstall is turned off, so the
generation is offline once the wheel is installed). It is exported once to Parquet (var/tpch/sf0.1/) and copied
from there into a DuckDB file and a SQLite file, kept beside it, and into a throwaway PostgreSQL database per
run; a second run regenerates nothing (the stamps say what each file was built by).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psycopg
import sqlalchemy as sa

from shared.paths import REPO_ROOT, var_dir

SCALE_FACTOR = 0.1
GENERATOR = "duckdb==1.2.2"  # the last wheel that links the tpch extension statically
MODEL = REPO_ROOT / "bench" / "models" / "tpch.yaml"
# What the cached files were built by: a change here (the schema, the loader) rebuilds the warehouses.
LOAD_REVISION = 1

# --- the physical schema: TPC-H's tables as dbgen writes them -------------------------------------------------

METADATA = sa.MetaData()


def _table(name: str, key: tuple[str, ...], *columns: sa.Column) -> sa.Table:
    return sa.Table(name, METADATA, *columns, sa.PrimaryKeyConstraint(*key, name=f"{name}_pk"))


def _money(name: str) -> sa.Column:
    return sa.Column(name, sa.Numeric(15, 2), nullable=False)


def _text(name: str) -> sa.Column:
    return sa.Column(name, sa.String, nullable=False)


def _int(name: str, big: bool = True) -> sa.Column:
    return sa.Column(name, sa.BigInteger if big else sa.Integer, nullable=False, autoincrement=False)


def _date(name: str) -> sa.Column:
    return sa.Column(name, sa.Date, nullable=False)


_table("region", ("r_regionkey",), _int("r_regionkey", False), _text("r_name"), _text("r_comment"))
_table("nation", ("n_nationkey",), _int("n_nationkey", False), _text("n_name"), _int("n_regionkey", False),
       _text("n_comment"))
_table("supplier", ("s_suppkey",), _int("s_suppkey"), _text("s_name"), _text("s_address"),
       _int("s_nationkey", False), _text("s_phone"), _money("s_acctbal"), _text("s_comment"))
_table("customer", ("c_custkey",), _int("c_custkey"), _text("c_name"), _text("c_address"),
       _int("c_nationkey", False), _text("c_phone"), _money("c_acctbal"), _text("c_mktsegment"), _text("c_comment"))
_table("part", ("p_partkey",), _int("p_partkey"), _text("p_name"), _text("p_mfgr"), _text("p_brand"), _text("p_type"),
       _int("p_size", False), _text("p_container"), _money("p_retailprice"), _text("p_comment"))
_table("partsupp", ("ps_partkey", "ps_suppkey"), _int("ps_partkey"), _int("ps_suppkey"), _int("ps_availqty"),
       _money("ps_supplycost"), _text("ps_comment"))
_table("orders", ("o_orderkey",), _int("o_orderkey"), _int("o_custkey"), _text("o_orderstatus"),
       _money("o_totalprice"), _date("o_orderdate"), _text("o_orderpriority"), _text("o_clerk"),
       _int("o_shippriority", False), _text("o_comment"))
_table("lineitem", ("l_orderkey", "l_linenumber"), _int("l_orderkey"), _int("l_partkey"), _int("l_suppkey"),
       _int("l_linenumber"), _money("l_quantity"), _money("l_extendedprice"), _money("l_discount"), _money("l_tax"),
       _text("l_returnflag"), _text("l_linestatus"), _date("l_shipdate"), _date("l_commitdate"),
       _date("l_receiptdate"), _text("l_shipinstruct"), _text("l_shipmode"), _text("l_comment"))
TPCH_TABLES = list(METADATA.sorted_tables)
VERSION_TABLE = sa.Table("tessera_schema_version", METADATA, sa.Column("version", sa.Integer, nullable=False))
# Secondary indexes for the row stores (SQLite, PostgreSQL): the foreign keys the joins follow and the dates the
# queries range over. DuckDB gets the primary keys only: it scans columns and keeps min/max per row group.
INDEXES = (("nation", "n_regionkey"), ("supplier", "s_nationkey"), ("customer", "c_nationkey"),
           ("orders", "o_custkey"), ("orders", "o_orderdate"), ("lineitem", "l_partkey"), ("lineitem", "l_suppkey"),
           ("lineitem", "l_shipdate"))


def _create_indexes(execute) -> None:
    for table, column in INDEXES:
        execute(f"CREATE INDEX {table}_{column} ON {table} ({column})")


def create_schema(engine: sa.Engine, indexes: bool = True) -> None:
    """The TPC-H tables (with their primary keys), the schema version row and, for the row stores, the indexes:
    also what the tests build, empty, to compile the drafts against."""
    with engine.begin() as connection:
        for table in [*TPCH_TABLES, VERSION_TABLE]:
            table.create(connection)
        connection.execute(VERSION_TABLE.insert().values(version=1))
        if indexes:
            _create_indexes(connection.exec_driver_sql)


# --- generation, offline, once ------------------------------------------------------------------------------

WORK = var_dir() / "tpch"
DATA = WORK / f"sf{SCALE_FACTOR:g}"
# Run by the generator venv's Python: dbgen, each table to Parquet, and TPC-H's answers for the scale factor.
_GENERATE = """
import json, sys
import duckdb
out, sf = sys.argv[1], float(sys.argv[2])
# The tpch extension is linked into this wheel: nothing is downloaded (autoinstall off makes sure of it).
con = duckdb.connect(config={"autoinstall_known_extensions": False})
con.execute(f"CALL dbgen(sf={sf})")
for (table,) in con.execute("SHOW TABLES").fetchall():
    con.execute(f"COPY {table} TO '{out}/{table}.parquet' (FORMAT parquet)")
answers = con.execute("SELECT query_nr, answer FROM tpch_answers() WHERE scale_factor = ?", [sf]).fetchall()
with open(f"{out}/answers.json", "w") as file:
    json.dump({str(number): text for number, text in answers}, file)
assert duckdb.__version__ == sys.argv[3], duckdb.__version__
"""


def _stamped(path: Path, recipe: str) -> bool:
    return path.exists() and path.read_text() == recipe


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-2000:]}")


def generated() -> Path:
    """The Parquet files of every table (and answers.json), generated once by duckdb 1.2.2 in its own venv."""
    stamp, recipe = DATA / "parquet.stamp", f"{GENERATOR} dbgen(sf={SCALE_FACTOR:g})\n"
    if _stamped(stamp, recipe):
        return DATA
    venv = WORK / "venv"
    python = venv / "bin" / "python"
    if not _stamped(venv / ".installed", GENERATOR):
        print(f"tpch: a venv for the generator ({GENERATOR}) in {venv} ...", flush=True)
        _run([sys.executable, "-m", "venv", "--clear", str(venv)], "creating the generator venv")
        _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", GENERATOR],
             f"pip install {GENERATOR} (is the package index reachable? it is needed the first time)")
        (venv / ".installed").write_text(GENERATOR)
    print(f"tpch: CALL dbgen(sf={SCALE_FACTOR:g}) ...", flush=True)
    DATA.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    _run([str(python), "-c", _GENERATE, str(DATA), str(SCALE_FACTOR), GENERATOR.split("==")[1]], "dbgen")
    stamp.write_text(recipe)
    return DATA


def _duckdb(path: str = ":memory:") -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(path)
    connection.execute("SET enable_progress_bar = false")
    return connection


def _parquet(table: sa.Table) -> str:
    return str(DATA / f"{table.name}.parquet")


def _built(target: Path, build) -> Path:
    """`target`, built by `build(path)` into a temporary file and moved into place, unless a stamp says the
    file there was built from the same data by the same loader."""
    stamp = target.with_name(target.name + ".stamp")
    recipe = f"{(DATA / 'parquet.stamp').read_text().strip()} load {LOAD_REVISION}\n"
    if target.exists() and _stamped(stamp, recipe):
        return target
    stamp.unlink(missing_ok=True)
    partial = target.with_name(target.name + ".partial")
    for leftover in (partial, partial.with_name(partial.name + ".wal"), partial.with_name(partial.name + "-journal")):
        leftover.unlink(missing_ok=True)
    started = time.perf_counter()
    build(partial)
    partial.replace(target)
    stamp.write_text(recipe)
    print(f"tpch: {target.name} built in {time.perf_counter() - started:.1f} s", flush=True)
    return target


def _empty_tables(url: str) -> None:
    """The TPC-H tables, without indexes (they are built after the rows go in), in the database at `url`."""
    engine = sa.create_engine(url)
    try:
        create_schema(engine, indexes=False)
    finally:
        engine.dispose()


def duckdb_warehouse() -> Path:
    generated()

    def build(path: Path) -> None:
        _empty_tables(f"duckdb:///{path}")
        with _duckdb(str(path)) as con:
            for table in TPCH_TABLES:
                con.execute(f"INSERT INTO {table.name} BY NAME SELECT * FROM read_parquet(?)", [_parquet(table)])
            con.execute("CHECKPOINT")

    return _built(DATA / "tpch.duckdb", build)


def _portable(table: sa.Table) -> str:
    """The table's columns as SQLite keeps them (the types SQLAlchemy's SQLite dialect reads back): decimals as
    REAL, dates as ISO text."""
    def column(c: sa.Column) -> str:
        if isinstance(c.type, sa.Numeric):
            return f"CAST({c.name} AS DOUBLE)"
        if isinstance(c.type, sa.Date):
            return f"strftime({c.name}, '%Y-%m-%d')"
        return c.name

    return ", ".join(column(c) for c in table.c)


def sqlite_warehouse() -> Path:
    generated()

    def build(path: Path) -> None:
        _empty_tables(f"sqlite:///{path}")
        source = _duckdb()
        target = sqlite3.connect(path)
        try:
            for table in TPCH_TABLES:
                cursor = source.execute(f"SELECT {_portable(table)} FROM read_parquet(?)", [_parquet(table)])
                insert = f"INSERT INTO {table.name} VALUES ({', '.join('?' * len(table.c))})"
                while rows := cursor.fetchmany(100_000):
                    target.executemany(insert, rows)
            target.commit()
            _create_indexes(target.execute)
            target.execute("ANALYZE")
            target.commit()
        finally:
            target.close()
            source.close()

    return _built(DATA / "tpch.sqlite", build)


def load_postgres(url: str, scratch: Path) -> None:
    """The tables into a (fresh) PostgreSQL database: COPY from CSV that DuckDB writes from the Parquet files, then
    the indexes, VACUUM ANALYZE and a checkpoint (data_plane._settle) before anything is timed."""
    from bench.data_plane import _settle

    generated()
    started = time.perf_counter()
    _empty_tables(url)
    scratch.mkdir(parents=True, exist_ok=True)
    with _duckdb() as source, psycopg.connect(sa.make_url(url).set(drivername="postgresql")
                                                     .render_as_string(hide_password=False)) as target:
        for table in TPCH_TABLES:
            csv = scratch / f"{table.name}.csv"
            source.execute(f"COPY (SELECT * FROM read_parquet('{_parquet(table)}')) TO '{csv}' (HEADER false)")
            with target.cursor() as cursor, cursor.copy(f"COPY {table.name} FROM STDIN (FORMAT csv)") as copy, \
                    csv.open("rb") as file:
                while chunk := file.read(1 << 20):
                    copy.write(chunk)
            csv.unlink()
        with target.cursor() as cursor:
            _create_indexes(cursor.execute)
        target.commit()
    _settle(url)
    print(f"tpch: PostgreSQL loaded in {time.perf_counter() - started:.1f} s", flush=True)


# --- the queries, as drafts ----------------------------------------------------------------------------------


def catalog_ids(catalog) -> dict[str, str]:
    """Semantic names → the catalog's opaque ids: `ent:line_items`, `fld:line_items.ship_date`,
    `met:line_items.revenue`, `rel:customer_nation`."""
    ids = {f"rel:{name}": relationship.id for name, relationship in catalog.relationships.items()}
    for entity in catalog.entities.values():
        ids[f"ent:{entity.name}"] = entity.id
        ids.update({f"fld:{entity.name}.{name}": item.id for name, item in entity.fields.items()})
        ids.update({f"met:{entity.name}.{name}": item.id for name, item in entity.metrics.items()})
    return ids


def _between_dates(field: str, start: str, end: str) -> list[dict]:
    """start <= field < end, as TPC-H writes its date ranges."""
    return [{"field": field, "op": "gte", "value": start}, {"field": field, "op": "lt", "value": end}]


def _q1(i) -> dict:
    line = "met:line_items."
    return {"mode": "aggregate", "output": "table",
            "dimensions": [{"id": "l_returnflag", "field": i("fld:line_items.return_flag")},
                           {"id": "l_linestatus", "field": i("fld:line_items.line_status")}],
            "measures": [{"id": name, "metric": i(line + metric)} for name, metric in (
                ("sum_qty", "quantity_sum"), ("sum_base_price", "base_price"), ("sum_disc_price", "revenue"),
                ("sum_charge", "charge"), ("avg_qty", "average_quantity"), ("avg_price", "average_price"),
                ("avg_disc", "average_discount"), ("count_order", "line_count"))],
            # date '1998-12-01' - interval '90' day
            "filter": {"field": i("fld:line_items.ship_date"), "op": "lte", "value": "1998-09-02"},
            "order_by": [{"output": "l_returnflag"}, {"output": "l_linestatus"}]}


def _q3(i) -> dict:
    return {"mode": "aggregate", "output": "ranking",
            "dimensions": [{"id": "l_orderkey", "field": i("fld:orders.order_key")},
                           {"id": "o_orderdate", "field": i("fld:orders.order_date")},
                           {"id": "o_shippriority", "field": i("fld:orders.ship_priority")}],
            "measures": [{"id": "revenue", "metric": i("met:line_items.revenue")}],
            "filter": {"all": [{"field": i("fld:customers.segment"), "op": "eq", "value": "BUILDING"},
                               {"field": i("fld:orders.order_date"), "op": "lt", "value": "1995-03-15"},
                               {"field": i("fld:line_items.ship_date"), "op": "gt", "value": "1995-03-15"}]},
            "order_by": [{"output": "revenue", "direction": "desc"}, {"output": "o_orderdate"}], "limit": 10}


def _q5(i) -> dict:
    customer_nation, supplier_nation = i("rel:customer_nation"), i("rel:supplier_nation")
    return {"mode": "aggregate", "output": "ranking",
            "dimensions": [{"id": "n_name", "field": i("fld:nations.name"), "via": [customer_nation]}],
            "measures": [{"id": "revenue", "metric": i("met:line_items.revenue")}],
            "filter": {"all": [{"field": i("fld:regions.name"), "via": [customer_nation], "op": "eq", "value": "ASIA"},
                               *_between_dates(i("fld:orders.order_date"), "1994-01-01", "1995-01-01"),
                               # c_nationkey = s_nationkey: the customer's and the supplier's nation are one
                               {"same": i("ent:nations"), "via": [[customer_nation], [supplier_nation]]}]},
            "order_by": [{"output": "revenue", "direction": "desc"}]}


def _q6(i) -> dict:
    return {"mode": "aggregate", "output": "scalar",
            "measures": [{"id": "revenue", "metric": i("met:line_items.discount_amount")}],
            "filter": {"all": [*_between_dates(i("fld:line_items.ship_date"), "1994-01-01", "1995-01-01"),
                               {"field": i("fld:line_items.discount"), "op": "between", "values": [0.05, 0.07]},
                               {"field": i("fld:line_items.quantity"), "op": "lt", "value": 24}]}}


def _q10(i) -> dict:
    customer = "fld:customers."
    return {"mode": "aggregate", "output": "ranking",
            "dimensions": [{"id": "c_custkey", "field": i(customer + "customer_key")},
                           {"id": "c_name", "field": i(customer + "name")},
                           {"id": "c_acctbal", "field": i(customer + "account_balance")},
                           {"id": "n_name", "field": i("fld:nations.name"), "via": [i("rel:customer_nation")]},
                           {"id": "c_address", "field": i(customer + "address")},
                           {"id": "c_phone", "field": i(customer + "phone")},
                           {"id": "c_comment", "field": i(customer + "comment")}],
            "measures": [{"id": "revenue", "metric": i("met:line_items.revenue")}],
            "filter": {"all": [*_between_dates(i("fld:orders.order_date"), "1993-10-01", "1994-01-01"),
                               {"field": i("fld:line_items.return_flag"), "op": "eq", "value": "R"}]},
            "order_by": [{"output": "revenue", "direction": "desc"}], "limit": 20}


def _q12(i) -> dict:
    line = "fld:line_items."
    return {"mode": "aggregate", "output": "table",
            "dimensions": [{"id": "l_shipmode", "field": i(line + "ship_mode")}],
            "measures": [{"id": "high_line_count", "metric": i("met:line_items.high_priority_lines")},
                         {"id": "low_line_count", "metric": i("met:line_items.low_priority_lines")}],
            "filter": {"all": [{"field": i(line + "ship_mode"), "op": "in", "values": ["MAIL", "SHIP"]},
                               {"field": i(line + "commit_date"), "op": "lt",
                                "compare_to": {"field": i(line + "receipt_date")}},
                               {"field": i(line + "ship_date"), "op": "lt",
                                "compare_to": {"field": i(line + "commit_date")}},
                               *_between_dates(i(line + "receipt_date"), "1994-01-01", "1995-01-01")]},
            "order_by": [{"output": "l_shipmode"}]}


def _q14(i) -> dict:
    return {"mode": "aggregate", "output": "scalar",
            "measures": [{"id": "promo_revenue", "metric": i("met:line_items.promo_revenue_percent")}],
            "filter": {"all": _between_dates(i("fld:line_items.ship_date"), "1995-09-01", "1995-10-01")}}


def _q19(i) -> dict:
    def branch(brand: str, containers: list[str], low: int, high: int, largest: int) -> dict:
        return {"all": [{"field": i("fld:parts.brand"), "op": "eq", "value": brand},
                        {"field": i("fld:parts.container"), "op": "in", "values": containers},
                        {"field": i("fld:line_items.quantity"), "op": "gte", "value": low},
                        {"field": i("fld:line_items.quantity"), "op": "lte", "value": high},
                        {"field": i("fld:parts.size"), "op": "between", "values": [1, largest]},
                        {"field": i("fld:line_items.ship_mode"), "op": "in", "values": ["AIR", "AIR REG"]},
                        {"field": i("fld:line_items.ship_instructions"), "op": "eq", "value": "DELIVER IN PERSON"}]}

    return {"mode": "aggregate", "output": "scalar",
            "measures": [{"id": "revenue", "metric": i("met:line_items.revenue")}],
            "filter": {"any": [branch("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 11, 5),
                               branch("Brand#23", ["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10, 20, 10),
                               branch("Brand#34", ["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 20, 30, 15)]}}


# Each query: its TPC-H number, its draft, and what the draft says differently from the TPC-H text (the same rows
# either way: each draft's rows are checked against TPC-H's answer).
QUERIES = {
    1: (_q1, "pricing summary report: 8 measures by return flag x line status, ship date <= 1998-09-02; exact"),
    3: (_q3, "shipping priority: revenue by order (key, date, ship priority), BUILDING customers, ordered before and "
             "shipped after 1995-03-15, top 10 by revenue then order date; exact (ties broken by every other "
             "output as every draft's are)"),
    5: (_q5, "local supplier volume: revenue by nation, ASIA, orders of 1994, customer and supplier in the same "
             "nation (a `same` condition: the statement joins nation once per role, where TPC-H's text joins it "
             "once with c_nationkey = s_nationkey); same rows"),
    6: (_q6, "forecasting revenue change: sum(extendedprice * discount) over lines shipped in 1994, discount "
             "between 0.05 and 0.07, quantity < 24; exact"),
    10: (_q10, "returned item reporting: revenue by customer (key, name, balance, nation, address, phone, comment) "
               "for returned lines of orders in 1993 Q4, top 20; customer and nation are joined outer (dimensions "
               "no condition requires), TPC-H's inner; same rows"),
    12: (_q12, "shipping modes and order priority: lines of urgent/high and of other orders (count(where=...) for "
               "TPC-H's sum(case ... then 1 else 0)) by ship mode, MAIL and SHIP, received in 1994, committed "
               "before received and shipped before committed; the order is joined outer (a metric's related field), "
               "TPC-H's inner; same rows"),
    14: (_q14, "promotion effect: 100 x promotion revenue / revenue (a derived metric: the quotient is real "
               "division, TPC-H's decimal) over lines shipped in Sep 1995; the join to part is an outer join "
               "(a metric's related field), TPC-H's an inner one; same value"),
    19: (_q19, "discounted revenue: revenue over the OR of TPC-H's three brand/container/quantity/size branches "
               "(air, delivered in person); the part is joined outer (its conditions sit under `any`), TPC-H's "
               "inner; same value"),
}


# --- TPC-H's answers ---------------------------------------------------------------------------------------------


def _agrees(value, expected: str) -> bool:
    """One cell against TPC-H's answer text: numbers to a millionth of their size (SQLite sums money as REAL),
    dates by their ISO form, text as written (edges trimmed: the answers' own formatting)."""
    if isinstance(value, dt.date):
        return value.isoformat()[:10] == expected
    if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
        try:
            return math.isclose(float(value), float(expected), rel_tol=1e-6, abs_tol=1e-9)
        except ValueError:
            return False
    return str(value).strip() == expected.strip()


def answer_problem(number: int, columns: list[str], rows: list[tuple]) -> str | None:
    """What differs between a draft's rows (named columns, hidden ones ignored) and TPC-H's answer to query
    `number` at this scale factor, or None when they agree."""
    text = json.loads((DATA / "answers.json").read_text())[str(number)]
    header, *expected = [line.split("|") for line in text.strip("\n").split("\n")]
    missing = [name for name in header if name not in columns]
    if missing:
        return f"no output named {missing[0]!r}"
    if len(rows) != len(expected):
        return f"{len(rows)} rows, TPC-H's answer has {len(expected)}"
    for index, (row, want) in enumerate(zip(rows, expected, strict=True)):
        for name, cell in zip(header, want, strict=True):
            value = row[columns.index(name)]
            if not _agrees(value, cell):
                return f"row {index + 1}, {name}: {value!r}, TPC-H's answer says {cell!r}"
    return None


def _checked(url: str, statements: dict[int, str]) -> dict[int, str | None]:
    """Each statement run once on the DB-API driver (the raw side's own), its rows against TPC-H's answer."""
    engine = sa.create_engine(url, connect_args={"read_only": True} if url.startswith("duckdb") else {})
    problems = {}
    try:
        connection = engine.raw_connection()
        try:
            for number, sql in statements.items():
                cursor = connection.cursor()
                cursor.execute(sql)
                columns = [d[0] for d in cursor.description]
                problems[number] = answer_problem(number, columns, cursor.fetchall())
                cursor.close()
        finally:
            connection.close()
    finally:
        engine.dispose()
    return problems


# --- the measurement -----------------------------------------------------------------------------------------

GOAL_RATIO = 1.10
ROW_CAP = 1_000  # the gateway's row cap (TESSERA_RESOURCES_ROW_CAP's default), which the statements are planned for
# A question whose catalog slice holds every entity the drafts use (and so every id in the capability's scope).
QUESTION = ("revenue of line items by order, customer, nation, region, supplier and part: quantity, discount, "
            "ship mode, order priority, market segment, brand and container")
# Per query, the raw statement's time over all rounds (DuckDB's ~10 ms queries get the most rounds, SQLite's
# ~1.4 s Q1 the fewest); each round runs both sides, so a pair takes about twice this.
ROUND_BUDGET_SECONDS = 3.0
LEAST_ROUNDS, MOST_ROUNDS = 9, 31


def _compiled(url: str):
    """The catalog, the drafts, their compiled statements, what checking them found, and the ids they use."""
    from bench.data_plane import _compiled_sql
    from services.resources.catalog import Catalog
    from shared.semantic.model import load_semantic_model

    # Compile and check first: DuckDB allows one in-process configuration per file at a time.
    engine = sa.create_engine(url, connect_args={"read_only": True} if url.startswith("duckdb") else {})
    try:
        catalog = Catalog(load_semantic_model(MODEL), engine)
    finally:
        engine.dispose()
    ids = catalog_ids(catalog)
    used: set[str] = set()

    def lookup(name: str) -> str:
        used.add(ids[name])
        return ids[name]

    drafts = {number: build(lookup) for number, (build, _) in QUERIES.items()}
    statements = {number: _compiled_sql(url, draft, ROW_CAP, model=MODEL) for number, draft in drafts.items()}
    return catalog, drafts, statements, _checked(url, statements), used


def _service_env(name: str, url: str, work: Path) -> dict[str, str]:
    return {"TESSERA_RESOURCES_WAREHOUSE_URL": url,
            "TESSERA_RESOURCES_SEMANTIC_MODEL": str(MODEL),
            "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{work / f'tpch-store-{name}.sqlite'}",
            "TESSERA_RESOURCES_STATEMENT_TIMEOUT_SECONDS": "300",
            # Every round reads the warehouse: the figure is a read against the raw driver's, not a reuse.
            "TESSERA_RESOURCES_RESULT_CACHE": "false",
            # Every round is an analysis of the one session "bench": far more than a person's 60.
            "TESSERA_RESOURCES_ANALYSES_PER_SESSION": str(len(QUERIES) * (MOST_ROUNDS + 2) * 2)}


def _capability(agent, name: str, catalog, used: set[str]):
    """The agent's capability for the TPC-H question, checked to be the drafts' catalog and to scope their ids."""
    from shared.rpc.contracts import invoke
    from tessera.resources.v1 import resources_pb2

    turn = resources_pb2.TurnRef(session_id="bench", turn_id="t1")
    context = invoke(agent, "resources", "InspectContext", resources_pb2.InspectContextRequest(turn=turn))
    inspected = invoke(agent, "resources", "InspectCatalog", resources_pb2.InspectCatalogRequest(
        turn=turn, question=QUESTION, capability_token=context.capability_token))
    if inspected.catalog_fingerprint != catalog.fingerprint:
        raise RuntimeError(f"tpch on {name}: the service's catalog is not the one the drafts were compiled against")
    shown = {e.entity_id for e in inspected.entities} | {f.field_id for e in inspected.entities for f in e.fields}
    shown |= {m.metric_id for e in inspected.entities for m in e.metrics}
    shown |= {r.relationship_id for e in inspected.entities for r in e.relationships}
    if used - shown:
        raise RuntimeError(f"tpch on {name}: InspectCatalog({QUESTION!r}) left {len(used - shown)} ids the drafts "
                           "use out of the capability's scope")
    return inspected


def _measured(agent, name: str, url: str, inspected, drafts: dict, statements: dict, problems: dict) -> list[dict]:
    """Each query's Analyze against its statement on the raw driver, side by side."""
    from bench.data_plane import _raw_runner, _side_by_side
    from shared.rpc.contracts import invoke
    from tessera.resources.v1 import resources_pb2

    results, turns = [], iter(range(2, 1_000_000))
    raw, close = _raw_runner(url)
    try:
        for number, (_, fidelity) in QUERIES.items():
            draft_json, sql = json.dumps(drafts[number]), statements[number]
            replies: list = []

            def analyze(draft_json=draft_json, replies=replies):
                # Each in a turn of its own: a turn's analysis budget would stop the rounds.
                fresh = resources_pb2.TurnRef(session_id="bench", turn_id=f"t{next(turns)}")
                replies.append(invoke(agent, "resources", "Analyze", resources_pb2.AnalyzeRequest(
                    turn=fresh, draft_json=draft_json, capability_token=inspected.capability_token), timeout=600))

            rows: list[int] = []
            rpc_ms, raw_ms, rounds = _side_by_side(analyze, lambda sql=sql, rows=rows: rows.append(raw(sql)),
                                                   ROUND_BUDGET_SECONDS, LEAST_ROUNDS, MOST_ROUNDS)
            results.append(_entry(name, number, fidelity, rpc_ms, raw_ms, rounds, replies, rows, problems[number]))
            print(f"  Q{number}: Analyze {rpc_ms:.1f} ms, raw {raw_ms:.1f} ms ({rpc_ms / raw_ms:.2f}x, {rounds} rounds)"
                  + ("" if results[-1]["answer_matches"] else " -- ROWS DO NOT MATCH TPC-H's answer"), flush=True)
    finally:
        close()
    return results


def bench_backend(name: str, url: str, cert_dir: Path, work: Path) -> list[dict]:
    from cli.launcher import ServiceSet, cli_credentials
    from shared.rpc.channels import sync_channel

    catalog, drafts, statements, problems, used = _compiled(url)
    services = ServiceSet(cert_dir, work / f"tpch-run-{name}", names=("resources",), ephemeral_ports=True,
                          extra_env=_service_env(name, url, work))
    services.start(timeout=120)
    try:
        address = services.handles["resources"].address
        with sync_channel(address, cli_credentials(cert_dir, "agent"), "resources") as agent:
            inspected = _capability(agent, name, catalog, used)
            results = _measured(agent, name, url, inspected, drafts, statements, problems)
    finally:
        services.stop()
    worst = max(results, key=lambda r: r["ratio"])
    results.append({"name": f"tpch_worst_ratio_{name}", "value": worst["ratio"], "unit": "ratio",
                    "baseline": GOAL_RATIO, "ratio": round(worst["ratio"] / GOAL_RATIO, 3), "goal_ratio": 1.0,
                    "query": worst["name"],
                    "description": f"the highest Analyze / raw-driver ratio of the {len(QUERIES)} TPC-H queries on "
                                   f"{name} ({worst['name']}); baseline is the {GOAL_RATIO} goal"})
    return results


def _entry(backend: str, number: int, fidelity: str, rpc_ms: float, raw_ms: float, rounds: int, replies: list,
           rows: list[int], problem: str | None) -> dict:
    # What the gateway itself timed of each analysis: its one statement, from checkout to the rows fetched.
    fetched = sorted(r.evidence.elapsed.seconds * 1000 + r.evidence.elapsed.nanos / 1e6 for r in replies)
    answered = {r.descriptor.row_count for r in replies}
    if answered != set(rows):  # the service and the raw driver must have read the same rows
        problem = problem or f"Analyze returned {sorted(answered)} rows, the raw statement {sorted(set(rows))}"
    verdict = "rows match TPC-H's answer for SF0.1" if problem is None else \
        f"ROWS DO NOT MATCH TPC-H's answer ({problem})"
    return {"name": f"tpch_q{number}_analyze_{backend}", "value": round(rpc_ms, 1), "unit": "ms",
            "baseline": round(raw_ms, 1), "ratio": round(rpc_ms / raw_ms, 3), "goal_ratio": GOAL_RATIO,
            "rounds": rounds, "rows": rows[0] if rows else None, "answer_matches": problem is None,
            "gateway_statement_ms_p50": round(fetched[len(fetched) // 2], 1) if fetched else None,
            "description": f"TPC-H Q{number} at SF{SCALE_FACTOR:g} as a draft over bench/models/tpch.yaml "
                           f"({fidelity}); Analyze RPC vs the identical compiled statement (with the three window "
                           f"columns that carry the span and row count) on the raw driver, medians of {rounds} "
                           f"alternating rounds; {verdict}"}


def run(work: Path, cert_dir: Path) -> list[dict]:
    from shared.identity.certs import issue_deployment
    from tests.fixtures.postgres import throwaway_database

    if not (cert_dir / "ca.pem").exists():
        issue_deployment(cert_dir)
    started = time.perf_counter()
    warehouses = {"duckdb": f"duckdb:///{duckdb_warehouse()}", "sqlite": f"sqlite:///{sqlite_warehouse()}"}
    results: list[dict] = []
    with throwaway_database("tessera_tpch") as (pg, why):
        if pg:
            load_postgres(pg, work / "tpch-csv")
            warehouses["postgresql"] = pg
        else:
            print(f"tpch: {why}", flush=True)
        for name, url in warehouses.items():
            print(f"tpch on {name} ...", flush=True)
            results += bench_backend(name, url, cert_dir, work)
    if not pg:
        results += [{"name": f"tpch_q{number}_analyze_postgresql", "value": None, "unit": "ms", "baseline": None,
                     "ratio": None, "skipped": why} for number in QUERIES]
    print(f"tpch: {time.perf_counter() - started:.0f} s in all", flush=True)
    return results


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tessera-tpch-") as directory:
        entries = run(Path(directory), Path(directory) / "certs")
    print(json.dumps(entries, indent=2))
