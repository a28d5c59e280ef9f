"""`tessera semantic init --from URL`: a draft semantic model read from a live database, for a person to review.

SQLAlchemy's inspector gives the tables, keys, foreign keys and column types; a bounded read gives each table's row
count, a sample of its rows (distinct counts, and whether text looks like e-mail addresses or phone numbers) and
the latest date of its time field. From those the draft guesses entities and relationships from keys, measures for
numeric columns, time fields from dates, and an exposure for every field that errs on the side of hiding: text is
`never-to-model` unless it has few distinct values and nothing about it looks personal. Every guess carries a
`# review:` comment saying what it was based on. The draft holds no value read from the database: only names,
types and counts.

Works on SQLite, PostgreSQL and DuckDB (docs/connect-your-warehouse.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa
import yaml

from cli.semantic_names import clip, humanize, snake
from shared.config import WAREHOUSE_URL_VARIABLE
from shared.semantic.model import MAX_DESCRIPTION_CHARS

SAMPLE_ROWS = 10_000  # rows read per table for distinct counts and value shapes
STATEMENT_SECONDS = 30  # each statement on PostgreSQL (a count or a latest date of a large table), then it stops
_KINDS = "use sqlite:///FILE, postgresql://USER@HOST/DB or duckdb:///FILE"
FEW_VALUES = 50  # a text column with at most this many distinct values may be grouped by ...
MIN_EVIDENCE = 100  # ... when at least this many values were sampled, each value seen MIN_REPEATS times on average
MIN_REPEATS = 4
STALE_DAYS = 90  # data whose latest date is older than this counts relative periods from that date
SCHEMA_VERSION_TABLE = "tessera_schema_version"  # the gateway reads it to know the schema changed; no entity
LOOKS_LIKE_SHARE = 0.5  # share of sampled values of a shape (e-mail, phone) that makes a column personal

# Column names that say a person (or a secret) is in the column: hidden from the model whatever their values.
_PERSONAL_NAME = re.compile(
    r"(^|_)(names?|first_?name|last_?name|full_?name|given_?name|family_?name|surname|middle_?name|nick_?name|"
    r"user_?name|login|e_?mail|emails?|phones?|mobile|cell|fax|address|addr|street|city|zip|zip_?code|postcode|"
    r"postal_?code|ssn|social_security|passport|birth|birth_?date|birthday|dob|date_of_birth|age|gender|sex|"
    r"ip|ip_?address|password|passwd|pwd|token|secret|api_?key|iban|bic|card|card_?number|credit_?card|cvv|"
    r"account_?number|national_?id|tax_?id|licen[cs]e|lat|lng|lon|latitude|longitude|geo|contact)($|_)")
# Column names that say free text is in the column (what people wrote): hidden too, however few its values.
_FREE_TEXT_NAME = re.compile(r"(^|_)(note|notes|comment|comments|body|message|messages|description|text|subject|"
                             r"title|summary|remarks?|feedback|content|details?)($|_)")
_IDENTIFIER_NAME = re.compile(r"(^|_)(id|uuid|guid|key|hash)$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PHONE = re.compile(r"^\+?[\d\s().-]{7,20}$")
_MONEY = re.compile(r"(^|_)(amount|price|cost|costs|revenue|sales|total|fee|fees|paid|payment|balance|value|spend|"
                    r"income|profit|margin|tax|salary|budget|charge|refund)($|_)")
_RATE = re.compile(r"(^|_)(rate|ratio|pct|percent|percentage|share|discount)($|_)")
_COUNT_LIKE = re.compile(r"(^|_)(quantity|qty|units|count|number|num|items)($|_)")


class InitError(Exception):
    """The database cannot be read, or holds nothing a model can be drafted from."""


# --- what the database says ------------------------------------------------------------------------------


@dataclass
class Column:
    name: str
    kind: str | None  # a Tessera field type; None when Tessera has none for it
    declared: str  # the database's own type name, for the review comment
    distinct: int = 0  # in the sample
    sampled: int = 0  # non-null values in the sample
    shape: str = ""  # "e-mail addresses" or "phone numbers" when most sampled values look like them
    all_within_unit: bool = False  # every sampled value between 0 and 1 (a rate stored as a fraction)


@dataclass
class Table:
    name: str
    columns: dict[str, Column]
    key: tuple[str, ...]  # primary key, else the first unique key; () when there is none
    key_from: str  # "primary key" or "unique key"
    foreign_keys: list[tuple[tuple[str, ...], str, tuple[str, ...]]]  # (columns, referred table, referred columns)
    rows: int = 0
    sample: int = 0
    latest: dict[str, dt.date] = field(default_factory=dict)  # time column → its latest date


def _kind(column_type: sa.types.TypeEngine) -> str | None:
    """The Tessera field type of a reflected column type (subclasses first: Float is a Numeric, TIMESTAMP a
    DateTime); None for types a model cannot use (JSON, arrays, binary, UUID, intervals ...)."""
    for sa_type, kind in ((sa.Boolean, "boolean"), (sa.Integer, "integer"), (sa.Float, "float"),
                          (sa.Numeric, "decimal"), (sa.DateTime, "timestamp"), (sa.Date, "date"),
                          (sa.String, "string")):
        if isinstance(column_type, sa_type):
            return kind
    return None


def read_database(url: str, sample_rows: int = SAMPLE_ROWS) -> tuple[str, str, list[Table]]:
    """How the database is named in what is written (its kind and name: never a host, user, password or query
    string), a label for the dataset, and its tables (its default schema) with counts from a bounded read."""
    engine = read_only_engine(url)
    shown = source_name(sa.make_url(url))
    try:
        with engine.connect() as connection:
            if engine.dialect.name == "duckdb":  # duckdb_engine's inspector asks for PostgreSQL's catalog tables
                tables = _reflect_duckdb(connection)
            else:
                inspector = sa.inspect(connection)
                tables = [_reflect(inspector, name) for name in sorted(inspector.get_table_names())]
            for table in tables:
                _measure(connection, table, sample_rows)
    except sa.exc.DBAPIError as exc:
        raise InitError(f"cannot read the {shown}: {_first_line(exc)}") from None
    finally:
        engine.dispose()
    if not tables:
        raise InitError(f"the {shown} has no tables in its default schema")
    database = sa.make_url(url).database
    return shown, humanize(Path(database).stem) if database else "Database", tables


def read_only_engine(url: str) -> sa.Engine:
    """An engine that cannot write, whose statements end within STATEMENT_SECONDS; a file that is not there is
    an error, never created. The URL itself is never echoed: it may hold a password."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        raise InitError(f"the database URL is not one ({_KINDS})") from None
    backend = parsed.get_backend_name()
    try:
        if backend in ("sqlite", "duckdb"):
            path = Path(parsed.database or "")
            if not parsed.database or not path.is_file():
                raise InitError(f"no {backend} database file at {path}")
            if backend == "sqlite":
                uri = f"file:{quote(str(path.resolve()))}?mode=ro"
                return sa.create_engine("sqlite://", creator=lambda: sqlite3.connect(uri, uri=True))
            return sa.create_engine(parsed, connect_args={"read_only": True})
        if backend == "postgresql":
            return sa.create_engine(parsed, connect_args={"connect_timeout": 10, "options": (
                f"-c default_transaction_read_only=on -c statement_timeout={STATEMENT_SECONDS * 1000}")})
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError):
        pass
    raise InitError(f"a {backend or 'URL'} database cannot be read here ({_KINDS})")


def source_name(url: sa.URL) -> str:
    """`postgresql database shop`, `sqlite database shop.sqlite`: what the draft and messages say of a database."""
    name = Path(url.database).name if url.get_backend_name() in ("sqlite", "duckdb") and url.database else url.database
    return f"{url.get_backend_name()} database {name or ''}".strip()


def _first_line(exc: sa.exc.DBAPIError) -> str:
    return " ".join(str(exc.orig).strip().splitlines()[:1])[:200]


def _reflect(inspector, name: str) -> Table:
    columns = {}
    for column in inspector.get_columns(name):
        columns[column["name"]] = Column(column["name"], _kind(column["type"]), str(column["type"]))
    key, key_from = tuple(inspector.get_pk_constraint(name).get("constrained_columns") or ()), "primary key"
    if not key:
        uniques = [tuple(u["column_names"]) for u in inspector.get_unique_constraints(name) if u["column_names"]]
        key, key_from = (uniques[0], "unique key") if uniques else ((), "")
    foreign_keys = [(tuple(fk["constrained_columns"]), fk["referred_table"], tuple(fk["referred_columns"]))
                    for fk in inspector.get_foreign_keys(name)
                    if fk["constrained_columns"] and fk["referred_columns"] and not fk.get("referred_schema")]
    return Table(name, columns, key, key_from, foreign_keys)


# DuckDB's type names (duckdb_columns().data_type), by how they begin; unsigned and huge integers are integers.
_DUCKDB_KINDS = (("BOOLEAN", "boolean"), ("DECIMAL", "decimal"), ("NUMERIC", "decimal"), ("DOUBLE", "float"),
                 ("FLOAT", "float"), ("REAL", "float"), ("TIMESTAMP", "timestamp"), ("DATE", "date"),
                 ("VARCHAR", "string"), ("TEXT", "string"), ("CHAR", "string"))
_DUCKDB_INTEGERS = re.compile(r"^U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$")


def _duckdb_kind(data_type: str) -> str | None:
    if _DUCKDB_INTEGERS.match(data_type):
        return "integer"
    return next((kind for prefix, kind in _DUCKDB_KINDS if data_type.startswith(prefix)), None)


def _reflect_duckdb(connection) -> list[Table]:
    """The tables of DuckDB's current schema, read from its own catalog functions."""
    tables: dict[str, Table] = {}
    for name, in connection.exec_driver_sql(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = current_schema() AND NOT temporary "
            "ORDER BY table_name"):
        tables[name] = Table(name, {}, (), "", [])
    for name, column, data_type in connection.exec_driver_sql(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE schema_name = current_schema() ORDER BY table_name, column_index"):
        if name in tables:
            tables[name].columns[column] = Column(column, _duckdb_kind(data_type), data_type)
    uniques: dict[str, tuple[str, ...]] = {}
    for name, kind, columns, referred, referred_columns in connection.exec_driver_sql(
            "SELECT table_name, constraint_type, constraint_column_names, referenced_table, referenced_column_names "
            "FROM duckdb_constraints() WHERE schema_name = current_schema() ORDER BY constraint_index"):
        table = tables.get(name)
        if table is None:
            continue
        if kind == "PRIMARY KEY":
            table.key, table.key_from = tuple(columns), "primary key"
        elif kind == "UNIQUE":
            uniques.setdefault(name, tuple(columns))
        elif kind == "FOREIGN KEY" and referred and referred_columns:
            table.foreign_keys.append((tuple(columns), referred, tuple(referred_columns)))
    for name, key in uniques.items():
        if not tables[name].key:
            tables[name].key, tables[name].key_from = key, "unique key"
    return list(tables.values())


def _measure(connection, table: Table, sample_rows: int) -> None:
    """Row count, a sample's distinct counts and value shapes, and the latest date of each date column that does not
    look personal (a birth date's says nothing of the data's period); a count
    or a latest date that takes longer than the statement bound is left unknown (-1, none)."""
    source = sa.table(table.name, *(sa.column(name) for name in table.columns))
    table.rows = _bounded(connection, sa.select(sa.func.count()).select_from(source), -1)
    usable = [c for c in table.columns.values() if c.kind is not None]
    if not usable:
        return
    rows = connection.execute(sa.select(*(source.c[c.name] for c in usable)).limit(sample_rows)).all()
    table.sample = len(rows)
    for index, column in enumerate(usable):
        values = [row[index] for row in rows if row[index] is not None]
        column.sampled = len(values)
        column.distinct = len(set(values))
        if column.kind == "string" and values:
            for shape, pattern in (("e-mail addresses", _EMAIL), ("phone numbers", _PHONE)):
                if sum(1 for v in values if isinstance(v, str) and pattern.match(v)) >= LOOKS_LIKE_SHARE * len(values):
                    column.shape = shape
        if column.kind in ("decimal", "float") and values:
            column.all_within_unit = all(0 <= float(v) <= 1 for v in values)
        if column.kind in ("date", "timestamp") and not personal_reason(column):  # only a shown date anchors time
            latest = _bounded(connection, sa.select(sa.func.max(source.c[column.name])), None)
            if isinstance(latest, str):  # SQLite keeps dates as text
                try:
                    latest = dt.datetime.fromisoformat(latest)
                except ValueError:
                    latest = None
            if isinstance(latest, dt.datetime):
                latest = latest.date()
            if isinstance(latest, dt.date):
                table.latest[column.name] = latest


def _bounded(connection, statement, otherwise):
    """The statement's one value, or `otherwise` when the database stopped it at the statement bound."""
    try:
        return connection.execute(statement).scalar()
    except sa.exc.OperationalError as exc:
        if getattr(exc.orig, "sqlstate", None) != "57014":  # PostgreSQL's query_canceled (statement_timeout)
            raise
        connection.rollback()
        return otherwise


# --- the draft -------------------------------------------------------------------------------------------


@dataclass
class Line:
    """One key of the draft: its name, its value (written as one flow mapping or scalar) and why it is so."""

    name: str
    value: object
    review: str = ""  # a guess a person should check, said in a `# review:` comment
    note: str = ""  # a plain fact (a key, a foreign key), said in a comment


@dataclass
class Entity:
    name: str
    table: Table
    field_names: dict[str, str]  # column → its field's name
    label: str
    header: list[Line]
    fields: list[Line]
    metrics: list[Line]


@dataclass
class Draft:
    source: str
    dataset_label: str
    time_anchor: Line
    entities: list[Entity]
    relationships: list[Line]
    left_out: list[str]


def singular(word: str) -> str:
    if word.endswith(("ss", "us", "is")):  # class, status, analysis
        return word
    for plural, single in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh")):
        if word.endswith(plural):
            return word[: -len(plural)] + single
    return word[:-1] if word.endswith("s") else word


def unique_name(base: str, taken) -> str:
    """`base`, or `base_2`, `base_3` ... when taken (kept within a name's 63 characters)."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base[:63 - len(str(n)) - 1]}_{n}"
    return name


def personal_reason(column: Column) -> str:
    """Why a column looks personal (its name, or most of its sampled values); "" when nothing does."""
    named = _PERSONAL_NAME.search(column.name.lower())
    if named:
        return f"its name says {named.group(2)!r}"
    if column.shape:
        return f"most sampled values look like {column.shape}"
    return ""


def _field(table: Table, column: Column, name: str, keys: set[str]) -> Line:
    spec: dict = {"type": column.kind, "label": humanize(column.name)}
    if name != column.name:
        spec = {"column": column.name, **spec}
    personal = personal_reason(column)
    seen = f"{column.distinct:,} distinct in {column.sampled:,} sampled values"
    if column.name in keys:
        spec["exposure"] = "never-to-model"
        return Line(name, spec, note="a key: joins and counts use it; the model never sees it")
    if _IDENTIFIER_NAME.search(column.name.lower()):
        spec["exposure"] = "never-to-model"
        return Line(name, spec, review="an identifier by its name (no foreign key declares it): hidden")
    if personal:
        spec.update(exposure="never-to-model", sensitivity="pii")
        return Line(name, spec, review=f"looks personal ({personal}): hidden. If it names a thing, not a person, "
                                       "and has few values, set bounded-values")
    written = _FREE_TEXT_NAME.search(column.name.lower()) if column.kind == "string" else None
    if written:
        spec.update(exposure="never-to-model", sensitivity="confidential")
        return Line(name, spec, review=f"free text by its name ({written.group(2)!r}): hidden")
    if column.kind == "string":
        if column.sampled < MIN_EVIDENCE:
            spec["exposure"] = "never-to-model"
            return Line(name, spec, review=f"too few values to judge ({seen}): hidden. If its values are few and "
                                           "harmless to show, set bounded-values")
        if column.distinct <= FEW_VALUES and column.distinct * MIN_REPEATS <= column.sampled:
            spec["exposure"] = "bounded-values"
            return Line(name, spec, review=f"few values ({seen}): the model may group and filter by them")
        spec["exposure"] = "never-to-model"
        return Line(name, spec, review=f"many values ({seen}): likely free text or identifiers, hidden")
    if column.kind in ("date", "timestamp", "boolean"):
        spec["exposure"] = "bounded-values"
        return Line(name, spec, review="the model may group and filter by it")
    spec["exposure"] = "aggregate-only"
    format_spec, why = _number_format(column)
    if format_spec:
        spec["format"] = format_spec
    return Line(name, spec, review=f"a measure: summed or averaged, never listed{why}")


def _number_format(column: Column) -> tuple[object, str]:
    name = column.name.lower()
    if _RATE.search(name) and column.all_within_unit:
        return {"style": "percent", "decimals": 1}, "; shown as a percent (every sampled value is between 0 and 1)"
    if _MONEY.search(name) and column.kind != "integer":
        return {"style": "decimal", "decimals": 2}, ("; money by its name: set {style: currency, currency: XXX} "
                                                      "with its ISO 4217 code")
    if column.kind == "integer":
        return "integer", ""
    return None, ""


def _metrics(entity_name: str, label: str, fields: list[Line], table: Table) -> list[Line]:
    plural = label.lower() + ("" if label.lower().endswith("s") else "s")
    count = {"label": clip(f"Number of {plural}", 80), "expression": "count()", "type": "integer"}
    metrics = [Line(f"{snake(singular(entity_name))}_count", count, note="counts rows")]
    for line in fields:
        spec = line.value
        if spec.get("exposure") != "aggregate-only":
            continue
        column = table.columns[spec.get("column", line.name)]
        kept = {"format": spec["format"]} if isinstance(spec.get("format"), dict) else {}
        average = Line(f"average_{line.name}", {"label": clip(f"Average {spec['label'].lower()}", 80),
                                                 "expression": f"avg({line.name})", "type": "decimal", **kept},
                       review="averaged per row")
        if _RATE.search(column.name.lower()):  # a sum of rates means nothing
            metrics.append(average)
            continue
        total_type = "integer" if column.kind == "integer" else "decimal"
        metrics.append(Line(f"total_{line.name}", {"label": clip(f"Total {spec['label'].lower()}", 80),
                                                    "expression": f"sum({line.name})", "type": total_type, **kept},
                            review="summed" + (" (a count-like name)" if _COUNT_LIKE.search(column.name) else "")))
        metrics.append(average)
    taken = {line.name for line in fields}  # a metric may not share a name with a field, nor with another metric
    for metric in metrics:
        metric.name = unique_name(snake(metric.name), taken)
        taken.add(metric.name)
    return metrics


def _entity(table: Table, name: str, left_out: list[str]) -> Entity | None:
    if not table.key:
        left_out.append(f"table {table.name}: no primary or unique key (an entity needs one to count rows once)")
        return None
    names: dict[str, str] = {}
    for column in table.columns.values():
        if column.kind is None:
            left_out.append(f"column {table.name}.{column.name}: type {column.declared} has no Tessera field type")
            continue
        names[column.name] = unique_name(snake(column.name), set(names.values()))
    missing = [c for c in table.key if c not in names]
    if missing:
        left_out.append(f"table {table.name}: its key column {missing[0]} has a type Tessera cannot use")
        return None
    keys = set(table.key) | {c for columns, _, _ in table.foreign_keys for c in columns}
    fields = [_field(table, table.columns[column], field_name, keys) for column, field_name in names.items()]
    label = humanize(singular(table.name))
    key = [names[c] for c in table.key]
    header = [Line("table", table.name),
              Line("label", label, review="the table's name in the singular"),
              Line("description", "", review="say what one row is, in a person's words: the model reads it"),
              Line("primary_key", key[0] if len(key) == 1 else key, note=f"the table's {table.key_from}")]
    dated = [line for line in fields if line.value["type"] in ("date", "timestamp")
             and line.value["exposure"] == "bounded-values"]
    if len(dated) > 1:
        header.append(Line("time_field", dated[0].name,
                           review=f"the first of {len(dated)} dates; name the one a row is dated by"))
    return Entity(name, table, names, label, header, fields, _metrics(name, label, fields, table))


def _relationships(entities: dict[str, Entity], left_out: list[str]) -> list[Line]:
    by_table = {e.table.name: e for e in entities.values()}
    lines: list[Line] = []
    for entity in entities.values():
        for columns, referred, referred_columns in entity.table.foreign_keys:
            parent = by_table.get(referred)
            if parent is None:
                left_out.append(f"foreign key {entity.table.name}({', '.join(columns)}) → {referred}: "
                                f"{referred} is not an entity")
                continue
            from_fields = [entity.field_names.get(c) for c in columns]
            to_fields = [parent.field_names.get(c) for c in referred_columns]
            if None in from_fields or None in to_fields:
                left_out.append(f"foreign key {entity.table.name}({', '.join(columns)}) → {referred}: a column of "
                                "it has a type Tessera cannot use")
                continue
            name = snake(f"{entity.name}_{parent.name}")
            if any(line.name == name for line in lines):
                name = snake(f"{entity.name}_{'_'.join(columns)}")
            lines.append(Line(name, {
                "from": entity.name, "to": parent.name, "kind": "many_to_one",
                "from_field": from_fields[0] if len(from_fields) == 1 else from_fields,
                "to_field": to_fields[0] if len(to_fields) == 1 else to_fields,
                "label": clip(f"{parent.label} of the {entity.label.lower()}", 80)},
                note=f"the foreign key {entity.table.name}({', '.join(columns)}) → {referred}"))
    return lines


def draft(source: str, label: str, tables: list[Table], today: dt.date | None = None) -> Draft:
    left_out: list[str] = []
    entities: dict[str, Entity] = {}
    for table in tables:
        if table.name == SCHEMA_VERSION_TABLE:  # Tessera's own note of the warehouse's schema version
            continue
        name = unique_name(snake(table.name), entities)
        entity = _entity(table, name, left_out)
        if entity is not None:
            entities[name] = entity
    if not entities:
        raise InitError(f"{source}: no table has a primary or unique key (" + "; ".join(left_out) + ")")
    relationships = _relationships(entities, left_out)
    # Only dates the model may see count (a birth date's latest value says nothing about the data's period), and the
    # date itself is not written: the draft holds no value read from the database.
    latest = max((e.table.latest[column] for e in entities.values() for column, name in e.field_names.items()
                  if column in e.table.latest and _shown_date(e, name)), default=None)
    today = today or dt.date.today()
    if latest is not None and (today - latest).days > STALE_DAYS:
        anchor = Line("time_anchor", "latest_data", review=f"the data's latest date is more than {STALE_DAYS} days "
                                                           "old, so \"last quarter\" counts from it, not from today")
    else:
        anchor = Line("time_anchor", "today", review="relative periods (\"last quarter\") count from today")
    return Draft(source, label, anchor, list(entities.values()), relationships, left_out)


def _shown_date(entity: Entity, field_name: str) -> bool:
    return any(line.name == field_name and line.value["exposure"] == "bounded-values" for line in entity.fields)


# --- the file --------------------------------------------------------------------------------------------


def _flow(value: object) -> str:
    return yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10_000,
                          sort_keys=False).strip().removesuffix("\n...").strip()


def _comment(text: str) -> str:
    """Text for one comment line: a database's names may hold line breaks, which would start lines of YAML."""
    return " ".join(str(text).split())


def _written(line: Line, indent: int) -> str:
    comment = f"  # review: {_comment(line.review)}" if line.review else (
        f"  # {_comment(line.note)}" if line.note else "")
    return f"{' ' * indent}{line.name}: {_flow(line.value)}{comment}"


def render(draft: Draft, today: dt.date | None = None) -> str:
    today = today or dt.date.today()
    out = [f"# Drafted by `tessera semantic init` from {draft.source} on {today.isoformat()}.",
           "# Format: docs/semantic-model.md. Review every line marked `# review:` before anyone asks a question:",
           "# the model sees every field that is not never-to-model, and every metric. Then run",
           "# `tessera semantic check FILE --warehouse URL` to see exactly what a model would be shown.",
           "# This file holds names, types and counts only: no value read from the database."]
    if draft.left_out:
        out.append("# Left out:")
        out += [f"#   {_comment(line)}" for line in draft.left_out]
    out += ["version: 1", "dataset:", f"  label: {_flow(draft.dataset_label)}  # review: the dataset's name",
            f"  description: {_flow(clip(f'Drafted from {draft.source}.', MAX_DESCRIPTION_CHARS))}"
            "  # review: what the data is about, for the model", _written(draft.time_anchor, 0), "", "entities:"]
    for entity in draft.entities:
        table = entity.table
        counted = f"{table.rows:,} rows" if table.rows >= 0 else \
            f"rows not counted (the count took over {STATEMENT_SECONDS} s)"
        sampled = f", {table.sample:,} sampled" if table.sample < table.rows or table.rows < 0 else ""
        out.append(f"  {entity.name}:  # {counted}{sampled}")
        out += [_written(line, 4) for line in entity.header]
        out.append("    fields:")
        out += [_written(line, 6) for line in entity.fields]
        out.append("    metrics:")
        out += [_written(line, 6) for line in entity.metrics]
        out.append("")
    if draft.relationships:
        out.append("relationships:")
        out += [_written(line, 2) for line in draft.relationships]
    return "\n".join(out).rstrip() + "\n"


def summary(draft: Draft) -> str:
    fields = [line for e in draft.entities for line in e.fields]
    shown = sum(1 for line in fields if line.value["exposure"] != "never-to-model")
    metrics = sum(len(e.metrics) for e in draft.entities)
    return (f"{len(draft.entities)} entities, {len(fields)} fields ({shown} the model may see), {metrics} metrics, "
            f"{len(draft.relationships)} relationships")


# --- the command -----------------------------------------------------------------------------------------


def add_parser(actions) -> None:
    init = actions.add_parser("init", help="draft a semantic model from a live database, for review")
    init.add_argument("--from", dest="source", metavar="URL",
                      help="the database: sqlite:///FILE, postgresql://USER@HOST/DB or duckdb:///FILE (a reader "
                           f"role is enough); default: ${WAREHOUSE_URL_VARIABLE}, which keeps a password off the "
                           "command line")
    init.add_argument("--out", metavar="FILE", help="write the draft here instead of standard output")
    init.add_argument("--force", action="store_true", help="replace --out if it exists (a reviewed model is kept "
                                                           "otherwise)")
    init.add_argument("--sample-rows", type=_positive, default=SAMPLE_ROWS, metavar="N",
                      help=f"rows read per table for distinct counts (default {SAMPLE_ROWS:,})")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def database_url(given: str | None) -> str | None:
    """The URL given, else the environment's (where a password stays off every process listing)."""
    return given or os.environ.get(WAREHOUSE_URL_VARIABLE) or None


def run(args: argparse.Namespace) -> int:
    url = database_url(args.source)
    if url is None:
        print(f"tessera: error: name the database with --from URL or ${WAREHOUSE_URL_VARIABLE}", file=sys.stderr)
        return 2
    if args.out and Path(args.out).exists() and not args.force:
        print(f"tessera: error: {args.out} exists (a model you may have reviewed): name another file, or add --force",
              file=sys.stderr)
        return 2
    try:
        source, label, tables = read_database(url, args.sample_rows)
        made = draft(source, label, tables)
    except InitError as exc:
        print(f"tessera: error: {exc}", file=sys.stderr)
        return 2
    for line in made.left_out:
        print(f"left out: {line}", file=sys.stderr)
    text = render(made)
    if not args.out:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"tessera: error: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
        return 1
    reviews = text.count("# review:")
    print(f"wrote a draft of {summary(made)} to {args.out}; {reviews} guesses are marked `# review:`. "
          f"Then: tessera semantic check {args.out}")
    return 0
