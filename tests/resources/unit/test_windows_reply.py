"""A ResolveWindows reply stays within its size bound: windows past it are refused as WINDOWS_REPLY_FULL (asked
again in another call), and the first is always answered, so every call makes progress."""

from __future__ import annotations

import grpc

from services.resources.server import windows_reply
from shared.rpc.refusals import Denied, Refusal
from tessera.resources.v1 import resources_pb2


def _refused(n: int) -> Refusal:
    return Denied("GRANT_REVOKED", f"window {n}: revoked")


def _reasons(data: bytes) -> list[str]:
    return [w.refused.reason for w in resources_pb2.ResolveWindowsResponse.FromString(data).windows]


def test_within_the_bound_every_outcome_is_as_it_was():
    assert _reasons(windows_reply([_refused(1), _refused(2), _refused(3)]).data) == ["GRANT_REVOKED"] * 3


def test_past_the_bound_the_rest_are_refused_as_full_and_the_first_always_goes():
    one = len(windows_reply([_refused(1)]).data)
    assert _reasons(windows_reply([_refused(1), _refused(2), _refused(3)], budget=one).data) == [
        "GRANT_REVOKED", "WINDOWS_REPLY_FULL", "WINDOWS_REPLY_FULL"]
    full = resources_pb2.ResolveWindowsResponse.FromString(windows_reply([_refused(1), _refused(2)], budget=one).data)
    assert full.windows[1].refused.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]


def test_a_first_window_over_the_whole_bound_is_refused_not_sent():
    big = _refused(1)
    big.message = "x" * 5000  # an outcome of ~5,000 bytes against a 400-byte bound
    replies = resources_pb2.ResolveWindowsResponse.FromString(windows_reply([big, _refused(2)], budget=400).data)
    assert [w.refused.reason for w in replies.windows] == ["WINDOW_OVER_REPLY_BOUND", "GRANT_REVOKED"]
