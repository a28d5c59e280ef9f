"""Tool contracts and the per-conversation tool bridge (§9)."""

from __future__ import annotations

import asyncio
import copy
import json

import grpc
import pytest

from services.agent.tool_bridge import Tool, ToolBridge
from shared.rpc.errors import status_of
from shared.rpc.next_steps import metadata
from shared.rpc.refusals import Denied, Invalid, Refusal
from shared.tools.tool_contracts import ToolContract, ToolSchemaError, project

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["question"],
          "properties": {"question": {"type": "string", "maxLength": 200},
                         "limit": {"type": "integer", "default": 10},
                         "x-ui-hint": {"type": "string"}}}


def contract(schema=None, **kwargs) -> ToolContract:
    return ToolContract("inspect_catalog", "Find entities", schema or SCHEMA, **kwargs)


@pytest.mark.parametrize("schema,message", [
    ({"type": "array"}, "root must be"),
    ({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}, "not supported"),
    ({"type": "object", "properties": {"a": {"$ref": "https://evil.example/s.json"}}}, "resolve locally"),
    ({"type": "object", "properties": {"a": {"type": "strnig"}}}, "schema/properties/a/type"),
])
def test_invalid_tool_schemas_stop_startup(schema, message):
    with pytest.raises(ToolSchemaError, match=message):
        contract(schema)


def test_both_dialects_and_local_references():
    contract({"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema",
              "$defs": {"q": {"type": "string"}}, "properties": {"q": {"$ref": "#/$defs/q"}}})
    local = contract({"type": "object", "definitions": {"q": {"type": "string"}},
                      "properties": {"q": {"$ref": "#/definitions/q"}}})
    assert local.violations({"q": 1})[0].pointer == "/q"


def test_validation_never_coerces_inserts_or_removes():
    tool = contract()
    arguments = {"question": "revenue", "x-ui-hint": "anything"}
    before = copy.deepcopy(arguments)
    assert tool.violations(arguments) == [] and arguments == before  # no default "limit" inserted
    assert tool.violations({"question": "revenue", "limit": "10"})[0].pointer == "/limit"  # "10" is not 10
    assert tool.violations({"question": "q", "sql": "SELECT 1"})  # unknown properties refused, not dropped


ENTITIES = {"type": "object", "properties": {"entities": {"type": "array", "items": {"$ref": "#/definitions/entity"}}},
            "definitions": {"entity": {"type": "object", "properties": {"id": {"type": "string"},
                                                                         "label": {"type": "string"}}}}}


def test_results_leave_through_their_output_schema():
    schema = {**ENTITIES, "properties": {**ENTITIES["properties"], "token": {"type": "string"},
                                         "schema": {"type": "object"}}}
    value = {"entities": [{"id": "ent_1", "label": "Order", "table": "orders"}], "token": "t", "sql": "SELECT",
             "schema": {"kept": {"whole": True}}}
    assert project(value, schema) == {"entities": [{"id": "ent_1", "label": "Order"}], "token": "t",
                                      "schema": {"kept": {"whole": True}}}
    assert project({"entities": "not a list of objects"}, schema) == {"entities": "not a list of objects"}
    assert project("not an object", schema) is None  # nothing of a result of the wrong shape leaves


def run(coroutine):
    return asyncio.run(coroutine)


def _bridge(handler=None, **kwargs) -> ToolBridge:
    async def echo(arguments):
        return {"entities": [{"id": "ent_1", "label": arguments["question"], "secret": "x"}]}

    return ToolBridge([Tool(contract(output_schema=ENTITIES, subject="/draft"), handler or echo)], **kwargs)


def test_a_call_runs_once_and_its_result_is_projected():
    async def scenario():
        bridge = _bridge()
        first = await bridge.call("c1", "inspect_catalog", json.dumps({"question": "revenue"}))
        again = await bridge.call("c1", "inspect_catalog", json.dumps({"question": "revenue"}))
        return first, again

    first, again = run(scenario())
    assert first.ok and first.content == {"entities": [{"id": "ent_1", "label": "revenue"}]}
    assert not again.ok and again.error_code == "DUPLICATE_CALL_ID"


@pytest.mark.parametrize("tool,arguments,code", [
    ("run_sql", '{"question": "x"}', "UNKNOWN_TOOL"),
    ("inspect_catalog", '{"question": "x", "question": "y"}', "ARGUMENTS_NOT_JSON"),
    ("inspect_catalog", '{"question": NaN}', "ARGUMENTS_NOT_JSON"),
    ("inspect_catalog", "[" * 100 + "]" * 100, "ARGUMENTS_NOT_JSON"),
    ("inspect_catalog", '{"question": 5}', "ARGUMENTS_INVALID"),
    ("inspect_catalog", '{"question": "' + "x" * 300_000 + '"}', "ARGUMENTS_NOT_JSON"),
])
def test_bad_calls_are_results_for_the_model_and_do_not_run(tool, arguments, code):
    ran = []

    async def handler(arguments):
        ran.append(arguments)
        return {}

    result = run(_bridge(handler).call("c1", tool, arguments))
    assert not result.ok and result.error_code == code and ran == []
    taught = result.refusal()  # where, and what to do next, for every refusal
    assert taught["pointer"] == "" or taught["pointer"].startswith("/")
    assert taught["next_step"] and taught["error"] == code


def test_the_call_limit_keeps_every_id():
    async def scenario():
        bridge = _bridge(max_calls=3)
        outcomes = [await bridge.call(f"c{i}", "inspect_catalog", '{"question": "q"}') for i in range(4)]
        repeat = await bridge.call("c0", "inspect_catalog", '{"question": "q"}')
        return outcomes, repeat

    outcomes, repeat = run(scenario())
    assert [o.ok for o in outcomes] == [True, True, True, False] and outcomes[3].error_code == "CALL_LIMIT"
    assert repeat.error_code in ("DUPLICATE_CALL_ID", "CALL_LIMIT")


def test_tool_failures_become_results():
    async def refuse(arguments):
        raise Denied("ID_NOT_IN_SCOPE", "unseen id")

    async def crash(arguments):
        raise ZeroDivisionError("internal detail")

    refused = run(_bridge(refuse).call("c1", "inspect_catalog", '{"question": "q"}'))
    crashed = run(_bridge(crash).call("c1", "inspect_catalog", '{"question": "q"}'))
    assert (refused.error_code, refused.error_message) == ("ID_NOT_IN_SCOPE", "unseen id")
    assert crashed.error_code == "TOOL_FAILED" and "internal detail" not in crashed.error_message
    assert refused.next_step.startswith("Call describe_data") and crashed.next_step


def test_a_peers_refusal_points_into_the_arguments_and_keeps_what_it_allows():
    class PeerRefusal(grpc.RpcError):
        def __init__(self, refusal: Refusal) -> None:
            self.status = status_of(refusal).to_status()

        def code(self):
            return self.status.code

        def details(self):
            return self.status.details

        def trailing_metadata(self):
            return self.status.trailing_metadata

    async def peer(arguments):
        raise PeerRefusal(Invalid("AMBIGUOUS_PATH", "two ways",
                                  metadata("/dimensions/0", allowed=[["rel_a"], ["rel_b"]], roles="x")))

    result = run(_bridge(peer).call("c1", "inspect_catalog", '{"question": "q"}'))
    assert (result.pointer, result.allowed, result.details) == ("/draft/dimensions/0", [["rel_a"], ["rel_b"]],
                                                                {"roles": "x"})
    assert result.refusal()["next_step"].startswith("Add via at pointer")


def test_cancelling_stops_running_tools_and_closing_suppresses_results():
    async def scenario():
        started, cancelled = asyncio.Event(), asyncio.Event()

        async def slow(arguments):
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return {}

        bridge = _bridge(slow)
        call = asyncio.create_task(bridge.call("c1", "inspect_catalog", '{"question": "q"}'))
        await asyncio.wait_for(started.wait(), 30)
        bridge.cancel()
        cancelled_result = await call
        closing = _bridge(slow)
        started.clear()
        late = asyncio.create_task(closing.call("c2", "inspect_catalog", '{"question": "q"}'))
        await asyncio.wait_for(started.wait(), 30)  # the tool is running when the bridge closes
        closing.close()
        after_close = await closing.call("c3", "inspect_catalog", '{"question": "q"}')
        return cancelled.is_set(), cancelled_result, await late, after_close

    was_cancelled, cancelled_result, late, after_close = run(scenario())
    assert was_cancelled and cancelled_result.error_code == "CANCELLED"
    assert late is None and after_close is None
