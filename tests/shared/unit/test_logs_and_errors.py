"""JSON log lines carry correlation ids; errors carry a machine-readable reason."""

from __future__ import annotations

import json
import logging

import grpc

from shared.logs import JsonFormatter, correlated, correlation, log
from shared.rpc.errors import DOMAIN, error_details, status_of
from shared.rpc.next_steps import NEXT_STEPS
from shared.rpc.refusals import Conflict


def _format(record_msg: str, **fields) -> dict:
    record = logging.LogRecord("tessera.test", logging.INFO, __file__, 1, record_msg, (), None)
    if fields:
        record.fields = fields
    return json.loads(JsonFormatter("host").format(record))


def test_log_lines_are_json_with_correlation_ids():
    with correlated(request_id="r1", turn_id="t9"):
        with correlated(surface_id="s3"):
            entry = _format("committed", revision=4)
        assert correlation() == {"request_id": "r1", "turn_id": "t9"}
    assert entry["service"] == "host" and entry["msg"] == "committed" and entry["revision"] == 4
    assert (entry["request_id"], entry["turn_id"], entry["surface_id"]) == ("r1", "t9", "s3")
    assert correlation() == {}


def test_structured_fields_reach_the_handler(caplog):
    logger = logging.getLogger("tessera.test.fields")
    with caplog.at_level(logging.INFO, logger="tessera.test.fields"):
        log(logger, logging.INFO, "served", port=5)
    assert caplog.records[0].fields == {"port": 5}


class _FakeRpcError(grpc.RpcError):
    def __init__(self, status: grpc.Status):
        self._status = status

    def code(self):
        return self._status.code

    def details(self):
        return self._status.details

    def trailing_metadata(self):
        return self._status.trailing_metadata


def test_error_info_round_trips_through_the_status_trailer():
    error = Conflict("CATALOG_CHANGED", "catalog changed", {"fingerprint": "abc"})
    details = error_details(_FakeRpcError(status_of(error).to_status()))
    assert details.code == grpc.StatusCode.FAILED_PRECONDITION
    assert (details.reason, details.domain) == ("CATALOG_CHANGED", DOMAIN)
    # The metadata as raised, with the next step a model is told for this reason (shared.rpc.next_steps).
    assert details.metadata == {"fingerprint": "abc", "next_step": NEXT_STEPS["CATALOG_CHANGED"]}
    assert details.message == "catalog changed"
