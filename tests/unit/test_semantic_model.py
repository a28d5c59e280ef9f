"""The semantic model file: every problem names the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.resources import expressions
from services.resources.semantic_model import SemanticModelError, load_semantic_model
from shared.paths import REPO_ROOT

DEMO = REPO_ROOT / "deploy" / "semantic-models" / "retail.yaml"


def test_the_demo_model_loads():
    model = load_semantic_model(DEMO)
    assert {"orders", "order_items", "returns", "support_tickets"} <= set(model.entities)
    assert model.entities["order_items"].metrics["net_revenue"].expression == \
        "sum(quantity * unit_price * (1 - discount))"
    assert model.derived_metrics["return_rate"].expression == "returns.returned_units / order_items.units_sold"


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    text = DEMO.read_text()
    assert old in text, old
    path = tmp_path / "model.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("old,new,expected", [
    ("exposure: never-to-model}", "exposure: sometimes}", "entities.regions.fields.region_id.exposure"),
    ("primary_key: region_id", "primary_key: nope", "entities.regions.primary_key"),
    ("expression: count_distinct(customer_id)", "expression: count_distinct(nope)",
     "entities.customers.metrics.customer_count.expression: unknown field 'nope'"),
    ("expression: sum(quantity * unit_price)", "expression: quantity * unit_price",
     "entities.order_items.metrics.gross_revenue.expression: field 'quantity' is used outside an aggregate"),
    ("expression: sum(quantity * unit_price)", "expression: \"__import__('os').system('x')\"",
     "entities.order_items.metrics.gross_revenue.expression: unknown function (computed)"),
    ("expression: sum(quantity * unit_price)", "expression: sum(sum(quantity))",
     "nested inside another aggregate"),
    ("from: customers, to: regions", "from: customers, to: planets", "relationships.customer_region.to"),
    ("from_field: region_id, to_field", "from_field: nope, to_field", "relationships.customer_region.from_field"),
    ("returns.returned_units / order_items.units_sold", "returns.returned_units / order_items.nope",
     "derived_metrics.return_rate.expression: unknown metric order_items.'nope'"),
    ("    table: regions\n", "    table: regions\n    colour: blue\n", "entities.regions.colour: Extra inputs"),
    ("version: 1", "version: 1\nversion: 2", "duplicate key 'version'"),
    ("  regions:\n", "  regions: [\n", "not valid YAML"),
    # Display formats: an unknown style, a currency without its code, a style that does not fit the type.
    ("type: float\n    format: {style: percent, decimals: 2}", "type: float\n    format: permille",
     "derived_metrics.return_rate.format.style: Input should be 'integer', 'decimal', 'currency', 'percent'"),
    ("format: {style: currency, currency: USD}}", "format: currency}",
     "entities.products.fields.list_price.format: Value error, currency (an ISO 4217 code such as USD) goes"),
    ("format: {style: currency, currency: USD}}", "format: {style: currency, currency: dollars}}",
     "entities.products.fields.list_price.format.currency: String should match pattern"),
    ("format: {style: currency, currency: USD}}", "format: {style: date, grain: month}}",
     "entities.products.fields.list_price.format: style date does not fit type decimal"),
    ("format: {style: percent, decimals: 1}}", "format: {style: percent, grain: month}}",
     "entities.order_items.fields.discount.format: Value error, grain goes with style date only"),
    ("time_field: ordered_at", "time_field: channel", "entities.orders.time_field: 'channel' is not one of its date"),
    # An entity declared twice over one table, or two fields over one column: refused in one line (issue #16;
    # the table case used to end in a raw SQLAlchemy traceback when the tables were bound).
    ("    table: customers\n", "    table: regions\n",
     "entities.customers.table: table 'regions' is already mapped by entities.regions; declare it once"),
    ("email: {type: string, label: Customer email,", "email: {column: name, type: string, label: Customer email,",
     "entities.customers.fields.email.column: column 'name' is already mapped by fields.name"),
    # Two roles with one label could not be told apart in a refusal or a caption.
    ("label: Customer who opened the ticket}", "label: Customer who placed the order}",
     "relationships.ticket_customer.label: 'Customer who placed the order' is also the label of "
     "relationships.order_customer"),
    ("  customer_region:\n", "  CustomerRegion:\n", "relationships.CustomerRegion: name 'CustomerRegion' must be"),
    # Composite keys: every field exists, and both sides of a relationship have as many fields.
    ("primary_key: region_id", "primary_key: [region_id, planet]", "entities.regions.primary_key: 'planet' is not"),
    ("from_field: region_id, to_field: region_id", "from_field: [region_id, segment], to_field: region_id",
     "relationships.customer_region.to_field: 2 fields on one side, 1 on the other; they are matched in order"),
    ("exposure: never-to-model}", "exposure: filter-anything}", "entities.regions.fields.region_id.exposure"),
    ("primary_key: region_id", "primary_key: []", "entities.regions.primary_key: name one field, or several"),
    ("primary_key: region_id", "primary_key: [region_id, region_id]", "entities.regions.primary_key: name one"),
    ("from_field: region_id, to_field: region_id", "from_field: [], to_field: []",
     "relationships.customer_region.from_field: name one field, or several different ones"),
    ("version: 1", "version: 1\n? [a, b]\n: 1", "line 4: a key must be a name, not a list or a mapping"),
])
def test_errors_name_the_file_and_the_key(tmp_path, old, new, expected):
    path = _broken(tmp_path, old, new)
    with pytest.raises(SemanticModelError) as error:
        load_semantic_model(path)
    assert str(error.value).startswith(f"{path}: ")
    assert expected in str(error.value)


def test_missing_file(tmp_path):
    with pytest.raises(SemanticModelError, match="cannot be read"):
        load_semantic_model(tmp_path / "absent.yaml")


@pytest.mark.parametrize("text", [
    "sum(quantity) + 1", "count()", "count_distinct(order_id)", "avg(price) if 1 > 0 else 0",
    "sum(1 if status == 'cancelled' else 0)", "-min(x) / max(y)", "sum(a) >= 2 and not sum(b) < 1",
    "sum(revenue, where=promo == 1)", "count(where=status in ('F', 'O'))", "count(where=status not in ('F',))",
    "count(where=starts_with(kind, 'PROMO') or ends_with(kind, 'BRASS'))", "count(where=like(box, 'LG%'))",
    "avg(days_between(ordered_at, shipped_at))", "count_distinct(date_trunc('month', ordered_at))",
    "count(where=year(d) == 2024 and quarter(d) == 4)", "sum(quantity * parts.price)",
])
def test_expressions_in_the_grammar(text):
    expressions.parse(text, dotted_refs=True)


@pytest.mark.parametrize("text,message", [
    ("__import__('os')", "unknown function"), ("x.y", "Attribute is not allowed"), ("[1, 2]", "List"),
    ("lambda: 1", "Lambda"), ("sum(x, y)", "exactly one argument"), ("a ** 2", "BinOp"),
    ("1 < a < 2", "Compare"), ("True", "not a number or string"), ("", "empty"), ("sum(", "syntax error"),
    ("f'{x}'", "JoinedStr"), ("x" * 501, "longer than"),
    ("sum(x, filter=y)", "one keyword argument, where="), ("sum(x, where=a, where=b)", "one keyword argument"),
    ("count(where=status in (kind,))", "literals only"), ("count(where=status in kind)", "list of literals"),
    ("count(where=starts_with(kind, prefix))", "quoted text literal"), ("count(where=like(kind))", "takes 2 arg"),
    ("count_distinct(date_trunc('fortnight', d))", "takes a grain first"), ("open('x')", "unknown function"),
])
def test_expressions_outside_the_grammar(text, message):
    with pytest.raises(expressions.ExpressionError, match=message):
        expressions.parse(text)


@pytest.mark.parametrize("old,new,expected", [
    ("expression: sum(quantity * unit_price)", "expression: sum(quantity * products.list_price)", None),
    ("expression: sum(quantity * unit_price)", "expression: sum(quantity * planets.mass)",
     "entities.order_items.metrics.gross_revenue.expression: unknown entity 'planets' in planets.mass"),
    ("expression: sum(quantity * unit_price)", "expression: sum(quantity * products.weight)",
     "entities.order_items.metrics.gross_revenue.expression: 'weight' is not a field of products"),
    ("expression: returns.returned_units / order_items.units_sold",
     "expression: returns.returned_units / order_items.units_sold + year(1)",
     "derived_metrics.return_rate.expression: a derived metric combines metrics; year() belongs in an entity"),
])
def test_fields_of_related_entities_in_a_metric(tmp_path, old, new, expected):
    path = _broken(tmp_path, old, new)
    if expected is None:
        load_semantic_model(path)
        return
    with pytest.raises(SemanticModelError) as error:
        load_semantic_model(path)
    assert expected in str(error.value)
