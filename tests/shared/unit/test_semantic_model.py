"""The semantic model file: every problem names the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.paths import REPO_ROOT
from shared.semantic import expressions
from shared.semantic.model import SemanticModelError, load_semantic_model

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


SIGNUP_VERBS = "event_verbs: [signed up, sign up, joined, registered, new]}\n"


@pytest.mark.parametrize("old,new,expected", [
    # Event verbs date rows: a date or time people may see, each verb 1-4 words, one date per verb in an entity.
    ("label: Order status, synonyms: [state], exposure: bounded-values,",
     "label: Order status, synonyms: [state], exposure: bounded-values, event_verbs: [paid],",
     "entities.orders.fields.status.event_verbs: only a date or timestamp field with bounded-values exposure has "
     "event verbs; this one is a string field with bounded-values exposure"),
    ("synonyms: [joined, registration date], exposure: bounded-values,",
     "synonyms: [joined, registration date], exposure: filter-only,",
     "entities.customers.fields.signup_date.event_verbs: only a date or timestamp field with bounded-values "
     "exposure has event verbs; this one is a date field with filter-only exposure"),
    ("event_verbs: [placed, ordered,", "event_verbs: [placed an order with us, ordered,",
     "entities.orders.fields.ordered_at.event_verbs: 'placed an order with us' has 5 words; a phrase has 1 to 4"),
    ("event_verbs: [placed, ordered,", "event_verbs: ['  ', ordered,",
     "entities.orders.fields.ordered_at.event_verbs: '  ' has 0 words; a phrase has 1 to 4"),
    ("event_verbs: [placed, ordered,", "event_verbs: [placed, Placed,",
     "entities.orders.fields.ordered_at.event_verbs: 'Placed' is listed twice"),
    (SIGNUP_VERBS, SIGNUP_VERBS + "      first_order_day: {type: date, label: First order day, "
                                  "exposure: bounded-values, event_verbs: [Joined]}\n",
     "entities.customers.fields.first_order_day.event_verbs: 'Joined' is also an event verb of "
     "entities.customers.fields.signup_date; one verb names one date of an entity"),
    # Other words for values: text values a draft may filter on, each phrase 1-4 words naming one value.
    (SIGNUP_VERBS, SIGNUP_VERBS.replace("}\n", ", values: {'2024-01-01': [new year]}}\n"),
     "entities.customers.fields.signup_date.values: only a string field with bounded-values exposure has other "
     "words for its values; this one is a date field with bounded-values exposure"),
    ("label: Ticket status, exposure: bounded-values,", "label: Ticket status, exposure: aggregate-only,",
     "entities.support_tickets.fields.status.values: only a string field with bounded-values exposure has other "
     "words for its values; this one is a string field with aggregate-only exposure"),
    ("smb, smbs]", "smb, small and medium sized businesses]",
     "entities.customers.fields.segment.values.small_business: 'small and medium sized businesses' has 5 words"),
    ("values: {completed: [fulfilled, complete]}", "values: {completed: [fulfilled, complete], refunded: [Fulfilled]}",
     "entities.orders.fields.status.values.refunded: 'Fulfilled' already names 'completed'; one phrase names one "
     "value of a field"),
    ("values: {urgent: [critical]}", "values: {urgent: [critical], high: [Urgent]}",
     "entities.support_tickets.fields.priority.values.high: 'Urgent' already names 'urgent'"),
    ("values: {urgent: [critical]}", "values: {urgent: [critical, Critical]}",
     "entities.support_tickets.fields.priority.values.urgent: 'Critical' is listed twice"),
    ("values: {urgent: [critical]}", "values: {urgent: critical}",
     "entities.support_tickets.fields.priority.values.urgent: Input should be a valid tuple"),
    ("time_anchor: latest_data", "time_anchor: yesterday", "time_anchor: Input should be 'today' or 'latest_data'"),
])
def test_event_verbs_value_words_and_the_time_anchor_are_checked(tmp_path, old, new, expected):
    path = _broken(tmp_path, old, new)
    with pytest.raises(SemanticModelError) as error:
        load_semantic_model(path)
    assert str(error.value).startswith(f"{path}: ")
    assert expected in str(error.value)


def test_one_event_verb_may_date_rows_of_several_entities_and_the_anchor_defaults_to_today(tmp_path):
    path = _broken(tmp_path, "event_verbs: [returned, ", "event_verbs: [returned, placed, ")
    model = load_semantic_model(path)
    assert "placed" in model.entities["returns"].fields["returned_at"].event_verbs
    assert "placed" in model.entities["orders"].fields["ordered_at"].event_verbs
    assert model.time_anchor == "latest_data"
    assert load_semantic_model(_broken(tmp_path, "time_anchor: latest_data\n", "")).time_anchor == "today"


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
