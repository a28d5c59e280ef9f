"""The semantic model file: entities, fields, metrics, relationships (YAML).

Loaded and validated once at startup. Every problem is reported as
`<file>: <key path>: <what is wrong>` so a person can go straight to it.
The format is documented in docs/semantic-model.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from services.resources import expressions
from shared import strict_yaml

FieldType = Literal["string", "integer", "decimal", "float", "boolean", "date", "timestamp"]
Exposure = Literal["never-to-model", "aggregate-only", "filter-only", "bounded-values"]
Sensitivity = Literal["public", "internal", "pii", "confidential"]
RelationshipKind = Literal["many_to_one", "one_to_many", "one_to_one"]
FormatStyle = Literal["integer", "decimal", "currency", "percent", "date", "text"]
DateGrain = Literal["second", "minute", "hour", "day", "week", "month", "quarter", "year"]
NUMERIC_TYPES = frozenset({"integer", "decimal", "float"})
TEMPORAL_TYPES = frozenset({"date", "timestamp"})
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


def key_fields(names: str | tuple[str, ...]) -> tuple[str, ...]:
    """A key written as one field name or as a list of them, as a tuple."""
    return (names,) if isinstance(names, str) else tuple(names)


class SemanticModelError(Exception):
    """The model file is unusable; the message names the file and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class FormatSpec(_Strict):
    """How values are displayed (§10b): `format: percent`, or a mapping with options."""

    style: FormatStyle
    currency: str | None = Field(default=None, pattern=r"^[A-Z]{3}$")  # ISO 4217
    decimals: int | None = Field(default=None, ge=0, le=6)
    grain: DateGrain | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value):
        return {"style": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _coherent(self) -> FormatSpec:
        if (self.style == "currency") != (self.currency is not None):
            raise ValueError("currency (an ISO 4217 code such as USD) goes with style currency, and only with it")
        if self.grain is not None and self.style != "date":
            raise ValueError("grain goes with style date only")
        if self.decimals is not None and self.style not in ("decimal", "currency", "percent"):
            raise ValueError("decimals go with style decimal, currency or percent only")
        return self

    def fits(self, value_type: str) -> bool:
        if self.style == "date":
            return value_type in TEMPORAL_TYPES
        if self.style == "text":
            return True
        return value_type in NUMERIC_TYPES


class _Named(_Strict):
    """What people (and the model) read of an entity, field or metric: its label, description and synonyms."""

    label: str = Field(min_length=1, max_length=80)
    description: str = Field(default="", max_length=400)
    synonyms: tuple[str, ...] = ()


class FieldSpec(_Named):
    column: str | None = None  # physical column; defaults to the field's key
    type: FieldType
    exposure: Exposure
    sensitivity: Sensitivity = "internal"
    format: FormatSpec | None = None


class MetricSpec(_Named):
    expression: str
    type: FieldType = "decimal"
    format: FormatSpec | None = None


class DerivedMetricSpec(MetricSpec):
    # The entity the metric is listed under; components may live elsewhere.
    entity: str


class EntitySpec(_Named):
    table: str
    primary_key: str | tuple[str, ...]  # one field, or the fields that together identify a row
    # The date or time a row is dated by, for a result's time coverage; default: its first date or time field.
    time_field: str | None = None
    fields: dict[str, FieldSpec]
    metrics: dict[str, MetricSpec] = {}


class RelationshipSpec(_Strict):
    from_entity: str = Field(alias="from")
    to_entity: str = Field(alias="to")
    kind: RelationshipKind
    from_field: str | tuple[str, ...]  # several fields for a composite key, matched in order with to_field
    to_field: str | tuple[str, ...]
    label: str = Field(min_length=1, max_length=80)
    description: str = Field(default="", max_length=400)


class DatasetSpec(_Strict):
    label: str
    description: str = ""


class SemanticModel(_Strict):
    version: int = Field(ge=1)
    dataset: DatasetSpec
    entities: dict[str, EntitySpec]
    relationships: dict[str, RelationshipSpec] = {}
    derived_metrics: dict[str, DerivedMetricSpec] = {}


def load_semantic_model(path: Path) -> SemanticModel:
    model = strict_yaml.load_model(path, SemanticModel, SemanticModelError, "semantic model")
    problems = _cross_check(model)
    if problems:
        raise SemanticModelError(f"{path}: {problems[0]}")
    return model


def _related_field(model: SemanticModel, ref: expressions.Ref) -> None:
    """`entity.field` inside an entity metric: the entity and its field must exist (the catalog then
    checks that exactly one path leads there and that it cannot repeat rows)."""
    if ref.entity not in model.entities:
        raise expressions.ExpressionError(f"unknown entity {ref.entity!r} in {ref.entity}.{ref.name}")
    if ref.name not in model.entities[ref.entity].fields:
        raise expressions.ExpressionError(f"{ref.name!r} is not a field of {ref.entity}")


def _mapping_collisions(model: SemanticModel) -> list[str]:
    """One entity per table and one field per column: a second mapping of either is a mistake
    (to reach one table in two roles, declare one entity and two relationships)."""
    problems: list[str] = []
    tables: dict[str, str] = {}
    for entity_name, entity in model.entities.items():
        first = tables.setdefault(entity.table, entity_name)
        if first != entity_name:
            problems.append(f"entities.{entity_name}.table: table {entity.table!r} is already mapped by entities."
                            f"{first}; declare it once and name its roles with relationships")
        columns: dict[str, str] = {}
        for field_name, spec in entity.fields.items():
            column = spec.column or field_name
            first_field = columns.setdefault(column, field_name)
            if first_field != field_name:
                problems.append(f"entities.{entity_name}.fields.{field_name}.column: column {column!r} is already "
                                f"mapped by fields.{first_field}")
    return problems


def _cross_check(model: SemanticModel) -> list[str]:
    """References between parts of the model, names, and metric expressions."""
    problems: list[str] = []
    for name, entity in model.entities.items():
        problems += _entity_problems(model, name, entity)
    problems += _mapping_collisions(model)
    labels: dict[str, str] = {}
    for name, relationship in model.relationships.items():
        problems += _relationship_problems(model, name, relationship, labels)
    known_metrics = {(e, m) for e, spec in model.entities.items() for m in spec.metrics}
    for name, derived in model.derived_metrics.items():
        problems += _derived_metric_problems(model, name, derived, known_metrics)
    return problems


def _key_problem(names: str | tuple[str, ...]) -> bool:
    """A key names at least one field, each once."""
    keys = key_fields(names)
    return not keys or len(set(keys)) != len(keys)


def _entity_problems(model: SemanticModel, entity_name: str, entity: EntitySpec) -> list[str]:
    problems: list[str] = []
    where = f"entities.{entity_name}"
    for name in [entity_name, *entity.fields, *entity.metrics]:
        if not _NAME.match(name):
            problems.append(f"{where}: name {name!r} must be lower_snake_case (a-z, 0-9, _)")
    if _key_problem(entity.primary_key):
        problems.append(f"{where}.primary_key: name one field, or several different ones")
    for key in key_fields(entity.primary_key):
        if key not in entity.fields:
            problems.append(f"{where}.primary_key: {key!r} is not one of its fields")
    if entity.time_field is not None and (entity.time_field not in entity.fields or
                                          entity.fields[entity.time_field].type not in TEMPORAL_TYPES):
        problems.append(f"{where}.time_field: {entity.time_field!r} is not one of its date or time fields")
    for kind, items in (("fields", entity.fields), ("metrics", entity.metrics)):
        for name, item in items.items():
            if item.format is not None and not item.format.fits(item.type):
                problems.append(f"{where}.{kind}.{name}.format: style {item.format.style} does not fit "
                                f"type {item.type}")
    for metric_name, metric in entity.metrics.items():
        try:
            expressions.check_entity_metric(expressions.parse(metric.expression, dotted_refs=True),
                                            set(entity.fields), lambda ref: _related_field(model, ref))
        except expressions.ExpressionError as exc:
            problems.append(f"{where}.metrics.{metric_name}.expression: {exc}")
    overlap = set(entity.fields) & set(entity.metrics)
    if overlap:
        problems.append(f"{where}: {sorted(overlap)[0]!r} is both a field and a metric")
    return problems


def _relationship_problems(model: SemanticModel, rel_name: str, rel: RelationshipSpec,
                           labels: dict[str, str]) -> list[str]:
    problems: list[str] = []
    where = f"relationships.{rel_name}"
    if not _NAME.match(rel_name):
        problems.append(f"{where}: name {rel_name!r} must be lower_snake_case (a-z, 0-9, _)")
    # A relationship is a role (how one entity is reached from another): refusals and captions name
    # it by its label, so two roles with one label could not be told apart.
    other = labels.setdefault(rel.label.casefold(), rel_name)
    if other != rel_name:
        problems.append(f"{where}.label: {rel.label!r} is also the label of relationships.{other}; each "
                        "relationship is a role and needs a label of its own")
    for side, names in (("from_field", rel.from_field), ("to_field", rel.to_field)):
        if _key_problem(names):
            problems.append(f"{where}.{side}: name one field, or several different ones")
    if len(key_fields(rel.from_field)) != len(key_fields(rel.to_field)):
        problems.append(f"{where}.to_field: {len(key_fields(rel.from_field))} fields on one side, "
                        f"{len(key_fields(rel.to_field))} on the other; they are matched in order")
    for side, entity_name, names in (("from", rel.from_entity, rel.from_field), ("to", rel.to_entity, rel.to_field)):
        if entity_name not in model.entities:
            problems.append(f"{where}.{side}: unknown entity {entity_name!r}")
            continue
        for field_name in key_fields(names):
            if field_name not in model.entities[entity_name].fields:
                problems.append(f"{where}.{side}_field: {field_name!r} is not a field of {entity_name}")
    return problems


def _derived_metric_problems(model: SemanticModel, name: str, derived: DerivedMetricSpec,
                             known_metrics: set[tuple[str, str]]) -> list[str]:
    problems: list[str] = []
    where = f"derived_metrics.{name}"
    if derived.entity not in model.entities:
        problems.append(f"{where}.entity: unknown entity {derived.entity!r}")
    elif name in model.entities[derived.entity].metrics or name in model.entities[derived.entity].fields:
        problems.append(f"{where}: {name!r} is already a field or metric of {derived.entity}")
    if derived.format is not None and not derived.format.fits(derived.type):
        problems.append(f"{where}.format: style {derived.format.style} does not fit type {derived.type}")
    try:
        expressions.check_derived_metric(expressions.parse(derived.expression, dotted_refs=True), known_metrics)
    except expressions.ExpressionError as exc:
        problems.append(f"{where}.expression: {exc}")
    return problems
