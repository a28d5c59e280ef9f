"""The runtime catalog: the semantic model bound to the physical warehouse.

Builds opaque ids (derived from the catalog fingerprint, so a changed model
or schema changes every id), resolves them back to SQLAlchemy columns, and
answers `InspectCatalog` with a budgeted, deterministic slice.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import hmac
import re
from dataclasses import dataclass, field

import sqlalchemy as sa

from shared.data.bounded_json import canonical
from shared.semantic import expressions
from shared.semantic.model import (
    MAX_PATH_EDGES,
    DerivedMetricSpec,
    EntitySpec,
    FieldSpec,
    MetricSpec,
    RelationshipSpec,
    SemanticModel,
    SemanticModelError,
    key_fields,
)

MAX_ENTITIES = 12
MAX_FIELDS_PER_ENTITY = 40
MAX_METRICS_PER_ENTITY = 24
SCHEMA_VERSION_TABLE = "tessera_schema_version"
_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = frozenset(
    "a an and are as at be by do does for from how i in is it me my of on or our per show the their to us "
    "was we what when which who with by vs versus over each all top most least give list tell".split()
)


@dataclass(frozen=True, eq=False)  # one object per catalog item: compared and hashed by identity
class CatalogField:
    id: str
    entity: str
    name: str
    spec: FieldSpec
    column: sa.Column
    entity_label: str = ""  # the label of the entity it belongs to, for captions

    @property
    def model_visible(self) -> bool:
        return self.spec.exposure != "never-to-model"


@dataclass(frozen=True, eq=False)  # one object per catalog item: compared and hashed by identity
class CatalogMetric:
    id: str
    entity: str
    name: str
    spec: MetricSpec | DerivedMetricSpec
    expression: expressions.Expr
    derived: bool


@dataclass(frozen=True, eq=False)  # one object per catalog item: compared and hashed by identity
class CatalogRelationship:
    id: str
    name: str
    spec: RelationshipSpec


@dataclass(eq=False)  # one object per entity: compared and hashed by identity
class CatalogEntity:
    id: str
    name: str
    spec: EntitySpec
    table: sa.Table
    fields: dict[str, CatalogField] = field(default_factory=dict)
    metrics: dict[str, CatalogMetric] = field(default_factory=dict)

    @property
    def key(self) -> list[CatalogField]:
        """The fields that identify a row (one, or several for a composite key)."""
        return [self.fields[name] for name in key_fields(self.spec.primary_key)]


@dataclass(frozen=True)
class Edge:
    """One traversal of a relationship; `safe` when it cannot repeat rows of the start."""

    relationship: CatalogRelationship
    start: str
    end: str
    start_fields: tuple[str, ...]  # matched in order with end_fields (several for a composite key)
    end_fields: tuple[str, ...]
    safe: bool


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP_WORDS}


def _word_run(text: str) -> tuple[str, ...]:
    """Every word of `text` in order, stop words kept: "signed up" is a phrase, and "up" alone no event."""
    return tuple(_stem(w) for w in _WORD.findall(text.lower()))


def _says(question: tuple[str, ...], phrase: str) -> bool:
    """Whether the question's words (`_word_run`) hold the phrase's words together and in order."""
    wanted = _word_run(phrase)
    return bool(wanted) and any(question[i:i + len(wanted)] == wanted for i in range(len(question) - len(wanted) + 1))


_COLUMN_TYPES = {"integer": sa.BigInteger, "decimal": sa.Numeric, "float": sa.Double, "string": sa.String,
                 "boolean": sa.Boolean, "date": sa.Date, "timestamp": sa.DateTime}


def bind_tables(engine: sa.Engine, model: SemanticModel) -> tuple[str, dict[str, sa.Table]]:
    """Typed Table objects for the mapped columns, checked against the warehouse.

    Tables are declared from the model (not reflected: reflection differs
    per driver), then probed with a zero-row SELECT of every mapped column,
    so a missing table or column is a startup error naming the model key.
    Returns the physical schema signature (mapped columns + the warehouse's
    schema version row) and the tables.
    """
    metadata = sa.MetaData()
    tables: dict[str, sa.Table] = {}
    shape = []
    with engine.connect() as connection:
        for entity_name, entity in model.entities.items():
            columns = [sa.Column(spec.column or name, _COLUMN_TYPES[spec.type]()) for name, spec in
                       entity.fields.items()]
            table = sa.Table(entity.table, metadata, *columns)
            for name, spec in entity.fields.items():
                column = table.c[spec.column or name]
                try:
                    connection.execute(sa.select(column).where(sa.false()))
                except sa.exc.DBAPIError:
                    connection.rollback()
                    raise SemanticModelError(
                        f"entities.{entity_name}.fields.{name}: column {column.name!r} of table {entity.table!r} "
                        "is not in the warehouse") from None
            tables[entity_name] = table
            shape.append([entity.table, sorted(c.name for c in table.c)])
        try:
            version = connection.execute(sa.select(sa.func.max(sa.column("version"))).select_from(
                sa.table(SCHEMA_VERSION_TABLE))).scalar()
        except sa.exc.DBAPIError:
            connection.rollback()
            version = None
    return canonical({"schema_version": version, "tables": sorted(shape)}), tables


class Catalog:
    """One fingerprinted catalog; rebuilt (with new ids) when model or schema change."""

    def __init__(self, model: SemanticModel, engine: sa.Engine) -> None:
        self.model = model
        signature, tables = bind_tables(engine, model)
        # How long results are reused is no part of what the ids name: tuning it keeps every id.
        model_json = canonical(model.model_dump(mode="json", by_alias=True, exclude={"freshness"}))
        self.fingerprint = hashlib.sha256(f"{model_json}\n{signature}".encode()).hexdigest()
        self.entities: dict[str, CatalogEntity] = {}
        self.by_id: dict[str, object] = {}
        self._vocabulary: list[str] | None = None  # every word of the catalog's names, built on first use
        for entity_name, spec in model.entities.items():
            entity = CatalogEntity(self._id("ent", entity_name), entity_name, spec, tables[entity_name])
            for field_name, field_spec in spec.fields.items():
                column = entity.table.c[field_spec.column or field_name]
                entity.fields[field_name] = CatalogField(
                    self._id("fld", f"{entity_name}.{field_name}"), entity_name, field_name, field_spec, column,
                    spec.label)
            for metric_name, metric_spec in spec.metrics.items():
                entity.metrics[metric_name] = CatalogMetric(
                    self._id("met", f"{entity_name}.{metric_name}"), entity_name, metric_name, metric_spec,
                    expressions.parse(metric_spec.expression, dotted_refs=True), derived=False)
            self.entities[entity_name] = entity
        for metric_name, derived in model.derived_metrics.items():
            self.entities[derived.entity].metrics[metric_name] = CatalogMetric(
                self._id("met", f"{derived.entity}.{metric_name}"), derived.entity, metric_name, derived,
                expressions.parse(derived.expression, dotted_refs=True), derived=True)
        self.relationships = {
            name: CatalogRelationship(self._id("rel", name), name, spec) for name, spec in model.relationships.items()
        }
        for entity in self.entities.values():
            self.by_id[entity.id] = entity
            self.by_id.update({f.id: f for f in entity.fields.values()})
            self.by_id.update({m.id: m for m in entity.metrics.values()})
        self.by_id.update({r.id: r for r in self.relationships.values()})
        self.edges: dict[str, list[Edge]] = {name: [] for name in self.entities}
        self._routes: dict[tuple[str, str], list[tuple[Edge, ...]]] = {}
        for rel in self.relationships.values():
            forward_safe = rel.spec.kind in ("many_to_one", "one_to_one")
            backward_safe = rel.spec.kind in ("one_to_many", "one_to_one")
            s = rel.spec
            start, end = key_fields(s.from_field), key_fields(s.to_field)
            self.edges[s.from_entity].append(Edge(rel, s.from_entity, s.to_entity, start, end, forward_safe))
            self.edges[s.to_entity].append(Edge(rel, s.to_entity, s.from_entity, end, start, backward_safe))
        for entity in self.entities.values():
            for metric in entity.metrics.values():
                if not metric.derived:
                    self._check_related_fields(metric)

    def _check_related_fields(self, metric: CatalogMetric) -> None:
        """A field of another entity inside a metric is read through exactly one path, and one that
        cannot repeat the metric's rows (each row belongs to one of them): otherwise the metric
        would silently choose a meaning or inflate."""
        for ref in expressions.walk(metric.expression):
            if not isinstance(ref, expressions.Ref) or ref.entity is None:
                continue
            routes = self.routes(metric.entity, ref.entity)
            where = f"entities.{metric.entity}.metrics.{metric.name}.expression"
            if len(routes) != 1 or not all(edge.safe for edge in routes[0]):
                how = "no path" if not routes else f"{len(routes)} paths" if len(routes) > 1 else \
                    "a path that repeats rows"
                raise SemanticModelError(f"{where}: {ref.entity}.{ref.name} is reached from {metric.entity} "
                                         f"through {how}; a metric may use fields of entities each of its rows "
                                         "belongs to by one path only")

    def related_entities(self, metric: CatalogMetric) -> tuple[str, ...]:
        """Other entities whose fields a (non-derived) metric reads, in a stable order."""
        if metric.derived:
            return ()
        return tuple(sorted({ref.entity for ref in expressions.walk(metric.expression)
                             if isinstance(ref, expressions.Ref) and ref.entity is not None}))

    def _id(self, prefix: str, path: str) -> str:
        digest = hmac.new(self.fingerprint.encode(), f"{prefix}:{path}".encode(), hashlib.sha256).digest()
        return f"{prefix}_{base64.b32encode(digest).decode().lower()[:12]}"

    # --- lookups -----------------------------------------------------------

    def metric(self, entity: str, name: str) -> CatalogMetric:
        return self.entities[entity].metrics[name]

    def home_entity_id(self, item_id: str) -> str:
        """The entity an id belongs to (a relationship: the one it leads from): what describe_data brings in."""
        item = self.by_id[item_id]
        name = item.spec.from_entity if isinstance(item, CatalogRelationship) else getattr(item, "entity", None)
        return self.entities[name].id if name else item.id

    def time_field(self, entity: str) -> CatalogField | None:
        """The date or time rows of `entity` are dated by: its declared `time_field`, else its first date or
        time field, else that of the nearest entity it belongs to (many-to-one), for a result's coverage."""
        seen, frontier = {entity}, [entity]
        while frontier:
            following = []
            for name in frontier:
                spec = self.entities[name].spec
                # Only a field whose values may be shown: the span states its first and last value.
                fields = {n: f for n, f in self.entities[name].fields.items() if f.spec.exposure == "bounded-values"}
                if spec.time_field is not None:
                    if spec.time_field in fields:
                        return fields[spec.time_field]
                    return None  # the declared one may not be shown: no span rather than another field's
                temporal = next((f for f in fields.values() if f.spec.type in ("date", "timestamp")), None)
                if temporal is not None:
                    return temporal
                for edge in self.edges[name]:
                    if edge.safe and edge.end not in seen:  # each row belongs to at most one there
                        seen.add(edge.end)
                        following.append(edge.end)
            frontier = following
        return None

    def component_entities(self, metric: CatalogMetric) -> set[str]:
        if not metric.derived:
            return {metric.entity}
        return {ref.entity for ref in expressions.walk(metric.expression) if isinstance(ref, expressions.Ref)}

    def routes(self, start: str, goal: str) -> list[tuple[Edge, ...]]:
        """Every path from `start` to `goal` that could be meant, as candidates for a join.

        Paths made only of safe edges (each step leads to the one row a row belongs to) all count,
        whatever their length: through the customer and through the supplier are two different
        nations of a line item. Without one, the shortest paths that repeat rows count (what a
        fan-out-safe aggregate may use). One candidate is a join; more is an ambiguity to resolve.
        """
        key = (start, goal)
        if key not in self._routes:
            found = list(self._simple_paths(start, goal))
            safe = [route for route in found if all(edge.safe for edge in route)]
            if safe:
                self._routes[key] = safe
            else:
                shortest = min((len(route) for route in found), default=0)
                self._routes[key] = [route for route in found if len(route) == shortest]
        return self._routes[key]

    def routes_through(self, start: str, goal: str, via: tuple[CatalogRelationship, ...]) -> list[tuple[Edge, ...]]:
        """The candidate paths that pass through every relationship in `via` (a role named by the draft)."""
        wanted = {r.name for r in via}
        found = [route for route in self._simple_paths(start, goal)
                 if wanted <= {edge.relationship.name for edge in route}]
        safe = [route for route in found if all(edge.safe for edge in route)]
        if safe:
            return safe
        shortest = min((len(route) for route in found), default=0)
        return [route for route in found if len(route) == shortest]

    def _simple_paths(self, start: str, goal: str):
        """Paths of at most MAX_PATH_EDGES edges that visit no entity twice, in a stable order."""
        def extend(route: tuple[Edge, ...], visited: frozenset[str]):
            node = route[-1].end if route else start
            if node == goal:
                yield route
                return
            if len(route) == MAX_PATH_EDGES:
                return
            for edge in sorted(self.edges[node], key=lambda e: (e.relationship.name, e.end)):
                if edge.end not in visited:
                    yield from extend((*route, edge), visited | {edge.end})

        yield from extend((), frozenset({start}))

    # --- the model-visible slice ------------------------------------------

    def inspect(self, question: str) -> list[tuple[CatalogEntity, list[CatalogField], list[CatalogMetric]]]:
        """Entities relevant to `question` (≤12), with fields (≤40) and metrics (≤24) each.

        Deterministic: same question and catalog, same slice. Nothing matches →
        empty list, never "the first tables".
        """
        asked = self._spelled(words(question))
        if not asked:
            return []
        spoken = _word_run(question)
        scores: dict[str, int] = {}
        matched_fields: dict[str, set[str]] = {}
        matched_metrics: dict[str, set[str]] = {}
        required: dict[str, set[str]] = {}
        for name, entity in self.entities.items():
            score = 3 * len(asked & words(" ".join([name, entity.spec.label, *entity.spec.synonyms])))
            score += len(asked & words(entity.spec.description))
            for f in entity.fields.values():
                named = asked & words(" ".join([f.name, f.spec.label, *f.spec.synonyms]))
                # "how many customers signed up": the event that dates a row names its date field
                if f.model_visible and (named or any(_says(spoken, verb) for verb in f.spec.event_verbs)):
                    matched_fields.setdefault(name, set()).add(f.name)
                    score += 2
            for m in entity.metrics.values():
                if asked & words(" ".join([m.name, m.spec.label, *m.spec.synonyms])):
                    matched_metrics.setdefault(name, set()).add(m.name)
                    required.setdefault(name, set()).update(self.component_entities(m))
                    score += 2
            if score:
                scores[name] = score
        ranked = sorted(scores, key=lambda n: (-scores[n], n))
        chosen: list[str] = []
        for name in ranked:
            wanted = {name, *required.get(name, ())}
            # Both sides of every join: add the entities on the path to what is already chosen.
            for target in sorted(wanted - {name}) + sorted(set(chosen)):
                for route in self.routes(name, target):  # every role, so the model can name one
                    wanted.update(edge.end for edge in route)
            new = [n for n in sorted(wanted) if n not in chosen]
            if len(chosen) + len(new) > MAX_ENTITIES:
                continue
            chosen.extend(new)
        chosen.sort(key=lambda n: (-scores.get(n, 0), n))
        result = []
        for name in chosen:
            entity = self.entities[name]
            hits_f, hits_m = matched_fields.get(name, set()), matched_metrics.get(name, set())
            fields = [f for f in entity.fields.values() if f.model_visible]
            fields.sort(key=lambda f: f.name not in hits_f)  # stable: matched first, then model order
            metrics = sorted(entity.metrics.values(), key=lambda m: m.name not in hits_m)
            result.append((entity, fields[:MAX_FIELDS_PER_ENTITY], metrics[:MAX_METRICS_PER_ENTITY]))
        return result

    def _spelled(self, asked: set[str]) -> set[str]:
        """The question's words plus, for a word the catalog does not use, the catalog word it is most
        likely a typo of ("revnue" → "revenue"): people misspell, and a slice that misses its measure
        makes the question unanswerable."""
        if self._vocabulary is None:
            self._vocabulary = sorted({w for e in self.entities.values() for w in words(" ".join(
                [e.name, e.spec.label, *e.spec.synonyms, *[" ".join([f.name, f.spec.label, *f.spec.synonyms])
                                                           for f in e.fields.values() if f.model_visible],
                 *[" ".join([m.name, m.spec.label, *m.spec.synonyms]) for m in e.metrics.values()]]))})
        known = set(self._vocabulary)
        extra = {close for word in asked - known if len(word) >= 4
                 for close in difflib.get_close_matches(word, self._vocabulary, n=1, cutoff=0.8)}
        return asked | extra

    def relationships_between(self, entity_names: set[str]) -> list[CatalogRelationship]:
        return [r for r in self.relationships.values()
                if r.spec.from_entity in entity_names and r.spec.to_entity in entity_names]
