"""The approval card in words (§8): what approving does, and each change with its record named.

The title is the reviewed summary of the action or tool (deploy/policy/actions.yaml, tools.yaml) filled with
the exact arguments awaiting approval; a change reads "Order 1042 · Review status: none → flagged" from the
reviewed data change declaration. Arguments are data a model or a person wrote: they are shown as values,
clipped, never interpreted.
"""

from __future__ import annotations

import json

from services.capabilities.policy import ActionPolicy, ChangeTarget
from services.capabilities.tool_policy import ToolPolicy
from shared.safety.printable import printable
from shared.ui.template import fill

MAX_VALUE_CHARS = 80


def _shown(value) -> str:
    """An argument as it reads in the title: text quoted as the literal it is (a model or a person wrote
    it), clipped, control characters replaced; numbers and the like as they are."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = printable(text, keep_newlines=False)  # a title is one line
    text = text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS - 1] + "…"
    return f"\u201c{text}\u201d" if isinstance(value, str) else text


def _in_words(name: str) -> str:
    return name.replace("_", " ").capitalize()


class Wording:
    def __init__(self, actions: ActionPolicy, tools: ToolPolicy) -> None:
        self._actions = actions
        self._tools = tools

    def title(self, action_id: str, arguments: dict) -> str:
        """The summary filled from the arguments; the action's title (or the tool id) without one."""
        action = self._actions.actions.get(action_id)
        if action is not None:
            if not action.spec.summary:
                return action.spec.title
            return fill(action.spec.summary, self._action_values(arguments), missing="(several)")
        found = self._tools.rule(action_id)
        rule = found[3] if found else None
        if rule is None or not rule.summary:
            return action_id
        given = arguments.get("arguments", {}) if isinstance(arguments, dict) else {}
        return fill(rule.summary, {k: _shown(v) for k, v in given.items()}, missing="(none)")

    @staticmethod
    def _action_values(arguments: dict) -> dict[str, str]:
        """Top-level arguments, and what every entry of a data change shares (one record id, one field)."""
        values = {k: _shown(v) for k, v in arguments.items() if not isinstance(v, dict | list)}
        entries = arguments.get("entries") or []
        for key in ("record_id", "field"):
            distinct = {json.dumps(e.get(key)) for e in entries}
            if len(distinct) == 1:
                values[key] = _shown(entries[0][key])
        return values

    def change(self, entity: str, entry: dict) -> tuple[str, str]:
        """(record, field) of one data change entry in words: ("Order 1042", "Review status")."""
        target: ChangeTarget | None = self._actions.policy.data_changes.get(entity)
        record_label = (target.label if target and target.label else _in_words(entity))
        spec = target.fields.get(entry.get("field", "")) if target else None
        field_label = spec.label if spec and spec.label else _in_words(str(entry.get("field", "")))
        return f"{record_label} {entry.get('record_id')}", field_label
