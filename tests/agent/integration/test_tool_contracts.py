"""The six data tools as any model is offered them (over MCP's tools/list): complete schemas from one source,
and descriptions a model can act on.

- the draft schema run_analysis advertises is the gateway's, byte for byte (RFC 8785), as the agent lists it, as
  the MCP front lists it and as the gateway publishes and enforces it;
- no schema holds a bare object or array, and every property says what it is;
- every description is short enough to read and ends with an example valid against its own schema.
"""

from __future__ import annotations

import json

import anyio
import jsonschema
import pytest
from mcp import Client

from services.resources import draft as gateway_draft
from shared.data.analysis_draft import DEFINITIONS, DRAFT_SCHEMA_JSON
from shared.data.bounded_json import canonical
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.agent.v1 import agent_pb2
from tessera.resources.v1 import resources_pb2
from tests.mcp.integration.test_mcp_front import DATA_TOOLS, _stdio

MAX_DESCRIPTION = 1_500
MAX_DESCRIPTIONS = 6_000


@pytest.fixture(scope="module")
def listed(running_set) -> dict[str, dict]:
    """tools/list as an MCP client receives it: name → the tool as JSON."""
    async def scenario():
        async with Client(_stdio(running_set, "contracts"), cache=None) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(scenario)
    assert {t.name for t in tools} == DATA_TOOLS
    return {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in tools}


def test_the_draft_schema_is_one_definition_byte_for_byte(listed, running_set, credentials):
    with sync_channel(running_set.handles["agent"].address, credentials("mcp"), "agent") as agent:
        agent_tools = {t.name: t for t in invoke(agent, "agent", "ListDataTools",
                                                 agent_pb2.ListDataToolsRequest()).tools}
    with sync_channel(running_set.handles["resources"].address, credentials("agent"), "resources") as gateway:
        context = invoke(gateway, "resources", "InspectContext", resources_pb2.InspectContextRequest(
            turn=resources_pb2.TurnRef(session_id="contracts", turn_id="contracts-1")))
    advertised = listed["run_analysis"]["inputSchema"]
    published = json.loads(context.draft_schema_json)
    # The MCP front lists exactly what the agent lists, and the agent's definitions are the gateway's.
    assert canonical(advertised) == agent_tools["run_analysis"].input_schema_json
    assert canonical(advertised["definitions"]) == canonical(published["definitions"])
    assert advertised["properties"]["draft"]["$ref"] == published["$ref"] == "#/definitions/draft"
    assert context.draft_schema_json == DRAFT_SCHEMA_JSON  # what it publishes is its own text
    # What the gateway validates against is that very definition, not a copy of it.
    for validator in gateway_draft._VALIDATORS.values():
        assert validator.schema["definitions"] is DEFINITIONS
    for name, tool in listed.items():  # every tool, input and output, listed exactly as the agent lists it
        assert canonical(tool["inputSchema"]) == agent_tools[name].input_schema_json
        assert canonical(tool["outputSchema"]) == agent_tools[name].output_schema_json


def _subschemas(schema, where="#"):
    """Every schema inside `schema`, with where it is."""
    if not isinstance(schema, dict):
        return
    yield where, schema
    for key in ("properties", "definitions", "patternProperties"):
        for name, child in schema.get(key, {}).items():
            yield from _subschemas(child, f"{where}/{key}/{name}")
    for key in ("items", "additionalProperties", "not", "if", "then", "else"):
        if isinstance(schema.get(key), dict):
            yield from _subschemas(schema[key], f"{where}/{key}")
    for key in ("oneOf", "anyOf", "allOf", "items"):
        if isinstance(schema.get(key), list):
            for index, child in enumerate(schema[key]):
                yield from _subschemas(child, f"{where}/{key}/{index}")


def _described(schema: dict, root: dict) -> bool:
    if "description" in schema:
        return True
    reference = schema.get("$ref", "")
    return reference.startswith("#/definitions/") and "description" in root["definitions"][reference[14:]]


@pytest.mark.parametrize("which", ["inputSchema", "outputSchema"])
def test_no_schema_has_a_bare_object_or_array_and_every_property_is_described(listed, which):
    for name, tool in listed.items():
        root = tool[which]
        for where, schema in _subschemas(root):
            types = schema.get("type", [])
            types = types if isinstance(types, list) else [types]
            if "object" in types:  # says what it holds: its properties, or what any property may be
                assert "properties" in schema or "additionalProperties" in schema, (name, where)
                assert schema.get("additionalProperties") is not True or "description" in schema, (name, where)
            if "array" in types:
                assert isinstance(schema.get("items"), dict | list), (name, where)
            conditional = any(f"/{key}" in where for key in ("if", "then", "else"))
            for prop, child in {} if conditional else schema.get("properties", {}).items():
                # A fixed value (a shape's op or kind) is described by the shape that holds it; a condition
                # (if/then) restates properties described where they are declared.
                assert _described(child, root) or ("const" in child and "description" in schema), \
                    (name, f"{where}/properties/{prop}")


def test_descriptions_are_short_and_end_with_an_example_their_schema_accepts(listed):
    lengths = {name: len(tool["description"]) for name, tool in listed.items()}
    assert max(lengths.values()) <= MAX_DESCRIPTION and sum(lengths.values()) <= MAX_DESCRIPTIONS, lengths
    for tool in listed.values():
        example = json.loads(tool["description"].rsplit("\nExample: ", 1)[1])
        jsonschema.Draft7Validator(tool["inputSchema"]).validate(example)


# What each placeholder in the descriptions' examples stands for in the demo catalog: (kind, label).
EXAMPLE_IDS = {"ent_ordersxxxxxx": ("entity", "Order"), "met_revenuexxxxx": ("metric", "Net revenue"),
               "fld_orderedatxxx": ("field", "Order time")}


def _example(tool: dict) -> dict:
    return json.loads(tool["description"].rsplit("\nExample: ", 1)[1])


def _with_ids(example: dict, catalog: dict) -> dict:
    """The example with each placeholder replaced by the id the catalog shown gives the item it stands for."""
    items = {("entity", e["label"]): e["id"] for e in catalog["entities"]}
    for entity in catalog["entities"]:
        items.update({("field", f["label"]): f["id"] for f in entity["fields"]})
        items.update({("metric", m["label"]): m["id"] for m in entity["metrics"]})
    text = json.dumps(example)
    for placeholder, item in EXAMPLE_IDS.items():
        text = text.replace(placeholder, items[item])
    return json.loads(text)


def _component_for(block: dict, frozen: dict) -> str:
    """The offered component whose own schema in the slice takes the example block's data."""
    proposal = frozen["schema"]["oneOf"][0]
    for variant in proposal["properties"]["blocks"]["items"]["oneOf"]:
        if jsonschema.Draft7Validator(variant["properties"]["data"]).is_valid(block["data"]):
            return variant["properties"]["component"]["const"]
    raise AssertionError(f"no offered component takes {block['data']}")


def test_every_description_example_runs_through_the_services_in_the_order_of_a_turn(listed, running_set):
    async def scenario() -> list[tuple[str, bool, dict]]:
        async with Client(_stdio(running_set, "examples"), cache=None) as client:
            ran = []

            async def call(name: str, arguments: dict) -> dict:
                result = await client.call_tool(name, arguments)
                ran.append((name, not result.is_error, json.loads(result.content[0].text)))
                return ran[-1][2]

            await call("inspect_current_context", _example(listed["inspect_current_context"]))
            catalog = await call("inspect_catalog", _example(listed["inspect_catalog"]))
            for name in ("describe_data", "probe_data", "run_analysis"):
                await call(name, _with_ids(_example(listed[name]), catalog))
            frozen = await call("present_ui", {})
            example = _example(listed["present_ui"])
            for block in example["proposal"]["blocks"]:
                block["component"] = _component_for(block, frozen)
            await call("present_ui", example)
            return ran

    ran = anyio.run(scenario)
    assert [name for name, _, _ in ran] == ["inspect_current_context", "inspect_catalog", "describe_data",
                                            "probe_data", "run_analysis", "present_ui", "present_ui"]
    assert all(ok for _, ok, _ in ran), [result for _, ok, result in ran if not ok]
    assert ran[3][2]["matches"], ran[3]  # the example probe names a value the data holds
    assert ran[4][2]["resource"]["rows"] > 0 and ran[-1][2]["outcome"] == "committed", ran[-1]
