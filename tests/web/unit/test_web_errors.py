"""How web words a peer's failure for the person: a status and reason, never a bare 500."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from services.web.api import ApiError, WebApi


class _Refused(grpc.aio.AioRpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        super().__init__(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=code.name)


def _call_failing_with(code: grpc.StatusCode) -> ApiError:
    async def rpc(request, timeout):
        raise _Refused(code)

    api = WebApi(host=None, agent=None, capabilities=None, sessions=None, assertions=None)
    with pytest.raises(ApiError) as raised:
        asyncio.run(api._call(rpc, object()))
    return raised.value


@pytest.mark.parametrize("code, status, reason", [
    (grpc.StatusCode.CANCELLED, 503, "SERVICE_STOPPED"),  # the peer stopped mid-call (a restart, a rollout)
    (grpc.StatusCode.UNAVAILABLE, 503, "SERVICE_UNAVAILABLE"),
    (grpc.StatusCode.DEADLINE_EXCEEDED, 504, "SERVICE_UNAVAILABLE"),
])
def test_a_peer_that_goes_away_is_a_retryable_status_with_words_for_the_person(code, status, reason):
    error = _call_failing_with(code)
    assert (error.status, error.reason) == (status, reason)
    assert "try again" in error.message
