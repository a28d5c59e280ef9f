"""An action is offered only when the semantic model the set reads has the entity its data changes are records
of, and the database they go to holds their target: an absent entity, table or column takes the action out at
start (one line naming it), never an error when a person presses it."""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy as sa

from services.capabilities.changes import ChangeTargetUnavailable, DataChanges, TargetCheckRefused
from services.capabilities.model_entities import ModelUnreadable, load_entities, unmodelled_targets
from services.capabilities.policy import ActionPolicy
from services.capabilities.wiring import _offerable
from shared.paths import DEMO_ACTIONS, DEMO_SEMANTIC_MODEL, NO_ACTIONS

SHIPPED = DEMO_ACTIONS


def _warehouse(path, orders_columns: str | None) -> sa.Engine:
    with sqlite3.connect(path) as connection:
        if orders_columns is not None:
            connection.execute(f"CREATE TABLE orders ({orders_columns})")
    return sa.create_engine(f"sqlite:///{path}")


@pytest.mark.parametrize(("columns", "absent"), [
    ("order_id INTEGER PRIMARY KEY, review_status TEXT, version INTEGER", False),
    ("order_id INTEGER PRIMARY KEY, version INTEGER", True),  # the declared field is missing
    (None, True),  # no orders table at all: someone's own warehouse
])
def test_a_target_is_absent_when_its_table_or_a_declared_column_is(tmp_path, columns, absent):
    policy = ActionPolicy.load(SHIPPED)
    engine = _warehouse(tmp_path / "warehouse.sqlite", columns)
    found = DataChanges(engine, policy.policy.data_changes).absent_targets()
    assert set(found) == ({"order"} if absent else set())
    if absent:
        assert found["order"].startswith("table orders with columns order_id, version, review_status is not in the "
                                         "database (")


def test_a_database_file_that_is_not_there_is_not_made_by_looking(tmp_path):
    policy = ActionPolicy.load(SHIPPED)
    missing = tmp_path / "nowhere.sqlite"
    found = DataChanges(sa.create_engine(f"sqlite:///{missing}"), policy.policy.data_changes).absent_targets()
    assert found == {"order": f"no database file at {missing}"} and not missing.exists()


def test_a_database_that_does_not_answer_is_not_taken_for_an_empty_one(tmp_path):
    policy = ActionPolicy.load(SHIPPED)
    silent = sa.create_engine("postgresql://nobody@127.0.0.1:9/none", connect_args={"connect_timeout": 2})
    with pytest.raises(ChangeTargetUnavailable):
        DataChanges(silent, policy.policy.data_changes).absent_targets()


def test_actions_that_change_only_absent_targets_are_withheld_each_named():
    policy = ActionPolicy.load(SHIPPED)
    assert policy.withholding({}) == (policy, [])
    narrowed, said = policy.withholding({"order": "table orders is not in the database"})
    assert narrowed.offered() == [] and set(narrowed.withheld) == {"records.propose_changes", "orders.flag_for_review"}
    assert said == [
        "action records.propose_changes is not offered: none of its data change targets is in the database (order)",
        "action orders.flag_for_review is not offered: its data change target 'order': table orders is not in the "
        "database"]
    # The contracts stay: an intent approved before a restart is carried out (or reconciled) as a data change.
    assert set(narrowed.actions) == set(policy.actions)
    assert narrowed.digest != policy.digest  # what is offered is not the file's whole: callers comparing see it


def test_a_refusal_other_than_a_missing_table_is_not_taken_for_absence(tmp_path):
    policy = ActionPolicy.load(SHIPPED)
    path = tmp_path / "not-a-database.sqlite"
    path.write_bytes(b"this is not a SQLite database, and its tables cannot be said to be missing" * 20)
    engine = sa.create_engine(f"sqlite:///{path}")
    with pytest.raises(TargetCheckRefused, match="'order' .* could not be read: file is not a database"):
        DataChanges(engine, policy.policy.data_changes).absent_targets()


def test_the_demos_actions_go_with_the_demos_model_only():
    from cli.launcher import _demo_actions_with_the_demo_model

    def actions_file(source: dict[str, str], env: dict[str, str] | None = None) -> str | None:
        env = dict(env or {})
        _demo_actions_with_the_demo_model(env, source)
        return env.get("TESSERA_CAPABILITIES_ACTIONS_FILE")

    assert actions_file({}) is None  # the demo: its own actions (the broker's default file)
    assert actions_file({"TESSERA_RESOURCES_SEMANTIC_MODEL": str(DEMO_SEMANTIC_MODEL)}) is None
    theirs = {"TESSERA_RESOURCES_SEMANTIC_MODEL": "/srv/models/shop.yaml"}
    assert actions_file(theirs) == str(NO_ACTIONS)
    assert actions_file(theirs, {"TESSERA_CAPABILITIES_ACTIONS_FILE": "/srv/policy/shop-actions.yaml"}) == \
        "/srv/policy/shop-actions.yaml"  # the operator's own policy wins
    assert ActionPolicy.load(NO_ACTIONS).actions == {}
    env: dict[str, str] = {}
    _demo_actions_with_the_demo_model(env, theirs)  # the broker checks its actions against the gateway's model
    assert env["TESSERA_CAPABILITIES_SEMANTIC_MODEL"] == "/srv/models/shop.yaml"


MODEL = """version: 1
entities:
  orders:
    table: {table}
    primary_key: {key}
    fields:
      order_id: {{type: integer, label: Order}}
      number: {{column: order_id, type: integer, label: Order number}}
"""


@pytest.mark.parametrize(("table", "key", "why"), [
    ("orders", "order_id", None),
    ("orders", "number", None),  # a key field mapped to the same column
    ("sales_orders", "order_id", "entity 'orders' of the semantic model maps table sales_orders, not orders"),
    ("orders", "legacy_id", "entity 'orders' of the semantic model identifies its rows by legacy_id, not order_id"),
])
def test_a_target_is_unmodelled_when_its_entity_maps_another_table_or_key(tmp_path, table, key, why):
    path = tmp_path / "model.yaml"
    path.write_text(MODEL.format(table=table, key=key))
    targets = ActionPolicy.load(SHIPPED).policy.data_changes
    assert unmodelled_targets(targets, load_entities(path)) == ({"order": why} if why else {})


def test_the_demos_model_holds_the_demos_targets_and_another_model_none(tmp_path):
    targets = ActionPolicy.load(SHIPPED).policy.data_changes
    assert unmodelled_targets(targets, load_entities(DEMO_SEMANTIC_MODEL)) == {}
    shop = tmp_path / "shop.yaml"
    shop.write_text("version: 1\nentities:\n  baskets: {table: baskets, primary_key: basket_id}\n")
    assert unmodelled_targets(targets, load_entities(shop)) == {"order": "the semantic model has no entity 'orders'"}
    # Another entity's composite key is not the broker's business; the target's own must be its one key column.
    shop.write_text("version: 1\nentities:\n  lines: {table: lines, primary_key: [order_id, line]}\n"
                    "  orders: {table: orders, primary_key: [order_id, shop_id]}\n")
    assert unmodelled_targets(targets, load_entities(shop), "shop.yaml") == {
        "order": "entity 'orders' of shop.yaml identifies its rows by order_id, shop_id, not order_id"}


def test_at_start_the_demos_actions_beside_another_model_are_withheld_each_named(tmp_path, warehouse_url, caplog):
    """Even with the demo's own warehouse (which has the orders table), a model without the entity wins: an action
    belongs to a model, and one written for another is never offered."""
    shop = tmp_path / "shop.yaml"
    shop.write_text("version: 1\nentities:\n  baskets: {table: baskets, primary_key: basket_id}\n")
    policy = ActionPolicy.load(SHIPPED)
    offered, targets = _offerable(policy, sa.create_engine(warehouse_url), DEMO_SEMANTIC_MODEL)
    assert offered.offered() == policy.offered() and set(targets) == {"order"}
    with caplog.at_level("ERROR", logger="tessera.capabilities"):
        offered, targets = _offerable(policy, sa.create_engine(warehouse_url), shop)
    assert offered.offered() == [] and targets == {}
    assert "action orders.flag_for_review is not offered: its data change target 'order': the semantic model " \
           "shop.yaml has no entity 'orders'" in caplog.messages


@pytest.mark.parametrize("text", ["entities: [orders]\n", "version: 1\nentities: orders\n", "a: b: c\n"])
def test_a_model_the_broker_cannot_read_is_said_naming_the_file(tmp_path, text):
    path = tmp_path / "model.yaml"
    path.write_text(text)
    with pytest.raises(ModelUnreadable, match=f"^{path}: "):
        load_entities(path)
