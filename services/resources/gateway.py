"""The Resource Gateway's domain: catalog, capability, drafts, results, grants.

Synchronous and free of gRPC plumbing (the servicer runs it on a bounded
thread pool); every refusal is a domain refusal (shared/rpc/refusals.py) with a stable reason, which the
interceptor maps to its status.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

import sqlalchemy as sa
from google.protobuf import duration_pb2, timestamp_pb2

from services.resources import formats, periods, probes
from services.resources.capability import Capability, CapabilityIssuer
from services.resources.catalog import Catalog, CatalogEntity, CatalogField, CatalogRelationship
from services.resources.config import MAX_WINDOW_ROWS, ResourcesSettings
from services.resources.draft import Draft, RelativePeriod, build_draft, parse_draft, with_periods
from services.resources.freshness import DataVersion
from services.resources.information_budget import InformationBudget
from services.resources.interpretation import Coverage, interpret
from services.resources.ports import Admission, CachedResult, ResourceStorage
from services.resources.query_compiler import OutputColumn, Plan, QueryCompiler, coverage_draft
from services.resources.result_cache import ReadResult, ResultCache
from services.resources.results import PinnedResult, normalize_rows
from services.resources.revocations import RevocationChecks
from services.resources.warehouse import Warehouse
from services.resources.window_rows import EncodedRows
from shared.data.caches import SharedMemo, expiring
from shared.identity import tokens
from shared.rpc.next_steps import metadata
from shared.rpc.refusals import Conflict, Denied, Exhausted, Invalid, NotFound, Refusal, Unavailable
from shared.semantic.model import SemanticModel
from tessera.common.v1 import common_pb2
from tessera.resources.v1 import resources_pb2

logger = logging.getLogger("tessera.resources")
OFFER_LIFETIME = dt.timedelta(minutes=30)
GRANT_MAX_LIFETIME = dt.timedelta(minutes=15)
REFERENCE_LIFETIME_SECONDS = 60.0
MAX_REFERENCES = 256
SPELLINGS_LIFETIME_SECONDS = 300.0
MAX_SPELLING_FIELDS = 256
MAX_PROBE_OUTCOMES = 1_024
COLUMN_TYPES = {"string": common_pb2.COLUMN_TYPE_STRING, "integer": common_pb2.COLUMN_TYPE_INTEGER,
                "decimal": common_pb2.COLUMN_TYPE_DECIMAL, "float": common_pb2.COLUMN_TYPE_FLOAT,
                "boolean": common_pb2.COLUMN_TYPE_BOOLEAN, "date": common_pb2.COLUMN_TYPE_DATE,
                "timestamp": common_pb2.COLUMN_TYPE_TIMESTAMP}
COLUMN_ROLES = {"dimension": common_pb2.COLUMN_ROLE_DIMENSION, "time": common_pb2.COLUMN_ROLE_TIME,
                "measure": common_pb2.COLUMN_ROLE_MEASURE, "attribute": common_pb2.COLUMN_ROLE_ATTRIBUTE}
SHAPES = {"scalar": common_pb2.RESULT_SHAPE_SCALAR, "table": common_pb2.RESULT_SHAPE_TABLE,
          "series": common_pb2.RESULT_SHAPE_SERIES, "ranking": common_pb2.RESULT_SHAPE_RANKING,
          "records": common_pb2.RESULT_SHAPE_RECORDS}


def _timestamp(moment: dt.datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def _moment(value, value_type: str) -> periods.Moment | None:
    """A warehouse date or time as Python's, to the microsecond (SQLite holds text; a cut to whole seconds
    would drop the latest rows from "up to the latest")."""
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    if value_type == "date":
        return value.date() if isinstance(value, dt.datetime) else value
    return value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time())


@dataclass(frozen=True)
class WindowAsk:
    """A window asked under a grant whose signature was checked (open_grant): rows offset .. offset + limit - 1 of
    the columns `column_ids` (all granted when empty), as one JSON array with `as_json`."""

    claims: common_pb2.WindowGrantClaims
    offset: int
    limit: int
    column_ids: list[str]
    as_json: bool = False


@dataclass(frozen=True)
class Window:
    """A granted window: the result, its projected columns, and the window's rows in their wire form or as one
    JSON array (window_rows.py; `as_json`)."""

    result: PinnedResult
    columns: list[OutputColumn]
    offset: int
    encoded_rows: bytes
    as_json: bool = False


@dataclass
class Analysis:
    result: PinnedResult
    descriptor: common_pb2.ResourceDescriptor
    evidence: common_pb2.Evidence
    offer: common_pb2.SignedToken
    interpretation: common_pb2.Interpretation
    analyses_remaining: int = 0  # of the turn's budget, after this one
    session_analyses_remaining: int = 0  # of the session's budget, after this one


def utc_today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


class Gateway:
    """The gateway's domain over parts it is given (wiring.py opens them from the settings; tests may hand their
    own): the semantic model and its catalog over the warehouse, the result store, the keys and the clock."""

    def __init__(self, *, settings: ResourcesSettings, model: SemanticModel, catalog: Catalog, warehouse: Warehouse,
                 store: ResourceStorage, capabilities: CapabilityIssuer, signing_key, host_key,
                 today: Callable[[], dt.date] = utc_today, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.today = today  # the date relative periods count from, unless the model anchors them to its data
        self.model, self.catalog, self.warehouse, self.store = model, catalog, warehouse, store
        self.capabilities, self.signing_key, self.host_key = capabilities, signing_key, host_key
        self.queries = QueryCompiler(self.catalog, self.warehouse.dialect)
        self.budget = InformationBudget(self.store, settings)
        self.revocations = RevocationChecks(self.store, settings.revocation_check_seconds)
        self.window_rows = EncodedRows()
        self._references = SharedMemo(expiring(MAX_REFERENCES, REFERENCE_LIFETIME_SECONDS))  # one per date field
        # A string field's few distinct values (or None: too many), for the near spellings a value-match looks for.
        self._spellings = SharedMemo(expiring(MAX_SPELLING_FIELDS, SPELLINGS_LIFETIME_SECONDS))
        self._side_queries = ThreadPoolExecutor(max_workers=settings.query_workers, thread_name_prefix="coverage")
        version = DataVersion(self.warehouse, [entity.table for entity in self.model.entities.values()])
        self.results = ResultCache(self.store, version,
                                   self.model.freshness.cache_seconds if settings.result_cache else 0, clock)
        self._probe_outcomes = SharedMemo(expiring(MAX_PROBE_OUTCOMES, max(self.results.lifetime, 1)))

    def close(self) -> None:
        self._side_queries.shutdown(wait=False, cancel_futures=True)
        self.warehouse.close()
        self.store.close()

    # --- capability ------------------------------------------------------

    def open_capability(self, token: str, session_id: str) -> Capability:
        return self.capabilities.open(token, self.catalog.fingerprint, session_id)

    def fresh_token(self, session_id: str) -> str:
        return self.capabilities.mint(self.catalog.fingerprint, session_id, ())

    def _require_scope(self, capability: Capability, item_id: str, path: str) -> None:
        if item_id not in self.catalog.by_id:
            raise Invalid("UNKNOWN_ID", f"{item_id} is not an id of the current catalog (at {path})", metadata(path))
        if item_id not in capability.ids:
            raise Denied("ID_NOT_IN_SCOPE",
                         f"{item_id} was not returned to this session by inspect_catalog or describe_data "
                         f"(at {path})", metadata(path, id=item_id, entity=self.catalog.home_entity_id(item_id)))

    # --- catalog ---------------------------------------------------------

    def inspect(self, question: str, capability: Capability) -> tuple[list, str]:
        found = self.catalog.inspect(question)
        return found, self.capabilities.widen(capability, self._ids_of(found))

    def describe(self, entity_ids: list[str], capability: Capability) -> tuple[list, str]:
        found = []
        for index, item_id in enumerate(entity_ids):
            self._require_scope(capability, item_id, f"/entity_ids/{index}")
            entity = self.catalog.by_id[item_id]
            if not isinstance(entity, CatalogEntity):
                raise Invalid("WRONG_ID_KIND",
                              f"{item_id} is not an entity (at /entity_ids/{index})",
                              metadata(f"/entity_ids/{index}", allowed=["entity"]))
            fields = [f for f in entity.fields.values() if f.model_visible]
            found.append((entity, fields[:40], list(entity.metrics.values())[:24]))
        return found, self.capabilities.widen(capability, self._ids_of(found))

    def _ids_of(self, found) -> set[str]:
        ids = set()
        names = {entity.name for entity, _, _ in found}
        for entity, fields, metrics in found:
            ids |= {entity.id, *(f.id for f in fields), *(m.id for m in metrics)}
        ids |= {r.id for r in self.catalog.relationships_between(names)}
        return ids

    def relationships(self, entity: CatalogEntity, names: set[str]) -> list[CatalogRelationship]:
        return [r for r in self.catalog.relationships_between(names)
                if entity.name in (r.spec.from_entity, r.spec.to_entity)]

    def outline(self) -> resources_pb2.OutlineResponse:
        """Labels only, for a person browsing what they can ask: measures, dimensions and date fields."""
        entities = []
        for entity in self.catalog.entities.values():
            shown = [f for f in entity.fields.values() if f.spec.exposure == "bounded-values"]
            entities.append(resources_pb2.OutlineEntity(
                label=entity.spec.label, description=entity.spec.description,
                measures=[m.spec.label for m in entity.metrics.values()],
                dimensions=[f.spec.label for f in shown if f.spec.type not in ("date", "timestamp")],
                time_fields=[f.spec.label for f in shown if f.spec.type in ("date", "timestamp")]))
        return resources_pb2.OutlineResponse(dataset_label=self.model.dataset.label, entities=entities)

    # --- probes ----------------------------------------------------------

    def probe(self, session_id: str, turn_id: str, kind: str, target_id: str, capability: Capability,
              text: str = ""):
        """One probe of the turn's budget: (outcome, probes remaining); a value-match also returns the widened
        capability token as the last item of its outcome."""
        if kind == "value-match":
            fields = self._match_fields(target_id, text, capability)
        else:
            if text:
                raise Invalid("PROBE_TEXT_UNEXPECTED", f"text is only for value-match, not {kind}", metadata("/text"))
            target = self._probe_target(kind, target_id, capability)
        # Reserve the unit first, in the store every replica shares: racing probes cannot overrun the budget.
        used = self.store.spend("probe", session_id, turn_id, self.settings.probes_per_turn)
        if used is None:
            raise Exhausted("PROBE_BUDGET_EXHAUSTED",
                            f"at most {self.settings.probes_per_turn} probes per turn",
                            metadata(bound=self.settings.probes_per_turn))
        try:
            if kind == "value-match":
                matches, truncated = self._probed((kind, text, *(f.id for f in fields)), lambda: probes.value_match(
                    self.warehouse, fields, text, self._few_values, self._held_values()))
                outcome = (matches, truncated, self._scope_with(capability, [m.field for m in matches]))
            elif kind == "value-domain":
                outcome = self._probed((kind, target.id), lambda: probes.value_domain(self.warehouse, target))
            elif kind == "field-profile":
                outcome = self._probed((kind, target.id), lambda: probes.field_profile(self.warehouse, target))
            elif kind == "time-bounds":
                outcome = self._probed((kind, target.id), lambda: probes.time_bounds(self.warehouse, target))
            else:
                outcome = self._probed((kind, target.id), lambda: probes.join_coverage(
                    self.warehouse, self.catalog, target))
        except BaseException:
            self.store.refund("probe", session_id, turn_id)  # a probe that did not run does not count
            raise
        return outcome, self.settings.probes_per_turn - used

    def _probed(self, asked: tuple, run: Callable[[], object]):
        """A probe's outcome, kept by this replica as a result is (the same data version in its key, the model's
        freshness.cache_seconds): a question asked again reads the warehouse for neither. The unit of the turn's
        budget is spent all the same."""
        key = self.results.memo_key(asked)
        return run() if key is None else self._probe_outcomes.get_or_build(key, run)

    def _probe_target(self, kind: str, target_id: str, capability: Capability):
        path = "/relationship_id" if kind == "join-coverage" else "/field_id"
        if not target_id:
            raise Invalid("PROBE_TARGET_MISSING", f"{kind} needs {path[1:]}", metadata(path))
        self._require_scope(capability, target_id, path)
        target = self.catalog.by_id[target_id]
        if isinstance(target, CatalogField) and target.spec.exposure == "filter-only":
            raise Invalid("PROBE_NOT_ALLOWED",
                          f"{target.spec.label!r} may only be filtered on: it is never probed", metadata(path))
        wanted = CatalogRelationship if kind == "join-coverage" else CatalogField
        if not isinstance(target, wanted):
            raise Invalid("WRONG_ID_KIND",
                          f"{kind} needs a {'relationship' if wanted is CatalogRelationship else 'field'} id",
                          metadata(path, allowed=["relationship" if wanted is CatalogRelationship else "field"]))
        return target

    def _match_fields(self, field_id: str, text: str, capability: Capability) -> list[CatalogField]:
        """The fields a value-match searches: the one named, or every bounded-values string field."""
        if not text.strip():  # its length is the contract's (resources.proto)
            raise Invalid("PROBE_TEXT_INVALID", "value-match needs the words that name a value", metadata("/text"))
        if field_id:
            target = self._probe_target("value-match", field_id, capability)
            if target.spec.exposure != "bounded-values" or target.spec.type != "string":
                raise Invalid("PROBE_NOT_ALLOWED",
                              f"value-match is for string fields with bounded values; {target.spec.label!r} "
                              f"is a {target.spec.exposure} {target.spec.type}", metadata("/field_id"))
            return [target]
        # Every entity, not only those in scope: "in France" names a value of an entity the question's
        # words did not bring into the slice. Values of bounded-values fields are the model's to see.
        return [f for entity in self.catalog.entities.values() for f in entity.fields.values()
                if f.spec.exposure == "bounded-values" and f.spec.type == "string"]

    def _few_values(self, field: CatalogField) -> tuple[str, ...] | None:
        """A field's distinct values when it has few (None when more), kept a few minutes, so a value-match
        looks for near spellings without reading the warehouse each time. Read for the gateway alone: nothing the
        model sees or spends counts it."""
        return self._spellings.get_or_build(field.id, lambda: probes.few_values(self.warehouse, field))

    def _held_values(self) -> probes.FewValues | None:
        """A field's few distinct values as the data holds them now: kept under the data's version, as results are
        (None when caching is off or the version cannot be read: then every field is scanned). A value-match then
        scans only the fields with many values; on the 1M-row demo it scanned orders twice per question."""
        version = self.results.memo_key(("held-values",))
        if version is None:
            return None
        return lambda field: self._spellings.get_or_build(
            (field.id, version), lambda: probes.few_values(self.warehouse, field))

    def _scope_with(self, capability: Capability, fields: list[CatalogField]) -> str:
        """The capability widened with exactly what a value-match showed: the matched fields, their entities,
        and the relationships between those and what was already in scope (so a draft can name a path's
        role). The entities' other fields come only by asking for them (describe_data)."""
        if not fields:
            return ""
        entities = {f.entity for f in fields}
        in_scope = {e.name for e in self.catalog.entities.values() if e.id in capability.ids}
        ids = {f.id for f in fields} | {self.catalog.entities[name].id for name in entities}
        ids |= {r.id for r in self.catalog.relationships_between(in_scope | entities)}
        return self.capabilities.widen(capability, ids)

    def remaining(self, session_id: str, turn_id: str) -> tuple[int, int]:
        """(probes, analyses) the turn has left (the session's analyses: self.budget.session_remaining)."""
        return (max(0, self.settings.probes_per_turn - self.store.used("probe", session_id, turn_id)),
                max(0, self.settings.analyses_per_turn - self.store.used("analysis", session_id, turn_id)))

    # --- analysis --------------------------------------------------------

    def check_draft(self, draft_json: str, capability: Capability) -> Draft:
        return self._checked(draft_json, capability)[1]

    def _checked(self, draft_json: str, capability: Capability) -> tuple[object, Draft]:
        """The draft as parsed JSON and as checked against the catalog and the capability's scope."""
        raw = parse_draft(draft_json)
        draft = build_draft(raw, self.catalog)
        for item_id, path in draft.referenced_ids().items():
            self._require_scope(capability, item_id, path)
        return raw, draft

    def analyze(self, session_id: str, turn_id: str, draft_json: str, capability: Capability) -> Analysis:
        raw, asked = self._checked(draft_json, capability)
        resolved: list[list] = []  # each relative period as resolved: part of what the result cache is keyed by
        draft = replace(asked, filter=with_periods(asked.filter, lambda period: self._noted(period, resolved)))
        key = self.results.key(raw, resolved, self.catalog.fingerprint, self.settings.row_cap)
        cached = self.results.find(key) if key is not None else None
        if cached is not None:
            reused = self._reuse(session_id, turn_id, asked, draft, cached)
            if reused is not None:
                return reused
        return self._read(session_id, turn_id, asked, draft, key)

    def _reuse(self, session_id: str, turn_id: str, asked: Draft, draft: Draft,
               cached: CachedResult) -> Analysis | None:
        """The analysis answered with rows read before: admitted against the budgets exactly as a read is (a
        reused answer is still an analysis the session asked), a copy of the rows pinned for this turn, the
        read's own caption and evidence (observed_at: when the rows were read), and an offer signed now for this
        turn. None when the pinned rows are gone: the caller reads the warehouse."""
        admission = self.budget.admit(session_id, turn_id, asked)
        try:
            result = self.results.reuse(cached, session_id, turn_id)
        except BaseException:
            self.budget.release(session_id, turn_id)  # nothing was answered
            raise
        if result is None:
            self.budget.release(session_id, turn_id)  # the read takes it again, once its draft has planned
            return None
        read = ReadResult(cached.resource_id, cached.read_at, cached.query_fingerprint, cached.elapsed,
                          cached.interpretation)
        return self._offered(session_id, turn_id, draft, result, read, admission,
                             common_pb2.Interpretation.FromString(cached.interpretation))

    def _read(self, session_id: str, turn_id: str, asked: Draft, draft: Draft, key: str | None) -> Analysis:
        """The analysis read from the warehouse, pinned, and kept under `key` for reuse (unless None)."""
        plan = self.queries.plan(draft, self.settings.row_cap)
        # Only a draft that will run costs a unit, taken where every replica counts it; its shape is the draft as
        # asked (a relative period is a period, whatever date it resolves to today).
        admission = self.budget.admit(session_id, turn_id, asked)
        # The statement carries the time span and the row count itself; where it cannot carry the span, the span
        # is asked for alongside the result (its own connection), not after it.
        coverage = self._side_queries.submit(self._coverage, draft) if plan.span_apart else None
        try:
            rows, elapsed, query_fingerprint = self.warehouse.fetch_with_fingerprint(plan.statement,
                                                                                     plan.row_cap + 1)
        except BaseException:
            if coverage is not None:
                coverage.cancel()
            self.budget.release(session_id, turn_id)  # nothing was learnt from a query that failed
            raise
        read_at = self.results.now()
        shown = len(plan.columns)
        carried = rows[0][shown:] if rows else ()  # the same on every row: the first says them
        if plan.hidden:
            rows = [row[:shown] for row in rows]
        truncated = len(rows) > plan.row_cap
        rows = normalize_rows(rows[:plan.row_cap], [column.type for column in plan.columns])
        # How many there were in all: when the cap dropped some, or when a top-N may have left some out (a complete
        # result counts itself).
        counted = truncated or (plan.limited and len(rows) == plan.row_cap)
        total_rows = int(carried[-1]) if counted and plan.counted else None
        interpretation = interpret(draft, plan.columns, row_count=len(rows), truncated=truncated,
                                   total_rows=total_rows, coverage=self._span(draft, plan, coverage, rows, carried),
                                   limited=plan.limited)
        result = self.store.pin(session_id, turn_id, plan.columns, rows, truncated)
        read = ReadResult(result.resource_id, read_at, query_fingerprint, elapsed, interpretation.SerializeToString())
        if key is not None:
            self.results.keep(key, read)
        return self._offered(session_id, turn_id, draft, result, read, admission, interpretation)

    def _offered(self, session_id: str, turn_id: str, draft: Draft, result: PinnedResult, read: ReadResult,
                 admission: Admission, interpretation: common_pb2.Interpretation) -> Analysis:
        """The descriptor, evidence and signed offer of a pinned result, for this turn."""
        shape = "records" if draft.mode == "records" else draft.output
        descriptor = common_pb2.ResourceDescriptor(
            resource_id=result.resource_id, version_id=result.version_id, content_hash=result.content_hash,
            shape=SHAPES[shape], row_count=len(result.rows), truncated=result.truncated,
            columns=[common_pb2.ColumnDescriptor(column_id=c.id, label=c.label, type=COLUMN_TYPES[c.type],
                                                 role=COLUMN_ROLES[c.role], semantic_id=c.semantic_id,
                                                 format=formats.to_proto(c.format), additive=c.additive)
                     for c in result.columns])
        now = dt.datetime.now(dt.UTC)
        elapsed = read.elapsed
        evidence = common_pb2.Evidence(
            evidence_id=f"ev_{secrets.token_hex(8)}", resource_id=result.resource_id,
            catalog_fingerprint=self.catalog.fingerprint, query_fingerprint=read.query_fingerprint,
            observed_at=_timestamp(dt.datetime.fromtimestamp(read.read_at, dt.UTC)), row_count=len(result.rows),
            elapsed=duration_pb2.Duration(nanos=int(elapsed * 1e9) % 1_000_000_000, seconds=int(elapsed)))
        claims = common_pb2.ResourceOfferClaims(
            binding=common_pb2.TokenBinding(subject=result.resource_id, audience="host", issued_at=_timestamp(now),
                                            expires_at=_timestamp(now + OFFER_LIFETIME),
                                            nonce=secrets.token_hex(12)),
            session_id=session_id, turn_id=turn_id, descriptor=descriptor, evidence=evidence,
            interpretation=interpretation)
        offer = tokens.sign(self.signing_key, tokens.PURPOSE_RESOURCE_OFFER, claims)
        return Analysis(result, descriptor, evidence, offer, interpretation, *self.budget.remaining_after(admission))

    def _noted(self, period: RelativePeriod, resolved: list[list]) -> RelativePeriod:
        """_resolve_period, noting the dates it resolved to in `resolved`."""
        period = self._resolve_period(period)
        span = period.span
        resolved.append([period.pointer, span.start.isoformat(), span.end.isoformat(), span.end_inclusive,
                         period.reference.isoformat() if period.reference is not None else None, period.anchor])
        return period

    def _resolve_period(self, period: RelativePeriod) -> RelativePeriod:
        """A relative period as dates: counted back from today, or from the latest value of its field in the data
        when the model anchors periods there (`time_anchor`)."""
        anchor = self.model.time_anchor
        if anchor == "today":
            reference = self.today()
            span = periods.resolve(period.relative, period.unit, period.count, reference)
            if period.field.spec.type == "timestamp":  # today is a whole day: its every moment so far counts
                span = periods.whole_days(span)
            return replace(period, span=span, reference=reference, anchor=anchor)
        reference = self._reference(period.field)
        if reference is None:
            raise Conflict("NO_REFERENCE_DATE",
                           f"{period.field.spec.label!r} has no values, so "
                           f"'{periods.words(period.relative, period.unit, period.count)}' has no date to count "
                           f"back from (at {period.pointer})", metadata(period.pointer))
        return replace(period, span=periods.resolve(period.relative, period.unit, period.count, reference),
                       reference=reference, anchor=anchor)

    def _reference(self, field: CatalogField) -> periods.Moment | None:
        """The latest value of a date or time field (kept a minute: data loads are not that frequent, and the
        caption states the date used)."""
        def latest() -> periods.Moment | None:
            rows, _ = self.warehouse.fetch(sa.select(sa.func.max(field.column)), 1)
            return _moment(rows[0][0] if rows else None, field.spec.type)

        return self._references.get_or_build(field.id, latest)

    def _span(self, draft: Draft, plan: Plan, apart: Future | None, rows: list, carried: tuple) -> Coverage | None:
        """The result's time span: asked apart (`apart`, a future), carried by the statement, or none."""
        if apart is not None:
            return apart.result()
        if plan.span is None:  # no time field, or none the filter reaches from its own entity: no span is stated
            return None
        if not rows and draft.having is not None:
            # Having dropped every group, and the span with them: only a statement of its own can say it.
            return self._coverage(draft)
        return self._carried_coverage(plan.span, carried)

    @staticmethod
    def _carried_coverage(field: CatalogField, carried: tuple) -> Coverage | None:
        """The span the statement carried (none over no rows: nothing was reached)."""
        if not carried:
            return Coverage(field, None, None)
        try:
            return Coverage(field, _moment(carried[0], field.spec.type), _moment(carried[1], field.spec.type))
        except (ValueError, TypeError) as exc:  # a value that is no date: no span is stated, the result stands
            logger.warning("no time coverage for this result: %s", str(exc)[:200])
            return None

    def _coverage(self, draft: Draft) -> Coverage | None:
        """The span of the time field over the rows the result was computed from, asked on its own: the same
        filter, asking min and max of the date the result's entity is dated by (for the results whose
        statement cannot carry it)."""
        field = self.catalog.time_field(self.queries.span_home(draft))
        if field is None:
            return None
        try:
            plan = self.queries.plan(coverage_draft(draft, field), 1, carry=False)
            rows, _ = self.warehouse.fetch(plan.statement, 1)
            first, last = (_moment(value, field.spec.type) for value in rows[0]) if rows else (None, None)
            return Coverage(field, first, last)
        except (Refusal, ValueError, TypeError, sa.exc.SQLAlchemyError) as exc:
            # e.g. the filter cannot reach the time field, or a value that is no date: no span is stated
            # (none invented), and the result itself stands.
            logger.warning("no time coverage for this result: %s", str(exc)[:200])
            return None

    # --- windows ---------------------------------------------------------

    def open_grant(self, grant: common_pb2.SignedToken) -> common_pb2.WindowGrantClaims:
        try:
            claims = tokens.verify(self.host_key, tokens.PURPOSE_WINDOW_GRANT, grant, common_pb2.WindowGrantClaims)
            tokens.check_binding(claims.binding, "resources", GRANT_MAX_LIFETIME)
        except tokens.TokenError as exc:
            raise Denied(exc.reason.replace("TOKEN_", "GRANT_"), f"window grant refused: {exc}") from None
        return claims

    def revoke(self, grants: list[common_pb2.SignedToken]) -> int:
        """Revoke every grant in the shared store (a replica that did not get this call refuses them too)."""
        now = time.time()
        revoked = 0
        for grant in grants:
            try:
                claims = tokens.verify(self.host_key, tokens.PURPOSE_WINDOW_GRANT, grant,
                                       common_pb2.WindowGrantClaims)
            except tokens.TokenError as exc:
                raise Denied(exc.reason.replace("TOKEN_", "GRANT_"), f"cannot revoke: {exc}") from None
            expires = claims.binding.expires_at.ToDatetime(dt.UTC).timestamp()
            # An expired grant is refused anyway; its revocation need not be kept.
            if expires > now and self.revocations.revoke(claims.grant_id, expires):
                revoked += 1
        return revoked

    def window(self, claims: common_pb2.WindowGrantClaims, offset: int, limit: int, column_ids: list[str],
               as_json: bool = False, from_memory: bool = False) -> Window | None:
        """A window of a pinned result under a grant's `claims` (open_grant: its signature checked once, however
        many tries the window takes), its rows as one JSON array with `as_json`; or a refusal. With `from_memory`
        nothing is read or encoded: None when the store would have to be asked (a revocation not known here, a
        result not held here) or rows encoded, and the caller asks again without it (off the event loop)."""
        outcome = self.windows([WindowAsk(claims, offset, limit, column_ids, as_json)], from_memory)[0]
        if isinstance(outcome, Refusal):
            raise outcome
        return outcome

    def windows(self, asked: Sequence[WindowAsk], from_memory: bool = False) -> list[Window | Refusal | None]:
        """Each window as window() answers it, or the refusal it would raise, in the order asked; the revocations
        this replica does not know are asked of the store in one query for them all. A store that does not answer
        fails the whole call (Unavailable), as it fails a single window."""
        revocations = self.revocations
        if from_memory:
            revoked = [revocations.known(ask.claims.grant_id) for ask in asked]
        else:
            among = revocations.revoked_among([ask.claims.grant_id for ask in asked])
            revoked = [ask.claims.grant_id in among for ask in asked]
        outcomes: list[Window | Refusal | None] = []
        for ask, is_revoked in zip(asked, revoked, strict=True):
            try:
                outcomes.append(None if is_revoked is None else self._window(ask, is_revoked, from_memory))
            except Unavailable:  # the store is away: the call's failure (retried as a whole), not one window's answer
                raise
            except Refusal as refusal:
                outcomes.append(refusal)
        return outcomes

    def _window(self, ask: WindowAsk, revoked: bool, from_memory: bool) -> Window | None:
        claims, offset, limit = ask.claims, ask.offset, ask.limit
        if revoked:
            raise Denied("GRANT_REVOKED", "this window grant was revoked by the host")
        cap = min(MAX_WINDOW_ROWS, claims.max_window_rows or MAX_WINDOW_ROWS)
        if limit < 1 or limit > cap:
            raise Invalid("WINDOW_TOO_LARGE", f"limit must be between 1 and {cap}", {"max": str(cap)})
        if claims.HasField("row") and offset != claims.row:  # a grant for one figure reads its one cell
            raise Denied("WINDOW_OUTSIDE_GRANT", f"this grant reads row {claims.row} only", {"row": str(claims.row)})
        result = self.store.remembered(claims.resource_id) if from_memory else self.store.get(claims.resource_id)
        if result is None:
            if from_memory:
                return None
            raise NotFound("RESOURCE_NOT_FOUND", f"no pinned result {claims.resource_id}")
        if (claims.version_id, claims.content_hash) != (result.version_id, result.content_hash):
            raise Denied("GRANT_RESOURCE_MISMATCH", "the grant names another version of this result")
        positions = _projection(claims, result, ask.column_ids)
        rows = self.window_rows.window(result, positions, offset, limit, encode=not from_memory,
                                       form="json" if ask.as_json else "proto")
        return None if rows is None else Window(result, [result.columns[i] for i in positions], offset, rows,
                                                ask.as_json)


def _projection(claims: common_pb2.WindowGrantClaims, result: PinnedResult, column_ids: list[str]) -> tuple[int, ...]:
    """The positions in `result` of the columns asked (all granted ones when none are named); each must be granted
    and in the result."""
    granted = list(claims.column_ids)
    known = {c.id for c in result.columns}
    projection = list(column_ids) or granted
    for index, column_id in enumerate(projection):
        if column_id not in granted or column_id not in known:
            raise Denied("COLUMN_NOT_GRANTED",
                         f"column {column_id!r} is not granted (at /column_ids/{index})",
                         {"column_id": column_id})
    return tuple(next(i for i, c in enumerate(result.columns) if c.id == cid) for cid in projection)
