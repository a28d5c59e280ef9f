"""The semantic model file: entities, fields, metrics, relationships (YAML).

Loaded and validated once at startup. Every problem is reported as
`<file>: <key path>: <what is wrong>` so a person can go straight to it.
The format is documented in docs/semantic-model.md. Its limits are stated here once: the gateway
enforces them when it loads a model and `tessera semantic init`/`import` write within them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared.data import strict_yaml
from shared.semantic import expressions

FieldType = Literal["string", "integer", "decimal", "float", "boolean", "date", "timestamp"]
Exposure = Literal["never-to-model", "aggregate-only", "filter-only", "bounded-values"]
Sensitivity = Literal["public", "internal", "pii", "confidential"]
RelationshipKind = Literal["many_to_one", "one_to_many", "one_to_one"]
FormatStyle = Literal["integer", "decimal", "currency", "percent", "date", "text"]
DateGrain = Literal["second", "minute", "hour", "day", "week", "month", "quarter", "year"]
NUMERIC_TYPES = frozenset({"integer", "decimal", "float"})
TEMPORAL_TYPES = frozenset({"date", "timestamp"})
TimeAnchor = Literal["today", "latest_data"]
MAX_PHRASE_WORDS = 4  # an event verb or another word for a value: "brick and mortar", "sent back"
MAX_NAME_CHARS = 63  # an entity, field, metric or relationship key (lower_snake_case)
MAX_LABEL_CHARS = 80
MAX_DESCRIPTION_CHARS = 400
# Longer chains of relationships are not followed by the catalog (and not counted as alternatives).
MAX_PATH_EDGES = 6
_NAME = re.compile(rf"^[a-z][a-z0-9_]{{0,{MAX_NAME_CHARS - 1}}}$")
_WORD_EDGES = " \t\n.,;:!?\"'()[]{}"


def spoken_words(text: str) -> list[str]:
    """The words of a phrase as a question is matched against it: lower-cased, punctuation at each word's
    edges trimmed ("Online," reads "online"); hyphens inside a word stay ("in-store")."""
    return [w for w in (word.strip(_WORD_EDGES).lower() for word in text.split()) if w]


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

    label: str = Field(min_length=1, max_length=MAX_LABEL_CHARS)
    description: str = Field(default="", max_length=MAX_DESCRIPTION_CHARS)
    synonyms: tuple[str, ...] = ()


class FieldSpec(_Named):
    column: str | None = None  # physical column; defaults to the field's key
    type: FieldType
    exposure: Exposure
    sensitivity: Sensitivity = "internal"
    format: FormatSpec | None = None
    # Words for the event that dates a row ("signed up" for a signup date): a question using them counts
    # time by this field. Shown in the catalog.
    event_verbs: tuple[str, ...] = ()
    # Other words for stored values ({"web": ["online"]}), read only by the value-match probe: the catalog
    # never shows values.
    values: dict[str, tuple[str, ...]] = {}


class MetricSpec(_Named):
    expression: str
    type: FieldType = "decimal"
    format: FormatSpec | None = None
    # Which way is better ("lower" for a return rate): what "best" and "worst" ask for.
    better: Literal["higher", "lower"] = "higher"


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
    label: str = Field(min_length=1, max_length=MAX_LABEL_CHARS)
    description: str = Field(default="", max_length=MAX_DESCRIPTION_CHARS)


class DatasetSpec(_Strict):
    label: str
    description: str = ""


class FreshnessSpec(_Strict):
    """How long a result read from the warehouse may be reused for the same draft (docs/semantic-model.md,
    "Reused results"); 0: every analysis reads the warehouse."""

    cache_seconds: int = Field(default=60, ge=0, le=86_400)


class SemanticModel(_Strict):
    version: int = Field(ge=1)
    dataset: DatasetSpec
    # What relative periods ("last quarter") count from: today's date, or the latest date in the data (for a
    # warehouse that is not loaded up to today, such as a demo's).
    time_anchor: TimeAnchor = "today"
    freshness: FreshnessSpec = FreshnessSpec()
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
    return problems + _event_verb_problems(where, entity) + _value_word_problems(where, entity)


def _phrase_problem(phrase: str) -> str | None:
    """What is wrong with a phrase a question is matched against, if anything."""
    count = len(spoken_words(phrase))
    if not 1 <= count <= MAX_PHRASE_WORDS:
        return f"{phrase!r} has {count} words; a phrase has 1 to {MAX_PHRASE_WORDS}"
    return None


def _claim(phrase: str, owner: str, owners: dict[str, str]) -> tuple[str, str] | None:
    """Claim a phrase for one owner (a date field, or a value of a field). None when it is now the owner's;
    else what is wrong with the phrase, or ("", the other owner) when another owner already has it."""
    problem = _phrase_problem(phrase)
    if problem:
        return problem, ""
    spoken = " ".join(spoken_words(phrase))
    if spoken not in owners:
        owners[spoken] = owner
        return None
    return (f"{phrase!r} is listed twice", "") if owners[spoken] == owner else ("", owners[spoken])


def _event_verb_problems(where: str, entity: EntitySpec) -> list[str]:
    """Event verbs date rows, so they belong to a date or time people may see; and one verb of an entity names
    one field, once: "joined" cannot mean two dates of one customer."""
    problems: list[str] = []
    owners: dict[str, str] = {}
    for field_name, spec in entity.fields.items():
        at = f"{where}.fields.{field_name}.event_verbs"
        if spec.event_verbs and (spec.type not in TEMPORAL_TYPES or spec.exposure != "bounded-values"):
            problems.append(f"{at}: only a date or timestamp field with bounded-values exposure has event verbs; "
                            f"this one is a {spec.type} field with {spec.exposure} exposure")
        for verb in spec.event_verbs:
            refused = _claim(verb, field_name, owners)
            if refused:
                problem, other = refused
                problems.append(f"{at}: {problem}" if problem else f"{at}: {verb!r} is also an event verb of "
                                f"{where}.fields.{other}; one verb names one date of an entity")
    return problems


def _value_word_problems(where: str, entity: EntitySpec) -> list[str]:
    """Other words for values belong to text values a draft may filter on, and each names one value of its
    field: "online" cannot mean both web and marketplace, nor be another value itself."""
    problems: list[str] = []
    for field_name, spec in entity.fields.items():
        at = f"{where}.fields.{field_name}.values"
        if spec.values and (spec.type != "string" or spec.exposure != "bounded-values"):
            problems.append(f"{at}: only a string field with bounded-values exposure has other words for its "
                            f"values; this one is a {spec.type} field with {spec.exposure} exposure")
        owners: dict[str, str] = {" ".join(spoken_words(value)): value for value in spec.values}  # its own word
        for value, phrases in spec.values.items():
            for phrase in phrases:
                refused = _claim(phrase, value, owners)
                if refused:
                    problem, other = refused
                    problems.append(f"{at}.{value}: {problem}" if problem else f"{at}.{value}: {phrase!r} already "
                                    f"names {other!r}; one phrase names one value of a field")
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
