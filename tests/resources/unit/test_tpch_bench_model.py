"""The TPC-H benchmark's semantic model (bench/models/tpch.yaml) loads against TPC-H's tables, and every query's draft
(bench/tpch.py) is accepted and planned as one statement on each backend; no data is generated: the tables are
created empty."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import sqlalchemy as sa
from duckdb_engine import Dialect as DuckDBDialect
from sqlalchemy.dialects import postgresql

from bench import tpch
from services.resources.catalog import Catalog
from services.resources.draft import build_draft, parse_draft
from services.resources.query_compiler import QueryCompiler
from shared.semantic.model import load_semantic_model

DIALECTS = {"sqlite": None, "postgresql": postgresql.dialect(), "duckdb": DuckDBDialect()}


@pytest.fixture(scope="module")
def empty_warehouse(tmp_path_factory):
    engine = sa.create_engine(f"sqlite:///{tmp_path_factory.mktemp('tpch') / 'tpch.sqlite'}")
    tpch.create_schema(engine)
    yield engine, Catalog(load_semantic_model(tpch.MODEL), engine)
    engine.dispose()


def _draft(catalog: Catalog, number: int):
    ids = tpch.catalog_ids(catalog)
    return build_draft(parse_draft(json.dumps(tpch.QUERIES[number][0](ids.__getitem__))), catalog)


@pytest.mark.parametrize("number", sorted(tpch.QUERIES))
def test_each_query_is_one_statement_on_every_backend(empty_warehouse, number):
    engine, catalog = empty_warehouse
    draft = _draft(catalog, number)
    for name, dialect in DIALECTS.items():
        plan = QueryCompiler(catalog, name).plan(draft, tpch.ROW_CAP)
        # The span rides along in the statement: no second statement asks for it.
        assert not plan.span_apart, name
        plan.statement.compile(dialect=dialect or engine.dialect, compile_kwargs={"literal_binds": True})
    with engine.connect() as connection:  # and it runs (on no rows)
        connection.execute(QueryCompiler(catalog, "sqlite").plan(draft, tpch.ROW_CAP).statement).fetchall()


def test_the_benchs_question_brings_every_id_the_drafts_use_into_scope(empty_warehouse):
    _, catalog = empty_warehouse
    sliced = catalog.inspect(tpch.QUESTION)
    # What InspectCatalog widens the capability to (Gateway._ids_of).
    shown = {r.id for r in catalog.relationships_between({entity.name for entity, _, _ in sliced})}
    for entity, fields, metrics in sliced:
        shown |= {entity.id, *(f.id for f in fields), *(m.id for m in metrics)}
    for number in tpch.QUERIES:
        assert set(_draft(catalog, number).referenced_ids()) <= shown, number


def test_answers_are_compared_cell_by_cell(tmp_path, monkeypatch):
    monkeypatch.setattr(tpch, "DATA", tmp_path)
    (tmp_path / "answers.json").write_text(json.dumps({"3": "l_orderkey|revenue|o_orderdate\n7|10.5000|1995-03-14\n"}))
    columns = ["l_orderkey", "o_orderdate", "revenue", "_total"]
    assert tpch.answer_problem(3, columns, [(7, dt.date(1995, 3, 14), 10.50000001, 1)]) is None
    assert "revenue" in tpch.answer_problem(3, columns, [(7, dt.date(1995, 3, 14), 10.6, 1)])
    assert "o_orderdate" in tpch.answer_problem(3, columns, [(7, "1995-03-15", 10.5, 1)])
    assert "rows" in tpch.answer_problem(3, columns, [])
    assert "no output" in tpch.answer_problem(3, ["l_orderkey"], [(7,)])
