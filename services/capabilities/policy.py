"""Action contracts and data-change declarations (deploy/policy/actions.yaml), loaded once at startup.

An action is id, input schema, effect, approval policy and idempotency scope
(§7). Input schemas follow the tool-schema rules (§9) and are compiled here;
a policy that breaks a rule stops startup with one line naming the action.
Every value an action input schema admits must also be bounded (see
`unbounded_property`): an action's input reaches databases whose integers are
64-bit, so an unbounded schema is a crash waiting for its input.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.data import strict_yaml
from shared.identity.actors import valid_id
from shared.tools.tool_contracts import ToolContract, ToolSchemaError
from shared.ui.template import TemplateError, slot_names
from tessera.common.v1 import common_pb2

EFFECTS = {"none": common_pb2.ACTION_EFFECT_NONE, "read": common_pb2.ACTION_EFFECT_READ,
           "reversible-write": common_pb2.ACTION_EFFECT_REVERSIBLE_WRITE,
           "irreversible-write": common_pb2.ACTION_EFFECT_IRREVERSIBLE_WRITE}
_NAME = r"^[a-z][a-z0-9_]*$"
# What every store an action input reaches (SQLite, PostgreSQL bigint, DuckDB BIGINT) binds as an integer.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_COMBINATORS = ("anyOf", "oneOf", "allOf")


class PolicyError(Exception):
    """The action policy cannot be used; the message names the file and the problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FixedChange(_Strict):
    """An action that is one data change with entity, field and value fixed by the policy."""

    entity: str
    field: str
    value: str | int | float | bool | None


PASSKEY, OPERATOR_KEY = "passkey", "operator-key"


class Approvers(_Strict):
    """Who may sign the approval of an action or a tool call (§2), shared by action contracts and tool rules.

    The default is the person's own passkey only: a process that reads the operator CLI's key file must not be
    able to approve for a person. The operator key counts only where a rule names it, and only for intents of
    the tenants the same rule lists in `operator_tenants`: the reviewed policy file is the one place that says
    who may approve what, so the grant cannot be widened by a setting nobody reviews."""

    # passkey: the person's own, in the browser; operator-key: the operator CLI's (at the terminal, which
    # shows the card itself). [operator-key] alone: only where the approver reads the card without web between.
    approvers: tuple[Literal["passkey", "operator-key"], ...] = Field(default=(PASSKEY,), min_length=1)
    operator_tenants: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _operator_key_names_its_tenants(self) -> Approvers:
        names_key = OPERATOR_KEY in self.approvers
        if names_key and not self.operator_tenants:
            raise ValueError("approvers names operator-key: list the tenants it may approve in (operator_tenants)")
        if self.operator_tenants and not names_key:
            raise ValueError("operator_tenants without operator-key in approvers: name it, or drop the tenants")
        bad = next((t for t in self.operator_tenants if not valid_id(t)), None)
        if bad is not None:
            raise ValueError(f"operator_tenants: {bad[:40]!r} is not a tenant id")
        return self

    def operator_key_in(self, tenant_id: str) -> bool:
        """Whether the operator key may approve an intent of this tenant."""
        return OPERATOR_KEY in self.approvers and tenant_id in self.operator_tenants


class ActionSpec(Approvers):
    title: str = Field(min_length=1, max_length=80)
    # What approving does, in words, with {name}s of top-level input properties: "Flag order {record_id}".
    summary: str = Field(default="", max_length=200)
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
    label: str = Field(default="", max_length=80)  # as a person reads it; default: the name in words
    type: Literal["string", "integer", "number", "boolean"]
    enum: list[str | int | float | bool] | None = None
    max_length: int = Field(default=200, ge=1, le=10_000)


class ChangeTarget(_Strict):
    label: str = Field(default="", max_length=80)  # a record reads "<label> <key>", e.g. "Order 1042"
    # The entity of the semantic model whose records these are: an action belongs to a model (model_entities.py).
    semantic_entity: str = Field(pattern=_NAME)
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
        found = unbounded_property(spec.input_schema)
        if found is not None:
            where, why = found
            raise PolicyError(f"action {action_id}: input {where} is unbounded: {why}")
        problem = summary_problem(spec.summary, spec.input_schema)
        if problem:
            raise PolicyError(f"action {action_id}: summary: {problem}")


class ActionPolicy:
    def __init__(self, policy: Policy, digest: str, withheld: dict[str, str] | None = None) -> None:
        self.policy = policy
        self.digest = digest
        self.actions = {action_id: Action(action_id, spec) for action_id, spec in policy.actions.items()}
        self.withheld = withheld or {}  # action → why it is not offered (withholding)

    def withholding(self, absent: dict[str, str]) -> tuple[ActionPolicy, list[str]]:
        """This policy with the actions that change only targets in `absent` (target → why) withheld: a fixed change
        to an absent target, or a free change (records.propose_changes) when every target is absent. A withheld
        action is not offered and no new intent names it; its contract stays, so an intent of it already approved
        is carried out, or reconciled, as before. With one line per action withheld, naming it and why."""
        withheld = {}
        for action_id, spec in self.policy.actions.items():
            fixed = spec.data_change
            if fixed is not None and fixed.entity in absent:
                withheld[action_id] = f"its data change target {fixed.entity!r}: {absent[fixed.entity]}"
            elif fixed is None and spec.executor == "data-change" and self.policy.data_changes \
                    and set(self.policy.data_changes) <= set(absent):
                withheld[action_id] = ("none of its data change targets is in the database "
                                       f"({', '.join(sorted(absent))})")
        if not withheld:
            return self, []
        # What is offered differs from the file's: so does the hash a caller compares (the reviewed file's, then
        # the actions withheld).
        withheld_text = "\n".join(sorted(withheld))
        narrowed = ActionPolicy(self.policy, hashlib.sha256(f"{self.digest}\n{withheld_text}".encode()).hexdigest(),
                                withheld)
        return narrowed, [f"action {action_id} is not offered: {why}" for action_id, why in withheld.items()]

    def offered(self) -> list[Action]:
        return [action for action_id, action in sorted(self.actions.items()) if action_id not in self.withheld]

    @classmethod
    def load(cls, path: Path) -> ActionPolicy:
        policy, digest = load_policy_file(path, Policy, "action policy")
        try:
            return cls(policy, digest)
        except PolicyError as exc:  # name the file, as for every other policy problem
            raise PolicyError(f"{path}: {exc}") from None


def summary_problem(summary: str, input_schema: dict) -> str:
    """Why a summary template cannot be filled from inputs of this schema, or "" when it can."""
    try:
        names = slot_names(summary)
    except TemplateError as exc:
        return str(exc)
    properties = input_schema.get("properties", {}) if isinstance(input_schema, dict) else {}
    unknown = [name for name in names if name not in properties]
    return f"{{{unknown[0]}}} is not an input property" if unknown else ""


# --- bounds of action input schemas ------------------------------------------------------------------------
# A schema is walked with the JSON path of the input it describes ($.changes[*].value), so the
# refusal names the place in the input a reviewer would bound. Keywords that only narrow further
# (not, if/then/else, pattern, format) neither add nor remove a bound and are not looked at.


def unbounded_property(schema: object, path: str = "$", root: object = None,
                       refs: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """(JSON path, why) of the first place whose values are not bounded, or None if all are."""
    root = schema if root is None else root
    if schema is False:
        return None
    if not isinstance(schema, dict):
        return path, "a schema of `true` accepts any value"
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref in refs:  # a recursive schema: the values at this point are being checked already
            return None
        target = _resolve(root, ref) if isinstance(ref, str) else None
        if target is None:
            return path, f"$ref {str(ref)[:80]!r} does not point into the schema"
        return unbounded_property(target, path, root, refs | {ref})
    if "enum" in schema or "const" in schema:  # a closed, reviewed set of values; its integers must fit too
        closed = schema["enum"] if "enum" in schema else [schema["const"]]
        if any(_is_int(v) and not INT64_MIN <= v <= INT64_MAX for v in closed):
            return path, "an integer of its enum or const is outside the 64-bit signed range"
        return None
    rest = {k: v for k, v in schema.items() if k not in _COMBINATORS}
    if "allOf" in schema:  # every branch applies: a bound in any one of them bounds the value
        merged = dict(rest)
        for branch in schema["allOf"]:
            merged.update(branch if isinstance(branch, dict) else {})
        return unbounded_property(merged, path, root, refs)
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:  # each alternative must be bounded on its own (with what it shares)
            for branch in schema[keyword]:
                found = unbounded_property({**rest, **branch} if isinstance(branch, dict) else branch,
                                           path, root, refs)
                if found is not None:
                    return found
            return None
    if "type" not in schema:
        return path, "a schema without a type accepts any JSON value"
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    for kind in types:
        found = _unbounded_kind(kind, schema, path, root, refs)
        if found is not None:
            return found
    return None


def _unbounded_kind(kind: str, schema: dict, path: str, root: object, refs: frozenset[str]) -> tuple[str, str] | None:
    if kind in ("integer", "number"):
        low = _bound(schema, "minimum", "exclusiveMinimum")
        high = _bound(schema, "maximum", "exclusiveMaximum")
        if low is None or high is None or low < INT64_MIN or high > INT64_MAX:
            return path, (f"{'an integer' if kind == 'integer' else 'a number'} needs minimum and maximum "
                          f"within the 64-bit signed range [{INT64_MIN}, {INT64_MAX}]")
    elif kind == "string" and not _is_count(schema.get("maxLength")):
        return path, "a string needs maxLength"
    elif kind == "array":
        return _unbounded_array(schema, path, root, refs)
    elif kind == "object":
        return _unbounded_object(schema, path, root, refs)
    return None


def _bound(schema: dict, inclusive: str, exclusive: str) -> int | float | None:
    value = schema.get(inclusive, schema.get(exclusive))
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    return _is_int(value) and value >= 0


def _unbounded_array(schema: dict, path: str, root: object, refs: frozenset[str]) -> tuple[str, str] | None:
    if not _is_count(schema.get("maxItems")):
        return path, "an array needs maxItems"
    # draft-07 tuples are `items: [...]` + `additionalItems`; 2020-12 tuples are `prefixItems` + `items`.
    tuple_form = schema.get("prefixItems", schema.get("items") if isinstance(schema.get("items"), list) else None)
    rest = schema.get("additionalItems" if isinstance(schema.get("items"), list) else "items", True)
    for index, item in enumerate(tuple_form or []):
        found = unbounded_property(item, f"{path}[{index}]", root, refs)
        if found is not None:
            return found
    if rest is True and tuple_form is not None:
        return f"{path}[*]", "items after the listed ones need a schema (or additionalItems/items: false)"
    return unbounded_property(rest, f"{path}[*]", root, refs)


def _unbounded_object(schema: dict, path: str, root: object, refs: frozenset[str]) -> tuple[str, str] | None:
    for name, sub in (schema.get("properties") or {}).items():
        found = unbounded_property(sub, _member(path, name), root, refs)
        if found is not None:
            return found
    open_ended = [*(schema.get("patternProperties") or {}).values(), schema.get("additionalProperties", True)]
    if open_ended == [False]:
        return None
    if not _is_count(schema.get("maxProperties")):
        return f"{path}.*", "an object needs additionalProperties: false (or maxProperties and a bounded schema)"
    names = schema.get("propertyNames")
    if not (isinstance(names, dict) and (_is_count(names.get("maxLength")) or "enum" in names)):
        return f"{path}.*", "open-ended property names need propertyNames with maxLength"
    for sub in open_ended:
        found = unbounded_property(sub, f"{path}.*", root, refs)
        if found is not None:
            return found
    return None


def _member(path: str, name: str) -> str:
    return f"{path}.{name}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"{path}[{json.dumps(name)}]"


def _resolve(root: object, ref: str) -> object:
    """A local reference (`#/definitions/x`; ToolContract refused any other kind), or None if it points nowhere."""
    target = root
    for part in ref.removeprefix("#").split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict):
            target = target.get(part)
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return None
    return target


M = TypeVar("M", bound=BaseModel)


def load_policy_file(path: Path, model: type[M], what: str) -> tuple[M, str]:
    """A reviewed YAML policy file, validated; (model, SHA-256 of the file). PolicyError names the problem."""
    return strict_yaml.load_model_and_digest(path, model, PolicyError, what)
