"""The contracts' field rules on real servers: a request that breaks one is refused by the interceptor before any
servicer code runs (no session, turn or actor is looked at), and a request stream at the first message that
breaks one, with the offending field's pointer."""

from __future__ import annotations

import grpc
import pytest

from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from shared.rpc.errors import error_details
from shared.rpc.field_rules import max_chars
from tessera.agent.v1 import agent_pb2
from tessera.host.v1 import host_pb2
from tessera.rules.v1 import rules_pb2


def test_an_oversized_question_is_refused_before_the_host_looks_at_anything(running_set, credentials):
    too_long = "x" * (max_chars(rules_pb2.TEXT_KIND_QUESTION) + 1)
    # No actor, no such session: a servicer would refuse those first; the contract's rule is checked before it.
    asked = host_pb2.BeginTurnRequest(session_id="ses_nowhere", question=too_long, request_id="r-1")
    with sync_channel(running_set.handles["host"].address, credentials("agent"), "host") as channel:
        with pytest.raises(grpc.RpcError) as refused:
            invoke(channel, "host", "BeginTurn", asked)
    details = error_details(refused.value)
    assert (details.code, details.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")
    assert details.metadata["pointer"] == "/question" and details.metadata["bound"] == "2000"


def test_a_request_stream_is_refused_at_the_message_that_breaks_a_rule(running_set, credentials):
    serve = "/tessera.agent.v1.AgentService/ServeTools"
    opening = agent_pb2.ServeToolsRequest(open=agent_pb2.OpenToolTurn(session_id="ses_nowhere", question=""))
    with sync_channel(running_set.handles["agent"].address, credentials("mcp"), "agent") as channel:
        call = channel.stream_stream(serve, request_serializer=agent_pb2.ServeToolsRequest.SerializeToString,
                                     response_deserializer=agent_pb2.ServeToolsResponse.FromString)
        with pytest.raises(grpc.RpcError) as refused:
            list(call(iter([opening]), timeout=30))
    details = error_details(refused.value)
    assert (details.code, details.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")
    assert details.metadata["pointer"] == "/open/question"
