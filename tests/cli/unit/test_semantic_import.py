"""`tessera semantic import dbt`: a dbt MetricFlow project becomes a Tessera semantic model that loads,
binds to a warehouse with the dbt project's tables, and answers with the numbers the rows give.

The project is tests/fixtures/dbt_shop (YAML only, as dbt reads it). Expected values come from the
inserted rows, computed in Python, never from the gateway's compiler.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from cli.main import main
from cli.semantic_import import FilterError, parse_filter, render_condition
from services.resources.catalog import Catalog
from services.resources.draft import build_draft
from services.resources.query_compiler import QueryCompiler
from shared.paths import REPO_ROOT
from shared.rpc.refusals import Refusal
from shared.semantic.model import load_semantic_model

SHOP = REPO_ROOT / "tests" / "fixtures" / "dbt_shop"

# What the shop project cannot carry over, by item, with the words of the reason.
UNCONVERTED = {
    "measure orders.median_order_value": "median is not an aggregation of Tessera's metric grammar",
    "measure orders.returned_orders": "its expr is SQL (\"case when status = 'returned' then 1 else 0 end\")",
    "dimension customers.email_normalised": "its expr is SQL ('lower(email)')",
    "measure inventory_snapshots.units_on_hand": "non_additive_dimension",
    "entity warehouse (foreign, in inventory_snapshots)": "no semantic model has it as its primary entity",
    "metric orders_since_2024": "a TimeDimension filter is not converted",
    "metric revenue_growth": "is offset (1 month): use a period-over-period calculation in the draft: kind "
                             "prior/change/growth",
    "metric cumulative_revenue": "converted to order_items.revenue, the metric it accumulates: Tessera computes "
                                 "running totals in the draft (calculation kind cumulative",
    "metric repeat_purchase_rate": "a conversion metric",
}


def run_import(capsys, *args: str) -> tuple[int, str, list[str]]:
    status = main(["semantic", "import", "dbt", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err.splitlines()


@pytest.fixture
def imported(tmp_path, capsys) -> tuple[Path, list[str]]:
    """The shop project converted to tmp_path/shop.yaml, and the lines the import printed on stderr."""
    out = tmp_path / "shop.yaml"
    status, stdout, report = run_import(capsys, str(SHOP), "--out", str(out))
    assert status == 0, report
    assert stdout.startswith("wrote 5 entities ") and str(out) in stdout
    return out, report


# --- 1. the model ---------------------------------------------------------------------


def test_the_shop_project_becomes_a_model_that_loads(imported):
    model = load_semantic_model(imported[0])
    assert model.dataset.label == "Shop"
    assert "review every field's exposure" in model.dataset.description
    assert list(model.entities) == ["orders", "customers", "order_items", "products", "inventory_snapshots"]
    orders = model.entities["orders"]
    assert (orders.table, orders.primary_key, orders.time_field) == ("orders", "order_id", "ordered_at")
    assert model.entities["inventory_snapshots"].table == "fct_inventory_snapshots"  # ref('fct_…'), not the name
    # Time at day grain is a date; categorical is text; a column sum_boolean adds up is boolean.
    assert {name: spec.type for name, spec in orders.fields.items()} == {
        "order_id": "integer", "ordered_at": "date", "status": "string", "channel": "string",
        "is_promo": "boolean", "amount": "decimal", "customer_id": "integer"}
    assert orders.fields["channel"].label == "Sales channel"
    # Secure by default: nothing is visible to the model until a person says so.
    every_field = [spec for entity in model.entities.values() for spec in entity.fields.values()]
    assert len(every_field) == 25 and {spec.exposure for spec in every_field} == {"never-to-model"}


def test_measures_and_simple_metrics_become_entity_metrics(imported):
    model = load_semantic_model(imported[0])
    orders = model.entities["orders"].metrics
    expressions = {name: metric.expression for name, metric in orders.items()}
    assert expressions == {
        "order_total": "sum(amount)",
        "order_count": "count()",  # sum of expr 1
        "customers_with_orders": "count_distinct(customer_id)",
        "promo_orders": "sum(1 if is_promo else 0)",  # sum_boolean
        "completed_orders": "count(where=status == 'completed')",
        "web_orders": "count(where=channel in ('web', 'app'))",
        "completed_promo_orders": "count(where=is_promo and status == 'completed')",
        "eu_orders": "count(where=customers.region == 'EU')",  # a dimension of the entity each order belongs to
        "promo_share_promo_order_count": "count(where=is_promo)",  # the ratio's filtered numerator
    }
    # A simple metric named like its measure lends the measure's metric its words.
    assert (orders["order_count"].label, orders["order_count"].type) == ("Orders", "integer")
    assert orders["order_total"].format is None  # money, but no guessed currency
    items = model.entities["order_items"]
    assert items.metrics["revenue"].expression == "sum(revenue_value)"
    assert items.metrics["revenue"].description.startswith("Line revenue after discounts")
    # The field keeps the column and gives the name to the metric (a name is a field or a metric).
    assert (items.fields["revenue_value"].column, items.fields["revenue_value"].type) == ("revenue", "decimal")
    products = model.entities["products"].metrics
    assert (products["latest_launch"].expression, products["latest_launch"].type) == ("max(launched_at)", "date")
    assert products["average_list_price"].expression == "avg(list_price)"
    assert model.entities["inventory_snapshots"].metrics.keys() == {"snapshot_rows"}


def test_entities_become_relationships_and_ratios_derived_metrics(imported):
    model = load_semantic_model(imported[0])
    relationships = {name: (r.from_entity, r.to_entity, r.kind, r.from_field, r.to_field, r.label)
                     for name, r in model.relationships.items()}
    assert relationships == {
        "orders_customer": ("orders", "customers", "many_to_one", "customer_id", "customer_id",
                            "Customer of the order"),
        "order_items_order": ("order_items", "orders", "many_to_one", "order_id", "order_id",
                              "Order of the order item"),
        "order_items_product": ("order_items", "products", "many_to_one", "product_id", "product_id",
                                "Product of the order item"),
        "inventory_snapshots_product": ("inventory_snapshots", "products", "many_to_one", "product_id",
                                        "product_id", "Product of the inventory snapshot"),
    }
    # The unresolved foreign entity keeps its column as a field, with no relationship.
    assert "warehouse_id" in model.entities["inventory_snapshots"].fields
    derived = {name: (d.entity, d.expression, d.type, d.format.style if d.format else None)
               for name, d in model.derived_metrics.items()}
    assert derived == {
        "completion_rate": ("orders", "orders.completed_orders / orders.order_count", "float", "percent"),
        "average_order_value": ("orders", "orders.order_total / orders.order_count", "float", "decimal"),
        "promo_share": ("orders", "orders.promo_share_promo_order_count / orders.order_count", "float", "percent"),
        "revenue_per_customer": ("order_items", "order_items.revenue / customers.customer_count", "float",
                                 "decimal"),
    }


def test_the_model_goes_to_standard_output_without_out(tmp_path, capsys):
    status, stdout, _ = run_import(capsys, str(SHOP), "--dataset-label", "Web shop")
    assert status == 0
    path = tmp_path / "model.yaml"
    path.write_text(stdout)
    assert load_semantic_model(path).dataset.label == "Web shop"


# --- 2. the report ----------------------------------------------------------------------


def test_every_unconverted_item_is_reported_once_with_its_reason_and_in_the_file(imported):
    path, report = imported
    for subject, reason in UNCONVERTED.items():
        lines = [line for line in report if line.startswith(f"{subject}: ")]
        assert len(lines) == 1, (subject, report)
        assert reason in lines[0], lines[0]
    # The only other line says where the tables are looked for.
    assert len(report) == len(UNCONVERTED) + 1 and report[-1].startswith("tables: named after the dbt models")
    # The file starts with the same lines as comments, below what the reviewer must do.
    text = path.read_text()
    header = text[:text.index("\nversion: 1")]
    assert all(line.startswith("#") for line in header.strip().splitlines())
    assert "every field is exposure: never-to-model" in header
    for line in report:
        assert f"#   {line}\n" in header
    # Things the import ignores on purpose are not reported: saved queries, sources, config and meta.
    assert not any("weekly_orders" in line or "raw_shop" in line or "meta" in line for line in report)


# --- 3. the numbers ---------------------------------------------------------------------


STATUSES = ("completed", "placed", "completed", "shipped", "returned", "cancelled", "completed")
CHANNELS = ("web", "app", "store")
REGIONS = ("EU", "US", "APAC", "EU")


def shop_rows() -> dict[str, list[dict]]:
    """A small deterministic shop with the dbt project's columns."""
    customers = [{"customer_id": c, "first_order_at": dt.date(2024, 1, c), "region": REGIONS[c % 4],
                  "email": f"Customer{c}@Example.com"} for c in range(1, 13)]
    orders = [{"order_id": o, "customer_id": o % 11 + 1, "ordered_at": dt.date(2024, 1, 1) + dt.timedelta(days=3 * o),
               "status": STATUSES[o % 7], "channel": CHANNELS[o % 3], "is_promo": o % 4 == 0,
               "amount": 10 + (o * 37) % 90 + o / 100} for o in range(1, 41)]
    products = [{"product_id": p, "product_name": f"Product {p}", "launched_at": dt.date(2023, p, 1),
                 "list_price": 5.0 * p} for p in range(1, 7)]
    items = []
    for order in orders:
        for line in range(1 + order["order_id"] % 3):
            product = (order["order_id"] + line) % 6 + 1
            quantity = 1 + (order["order_id"] + line) % 4
            items.append({"order_item_id": len(items) + 1, "order_id": order["order_id"], "product_id": product,
                          "ordered_at": order["ordered_at"],
                          "product_category": "toys" if product % 2 else "books", "quantity": quantity,
                          "revenue": quantity * 5.0 * product * (0.9 if order["is_promo"] else 1.0)})
    snapshots = [{"snapshot_id": s, "product_id": s % 6 + 1, "warehouse_id": s % 2 + 1,
                  "snapshot_date": dt.date(2024, 3, 1 + s % 5), "units": 10 * s} for s in range(1, 11)]
    return {"customers": customers, "orders": orders, "products": products, "order_items": items,
            "fct_inventory_snapshots": snapshots}


# The warehouse's tables: the first column of each is its key.
COLUMNS = {
    "customers": {"customer_id": sa.Integer, "first_order_at": sa.Date, "region": sa.String, "email": sa.String},
    "orders": {"order_id": sa.Integer, "customer_id": sa.Integer, "ordered_at": sa.Date, "status": sa.String,
               "channel": sa.String, "is_promo": sa.Boolean, "amount": sa.Float},
    "products": {"product_id": sa.Integer, "product_name": sa.String, "launched_at": sa.Date, "list_price": sa.Float},
    "order_items": {"order_item_id": sa.Integer, "order_id": sa.Integer, "product_id": sa.Integer,
                    "ordered_at": sa.Date, "product_category": sa.String, "quantity": sa.Integer,
                    "revenue": sa.Float},
    "fct_inventory_snapshots": {"snapshot_id": sa.Integer, "product_id": sa.Integer, "warehouse_id": sa.Integer,
                                "snapshot_date": sa.Date, "units": sa.Integer},
}


def shop_warehouse(path: Path) -> tuple[sa.Engine, dict[str, list[dict]]]:
    metadata = sa.MetaData()
    tables = {name: sa.Table(name, metadata, *(sa.Column(column, kind(), primary_key=i == 0)
                                               for i, (column, kind) in enumerate(columns.items())))
              for name, columns in COLUMNS.items()}
    engine = sa.create_engine(f"sqlite:///{path}")
    metadata.create_all(engine)
    rows = shop_rows()
    with engine.begin() as connection:
        for name, table in tables.items():
            connection.execute(table.insert(), rows[name])
    return engine, rows


def answer(catalog: Catalog, engine: sa.Engine, draft: dict) -> list[dict]:
    # The answer's own columns: without the span and count the gateway's statement carries after them.
    plan = QueryCompiler(catalog, "sqlite").plan(build_draft(draft, catalog), 1000, carry=False)
    with engine.connect() as connection:
        return [dict(row) for row in connection.execute(plan.statement).mappings()]


def metric_id(catalog: Catalog, entity: str, name: str) -> str:
    return catalog.entities[entity].metrics[name].id


def test_the_converted_metrics_answer_with_the_numbers_of_the_rows(imported, tmp_path):
    engine, rows = shop_warehouse(tmp_path / "shop.sqlite")
    catalog = Catalog(load_semantic_model(imported[0]), engine)  # every mapped column exists
    wanted = {"revenue": ("order_items", "revenue"), "completed": ("orders", "completed_orders"),
              "completion_rate": ("orders", "completion_rate"), "web": ("orders", "web_orders"),
              "per_customer": ("order_items", "revenue_per_customer"), "eu": ("orders", "eu_orders"),
              "promo_share": ("orders", "promo_share"), "completed_promo": ("orders", "completed_promo_orders"),
              "promo": ("orders", "promo_orders")}
    [result] = answer(catalog, engine, {"mode": "aggregate", "measures": [
        {"id": output, "metric": metric_id(catalog, *where)} for output, where in wanted.items()]})
    orders, customers = rows["orders"], rows["customers"]
    region = {c["customer_id"]: c["region"] for c in customers}
    revenue = sum(item["revenue"] for item in rows["order_items"])
    completed = sum(o["status"] == "completed" for o in orders)
    promo = sum(o["is_promo"] for o in orders)
    expected = {"revenue": revenue, "completed": completed, "completion_rate": completed / len(orders),
                "web": sum(o["channel"] in ("web", "app") for o in orders),
                "per_customer": revenue / len(customers),
                "eu": sum(region[o["customer_id"]] == "EU" for o in orders),
                "promo_share": promo / len(orders), "promo": promo,
                "completed_promo": sum(o["is_promo"] and o["status"] == "completed" for o in orders)}
    assert 0 < completed < len(orders) and 0 < expected["eu"] < len(orders) and expected["completed_promo"] > 0
    assert result == pytest.approx(expected)


STATUS_EXPOSURE = re.compile(r"(\n      status:\n(?:        .*\n)*?        exposure: )never-to-model")


def test_a_field_is_refused_as_a_dimension_until_its_exposure_is_set(imported, tmp_path):
    engine, rows = shop_warehouse(tmp_path / "shop.sqlite")
    path = imported[0]
    catalog = Catalog(load_semantic_model(path), engine)
    draft = {"mode": "aggregate", "measures": [{"id": "orders", "metric": metric_id(catalog, "orders", "order_count")}],
             "dimensions": [{"id": "status", "field": catalog.entities["orders"].fields["status"].id}]}
    with pytest.raises(Refusal) as refused:
        answer(catalog, engine, draft)
    assert (refused.value.reason, refused.value.metadata["pointer"]) == ("UNKNOWN_ID", "/dimensions/0/field")
    # A person reviews the field and lets the model group by it: one edit of the generated text.
    text, edits = STATUS_EXPOSURE.subn(r"\1bounded-values", path.read_text())
    assert edits == 1
    path.write_text(text)
    catalog = Catalog(load_semantic_model(path), engine)
    draft["measures"][0]["metric"] = metric_id(catalog, "orders", "order_count")
    draft["dimensions"][0]["field"] = catalog.entities["orders"].fields["status"].id
    counts = {row["status"]: row["orders"] for row in answer(catalog, engine, draft)}
    assert counts == Counter(o["status"] for o in rows["orders"])
    # Every other field is still out of the model's reach.
    model = load_semantic_model(path)
    exposures = Counter(spec.exposure for entity in model.entities.values() for spec in entity.fields.values())
    assert exposures == {"never-to-model": 24, "bounded-values": 1}


# --- 4. unusable input ----------------------------------------------------------------


def test_a_folder_without_semantic_models_is_refused_in_one_line(tmp_path, capsys):
    shutil.copytree(SHOP / "models" / "staging", tmp_path / "models" / "staging")
    (tmp_path / "dbt_project.yml").write_text("name: bare\n")
    status, stdout, err = run_import(capsys, str(tmp_path), "--out", str(tmp_path / "model.yaml"))
    assert (status, stdout) == (2, "")
    assert err == [f"tessera: error: {tmp_path}: no dbt semantic models (no YAML file under it has "
                   "semantic_models:)"]
    assert not (tmp_path / "model.yaml").exists()


@pytest.mark.parametrize("text,expected", [
    ("semantic_models:\n  - name: orders\n    model: ref('orders')\n  entities: [\n", "line 4: not valid YAML"),
    ("semantic_models:\n  - name: orders\n    name: orders_again\n", "line 3: duplicate key 'name'"),
])
def test_a_yaml_error_is_refused_naming_the_file_and_line(tmp_path, capsys, text, expected):
    shutil.copytree(SHOP, tmp_path / "shop")
    broken = tmp_path / "shop" / "models" / "marts" / "_broken.yml"
    broken.write_text(text)
    status, stdout, err = run_import(capsys, str(tmp_path / "shop"))
    assert (status, stdout) == (2, "")
    assert len(err) == 1 and err[0].startswith(f"tessera: error: {broken}: {expected}"), err


def test_no_convertible_semantic_model_is_unusable_input(tmp_path, capsys):
    (tmp_path / "models.yml").write_text(yaml.safe_dump({"semantic_models": [
        {"name": "events", "model": "ref('events')", "entities": [{"name": "user", "type": "foreign"}]}]}))
    status, stdout, err = run_import(capsys, str(tmp_path))
    assert (status, stdout) == (2, "")
    assert err[0].startswith("semantic model events: not converted: it has no primary, unique or natural entity")
    assert err[-1].startswith("tessera: error: ") and "none of its 1 semantic models could be converted" in err[-1]


# --- details of the conversion -----------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("{{ Dimension('order__status') }} = 'completed'", ["order__status == 'completed'"]),
    ("{{ Dimension('order__status') }} <> 'cancelled'", ["order__status != 'cancelled'"]),
    ("{{ Dimension('order__channel') }} IN ('web', 'app')", ["order__channel in ('web', 'app')"]),
    ("{{ Dimension('order__channel') }} not in ('store')", ["order__channel not in ('store',)"]),
    ("{{ Dimension('order__is_promo') }} is true AND {{ Dimension('order__quantity') }} > 100",
     ["order__is_promo", "order__quantity > 100"]),
    ("{{ Dimension('order__is_promo') }} IS FALSE", ["not order__is_promo"]),
    ("{{ Dimension('order__is_promo') }} = true", ["order__is_promo"]),
    ("{{ Dimension('order__discount') }} >= 0.25", ["order__discount >= 0.25"]),
    ("{{ Dimension('customer__name') }} = 'O''Brien'", ["customer__name == \"O'Brien\""]),
])
def test_filters_of_the_common_forms_translate(text, expected):
    assert [render_condition(c.dimension, c) for c in parse_filter(text)] == expected


@pytest.mark.parametrize("text,reason", [
    ("{{ TimeDimension('order__ordered_at', 'month') }} >= '2024-01-01'", "TimeDimension"),
    ("{{ Dimension('order__status') }} = 'a' OR {{ Dimension('order__status') }} = 'b'", "'OR' joins"),
    ("lower({{ Dimension('customer__email') }}) = 'x'", "'lower' where a Dimension was expected"),
    ("{{ Entity('customer') }} is not null", "an Entity filter"),
    ("{{ Dimension('order__status') }} is null", "'is null' after the Dimension"),
    ("{{ Dimension('order__status', entity_path=['customer']) }} = 'x'", "(one entity__dimension, no entity_path)"),
    ("{{ Dimension('order__customer__region') }} = 'x'", "is not a call dbt reads"),
    ("{{ Dimension('metric_time') }} >= '2024-01-01'", "a filter on metric_time is not converted"),
    ("{{ Dimension('order__ordered_at').grain('month') }} = '2024-01'", "TimeDimension"),
    ("{{ Dimension('order__status') }} in ('a', ", "ends early"),
])
def test_other_filters_are_refused_with_a_reason(text, reason):
    with pytest.raises(FilterError, match=re.escape(reason)):
        parse_filter(text)


def test_derived_metrics_inline_ratios_and_report_sql(tmp_path, capsys):
    project = {
        "semantic_models": [{
            "name": "sales", "model": "ref('fct_sales')",
            "entities": [{"name": "sale", "type": "primary", "expr": "sale_id"}],
            "dimensions": [{"name": "sold_at", "type": "time", "type_params": {"time_granularity": "hour"}}],
            "measures": [{"name": "gross", "agg": "sum", "expr": "gross_amount"},
                         {"name": "refunds", "agg": "sum", "expr": "refund_amount"},
                         {"name": "sales", "agg": "count", "expr": "1"}]}],
        "metrics": [
            {"name": "refund_rate", "type": "ratio", "type_params": {"numerator": "refunds", "denominator": "gross"}},
            {"name": "kept_per_sale", "type": "derived", "type_params": {
                "expr": "(1 - refund_rate) * gross / sales",
                "metrics": [{"name": "refund_rate"}, {"name": "gross"}, {"name": "sales"}]}},
            {"name": "safe_rate", "type": "derived", "type_params": {
                "expr": "refunds / nullif(gross, 0)", "metrics": [{"name": "refunds"}, {"name": "gross"}]}}]}
    (tmp_path / "semantic.yml").write_text(yaml.safe_dump(project))
    status, stdout, err = run_import(capsys, str(tmp_path), "--out", str(tmp_path / "model.yaml"))
    assert status == 0, err
    model = load_semantic_model(tmp_path / "model.yaml")
    assert model.dataset.label == "Imported dbt project"  # no dbt_project.yml
    assert model.entities["sales"].table == "fct_sales"
    assert model.entities["sales"].fields["sold_at"].type == "timestamp"  # a grain finer than a day
    # A derived metric over a ratio inlines it: Tessera's derived metrics combine entity metrics.
    assert model.derived_metrics["kept_per_sale"].expression == \
        "(1 - sales.refunds / sales.gross) * sales.gross / sales.sales"
    assert "safe_rate" not in model.derived_metrics
    assert any(line.startswith("metric safe_rate: not converted: its expr 'refunds / nullif(gross, 0)' is not "
                               "arithmetic") for line in err)


def test_names_from_the_project_stay_inside_comments_and_keywords_become_names(tmp_path):
    """A newline in a dbt name cannot start YAML of its own in the model file; a column called `class`
    gets a field name a metric expression can use."""
    from cli import semantic_import

    models = tmp_path / "models"
    models.mkdir()
    (tmp_path / "dbt_project.yml").write_text('name: "shop\\nrelationships: {}"\n')
    (models / "m.yml").write_text("""semantic_models:
  - name: "orders\\nrelationships: {}\\n#"
    model: ref('orders')
    entities: [{name: order, type: primary, expr: order_id}]
  - name: orders
    label: "Orders\\nrelationships: {}"
    model: ref('orders')
    entities: [{name: order, type: primary, expr: order_id}]
    measures: [{name: classes, agg: count_distinct, expr: class}]
""")
    report = semantic_import.Report()
    imported = semantic_import.import_dbt(tmp_path, None, report)
    # dbt refuses the first name; the report says so in one line, which the file holds as one comment.
    [refused] = [line for line in report.lines if line.startswith("semantic model orders relationships")]
    assert "is not a dbt name: lower-case letters" in refused and f"#   {refused}\n" in imported.text
    document = yaml.safe_load(imported.text)
    assert set(document) == {"version", "dataset", "entities"}, "nothing outside the comments but the model"
    assert all(line.startswith("#") or not line.startswith("relationships") for line in imported.text.splitlines())
    [entity] = document["entities"].values()
    assert entity["label"] == "Orders relationships: {}"  # one line, a value quoted by the YAML writer
    assert entity["metrics"]["classes"]["expression"] == "count_distinct(class_)"
    assert entity["fields"]["class_"]["column"] == "class"


# --- dbt's own parser and validator ---------------------------------------------------------


def test_items_dbts_schema_refuses_are_reported_and_the_rest_converts(tmp_path, capsys):
    """dbt-semantic-interfaces decides what a semantic model or metric is: a typo'd key, an unknown
    aggregation or an invalid name leaves that item out with dbt's reason; dbt-core's own keys
    (`meta` beside an item, a metric's access `group`) are read as dbt reads them."""
    (tmp_path / "semantic.yml").write_text(yaml.safe_dump({
        "semantic_models": [
            {"name": "sales", "model": "ref('fct_sales')", "meta": {"owner": "finance"},
             "defaults": {"agg_time_dimension": "sold_at"},
             "entities": [{"name": "sale", "type": "primary", "expr": "sale_id"}],
             "dimensions": [{"name": "sold_at", "type": "time", "type_params": {"time_granularity": "day"},
                             "meta": {"pii": False}}],
             "measures": [{"name": "gross", "agg": "sum", "expr": "gross_amount", "create_metric": True}]},
            {"name": "refunds", "model": "ref('fct_refunds')",
             "entities": [{"name": "refund", "type": "primary"}],
             "measures": [{"name": "refunded", "agg": "total", "expr": "amount"}]},
            {"name": "stores", "model": "ref('stores')",
             "entities": [{"name": "store", "type": "primary"}], "dimensons": [{"name": "city"}]}],
        "metrics": [{"name": "gross_sales", "type": "simple", "label": "Gross sales", "group": "finance",
                     "meta": {"tier": 1}, "type_params": {"measure": "gross"}},
                    {"name": "Net", "type": "simple", "type_params": {"measure": "gross"}}]}))
    status, stdout, err = run_import(capsys, str(tmp_path), "--out", str(tmp_path / "model.yaml"))
    assert status == 0, err
    refused = {line.split(": not converted: ")[0]: line for line in err if ": not converted: " in line}
    assert refused.keys() == {"semantic model refunds", "semantic model stores", "metric Net"}, err
    assert "dbt's schema refuses it (measures/0/agg: 'total' is not one of" in refused["semantic model refunds"]
    assert "'dimensons' was unexpected" in refused["semantic model stores"]
    assert "name: 'Net' is not a dbt name: lower-case letters" in refused["metric Net"]
    model = load_semantic_model(tmp_path / "model.yaml")
    assert list(model.entities) == ["sales"]
    assert model.entities["sales"].metrics["gross_sales"].expression == "sum(gross_amount)"


def test_what_dbts_validator_refuses_is_reported_and_the_import_goes_on(tmp_path, capsys):
    """A measure needs an aggregation time dimension in dbt; Tessera does not, so the model is written
    and the line says what dbt itself would refuse."""
    (tmp_path / "semantic.yml").write_text(yaml.safe_dump({
        "semantic_models": [{"name": "visits", "model": "ref('visits')",
                             "entities": [{"name": "visit", "type": "primary", "expr": "visit_id"}],
                             "measures": [{"name": "visit_count", "agg": "count", "expr": "visit_id"}]}],
        "metrics": [{"name": "visits", "type": "simple", "type_params": {"measure": "visit_count"}}]}))
    status, _, err = run_import(capsys, str(tmp_path), "--out", str(tmp_path / "model.yaml"))
    assert status == 0, err
    dbt_lines = [line for line in err if line.startswith("dbt's validator: ")]
    assert dbt_lines and all("visit_count" in line for line in dbt_lines), err
    assert any("aggregation time dimension" in line.lower() for line in dbt_lines), dbt_lines
    assert f"#   {dbt_lines[0]}\n" in (tmp_path / "model.yaml").read_text()
    assert load_semantic_model(tmp_path / "model.yaml").entities["visits"].metrics["visits"].expression == \
        "count(visit_id)"


def test_a_metric_over_a_measure_of_an_unconverted_semantic_model_says_so(tmp_path, capsys):
    (tmp_path / "semantic.yml").write_text(yaml.safe_dump({
        "semantic_models": [
            {"name": "accounts", "model": "ref('accounts')",
             "entities": [{"name": "account", "type": "primary", "expr": "concat(region, '-', id)"}],
             "measures": [{"name": "arr", "agg": "sum", "expr": "arr_usd"}]},
            {"name": "visits", "model": "ref('visits')",
             "entities": [{"name": "visit", "type": "primary", "expr": "visit_id"}],
             "measures": [{"name": "visit_count", "agg": "count", "expr": "visit_id"}]}],
        "metrics": [{"name": "total_arr", "type": "simple", "type_params": {"measure": "arr"}}]}))
    status, _, err = run_import(capsys, str(tmp_path), "--out", str(tmp_path / "model.yaml"))
    assert status == 0, err
    assert "semantic model accounts: not converted: its primary entity is a SQL expression" in err[0]
    assert "metric total_arr: not converted: its measure arr was not converted" in err


def test_what_dbt_core_accepts_of_case_config_and_descriptions_is_read_as_dbt_reads_it(tmp_path, capsys):
    """dbt-core takes enum values in any case, an entity's description, and config keys (enabled, group) it keeps
    out of the manifest; DSI's schema alone would refuse all three. A disabled item is said, not read."""
    (tmp_path / "semantic.yml").write_text(yaml.safe_dump({
        "semantic_models": [
            {"name": "visits", "model": "ref('visits')", "config": {"group": "web", "meta": {"owner": "a"}},
             "defaults": {"agg_time_dimension": "visited_at"},
             "entities": [{"name": "visit", "type": "Primary", "expr": "visit_id", "description": "One visit."}],
             "dimensions": [{"name": "visited_at", "type": "TIME", "type_params": {"time_granularity": "Day"}}],
             "measures": [{"name": "visit_count", "agg": "Count", "expr": "visit_id"},
                          {"name": "bounces", "agg": "SUM_BOOLEAN", "expr": "bounced"}]},
            {"name": "old_visits", "model": "ref('old_visits')", "config": {"enabled": False},
             "entities": [{"name": "old_visit", "type": "primary"}]}],
        "metrics": [{"name": "visits", "type": "Simple", "config": {"group": "web"},
                     "type_params": {"measure": "visit_count"}},
                    {"name": "old", "type": "simple", "config": {"enabled": False},
                     "type_params": {"measure": "visit_count"}}]}))
    status, _, err = run_import(capsys, str(tmp_path), "--out", str(tmp_path / "model.yaml"))
    assert status == 0, err
    assert "semantic model old_visits: not converted: it is disabled in dbt (config.enabled: false)" in err
    assert "metric old: not converted: it is disabled in dbt (config.enabled: false)" in err
    assert not [line for line in err if "dbt's schema" in line or line.startswith("dbt's validator")], err
    visits = load_semantic_model(tmp_path / "model.yaml").entities["visits"]
    assert visits.fields["visit_id"].description == "One visit."
    assert visits.fields["visited_at"].type == "date"
    assert {name: m.expression for name, m in visits.metrics.items()} == {
        "visit_count": "count(visit_id)", "bounces": "sum(1 if bounced else 0)", "visits": "count(visit_id)"}


def test_with_items_dbt_refuses_its_validator_is_not_run_and_their_measures_are_known(tmp_path, capsys):
    (tmp_path / "semantic.yml").write_text(yaml.safe_dump({
        "semantic_models": [{"name": "sales", "model": "ref('sales')", "colour": "red",
                             "entities": [{"name": "sale", "type": "primary"}],
                             "measures": [{"name": "revenue", "agg": "sum"}]},
                            {"name": "visits", "model": "ref('visits')",
                             "entities": [{"name": "visit", "type": "primary", "expr": "visit_id"}]}],
        "metrics": [{"name": "total_revenue", "type": "simple", "type_params": {"measure": "revenue"}}]}))
    status, _, err = run_import(capsys, str(tmp_path), "--out", str(tmp_path / "model.yaml"))
    assert status == 0, err
    assert any(line.startswith("semantic model sales: not converted: dbt's schema refuses it") for line in err)
    assert "metric total_revenue: not converted: its measure revenue was not converted" in err
    [validator] = [line for line in err if line.startswith("dbt's validator")]
    assert validator.startswith("dbt's validator: not run: dbt's schema refuses 1 item(s) above")


def test_a_running_total_says_the_window_and_grain_it_does_not_carry_in_words(tmp_path, capsys):
    (tmp_path / "semantic.yml").write_text(yaml.safe_dump({
        "semantic_models": [{"name": "visits", "model": "ref('visits')", "defaults": {"agg_time_dimension": "day"},
                             "entities": [{"name": "visit", "type": "primary", "expr": "visit_id"}],
                             "dimensions": [{"name": "day", "type": "time",
                                             "type_params": {"time_granularity": "day"}}],
                             "measures": [{"name": "visit_count", "agg": "count", "expr": "visit_id"}]}],
        "metrics": [{"name": "visits_to_date", "type": "cumulative",
                     "type_params": {"measure": "visit_count", "grain_to_date": "month"}}]}))
    status, _, err = run_import(capsys, str(tmp_path), "--out", str(tmp_path / "model.yaml"))
    assert status == 0, err
    [line] = [line for line in err if line.startswith("metric visits_to_date: ")]
    assert "its grain_to_date (month) is not carried" in line, line
