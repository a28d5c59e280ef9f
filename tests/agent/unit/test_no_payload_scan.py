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


def test_a_whole_turn_record_is_scanned_by_its_results_only(tmp_path):
    """A transcript holds each call and the answer next to the results (ModelTranscript): the model's own words
    may quote a value the person typed, so they are not scanned; a value in a result still is, calls or not."""
    from services.agent.turn import ModelTranscript
    from tests.fixtures.no_payload import transcript_records

    url = _warehouse(tmp_path)
    path = tmp_path / "transcript.jsonl"
    transcript = ModelTranscript(str(path))
    transcript.record("t1", "question", "how much did ann.lee@example.org spend?")
    transcript.record("t1", "call:inspect_catalog", json.dumps({"question": "ann.lee@example.org"}), "call-1")
    transcript.record("t1", "result:inspect_catalog", json.dumps({"entities": [{"label": "Customers"}]}), "call-1")
    transcript.record("t1", "call:run_analysis", json.dumps({"draft": {"filter": "ann.lee@example.org"}}), "call-2")
    transcript.record("t1", "result:run_analysis", json.dumps({"total": 1234.56}), "call-2")
    transcript.record("t1", "answer", "Here is what ann.lee@example.org spent.")
    records = transcript_records(path)
    assert [(r["kind"], r.get("call_id")) for r in records] == [
        ("question", None), ("call:inspect_catalog", "call-1"), ("result:inspect_catalog", "call-1"),
        ("call:run_analysis", "call-2"), ("result:run_analysis", "call-2"), ("answer", None)]
    assert leaks(records, url) == [("total", 1234.56)]
