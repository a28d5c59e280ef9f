"""From an empty PostgreSQL database of someone's own to an answer: three related tables, `tessera semantic init`,
`tessera semantic check`, a running set pointed at the draft, and a question answered with the figures SQL gives,
with no demo action offered."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from decimal import Decimal

import sqlalchemy as sa

from cli.launcher import ServiceSet
from shared.paths import REPO_ROOT
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.capabilities.v1 import capabilities_pb2
from tests.fixtures.postgres import postgres_database

STATUSES = ("open", "shipped", "returned", "cancelled")


def _their_shop(url: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE TABLE customers (customer_id integer PRIMARY KEY, full_name text, email text, tier text)")
        connection.exec_driver_sql("CREATE TABLE products (product_id integer PRIMARY KEY, title text, "
                                   "category text, list_price numeric(10, 2))")
        connection.exec_driver_sql(
            "CREATE TABLE orders (order_id integer PRIMARY KEY, customer_id integer REFERENCES customers, "
            "product_id integer REFERENCES products, status text, placed_on date, amount numeric(12, 2))")
        connection.execute(sa.text("INSERT INTO customers VALUES (:i, :name, :email, :tier)"), [
            {"i": i, "name": f"Person {i}", "email": f"p{i}@example.invalid", "tier": ("gold", "silver")[i % 2]}
            for i in range(1, 41)])
        connection.execute(sa.text("INSERT INTO products VALUES (:i, :title, :category, :price)"), [
            {"i": i, "title": f"Thing {i}", "category": ("tools", "toys", "books")[i % 3], "price": Decimal(i)}
            for i in range(1, 16)])
        connection.execute(sa.text("INSERT INTO orders VALUES (:i, :c, :p, :status, :day, :amount)"), [
            {"i": i, "c": 1 + i % 40, "p": 1 + i % 15, "status": STATUSES[(i * 7) % 4 if i % 5 else 0],
             "day": dt.date(2026, 1, 1) + dt.timedelta(days=i % 300), "amount": Decimal(i) / 3}
            for i in range(1, 501)])
    engine.dispose()


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=180, env={"PATH": "/usr/bin:/bin", **(env or {})})


def test_their_own_database_answers_a_question_with_no_demo_action(request, cert_dir, tmp_path, credentials,
                                                                   warehouse_url, monkeypatch):
    url = postgres_database(request, "tessera_own_warehouse")
    _their_shop(url)
    model = tmp_path / "shop.yaml"
    drafted = _cli("semantic", "init", "--from", url, "--out", str(model))
    assert drafted.returncode == 0, drafted.stderr
    checked = _cli("semantic", "check", str(model), "--warehouse", url)
    assert checked.returncode == 0, checked.stderr
    assert "field   Status (string, bounded-values)" in checked.stdout  # few values: the model may group by it
    assert "Customer · Email (customers.email, pii)" in checked.stdout  # personal: never shown

    var = tmp_path / "var"
    # The broker's change target holds the demo's orders (review status and version) and no actions file is named
    # (as an operator who set none): only the rule that the demo's actions go with the demo's model keeps "Flag for
    # review" off this set.
    monkeypatch.delenv("TESSERA_CAPABILITIES_ACTIONS_FILE", raising=False)
    demo_orders = tmp_path / "demo-warehouse.sqlite"
    shutil.copy(warehouse_url.removeprefix("sqlite:///"), demo_orders)
    services = ServiceSet(cert_dir, tmp_path / "run", ephemeral_ports=True, extra_env={
        "TESSERA_RESOURCES_WAREHOUSE_URL": url, "TESSERA_RESOURCES_SEMANTIC_MODEL": str(model),
        "TESSERA_RESOURCES_STORE_URL": f"sqlite:///{tmp_path / 'results.sqlite'}",
        "TESSERA_HOST_DATABASE_URL": f"sqlite:///{tmp_path / 'host.sqlite'}",
        "TESSERA_CAPABILITIES_DATABASE_URL": f"sqlite:///{tmp_path / 'broker.sqlite'}",
        "TESSERA_CAPABILITIES_CHANGES_URL": f"sqlite:///{demo_orders}", "TESSERA_VAR_DIR": str(var)})
    services.start()
    try:
        with sync_channel(services.handles["capabilities"].address, credentials("host"), "capabilities") as channel:
            listed = invoke(channel, "capabilities", "ListActions", capabilities_pb2.ListActionsRequest(), timeout=30)
        assert list(listed.actions) == []  # the demo's "Flag order for review" belongs to the demo's data
        (var / "run").mkdir(parents=True, exist_ok=True)
        (var / "run" / "services.json").write_text(json.dumps(services.state()))
        asked = _cli("ask", "--json", "How many orders are there by status?", env={"TESSERA_VAR_DIR": str(var)})
    finally:
        services.stop()
    assert asked.returncode == 0, asked.stdout + asked.stderr
    answer = json.loads(asked.stdout)
    (table,) = [block for block in answer["blocks"] if block["kind"] == "table"]
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        expected = dict(connection.exec_driver_sql("SELECT status, count(*) FROM orders GROUP BY status").all())
    engine.dispose()
    assert {row[0]: row[1] for row in table["rows"]} == expected
    assert answer["approvals"] == []
