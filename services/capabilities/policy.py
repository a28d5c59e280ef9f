"""Action contracts and data-change declarations (deploy/policy/actions.yaml), loaded once at startup.

An action is id, input schema, effect, approval policy and idempotency scope
(§7). Input schemas follow the tool-schema rules (§9) and are compiled here;
a policy that breaks a rule stops startup with one line naming the action.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared.tool_contracts import ToolContract, ToolSchemaError
from tessera.common.v1 import common_pb2

EFFECTS = {"none": common_pb2.ACTION_EFFECT_NONE, "read": common_pb2.ACTION_EFFECT_READ,
           "reversible-write": common_pb2.ACTION_EFFECT_REVERSIBLE_WRITE,
           "irreversible-write": common_pb2.ACTION_EFFECT_IRREVERSIBLE_WRITE}
_NAME = r"^[a-z][a-z0-9_]*$"


class PolicyError(Exception):
    """The action policy cannot be used; the message names the file and the problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FixedChange(_Strict):
    """An action that is one data change with entity, field and value fixed by the policy."""

    entity: str
    field: str
    value: str | int | float | bool | None


class ActionSpec(_Strict):
    title: str = Field(min_length=1, max_length=80)
    description: str = Field(min_length=1, max_length=1000)
    effect: Literal["none", "read", "reversible-write", "irreversible-write"]
    approval: Literal["required", "none"]
    idempotency_scope: Literal["actor", "tenant"] = "actor"
    executor: Literal["data-change"]
    data_change: FixedChange | None = None
    input_schema: dict

    @property
    def writes(self) -> bool:
        return self.effect.endswith("-write")

    @model_validator(mode="after")
    def _writes_need_a_person(self) -> ActionSpec:
        if self.writes and self.approval != "required":
            raise ValueError("a write must require approval: real mutations are never auto-approved")
        if self.executor == "data-change" and not self.writes:
            raise ValueError("a data-change executor is a write")
        return self


class FieldSpec(_Strict):
    type: Literal["string", "integer", "number", "boolean"]
    enum: list[str | int | float | bool] | None = None
    max_length: int = Field(default=200, ge=1, le=10_000)


class ChangeTarget(_Strict):
    table: str = Field(pattern=_NAME)
    key: str = Field(pattern=_NAME)
    version: str = Field(pattern=_NAME)
    fields: dict[str, FieldSpec] = Field(min_length=1)


class Policy(_Strict):
    version: Literal[1]
    actions: dict[str, ActionSpec]
    data_changes: dict[str, ChangeTarget] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _fixed_changes_are_declared(self) -> Policy:
        for action_id, spec in self.actions.items():
            fixed = spec.data_change
            target = self.data_changes.get(fixed.entity) if fixed else None
            if fixed and (target is None or fixed.field not in target.fields):
                raise ValueError(f"action {action_id}: {fixed.entity}.{fixed.field} is not a declared data change")
        return self


class Action:
    """One action contract, with its input schema compiled."""

    def __init__(self, action_id: str, spec: ActionSpec) -> None:
        self.action_id = action_id
        self.spec = spec
        self.effect = EFFECTS[spec.effect]
        try:
            self.contract = ToolContract(action_id, spec.description, spec.input_schema)
        except ToolSchemaError as exc:
            raise PolicyError(str(exc).replace("tool ", "action ", 1)) from None


class ActionPolicy:
    def __init__(self, policy: Policy, digest: str) -> None:
        self.policy = policy
        self.digest = digest
        self.actions = {action_id: Action(action_id, spec) for action_id, spec in policy.actions.items()}

    @classmethod
    def load(cls, path: Path) -> ActionPolicy:
        policy, digest = load_policy_file(path, Policy, "action policy")
        return cls(policy, digest)


M = TypeVar("M", bound=BaseModel)


def load_policy_file(path: Path, model: type[M], what: str) -> tuple[M, str]:
    """A reviewed YAML policy file, validated; (model, SHA-256 of the file). PolicyError names the problem."""
    try:
        raw = path.read_bytes()
        return model.model_validate(yaml.safe_load(raw)), hashlib.sha256(raw).hexdigest()
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"{path}: not YAML: {str(exc).splitlines()[0]}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PolicyError(f"{path}: {where}: {first['msg']}") from None
