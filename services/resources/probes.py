"""The fixed discovery probes (§5). Output is data from the warehouse:
it reaches the model only through the agent's read-path screen."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
import sqlalchemy as sa

from services.resources.catalog import Catalog, CatalogField, CatalogRelationship
from services.resources.draft import TEMPORAL
from services.resources.results import normalize_cell
from services.resources.semantic_model import MAX_PHRASE_WORDS, key_fields, spoken_words
from services.resources.warehouse import Warehouse
from shared.errors import TesseraError
from shared.next_steps import metadata

MAX_DOMAIN_VALUES = 20
MAX_MATCH_TEXT_CHARS = 300
MAX_MATCHES = 20


@dataclass(frozen=True)
class ValueMatch:
    """A stored value a text names, and the text's words (lower-cased) that named it."""

    field: CatalogField
    value: str
    matched_text: str


def _refuse(reason: str, message: str) -> TesseraError:
    return TesseraError(grpc.StatusCode.INVALID_ARGUMENT, reason, message, metadata("/field_id"))


def value_domain(warehouse: Warehouse, fld: CatalogField) -> tuple[list[str], bool]:
    if fld.spec.exposure != "bounded-values":
        raise _refuse("PROBE_NOT_ALLOWED", f"value-domain is only for fields with bounded values; "
                                           f"{fld.spec.label!r} is {fld.spec.exposure}")
    column = fld.column
    statement = sa.select(column).where(column.is_not(None)).distinct().order_by(column).limit(MAX_DOMAIN_VALUES + 1)
    rows, _ = warehouse.fetch(statement, MAX_DOMAIN_VALUES + 1)
    values = [str(normalize_cell(row[0], fld.spec.type)) for row in rows[:MAX_DOMAIN_VALUES]]
    return values, len(rows) > MAX_DOMAIN_VALUES


def field_profile(warehouse: Warehouse, fld: CatalogField) -> tuple[int, int, int]:
    column = fld.column
    statement = sa.select(sa.func.count(), sa.func.count(column), sa.func.count(sa.distinct(column))).select_from(
        column.table)
    (total, non_null, distinct), = warehouse.fetch(statement, 1)[0]
    return int(total), int(total) - int(non_null), int(distinct)


def time_bounds(warehouse: Warehouse, fld: CatalogField):
    if fld.spec.type not in TEMPORAL:
        raise _refuse("PROBE_NOT_ALLOWED", f"time-bounds needs a date or time field; {fld.spec.label!r} is "
                                           f"{fld.spec.type}")
    statement = sa.select(sa.func.min(fld.column), sa.func.max(fld.column))
    (earliest, latest), = warehouse.fetch(statement, 1)[0]
    return (normalize_cell(earliest, "timestamp"), normalize_cell(latest, "timestamp"))


def join_coverage(warehouse: Warehouse, catalog: Catalog, rel: CatalogRelationship) -> tuple[int, int]:
    spec = rel.spec
    start, end = catalog.entities[spec.from_entity], catalog.entities[spec.to_entity]
    start_table, end_table = start.table.alias("f"), end.table.alias("t")
    pairs = zip(key_fields(spec.from_field), key_fields(spec.to_field), strict=True)
    # Match on existence, so a one-to-many target cannot count a row twice.
    matched = sa.exists().where(*[end_table.c[end.fields[b].column.name] == start_table.c[start.fields[a].column.name]
                                  for a, b in pairs])
    statement = sa.select(sa.func.count(), sa.func.sum(sa.case((matched, 1), else_=0))).select_from(start_table)
    (total, hits), = warehouse.fetch(statement, 1)[0]
    return int(total or 0), int(hits or 0)


def phrases(text: str) -> list[str]:
    """Every run of 1-4 consecutive words of `text` (as spoken_words reads them), each once: the longest first,
    then in the order they are said, so the words that named a value are the fullest that did ("in store", not
    "store")."""
    words = spoken_words(text)
    found: dict[str, None] = {}
    for size in range(MAX_PHRASE_WORDS, 0, -1):
        for start in range(len(words) - size + 1):
            found.setdefault(" ".join(words[start:start + size]))
    return list(found)


def _spaced(text: str) -> str:
    """Underscores and hyphens read as spaces: a person says "small business" of `small_business`."""
    return text.replace("_", " ").replace("-", " ")


def _namer(fld: CatalogField, said: list[str], value: str) -> str:
    """The first of the phrases `said` that names `value` of `fld`: the value itself (any case, underscores
    and hyphens as spaces) or another word the model declares for it. Only the text's own words are returned,
    never the value: a database that lowers some letter otherwise than Python gets "" rather than a value."""
    spaced = _spaced(value.casefold())
    other_words = {" ".join(spoken_words(phrase)) for phrase in fld.spec.values.get(value, ())}
    return next((phrase for phrase in said if _spaced(phrase.casefold()) == spaced or phrase in other_words), "")


def value_match(warehouse: Warehouse, fields: list[CatalogField], text: str) -> tuple[list[ValueMatch], bool]:
    """The values of `fields` that `text` names as whole words, whatever their case: a person writes
    "france" or "West coast", the data says "France" and "West Coast"; "small business" names
    `small_business`; and "online" names `web` where the model says so (`values:`). Only values the data
    holds are returned."""
    said = phrases(text)
    said_once, spaced = set(said), sorted({_spaced(phrase) for phrase in said})
    found: list[ValueMatch] = []
    for fld in fields:
        if not said or len(found) > MAX_MATCHES:
            break
        column = fld.column
        named = sa.func.replace(sa.func.replace(warehouse.lowered(column), "_", " "), "-", " ").in_(spaced)
        declared = [value for value, others in fld.spec.values.items()
                    if any(" ".join(spoken_words(other)) in said_once for other in others)]
        condition = sa.or_(named, column.in_(declared)) if declared else named
        statement = sa.select(column).where(condition).distinct().order_by(column).limit(MAX_MATCHES + 1)
        rows, _ = warehouse.fetch(statement, MAX_MATCHES + 1)
        found += [ValueMatch(fld, str(row[0]), _namer(fld, said, str(row[0]))) for row in rows]
    return found[:MAX_MATCHES], len(found) > MAX_MATCHES
