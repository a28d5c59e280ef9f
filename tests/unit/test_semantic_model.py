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
])
def test_expressions_in_the_grammar(text):
    expressions.parse(text)


@pytest.mark.parametrize("text,message", [
    ("__import__('os')", "unknown function"), ("x.y", "Attribute is not allowed"), ("[1, 2]", "List"),
    ("lambda: 1", "Lambda"), ("sum(x, y)", "exactly one argument"), ("a ** 2", "BinOp"),
    ("1 < a < 2", "Compare"), ("True", "not a number or string"), ("", "empty"), ("sum(", "syntax error"),
    ("f'{x}'", "JoinedStr"), ("x" * 501, "longer than"),
])
def test_expressions_outside_the_grammar(text, message):
    with pytest.raises(expressions.ExpressionError, match=message):
        expressions.parse(text)
