"""`tessera semantic init --from URL` drafts a model the gateway loads and binds on SQLite, PostgreSQL and DuckDB;
what it shows the model errs on the side of hiding; the draft holds no value read from the database; and
`tessera semantic check` reports what a model would see, or the exact key that is wrong."""

from __future__ import annotations

import datetime as dt
import decimal
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from cli.main import main
from cli.semantic_init import source_name
from services.resources.catalog import Catalog
from services.resources.warehouse import Warehouse
from shared.semantic.model import load_semantic_model
from tests.fixtures.postgres import postgres_database

ROOT = Path(__file__).resolve().parents[3]
CUSTOMERS, ORDERS = 120, 600
SEGMENTS = ("seg_alpha", "seg_beta", "seg_gamma")
STATUSES = ("st_open", "st_shipped", "st_returned")


def _shop(url: str) -> None:
    """Three related tables (customers ← orders ← order lines) and one without a key, in the default schema."""
    metadata = sa.MetaData()
    customers = sa.Table(
        "customers", metadata, sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("full_name", sa.String(80)), sa.Column("ref", sa.String(80)),  # e-mail addresses, named otherwise
        sa.Column("segment", sa.String(20)), sa.Column("joined_on", sa.Date))
    orders = sa.Table(
        "orders", metadata, sa.Column("order_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("customer_id", sa.Integer, sa.ForeignKey("customers.id")), sa.Column("placed_at", sa.DateTime),
        sa.Column("status", sa.String(20)), sa.Column("tracking_code", sa.String(40)),
        sa.Column("total_amount", sa.Numeric(12, 2)), sa.Column("discount_rate", sa.Numeric(4, 3)),
        sa.Column("notes", sa.String(200)), sa.Column("batch_id", sa.Integer))  # an id no foreign key declares
    lines = sa.Table(
        "order_lines", metadata, sa.Column("order_id", sa.Integer, sa.ForeignKey("orders.order_id"), primary_key=True),
        sa.Column("line_no", sa.Integer, primary_key=True), sa.Column("quantity", sa.Integer),
        sa.Column("payload", sa.LargeBinary))  # a type no field has
    log = sa.Table("import_log", metadata, sa.Column("line", sa.String(200)))  # no key
    engine = sa.create_engine(url)
    metadata.create_all(engine)
    start = dt.datetime(2023, 1, 1)
    with engine.begin() as connection:
        connection.execute(customers.insert(), [
            {"id": i, "full_name": f"Zyx Person{i}", "ref": f"p{i}@example.invalid", "segment": SEGMENTS[i % 3],
             "joined_on": (start - dt.timedelta(days=i)).date()} for i in range(1, CUSTOMERS + 1)])
        connection.execute(orders.insert(), [
            {"order_id": i, "customer_id": 1 + i % CUSTOMERS, "placed_at": start + dt.timedelta(hours=7 * i),
             "status": STATUSES[i % 3], "tracking_code": f"TRK{i:08d}", "total_amount": decimal.Decimal(i) / 4,
             "discount_rate": decimal.Decimal(i % 10) / 100, "notes": f"call back {i}", "batch_id": i % 5}
            for i in range(1, ORDERS + 1)])
        connection.execute(lines.insert(), [{"order_id": 1 + i % ORDERS, "line_no": i, "quantity": i % 7 + 1,
                                             "payload": b"x"} for i in range(1, 900)])
        connection.execute(log.insert(), [{"line": "loaded"}])
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql", "duckdb"])
def shop(request, tmp_path) -> str:
    if request.param == "postgresql":
        url = postgres_database(request, "tessera_semantic_init")
    else:
        url = f"{request.param}:///{tmp_path / f'shop.{request.param}'}"
    _shop(url)
    return url


def _init(url: str, out: Path) -> str:
    assert main(["semantic", "init", "--from", url, "--out", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_the_draft_loads_binds_and_hides_what_looks_personal_free_or_unbounded(shop, tmp_path):
    text = _init(shop, tmp_path / "draft.yaml")
    model = load_semantic_model(tmp_path / "draft.yaml")  # the gateway's own loader
    warehouse = Warehouse(shop, 30.0, connections=1)
    try:
        catalog = Catalog(model, warehouse.engine)  # every mapped table and column is there
    finally:
        warehouse.engine.dispose()
    assert set(catalog.entities) == {"customers", "orders", "order_lines"}  # import_log has no key: left out
    exposure = {f"{e}.{f}": spec.exposure for e, entity in model.entities.items()
                for f, spec in entity.fields.items()}
    assert {k: v for k, v in exposure.items() if v != "never-to-model"} == {
        "customers.segment": "bounded-values", "customers.joined_on": "bounded-values",
        "orders.placed_at": "bounded-values", "orders.status": "bounded-values",
        "orders.total_amount": "aggregate-only", "orders.discount_rate": "aggregate-only",
        "order_lines.quantity": "aggregate-only"}
    fields = model.entities["customers"].fields
    assert fields["full_name"].sensitivity == fields["ref"].sensitivity == "pii"  # by name; by values
    assert model.entities["order_lines"].primary_key == ("order_id", "line_no")
    assert "payload" not in model.entities["order_lines"].fields
    (relation,) = [r for r in model.relationships.values() if r.from_entity == "orders"]
    assert (relation.to_entity, relation.kind, relation.from_field, relation.to_field) == (
        "customers", "many_to_one", "customer_id", "id")
    assert model.time_anchor == "latest_data"  # the data ends in 2023
    assert model.entities["orders"].fields["discount_rate"].format.style == "percent"
    metrics = model.entities["orders"].metrics
    assert metrics["total_total_amount"].expression == "sum(total_amount)"
    assert "total_discount_rate" not in metrics and metrics["average_discount_rate"].expression == "avg(discount_rate)"
    # Every guess says so; what was left out is said at the top.
    assert text.count("# review:") >= 15 and "#   table import_log: no primary or unique key" in text
    assert re.search(r"#   column order_lines\.payload: type \w+ has no Tessera field type", text)


def test_the_draft_holds_no_value_read_from_the_database(shop, tmp_path):
    text = _init(shop, tmp_path / "draft.yaml")
    read = [*SEGMENTS, *STATUSES, "Zyx Person", "example.invalid", "TRK0", "call back", "loaded"]
    assert [value for value in read if value in text] == []


def test_check_prints_what_a_model_sees_and_names_a_missing_column(tmp_path):
    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    _shop(url)
    draft = tmp_path / "draft.yaml"
    _init(url, draft)
    checked = subprocess.run([sys.executable, "-m", "cli", "semantic", "check", str(draft), "--warehouse", url],
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert checked.returncode == 0, checked.stderr
    assert "every table and column it maps is in the warehouse" in checked.stdout
    shown = checked.stdout.split("Never shown to the model:")
    assert "field   Segment (string, bounded-values)" in shown[0] and "Full name" not in shown[0]
    assert "Customer · Full name (customers.full_name, pii)" in shown[1]

    draft.write_text(draft.read_text().replace("      status: {type: string", "      status: {column: state, "
                                                                                 "type: string"))
    broken = subprocess.run([sys.executable, "-m", "cli", "semantic", "check", str(draft), "--warehouse", url],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert broken.returncode == 1
    assert broken.stderr.strip() == (f"tessera: error: semantic model {draft}: entities.orders.fields.status: "
                                     "column 'state' of table 'orders' is not in the warehouse")


def test_a_database_that_cannot_be_read_is_said_in_one_line_without_its_secrets(tmp_path, capsys):
    assert main(["semantic", "init", "--from", "nosuch://reader:hunter2@host/x"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("tessera: error: a nosuch database cannot be read here") and "hunter2" not in said
    missing = tmp_path / "typo.sqlite"
    assert main(["semantic", "init", "--from", f"sqlite:///{missing}"]) == 2
    assert capsys.readouterr().err.strip() == f"tessera: error: no sqlite database file at {missing}"
    assert not missing.exists()  # looking never makes a file
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    assert main(["semantic", "init", "--from", f"sqlite:///{empty}"]) == 2
    assert capsys.readouterr().err.strip() == "tessera: error: the sqlite database empty.sqlite has no tables in its " \
                                              "default schema"
    assert main(["semantic", "init"]) == 2 and "TESSERA_WAREHOUSE_URL" in capsys.readouterr().err


def _one_table(path: Path, ddl: str, rows: list[tuple] = ()) -> str:
    with sqlite3.connect(path) as connection:
        connection.execute(ddl)
        if rows:
            connection.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(rows[0]))})", rows)
    return f"sqlite:///{path}"


def test_text_with_too_few_values_to_judge_is_hidden(tmp_path):
    url = _one_table(tmp_path / "few.sqlite", "CREATE TABLE t (id INTEGER PRIMARY KEY, diagnosis TEXT, employer TEXT)",
                     [(i, "flu", f"employer {i}") for i in range(30)])
    _init(url, tmp_path / "draft.yaml")
    fields = load_semantic_model(tmp_path / "draft.yaml").entities["t"].fields
    assert fields["diagnosis"].exposure == fields["employer"].exposure == "never-to-model"


def test_names_that_collide_are_made_unique_and_the_draft_loads(tmp_path):
    long = "a" * 70
    url = _one_table(tmp_path / "names.sqlite",
                     f"CREATE TABLE t (id INTEGER PRIMARY KEY, {long}_x INTEGER, {long}_y INTEGER, t_count INTEGER, "
                     "total_amount NUMERIC)", [(1, 2, 3, 4, 5)])
    _init(url, tmp_path / "draft.yaml")  # (a name of 63 characters twice once looped for ever)
    entity = load_semantic_model(tmp_path / "draft.yaml").entities["t"]
    names = [*entity.fields, *entity.metrics]
    assert len(names) == len(set(names)) and all(len(name) <= 63 for name in names)
    assert {"t_count", "t_count_2", "total_amount", "total_total_amount"} <= set(names)


def test_the_time_anchor_looks_at_dates_the_model_sees_and_writes_no_date(tmp_path):
    url = _one_table(tmp_path / "dates.sqlite", "CREATE TABLE t (id INTEGER PRIMARY KEY, dob DATE, birth_date DATE)",
                     [(i, "2019-03-04", "2019-03-04") for i in range(5)])
    text = _init(url, tmp_path / "draft.yaml")
    assert "2019" not in text and "time_anchor: today" in text  # only personal dates: nothing to anchor on
    url = _one_table(tmp_path / "seen.sqlite", "CREATE TABLE t (id INTEGER PRIMARY KEY, shipped_on DATE)",
                     [(i, "2019-03-04") for i in range(5)])
    text = _init(url, tmp_path / "seen.yaml")
    assert "2019" not in text and "time_anchor: latest_data" in text


def test_a_reviewed_model_is_not_replaced_without_force(tmp_path, capsys):
    url = _one_table(tmp_path / "x.sqlite", "CREATE TABLE t (id INTEGER PRIMARY KEY)", [(1,)])
    out = tmp_path / "model.yaml"
    out.write_text("# reviewed\n")
    assert main(["semantic", "init", "--from", url, "--out", str(out)]) == 2
    assert out.read_text() == "# reviewed\n" and "--force" in capsys.readouterr().err
    assert main(["semantic", "init", "--from", url, "--out", str(out), "--force"]) == 0


def test_the_draft_names_the_database_by_kind_and_name_only(tmp_path):
    url = _one_table(tmp_path / "shop.sqlite", "CREATE TABLE t (id INTEGER PRIMARY KEY)", [(1,)])
    text = _init(f"{url}?password=hunter2", tmp_path / "draft.yaml")
    assert "sqlite database shop.sqlite" in text and "hunter2" not in text and str(tmp_path) not in text
    assert source_name(sa.make_url("postgresql://reader:hunter2@db.internal:5432/shop?sslmode=require")) == \
        "postgresql database shop"
