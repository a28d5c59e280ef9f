"""`tessera semantic import dbt PATH`: a dbt MetricFlow semantic layer as a Tessera semantic model.

dbt's own library reads the project (cli/dbt_project.py: every semantic model and metric parsed by
`dbt-semantic-interfaces`, the MetricFlow spec with measures, dbt 1.6 and later); this module converts
what Tessera's model format can say without SQL text and writes a semantic model (docs/semantic-model.md)
in which every field is `never-to-model`: the import cannot know what may be shown, so nothing is until
a person says so. Whatever it could not convert is reported, one line each, on stderr and as comments
at the top of the file. The rules are in docs/semantic-model.md, "Importing dbt MetricFlow models".
"""

from __future__ import annotations

import argparse
import ast
import copy
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml
from dbt_semantic_interfaces.implementations.filters.where_filter import (
    PydanticWhereFilter,
    PydanticWhereFilterIntersection,
)
from dbt_semantic_interfaces.implementations.metric import PydanticMetric
from dbt_semantic_interfaces.implementations.semantic_model import PydanticSemanticModel

from cli.dbt_project import DbtImportError, Project, Report, read_project, report_validation
from cli.semantic_names import clip, humanize, snake
from shared.semantic.expressions import MAX_EXPRESSION_CHARS
from shared.semantic.model import MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS, MAX_PATH_EDGES

KEY_TYPES = ("primary", "unique", "natural")  # entity types that identify a row, in order of preference
DAY_OR_COARSER = frozenset({"day", "week", "month", "quarter", "year"})
AGGREGATIONS = {"sum": "sum", "average": "avg", "min": "min", "max": "max", "count": "count",
                "count_distinct": "count_distinct", "sum_boolean": "sum"}
NOT_IN_GRAMMAR = frozenset({"median", "percentile"})
RATE_WORDS = frozenset({"rate", "ratio", "share", "percent", "percentage", "pct", "proportion"})
DATASET_DESCRIPTION = ("Imported from dbt MetricFlow by tessera semantic import; review every field's exposure "
                       "before use.")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Skip(Exception):
    """One item cannot be converted; the message says why."""


class FilterError(ValueError):
    """A MetricFlow filter is not of a form the import translates."""


# --- names and text -------------------------------------------------------------


def is_column(expr: object) -> bool:
    return isinstance(expr, str) and bool(_IDENTIFIER.match(expr.strip()))


def kind_of(value: object) -> str:
    """A DSI enum member (EntityType.PRIMARY) or None as its lower-case value ('primary', '')."""
    return str(getattr(value, "value", value) or "").lower()


def column_of(element) -> str:
    """The column an entity, dimension or measure reads: its expr, else (MetricFlow's default) its name."""
    return element.expr if element.expr is not None else element.name


# --- the Tessera model being built ------------------------------------------------


@dataclass
class Field:
    column: str
    type: str
    label: str
    description: str = ""


@dataclass
class Metric:
    """An entity metric kept in parts, so that a filtered copy can add its condition."""

    function: str  # sum, avg, min, max, count, count_distinct
    argument: str | None  # a field, `1 if field else 0`, or None for count()
    type: str
    label: str
    description: str = ""
    where: tuple[str, ...] = ()

    def expression(self) -> str:
        parts = [self.argument] if self.argument else []
        if self.where:
            parts.append("where=" + " and ".join(self.where))
        return f"{self.function}({', '.join(parts)})"


@dataclass
class Entity:
    name: str
    table: str
    label: str
    description: str
    key_entity: str  # the MetricFlow name of the entity that identifies its rows ('order')
    reserved: set[str]  # names its metrics will take: fields are named otherwise
    primary_key: str = ""
    time_field: str | None = None
    fields: dict[str, Field] = field(default_factory=dict)
    metrics: dict[str, Metric] = field(default_factory=dict)
    columns: dict[str, str] = field(default_factory=dict)  # column → field
    dimensions: dict[str, str] = field(default_factory=dict)  # MetricFlow dimension → field

    def free_name(self, base: str) -> str:
        taken = self.reserved | set(self.fields) | set(self.metrics)
        candidates = [base, f"{base}_value", *(f"{base}_{n}" for n in range(2, 100))]
        return next(name for name in candidates if name not in taken)

    def column_field(self, column: str, kind: str, label: str | None = None, description: str = "") -> str:
        """The field that maps `column`, added (as `kind`) when there is none yet."""
        if column not in self.columns:
            name = self.free_name(snake(column))
            self.fields[name] = Field(column, kind, label or humanize(column), clip(description, MAX_DESCRIPTION_CHARS))
            self.columns[column] = name
        return self.columns[column]

    def document(self) -> dict:
        out = {"table": self.table, "label": self.label, "description": self.description,
               "primary_key": self.primary_key, "time_field": self.time_field,
               "fields": {name: _field_document(name, self.fields[name]) for name in  # the key first
                          sorted(self.fields, key=lambda name: name != self.primary_key)},
               "metrics": {name: _metric_document(metric) for name, metric in self.metrics.items()}}
        return {key: value for key, value in out.items() if value}


def _field_document(name: str, spec: Field) -> dict:
    out = {"column": spec.column if spec.column != name else None, "type": spec.type, "label": spec.label,
           "description": spec.description, "exposure": "never-to-model"}  # secure by default: a person decides
    return {key: value for key, value in out.items() if value}


def _metric_document(metric: Metric) -> dict:
    out = {"label": metric.label, "description": metric.description, "expression": metric.expression(),
           "type": metric.type}
    return {key: value for key, value in out.items() if value}


def _ref(entity: str, metric: str) -> ast.expr:
    return ast.Attribute(value=ast.Name(id=entity, ctx=ast.Load()), attr=metric, ctx=ast.Load())


def _rate_like(*texts: str) -> bool:
    return any(RATE_WORDS & set(re.findall(r"[a-z]+", text.lower())) for text in texts)


# --- MetricFlow filters ---------------------------------------------------------

_TOKEN = re.compile(r"""\s*(?:(?P<jinja>\{\{.*?\}\})|(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)
                        |(?P<op><>|!=|>=|<=|=|<|>)|(?P<punct>[(),])|(?P<word>[A-Za-z_][A-Za-z0-9_]*))""", re.X | re.S)
_OPS = {"=": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
FILTER_FORMS = ("what converts: Dimension('entity__dimension') compared with a literal, IN / NOT IN a list of "
                "literals, or IS TRUE / FALSE, joined by AND")


@dataclass(frozen=True)
class Condition:
    dimension: str  # MetricFlow's entity__dimension
    op: str  # == != < <= > >=, in, not in, is_true, is_false
    values: tuple[str | int | float, ...] = ()


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position, text = [], 0, text.strip()
    while position < len(text):
        found = _TOKEN.match(text, position)
        if found is None or found.end() == position:
            raise FilterError(f"cannot read it from {text[position:position + 20]!r}; {FILTER_FORMS}")
        tokens.append(next((kind, value) for kind, value in found.groupdict().items() if value is not None))
        position = found.end()
    return tokens


def _jinja_dimension(text: str) -> str:
    """The `entity__dimension` a Jinja call names, read by DSI's own filter parser."""
    try:
        calls = PydanticWhereFilter(where_sql_template=text).call_parameter_sets(custom_granularity_names=())
    except Exception as exc:  # noqa: BLE001 - DSI raises its own, Jinja's and pydantic's errors
        raise FilterError(f"{clip(text, 80)} is not a call dbt reads ({clip(str(exc), 120)}); {FILTER_FORMS}") \
            from None
    if calls.time_dimension_call_parameter_sets:
        raise FilterError("a TimeDimension filter is not converted: a time window belongs in the draft "
                          "(filters trailing, previous, to_date or between on the time field)")
    for kind, found in (("Entity", calls.entity_call_parameter_sets), ("Metric", calls.metric_call_parameter_sets)):
        if found:
            raise FilterError(f"an {kind} filter is not converted; {FILTER_FORMS}")
    if len(calls.dimension_call_parameter_sets) != 1:
        raise FilterError(f"{clip(text, 80)} is not converted (one Dimension call per comparison); {FILTER_FORMS}")
    [call] = calls.dimension_call_parameter_sets
    dimension = call.dimension_reference.element_name
    if dimension == "metric_time":
        raise FilterError("a filter on metric_time is not converted: a time window belongs in the draft")
    if len(call.entity_path) != 1:
        path = "__".join(entity.element_name for entity in call.entity_path)
        raise FilterError(f"Dimension {dimension} through {path} is not converted (one entity__dimension, no "
                          f"entity_path); {FILTER_FORMS}")
    return f"{call.entity_path[0].element_name}__{dimension}"


def _literal(token: tuple[str, str]) -> str | int | float:
    kind, text = token
    if kind == "string":
        return text[1:-1].replace("''", "'")
    if kind == "number":
        return float(text) if "." in text else int(text)
    raise FilterError(f"{text!r} is not a literal; {FILTER_FORMS}")


def _literal_list(tokens: list[tuple[str, str]], at: int) -> tuple[tuple, int]:
    if tokens[at] != ("punct", "("):
        raise FilterError(f"IN takes a parenthesised list of literals; {FILTER_FORMS}")
    values, at = [], at + 1
    while True:
        values.append(_literal(tokens[at]))
        if tokens[at + 1] == ("punct", ")"):
            return tuple(values), at + 2
        if tokens[at + 1] != ("punct", ","):
            raise FilterError(f"IN takes a list of literals; {FILTER_FORMS}")
        at += 2


def _condition(tokens: list[tuple[str, str]], at: int) -> tuple[Condition, int]:
    if tokens[at][0] != "jinja":
        raise FilterError(f"{tokens[at][1]!r} where a Dimension was expected; {FILTER_FORMS}")
    dimension = _jinja_dimension(tokens[at][1])
    kind, text = tokens[at + 1]
    words = [value.lower() for _, value in tokens[at + 1:at + 4]]
    if kind == "op" and tokens[at + 2][0] == "word" and tokens[at + 2][1].lower() in ("true", "false") \
            and text in ("=", "!=", "<>"):
        truth = (tokens[at + 2][1].lower() == "true") == (text == "=")
        return Condition(dimension, "is_true" if truth else "is_false"), at + 3
    if kind == "op":
        return Condition(dimension, _OPS[text], (_literal(tokens[at + 2]),)), at + 3
    if words[:1] == ["in"] or words[:2] == ["not", "in"]:
        negated = words[0] == "not"
        values, end = _literal_list(tokens, at + (3 if negated else 2))
        return Condition(dimension, "not in" if negated else "in", values), end
    if words[:1] == ["is"] and words[1] in ("true", "false"):
        return Condition(dimension, f"is_{words[1]}"), at + 3
    raise FilterError(f"{' '.join(words)!r} after the Dimension is not converted; {FILTER_FORMS}")


def parse_filter(text: str) -> list[Condition]:
    """`{{ Dimension('order__status') }} = 'completed' AND ...` → conditions; anything else → FilterError."""
    tokens = _tokens(text)
    conditions, at = [], 0
    try:
        while True:
            condition, at = _condition(tokens, at)
            conditions.append(condition)
            if at == len(tokens):
                return conditions
            if tokens[at][0] != "word" or tokens[at][1].lower() != "and":
                raise FilterError(f"{tokens[at][1]!r} joins conditions; {FILTER_FORMS}")
            at += 1
    except IndexError:
        raise FilterError(f"it ends early; {FILTER_FORMS}") from None


def render_condition(reference: str, condition: Condition) -> str:
    """A condition in Tessera's metric grammar, about the field `reference` (`status`, `customers.region`)."""
    if condition.op == "is_true":
        return reference
    if condition.op == "is_false":
        return f"not {reference}"
    if condition.op in ("in", "not in"):
        values = ", ".join(repr(value) for value in condition.values)
        return f"{reference} {condition.op} ({values}{',' if len(condition.values) == 1 else ''})"
    return f"{reference} {condition.op} {condition.values[0]!r}"


# --- metric inputs and names ----------------------------------------------------


def _filter_texts(value: PydanticWhereFilterIntersection | None) -> list[str]:
    """A MetricFlow `filter` (one or several templates that must all hold) as its templates."""
    return [item.where_sql_template for item in value.where_filters] if value is not None else []


def _input_spec(spec) -> tuple[str, list[str], str | None]:
    """A metric input (a measure or metric, with its filter and alias) → name, filters, alias."""
    if spec is None:
        raise _Skip("an input names no metric or measure")
    return spec.name, _filter_texts(spec.filter), spec.alias


def _arithmetic(expr: object, terms: dict[str, ast.expr]) -> ast.expr:
    """A derived metric's expr as a tree over its inputs' terms: + - * /, parentheses and numbers only."""
    why = f"its expr {clip(expr, 120)!r} is not arithmetic (+ - * /, parentheses, numbers) over its inputs"

    def build(node: ast.AST) -> ast.expr:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
            return ast.BinOp(build(node.left), node.op, build(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return ast.UnaryOp(ast.USub(), build(node.operand))
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return ast.Constant(node.value)
        if isinstance(node, ast.Name) and node.id in terms:
            return copy.deepcopy(terms[node.id])
        raise _Skip(why)

    try:  # MetricFlow's expr is SQL; the arithmetic subset reads the same in Python's parser
        tree = ast.parse(" ".join(expr.split()), mode="eval").body if isinstance(expr, str) else None
    except SyntaxError:
        tree = None
    if tree is None:
        raise _Skip(why)
    return build(tree)


def _reserved_names(project: Project) -> dict[str, set[str]]:
    """The metric names each semantic model's entity will hold (its measures and the simple metrics over
    them), so that its fields, added first, are named otherwise (a name is a field or a metric, not both)."""
    owner: dict[str, str] = {}
    reserved: dict[str, set[str]] = {}
    for model in project.semantic_models:
        names = {measure.name for measure in model.measures}
        reserved[model.name] = {snake(name) for name in names}
        owner.update(dict.fromkeys(names, model.name))
    for metric in project.metrics:
        measure = metric.type_params.measure
        if kind_of(metric.type) == "simple" and measure is not None and measure.name in owner:
            reserved[owner[measure.name]].add(snake(metric.name))
    return reserved


def _dimension_type(dimension) -> str:
    if kind_of(dimension.type) != "time":
        return "string"
    grain = kind_of(dimension.type_params.time_granularity) if dimension.type_params else ""
    # A day or a coarser grain is a date; finer grains keep the time of day.
    return "date" if grain in DAY_OR_COARSER else "timestamp"


# --- the conversion -------------------------------------------------------------


class DbtConverter:
    """Semantic models → entities and relationships; metrics → entity metrics and derived metrics."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.entities: dict[str, Entity] = {}
        self.relationships: dict[str, dict] = {}
        self.derived: dict[str, dict] = {}
        self.measures: dict[str, tuple[str, str]] = {}  # measure → (entity, metric)
        self.measures_seen: set[str] = set()  # converted or not, to say which
        self.keys: dict[str, list[tuple[str, str, str]]] = {}  # MetricFlow key entity → (entity, field, type)
        self.raw_metrics: dict[str, PydanticMetric] = {}
        self.done: dict[str, ast.expr | None] = {}  # converted metrics as terms of derived ones; None: not
        self._converting: set[str] = set()
        self._models: list[tuple[PydanticSemanticModel, Entity]] = []

    def convert(self, project: Project) -> None:
        reserved = _reserved_names(project)
        for raw in project.semantic_models:
            self._add_model(raw, reserved.get(raw.name, set()))
        for raw, entity in self._models:  # every key entity is known now: foreign ones can be resolved
            self._add_foreign_keys(raw, entity)
        self.measures_seen |= project.refused_measures  # metrics over them say their measure was not converted
        self.add_metrics(project.metrics)
        if self.entities:
            tables = ", ".join(entity.table for entity in self.entities.values())
            self.report.add("tables", f"named after the dbt models ({tables}): Tessera reads them in the schema its "
                                      "warehouse URL connects to; where dbt builds them in another schema or under "
                                      "an alias, edit table")

    # --- semantic models → entities and relationships ------------------------------

    def _add_model(self, raw: PydanticSemanticModel, reserved: set[str]) -> None:
        name = raw.name
        subject, entity_name = f"semantic model {name}", snake(name)
        key = self._key_entity(raw, subject)
        table = raw.node_relation.alias
        clash = "entity" if entity_name in self.entities else "table" if table in {
            e.table for e in self.entities.values()} else None
        if clash and key is not None:  # Tessera maps each table once, and names each entity once
            self.report.add(subject, f"not converted: its {clash} is already that of another semantic model")
        if key is None or clash:  # its measures exist, unconverted: metrics over them say so
            self.measures_seen.update(measure.name for measure in raw.measures)
            return
        entity = Entity(entity_name, table, clip(raw.label or humanize(name), MAX_LABEL_CHARS),
                        clip(raw.description, MAX_DESCRIPTION_CHARS), key[0], reserved)
        self._add_dimensions(raw, entity)
        self._add_keys(raw, entity)
        entity.primary_key = entity.columns[key[1]]
        self._set_time_field(raw, entity, subject)
        self._add_measures(raw, entity)
        self.entities[entity_name] = entity
        self._models.append((raw, entity))

    def _key_entity(self, raw: PydanticSemanticModel, subject: str) -> tuple[str, str] | None:
        """The MetricFlow entity that identifies a row, and its column: primary, else unique, else natural."""
        candidates = sorted((item for item in raw.entities if kind_of(item.type) in KEY_TYPES),
                            key=lambda item: KEY_TYPES.index(kind_of(item.type)))
        for item in candidates:
            if is_column(column_of(item)):
                return item.name, column_of(item).strip()
        why = "its primary entity is a SQL expression" if candidates else "it has no primary, unique or natural entity"
        self.report.add(subject, f"not converted: {why}; Tessera needs the column that identifies a row "
                                 "(primary_key)")
        return None

    def _add_keys(self, raw: PydanticSemanticModel, entity: Entity) -> None:
        for item in raw.entities:
            kind = kind_of(item.type)
            if kind not in KEY_TYPES:
                continue
            column = column_of(item)
            if not is_column(column):
                self.report.add(f"entity {item.name} ({kind}, in {entity.name})",
                                f"not converted: its expr is SQL ({column!r}), not a column")
                continue
            # An id is an integer unless a dimension already said otherwise.
            field_name = entity.column_field(column.strip(), "integer", item.label, item.description)
            self.keys.setdefault(item.name, []).append((entity.name, field_name, kind))

    def _add_dimensions(self, raw: PydanticSemanticModel, entity: Entity) -> None:
        for item in raw.dimensions:
            subject, column = f"dimension {entity.name}.{item.name}", column_of(item)
            if not is_column(column):
                self.report.add(subject, f"not converted: its expr is SQL ({column!r}); Tessera maps a field to a "
                                         "column, never to SQL text (add the column to the dbt model, map that)")
                continue
            column = column.strip()
            if column in entity.columns:
                self.report.add(subject, f"maps column {column} as {entity.columns[column]} does: one field kept")
            else:
                field_name = entity.free_name(snake(item.name))
                label = clip(item.label or humanize(item.name), MAX_LABEL_CHARS)
                entity.fields[field_name] = Field(column, _dimension_type(item), label,
                                                  clip(item.description, MAX_DESCRIPTION_CHARS))
                entity.columns[column] = field_name
            entity.dimensions[item.name] = entity.columns[column]

    def _set_time_field(self, raw: PydanticSemanticModel, entity: Entity, subject: str) -> None:
        wanted = raw.defaults.agg_time_dimension if raw.defaults else None
        if not wanted:
            return
        field_name = entity.dimensions.get(wanted)
        if field_name and entity.fields[field_name].type in ("date", "timestamp"):
            entity.time_field = field_name
        else:
            self.report.add(subject, f"defaults.agg_time_dimension {wanted} is not a converted time dimension; "
                                     "no time_field set")

    def _add_foreign_keys(self, raw: PydanticSemanticModel, entity: Entity) -> None:
        for item in raw.entities:
            if kind_of(item.type) != "foreign":
                continue
            subject, column = f"entity {item.name} (foreign, in {entity.name})", column_of(item)
            if not is_column(column):
                self.report.add(subject, f"not converted: its expr is SQL ({column!r}), not a column; no field, "
                                         "no relationship")
                continue
            target = self._key_owner(item.name, subject)
            kind = self.entities[target[0]].fields[target[1]].type if target else "integer"
            field_name = entity.column_field(column.strip(), kind, item.label, item.description)
            if target:
                self._add_relationship(entity, item.name, field_name, target)

    def _key_owner(self, key: str, subject: str) -> tuple[str, str] | None:
        found = self.keys.get(key, [])
        candidates = [item for item in found if item[2] == "primary"] or found
        if len(candidates) == 1:
            return candidates[0][:2]
        if not found:
            self.report.add(subject, "no semantic model has it as its primary entity: its column is kept as a "
                                     "field, with no relationship")
        else:
            owners = ", ".join(item[0] for item in candidates)
            self.report.add(subject, f"rows of {owners} are all identified by it: no relationship made; add the "
                                     "right one by hand")
        return None

    def _add_relationship(self, entity: Entity, key: str, field_name: str, target: tuple[str, str]) -> None:
        base = snake(f"{entity.name}_{key}")
        name = next(n for n in (base, *(f"{base}_{i}" for i in range(2, 100))) if n not in self.relationships)
        # Refusals and captions name a relationship (a role) by its label: "Customer of the order".
        base_label = f"{humanize(key)} of the {humanize(entity.key_entity).lower()}"
        labels = {rel["label"].casefold() for rel in self.relationships.values()}
        label = next(text for text in (base_label, f"{base_label} ({field_name})",
                                       *(f"{base_label} ({field_name} {i})" for i in range(2, 100)))
                     if text.casefold() not in labels)
        self.relationships[name] = {"from": entity.name, "to": target[0], "kind": "many_to_one",
                                    "from_field": field_name, "to_field": target[1],
                                    "label": clip(label, MAX_LABEL_CHARS)}

    def _paths(self, start: str, goal: str, seen: frozenset[str] = frozenset()) -> int:
        """Paths of many-to-one steps from `start` to `goal`, as the catalog counts them: a metric reads
        fields of an entity its rows belong to only when exactly one path leads there."""
        if start == goal:
            return 1
        if len(seen) >= MAX_PATH_EDGES:
            return 0
        seen = seen | {start}
        return sum(self._paths(rel["to"], goal, seen) for rel in self.relationships.values()
                   if rel["from"] == start and rel["to"] not in seen)


    # --- measures → entity metrics ------------------------------------------------

    def _add_measures(self, raw: PydanticSemanticModel, entity: Entity) -> None:
        for item in raw.measures:
            if item.name in self.measures_seen:
                self.report.add(f"measure {entity.name}.{item.name}", "not converted: another measure has its name")
                continue
            self.measures_seen.add(item.name)
            metric = self._measure(item, entity, f"measure {entity.name}.{item.name}")
            if metric is not None:
                entity.metrics[snake(item.name)] = metric
                self.measures[item.name] = (entity.name, snake(item.name))

    def _measure(self, item, entity: Entity, subject: str) -> Metric | None:
        agg, expr = kind_of(item.agg), column_of(item)
        label = clip(item.label or humanize(item.name), MAX_LABEL_CHARS)
        description = clip(item.description, MAX_DESCRIPTION_CHARS)
        if agg in NOT_IN_GRAMMAR:
            why = f"{agg} is not an aggregation of Tessera's metric grammar (sum, avg, min, max, count, count_distinct)"
        elif agg not in AGGREGATIONS:
            why = f"agg {agg or '(none)'} is not a MetricFlow aggregation this import knows"
        elif item.non_additive_dimension:
            why = ("non_additive_dimension (a semi-additive measure, such as a balance) is not supported: Tessera "
                   "would add it up across that dimension")
        elif agg in ("sum", "count") and expr.strip() == "1":
            return Metric("count", None, "integer", label, description)  # one per row: a row count
        elif not is_column(expr):
            why = (f"its expr is SQL ({clip(expr, 120)!r}); Tessera takes a column here, never SQL text: write "
                   "the metric by hand in its grammar (docs/semantic-model.md)")
        else:
            return self._column_measure(agg, expr.strip(), entity, label, description)
        self.report.add(subject, f"not converted: {why}")
        return None

    def _column_measure(self, agg: str, column: str, entity: Entity, label: str, description: str) -> Metric:
        counting = agg in ("count", "count_distinct")
        if counting:  # what is counted may be any type; ids are usually integers
            kind = "integer" if column.lower().endswith("id") else "string"
        else:
            kind = "boolean" if agg == "sum_boolean" else "decimal"
        field_name = entity.column_field(column, kind)
        spec = entity.fields[field_name]
        if agg == "sum_boolean":
            spec.type = "boolean"  # what sum_boolean says of the column, even where a dimension said categorical
            return Metric("sum", f"1 if {field_name} else 0", "integer", label, description)
        if counting:
            result = "integer"
        elif agg in ("min", "max") and spec.type in ("integer", "date", "timestamp"):
            result = spec.type
        else:
            result = "integer" if agg == "sum" and spec.type == "integer" else "decimal"
        return Metric(AGGREGATIONS[agg], field_name, result, label, description)

    # --- metrics ----------------------------------------------------------------------

    def add_metrics(self, metrics: list[PydanticMetric]) -> None:
        for raw in metrics:
            if raw.name in self.raw_metrics:
                self.report.add(f"metric {raw.name}", "not converted: another metric has its name")
                continue
            self.raw_metrics[raw.name] = raw
        for name in self.raw_metrics:
            self.metric(name)

    def metric(self, name: str) -> ast.expr | None:
        """Convert one top-level metric (once): its term in derived metrics, or None when not converted."""
        if name in self.done:
            return self.done[name]
        if name in self._converting:
            raise _Skip(f"metric {name} depends on itself")
        raw = self.raw_metrics[name]
        handlers = {"simple": self._simple, "ratio": self._ratio, "derived": self._derived,
                    "cumulative": self._cumulative}
        self._converting.add(name)
        try:
            result = handlers.get(kind_of(raw.type), self._unknown)(name, raw)
        except _Skip as exc:
            self.report.add(f"metric {name}", f"not converted: {exc}")
            result = None
        finally:
            self._converting.discard(name)
        self.done[name] = result
        return result

    def _unknown(self, name: str, raw: PydanticMetric) -> None:
        if kind_of(raw.type) == "conversion":
            raise _Skip("a conversion metric (a funnel from one event to another) has no counterpart in Tessera")
        raise _Skip(f"type {kind_of(raw.type)!r} is not a MetricFlow metric type this import knows")

    def _measure_metric(self, measure: str) -> tuple[Entity, str]:
        if measure not in self.measures:
            raise _Skip(f"its measure {measure} was not converted" if measure in self.measures_seen
                        else f"{measure} is not a measure of any semantic model")
        entity_name, metric_name = self.measures[measure]
        return self.entities[entity_name], metric_name

    def _simple(self, name: str, raw: PydanticMetric) -> ast.expr:
        measure, filters, _ = _input_spec(raw.type_params.measure)
        filters += _filter_texts(raw.filter)
        entity, measure_metric = self._measure_metric(measure)
        base, metric_name = entity.metrics[measure_metric], snake(name)
        label, description = clip(raw.label, MAX_LABEL_CHARS), clip(raw.description, MAX_DESCRIPTION_CHARS)
        if not filters and metric_name == measure_metric:  # the measure's own metric: only its words change
            base.label, base.description = label or base.label, description or base.description
            return _ref(entity.name, metric_name)
        where = self._where(filters, entity)
        if metric_name == measure_metric:
            self.report.add(f"metric {name}", f"its filter applies to the measure of the same name: "
                                              f"{entity.name}.{metric_name} is the filtered one")
        elif metric_name in entity.metrics or metric_name in entity.fields:
            raise _Skip(f"{entity.name} already has a field or metric named {metric_name}")
        entity.metrics[metric_name] = replace(base, label=label or humanize(name), where=base.where + where,
                                              description=description or ("" if where else base.description))
        return _ref(entity.name, metric_name)

    def _cumulative(self, name: str, raw: PydanticMetric) -> None:
        params = raw.type_params
        options = params.cumulative_type_params
        source, _, _ = _input_spec(params.measure or (options.metric if options else None))
        term = self._resolve_input(source)
        if not isinstance(term, ast.Attribute):
            raise _Skip(f"a running total of {source}, which is not a simple metric or a measure")
        window = params.window or (options.window if options else None)
        to_date = params.grain_to_date or (options.grain_to_date if options else None)
        message = (f"converted to {term.value.id}.{term.attr}, the metric it accumulates: Tessera computes running "
                   "totals in the draft (calculation kind cumulative, along a time dimension)")
        if window:
            message += (f"; its window ({window.window_string}) is not carried: a trailing filter in the draft "
                        "comes closest")
        if to_date:
            message += f"; its grain_to_date ({kind_of(to_date)}) is not carried: a to_date filter comes closest"
        self.report.add(f"metric {name}", message)
        return None  # not a term other metrics can build on: the running total itself is not here

    def _ratio(self, name: str, raw: PydanticMetric) -> ast.expr:
        shared = _filter_texts(raw.filter)  # a ratio's own filter holds for both sides
        pending: list[tuple[Entity, str, Metric]] = []
        numerator = self._component(raw.type_params.numerator, name, "numerator", shared, pending)
        denominator = self._component(raw.type_params.denominator, name, "denominator", shared, pending)
        return self._add_derived(name, raw, ast.BinOp(numerator, ast.Div(), denominator), pending)

    def _derived(self, name: str, raw: PydanticMetric) -> ast.expr:
        inputs = raw.type_params.metrics
        if not inputs:
            raise _Skip("it lists no input metrics")
        for item in inputs:
            offset = item.offset_window.window_string if item.offset_window else item.offset_to_grain
            if offset:
                alias = f" (as {item.alias})" if item.alias else ""
                raise _Skip(f"input {item.name}{alias} is offset ({offset}): use a period-over-period "
                            "calculation in the draft: kind prior/change/growth")
        shared = _filter_texts(raw.filter)
        pending: list[tuple[Entity, str, Metric]] = []
        terms = {}
        for item in inputs:
            terms[item.alias or item.name] = self._component(item, name, item.alias or item.name, shared, pending)
        return self._add_derived(name, raw, _arithmetic(raw.type_params.expr, terms), pending)

    def _resolve_input(self, name: str) -> ast.expr:
        """A metric (converted on demand) or a measure, as a term of a derived metric."""
        if name in self.raw_metrics:
            term = self.metric(name)
            if term is None:
                raise _Skip(f"its input {name} was not converted")
            return copy.deepcopy(term)
        if name in self.measures:
            return _ref(*self.measures[name])
        raise _Skip(f"its input {name} is neither a metric nor a converted measure")

    def _component(self, spec, parent: str, role: str, shared: list[str],
                   pending: list[tuple[Entity, str, Metric]]) -> ast.expr:
        """One input of a ratio or derived metric; with a filter, a filtered copy of its entity metric
        (kept in `pending` until the whole metric converts, so a failure leaves nothing behind)."""
        name, filters, alias = _input_spec(spec)
        term = self._resolve_input(name)
        filters += shared
        if not filters:
            return term
        if not isinstance(term, ast.Attribute):
            raise _Skip(f"its input {name} is a ratio or derived metric, and a filter on one is not converted")
        entity = self.entities[term.value.id]
        base = entity.metrics[term.attr]
        where = self._where(filters, entity)
        taken = {metric_name for owner, metric_name, _ in pending if owner is entity}
        metric_name = next(n for n in (entity.free_name(snake(f"{parent}_{alias or role}")),
                                       *(f"{snake(parent)}_{role}_{i}" for i in range(2, 100))) if n not in taken)
        label = humanize(alias) if alias else clip(f"{base.label} ({humanize(parent)} {role})", MAX_LABEL_CHARS)
        pending.append((entity, metric_name, replace(base, label=label, where=base.where + where,
                                                      description=f"The {role} of {parent}, filtered.")))
        return _ref(entity.name, metric_name)

    def _add_derived(self, name: str, raw: PydanticMetric, tree: ast.expr,
                     pending: list[tuple[Entity, str, Metric]]) -> ast.expr:
        homes = [node.value.id for node in ast.walk(tree) if isinstance(node, ast.Attribute)]
        if not homes:
            raise _Skip("it uses no metric")
        entity, metric_name, expression = self.entities[homes[0]], snake(name), ast.unparse(tree)
        if metric_name in entity.fields or metric_name in entity.metrics or metric_name in self.derived \
                or any(metric_name == added for _, added, _ in pending):
            raise _Skip(f"{entity.name} already has a field or metric named {metric_name}")
        if len(expression) > MAX_EXPRESSION_CHARS:
            raise _Skip(f"its expression would be longer than {MAX_EXPRESSION_CHARS} characters")
        label = clip(raw.label or humanize(name), MAX_LABEL_CHARS)
        division = any(isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) for node in ast.walk(tree))
        derived = {"entity": entity.name, "label": label, "description": clip(raw.description, MAX_DESCRIPTION_CHARS),
                   "expression": expression, "type": "float" if division else "decimal",
                   "format": "percent" if _rate_like(name, label) else "decimal"}  # never a guessed currency
        for owner, added, metric in pending:
            owner.metrics[added] = metric
        self.derived[metric_name] = {key: value for key, value in derived.items() if value}
        return tree

    # --- filters ------------------------------------------------------------------------

    def _where(self, filters: list[str], home: Entity) -> tuple[str, ...]:
        conditions = []
        for text in filters:
            try:
                parsed = parse_filter(text)
            except FilterError as exc:
                raise _Skip(f"filter {clip(text, 120)!r}: {exc}") from None
            conditions += [self._condition_text(condition, home) for condition in parsed]
        return tuple(conditions)

    def _condition_text(self, condition: Condition, home: Entity) -> str:
        owner, field_name = self._dimension_field(condition.dimension, home)
        if condition.op in ("is_true", "is_false"):
            owner.fields[field_name].type = "boolean"  # IS TRUE says what the column holds
        reference = field_name if owner is home else f"{owner.name}.{field_name}"
        return render_condition(reference, condition)

    def _dimension_field(self, path: str, home: Entity) -> tuple[Entity, str]:
        """`order__status` → the entity whose rows `order` identifies, and its field for `status`."""
        key, dimension = path.split("__")  # parse_filter passes one entity and one dimension only
        owners = [owner for owner, _, _ in self.keys.get(key, [])]
        if home.name in owners:
            owner = home
        elif len(set(owners)) == 1:
            owner = self.entities[owners[0]]
        else:
            raise _Skip(f"Dimension('{path}'): {key} identifies the rows of {len(set(owners))} converted entities")
        field_name = owner.dimensions.get(dimension)
        if field_name is None:
            raise _Skip(f"Dimension('{path}'): {dimension} is not a converted dimension of {owner.name}")
        paths = self._paths(home.name, owner.name)
        if paths != 1:
            raise _Skip(f"Dimension('{path}'): {owner.name} is reached from {home.name} by {paths} paths; a metric "
                        "reads the fields of an entity its rows reach by exactly one")
        return owner, field_name

    # --- the model file -----------------------------------------------------------------

    def document(self, dataset_label: str) -> dict:
        out = {"version": 1, "dataset": {"label": dataset_label, "description": DATASET_DESCRIPTION},
               "entities": {name: entity.document() for name, entity in self.entities.items()},
               "relationships": self.relationships, "derived_metrics": self.derived}
        return {key: value for key, value in out.items() if value}


def render(document: dict, report: Report, source: str) -> str:
    """The model as YAML, under comments that say how it was made and what it left out."""
    source = " ".join(source.split())  # the project's own name: one line, inside a comment
    header = [f"Generated by `tessera semantic import dbt` from {source}. Review it before use:",
              "every field is exposure: never-to-model, so the model sees no field until a person sets",
              "aggregate-only or bounded-values; metrics are visible as soon as the file is loaded, so",
              "remove any that should not be (min and max show single values).", ""]
    if report.lines:
        header += ["Not converted, or converted differently (the import printed the same lines):",
                   *(f"  {line}" for line in report.lines)]
    else:
        header.append("Everything was converted.")
    comments = "\n".join(f"# {line}".rstrip() for line in header)
    return f"{comments}\n\n{yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)}"


@dataclass
class Imported:
    text: str
    summary: str


def _drop_overlong(converter: DbtConverter, report: Report) -> None:
    """Tessera refuses expressions over MAX_EXPRESSION_CHARS at startup: leave such metrics out, and say so."""
    for entity_name, entity in converter.entities.items():
        for name, metric in list(entity.metrics.items()):
            if len(metric.expression()) > MAX_EXPRESSION_CHARS:
                del entity.metrics[name]
                report.add(f"metric {entity_name}.{name}", f"not converted: its expression would be longer than "
                                                           f"{MAX_EXPRESSION_CHARS} characters")
    for name, derived in list(converter.derived.items()):
        if len(derived["expression"]) > MAX_EXPRESSION_CHARS:
            del converter.derived[name]
            report.add(f"metric {name}", f"not converted: its expression would be longer than {MAX_EXPRESSION_CHARS} "
                                         "characters")


def import_dbt(root: Path, dataset_label: str | None, report: Report) -> Imported:
    project = read_project(root, report)
    converter = DbtConverter(report)
    converter.convert(project)
    _drop_overlong(converter, report)
    report_validation(project, report)  # after what Tessera could not convert: what dbt itself refuses
    if not converter.entities:
        raise DbtImportError(f"{root}: none of its {project.found} semantic models could be "
                             "converted (why is printed above)")
    label = dataset_label or (humanize(project.name) if project.name else "Imported dbt project")
    source = f"the dbt project {project.name}" if project.name else str(root)
    text = render(converter.document(label), report, source)
    fields = sum(len(entity.fields) for entity in converter.entities.values())
    metrics = sum(len(entity.metrics) for entity in converter.entities.values())
    summary = (f"{len(converter.entities)} entities ({fields} fields, {metrics} metrics), "
               f"{len(converter.relationships)} relationships and {len(converter.derived)} derived metrics")
    return Imported(text, summary)


# --- the command ------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    report = Report()
    try:
        imported = import_dbt(Path(args.path), args.dataset_label, report)
    except DbtImportError as exc:
        for line in report.lines:
            print(line, file=sys.stderr)
        print(f"tessera: error: {exc}", file=sys.stderr)
        return 2
    for line in report.lines:
        print(line, file=sys.stderr)
    if not args.out:
        sys.stdout.write(imported.text)
        return 0
    try:
        Path(args.out).write_text(imported.text, encoding="utf-8")
    except OSError as exc:
        print(f"tessera: error: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {imported.summary} to {args.out}; every field is never-to-model until reviewed")
    return 0
