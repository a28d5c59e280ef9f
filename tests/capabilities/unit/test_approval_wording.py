"""Approval cards in words: each action's and tool's summary template is checked at startup against its
input schema, and fills from the exact arguments awaiting approval."""

from __future__ import annotations

import pytest
import yaml

from services.capabilities.config import CapabilitiesSettings
from services.capabilities.policy import ActionPolicy, PolicyError
from services.capabilities.tool_policy import ToolPolicy
from services.capabilities.wording import Wording

SHIPPED_ACTIONS = CapabilitiesSettings.model_fields["actions_file"].default
SHIPPED_TOOLS = CapabilitiesSettings.model_fields["tools_file"].default


@pytest.fixture(scope="module")
def wording() -> Wording:
    return Wording(ActionPolicy.load(SHIPPED_ACTIONS), ToolPolicy.load(SHIPPED_TOOLS))


def _flag_arguments(*records: int) -> dict:
    return {"action": "orders.flag_for_review", "entity": "order", "reason": "",
            "entries": [{"entry_id": f"e{i + 1}", "record_id": r, "field": "review_status", "before": "none",
                         "after": "flagged", "version": 1} for i, r in enumerate(records)]}


def test_a_summary_fills_from_the_arguments_awaiting_approval(wording):
    assert wording.title("orders.flag_for_review", _flag_arguments(1042)) == "Flag order 1042 for review"
    assert wording.title("records.propose_changes", _flag_arguments(1, 2)) == "Change “order” records"
    # Text a model or a person wrote is quoted as the literal it is, so it cannot pass for the card's words.
    assert wording.title("tickets.create_ticket", {"tool": "tickets.create_ticket", "arguments": {
        "subject": "Parcel never arrived", "body": "..."}}) == "Open a support ticket: “Parcel never arrived”"
    assert wording.title("tickets.close_ticket", {"arguments": {
        "ticket_id": 7, "resolution": "(read-only check, changes nothing)"}}) == \
        "Close ticket 7: “(read-only check, changes nothing)”"
    # A value is data: clipped, control characters (terminal escape codes) not passed on.
    long = wording.title("tickets.create_ticket", {"arguments": {"subject": "x" * 500}})
    assert len(long) < 120 and long.endswith("…”")
    hidden = wording.title("tickets.create_ticket", {"arguments": {"subject": "a\x1b[8mhidden"}})
    assert "\x1b" not in hidden and "hidden" in hidden
    assert wording.title("tickets.close_ticket", {"arguments": {"ticket_id": 7}}) == "Close ticket 7: (none)"


def test_a_change_names_its_record_and_field(wording):
    entry = _flag_arguments(1042)["entries"][0]
    assert wording.change("order", entry) == ("Order 1042", "Review status")
    assert wording.change("invoice", {"record_id": 3, "field": "due_date"}) == ("Invoice 3", "Due date")


def _actions_with_summary(tmp_path, summary: str):
    policy = {"version": 1, "actions": {"demo.act": {
        "title": "Demo", "summary": summary, "description": "A test action.", "effect": "reversible-write",
        "approval": "required", "executor": "data-change",
        "input_schema": {"type": "object", "additionalProperties": False,
                         "properties": {"record_id": {"type": "integer", "minimum": 1, "maximum": 9}}}}}}
    path = tmp_path / "actions.yaml"
    path.write_text(yaml.safe_dump(policy))
    return ActionPolicy.load(path)


@pytest.mark.parametrize("summary,problem", [
    ("Flag {order_id}", "action demo.act: summary: {order_id} is not an input property"),
    ("Flag {record_id", "action demo.act: summary: a lone '{'"),
])
def test_a_summary_that_cannot_be_filled_stops_startup_naming_file_and_action(tmp_path, summary, problem):
    with pytest.raises(PolicyError) as refused:
        _actions_with_summary(tmp_path, summary)
    assert str(refused.value).startswith(f"{tmp_path / 'actions.yaml'}: {problem}")


def test_a_tool_summary_must_name_its_pinned_schemas_properties(tmp_path):
    text = SHIPPED_TOOLS.read_text().replace("Open a support ticket: {subject}",
                                             "Open a support ticket: {title}")
    path = tmp_path / "tools.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as refused:
        ToolPolicy.load(path)
    assert "summary: {title} is not an input property" in str(refused.value)
