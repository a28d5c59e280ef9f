"""The no-payload scan itself (tests/fixtures/no_payload.py) finds what it is there to find: a scan that
cannot fail would prove nothing about the model never seeing rows."""

from __future__ import annotations

import json

import sqlalchemy as sa

from tests.fixtures.no_payload import leaks


def _warehouse(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'w.sqlite'}"
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE customers (name TEXT, email TEXT, balance REAL)"))
        connection.execute(sa.text("INSERT INTO customers VALUES ('Ann', 'ann.lee@example.org', 1234.56)"))
    engine.dispose()
    return url


def _result(turn: str, tool: str, content: dict) -> dict:
    return {"kind": f"result:{tool}", "turn_id": turn, "text": json.dumps(content)}


def test_a_cell_a_figure_or_a_long_cell_inside_text_is_a_leak_and_a_probed_value_is_not(tmp_path):
    url = _warehouse(tmp_path)
    records = [
        _result("t1", "run_analysis", {"columns": [{"label": "Net revenue"}], "rows": 12}),  # descriptors only
        _result("t2", "describe_data", {"label": "ann.lee@example.org"}),  # a cell as a whole value
        _result("t3", "run_analysis", {"note": "top customer: ann.lee@example.org (most orders)"}),  # inside text
        _result("t4", "run_analysis", {"total": 1234.56}),  # a figure with decimals
        _result("t5", "probe_data", {"untrusted_values": ["ann.lee@example.org"]}),  # probe output: allowed,
        _result("t5", "describe_data", {"label": "ann.lee@example.org"}),  # and in that turn only
    ]
    assert leaks(records, url) == [("label", "ann.lee@example.org"),
                                   ("note", "top customer: ann.lee@example.org (most orders)"),
                                   ("total", 1234.56)]
