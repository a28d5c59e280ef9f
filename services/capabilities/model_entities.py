"""The semantic model's entities as the broker checks data changes against them: the table each maps and
the column that identifies its rows.

A data change target names the semantic entity whose records it changes (`semantic_entity` in the action
policy). At start the broker withholds an action whose target's entity the active semantic model lacks, or
maps to another table or key: an action belongs to a model, and a policy written for another model is
never offered. Only these few keys are read here; the gateway validates the whole model.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from services.capabilities.policy import ChangeTarget
from shared import strict_yaml


class ModelUnreadable(Exception):
    """The semantic model file cannot be read as one: one line that names it."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Field(_Lenient):
    column: str | None = None


class _Entity(_Lenient):
    table: str
    primary_key: str
    fields: dict[str, _Field] = {}

    def key_column(self) -> str:
        field = self.fields.get(self.primary_key)
        return field.column if field is not None and field.column else self.primary_key


class _Model(_Lenient):
    entities: dict[str, _Entity]


def load_entities(path: Path) -> dict[str, _Entity]:
    return strict_yaml.load_model(path, _Model, ModelUnreadable, "semantic model").entities


def unmodelled_targets(targets: dict[str, ChangeTarget], entities: dict[str, _Entity]) -> dict[str, str]:
    """Target → why the semantic model does not hold its records (its entity missing, or mapped otherwise)."""
    why = {}
    for name, target in targets.items():
        entity = entities.get(target.semantic_entity)
        if entity is None:
            why[name] = f"the semantic model has no entity {target.semantic_entity!r}"
        elif entity.table != target.table:
            why[name] = (f"entity {target.semantic_entity!r} of the semantic model maps table {entity.table}, "
                         f"not {target.table}")
        elif entity.key_column() != target.key:
            why[name] = (f"entity {target.semantic_entity!r} of the semantic model identifies its rows by "
                         f"{entity.key_column()}, not {target.key}")
    return why
