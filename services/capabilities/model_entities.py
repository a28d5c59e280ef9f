"""The semantic model's entities as the broker checks data changes against them: the table each maps and
the column that identifies its rows.

A data change target names the semantic entity whose records it changes (`semantic_entity` in the action
policy). At start the broker withholds an action whose target's entity the active semantic model lacks, or
maps to another table or key: an action belongs to a model, and a policy written for another model is
never offered. Only the entities targets name are read, and only these few keys; the gateway validates
the whole model.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from services.capabilities.policy import ChangeTarget
from shared.data import strict_yaml


class ModelUnreadable(Exception):
    """The semantic model file cannot be read as one: one line that names it."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Field(_Lenient):
    column: str | None = None


class _Entity(_Lenient):
    table: str
    primary_key: str | list[str]  # several fields: a composite key, which no data change target has
    fields: dict[str, _Field] = {}

    def key_columns(self) -> list[str]:
        keys = [self.primary_key] if isinstance(self.primary_key, str) else self.primary_key
        return [(self.fields[key].column if key in self.fields and self.fields[key].column else key) for key in keys]


class _Model(_Lenient):
    entities: dict[str, object]


def load_entities(path: Path) -> dict[str, object]:
    """The model's entities, unread: `unmodelled_targets` reads those a target names."""
    return strict_yaml.load_model(path, _Model, ModelUnreadable, "semantic model").entities


def unmodelled_targets(targets: dict[str, ChangeTarget], entities: dict[str, object],
                       model: str = "the semantic model") -> dict[str, str]:
    """Target → why `model` does not hold its records (its entity missing, unreadable, or mapped otherwise)."""
    why = {}
    for name, target in targets.items():
        wanted = target.semantic_entity
        if wanted not in entities:
            why[name] = f"{model} has no entity {wanted!r}"
            continue
        try:
            entity = _Entity.model_validate(entities[wanted])
        except ValidationError:
            why[name] = f"entity {wanted!r} of {model} has no table and primary_key to check"
            continue
        if entity.table != target.table:
            why[name] = f"entity {wanted!r} of {model} maps table {entity.table}, not {target.table}"
        elif entity.key_columns() != [target.key]:
            why[name] = (f"entity {wanted!r} of {model} identifies its rows by {', '.join(entity.key_columns())}, "
                         f"not {target.key}")
    return why
