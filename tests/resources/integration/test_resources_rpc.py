"""The Resource Gateway over gRPC, as the agent and the host use it.

Includes the no-payload scan: every model-facing response of a realistic
session is searched for warehouse values (names, emails, ticket text,
amounts); only value-domain probe output may carry warehouse values.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import secrets

import grpc
import pytest
import sqlalchemy as sa
from google.protobuf.json_format import MessageToJson

from shared.identity import tokens
from shared.identity.certs import load_signing_key, load_verify_key, signing_key_path, verify_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from shared.rpc.errors import error_details
from shared.rpc.field_rules import stated
from tessera.common.v1 import common_pb2
from tessera.resources.v1 import resources_pb2


@pytest.fixture(scope="module")
def as_agent(running_set, credentials):
    with sync_channel(running_set.handles["resources"].address, credentials("agent"), "resources") as channel:
        yield lambda method, request: invoke(channel, "resources", method, request, timeout=30)


@pytest.fixture(scope="module")
def as_host(running_set, credentials):
    with sync_channel(running_set.handles["resources"].address, credentials("host"), "resources") as channel:
        yield lambda method, request: invoke(channel, "resources", method, request, timeout=30)


TURN = resources_pb2.TurnRef(session_id="sess-rpc", turn_id="turn-1")


def _find(entities, label):
    for entity in entities:
        for item in [*entity.fields, *entity.metrics]:
            if item.label == label:
                return item.field_id if hasattr(item, "field_id") and item.field_id else item.metric_id
    raise AssertionError(f"{label} not in slice")


def test_a_model_session_never_sees_warehouse_values(as_agent, as_host, cert_dir, warehouse_url):
    responses = []
    context = as_agent("InspectContext", resources_pb2.InspectContextRequest(turn=TURN))
    responses.append(context)
    catalog = as_agent("InspectCatalog", resources_pb2.InspectCatalogRequest(
        turn=TURN, question="net revenue and orders by region, channel and customer segment",
        capability_token=context.capability_token))
    responses.append(catalog)
    entity_ids = [e.entity_id for e in catalog.entities][:4]
    described = as_agent("Describe", resources_pb2.DescribeRequest(turn=TURN, entity_ids=entity_ids,
                                                                    capability_token=catalog.capability_token))
    responses.append(described)
    token = described.capability_token
    entities = list(catalog.entities)
    revenue, orders = _find(entities, "Net revenue"), _find(entities, "Number of orders")
    region, segment = _find(entities, "Region name"), _find(entities, "Customer segment")
    when, channel = _find(entities, "Order time"), _find(entities, "Sales channel")
    drafts = [
        {"mode": "aggregate", "measures": [{"id": "revenue", "metric": revenue}, {"id": "orders", "metric": orders}],
         "dimensions": [{"id": "region", "field": region}], "output": "table"},
        {"mode": "aggregate", "measures": [{"id": "revenue", "metric": revenue}],
         "dimensions": [{"id": "month", "field": when, "grain": "month"}, {"id": "segment", "field": segment}]},
        {"mode": "records", "entity": next(e.entity_id for e in entities if e.label == "Order"),
         "fields": [{"id": "when", "field": when}, {"id": "channel", "field": channel}],
         "order_by": [{"output": "when", "direction": "desc"}]},
    ]
    analyses = []
    for draft in drafts:
        reply = as_agent("Analyze", resources_pb2.AnalyzeRequest(turn=TURN, draft_json=json.dumps(draft),
                                                                 capability_token=token))
        responses.append(reply)
        analyses.append(reply)
    profile = as_agent("Probe", resources_pb2.ProbeRequest(turn=TURN, kind=resources_pb2.PROBE_KIND_FIELD_PROFILE,
                                                           field_id=segment, capability_token=token))
    responses.append(profile)

    model_facing = "\n".join(MessageToJson(r) for r in responses)
    model_facing += "\n" + "\n".join(r.offer.claims.decode("latin-1") for r in analyses)
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        secrets_in_warehouse = set()
        for sql in ("SELECT name, email FROM customers", "SELECT subject, body FROM support_tickets",
                    "SELECT name FROM regions", "SELECT name FROM products"):
            for row in connection.execute(sa.text(sql)):
                for value in row:
                    secrets_in_warehouse |= {part for part in str(value).splitlines() if len(part) >= 6}
    engine.dispose()
    leaked = [value for value in secrets_in_warehouse if value in model_facing]
    assert not leaked, leaked[:5]
    # Amounts: no result cell of any analysis appears in what the model saw.
    for reply in analyses:
        assert reply.descriptor.row_count > 0 and reply.descriptor.columns
        columns = [c.column_id for c in reply.descriptor.columns]
        window = as_host("ResolveWindow", resources_pb2.ResolveWindowRequest(
            grant=_grant(cert_dir, reply.descriptor, columns), offset=0, limit=1000))
        cells = {MessageToJson(cell, indent=None) for row in window.rows for cell in row.cells}
        amounts = {value for cell in cells for value in re.findall(r'"(?:decimalValue|floatValue)": "?([^"}]+)', cell)}
        assert amounts or reply is analyses[-1]
        assert not [a for a in amounts if len(a) >= 5 and a in model_facing]


def _grant(cert_dir, descriptor, columns):
    now = dt.datetime.now(dt.UTC)
    binding = common_pb2.TokenBinding(subject="surface/node", audience="resources", nonce=secrets.token_hex(8))
    binding.issued_at.FromDatetime(now)
    binding.expires_at.FromDatetime(now + dt.timedelta(minutes=5))
    claims = common_pb2.WindowGrantClaims(binding=binding, grant_id=secrets.token_hex(6), surface_id="surface",
                                          node_id="node", resource_id=descriptor.resource_id,
                                          version_id=descriptor.version_id, content_hash=descriptor.content_hash,
                                          column_ids=columns, max_window_rows=1000)
    return tokens.sign(load_signing_key(signing_key_path(cert_dir, "host")), tokens.PURPOSE_WINDOW_GRANT, claims)


def test_offers_verify_and_windows_reach_only_the_host(as_agent, as_host, cert_dir, running_set, credentials):
    context = as_agent("InspectContext", resources_pb2.InspectContextRequest(turn=TURN))
    catalog = as_agent("InspectCatalog", resources_pb2.InspectCatalogRequest(
        turn=TURN, question="units sold by sales channel", capability_token=context.capability_token))
    units, channel = _find(catalog.entities, "Units sold"), _find(catalog.entities, "Sales channel")
    draft = {"mode": "aggregate", "measures": [{"id": "units", "metric": units}],
             "dimensions": [{"id": "channel", "field": channel}]}
    reply = as_agent("Analyze", resources_pb2.AnalyzeRequest(turn=TURN, draft_json=json.dumps(draft),
                                                             capability_token=catalog.capability_token))
    # The host can check the offer with the resources service's public key alone.
    claims = tokens.verify(load_verify_key(verify_key_path(cert_dir, "resources")), tokens.PURPOSE_RESOURCE_OFFER,
                           reply.offer, common_pb2.ResourceOfferClaims)
    assert claims.descriptor == reply.descriptor and claims.turn_id == "turn-1"
    tokens.check_binding(claims.binding, "host", dt.timedelta(hours=1))

    grant = _grant(cert_dir, reply.descriptor, ["channel", "units"])
    window = as_host("ResolveWindow", resources_pb2.ResolveWindowRequest(grant=grant, offset=0, limit=10))
    assert [c.column_id for c in window.columns] == ["channel", "units"]
    assert [r.cells[0].string_value for r in window.rows] == ["marketplace", "phone", "store", "web"]
    assert all(r.cells[1].integer_value > 0 for r in window.rows) and window.total_rows == 4

    with sync_channel(running_set.handles["resources"].address, credentials("agent"), "resources") as channel_:
        with pytest.raises(grpc.RpcError) as denied:
            invoke(channel_, "resources", "ResolveWindow", resources_pb2.ResolveWindowRequest(grant=grant, limit=10))
    assert error_details(denied.value).reason == "CALLER_NOT_ALLOWED"

    revoked = as_host("RevokeGrants", resources_pb2.RevokeGrantsRequest(grants=[grant]))
    assert revoked.revoked == 1
    with pytest.raises(grpc.RpcError) as refused:
        as_host("ResolveWindow", resources_pb2.ResolveWindowRequest(grant=grant, offset=0, limit=10))
    assert error_details(refused.value).reason == "GRANT_REVOKED"


def _units_by_channel(as_agent, turn: resources_pb2.TurnRef):
    context = as_agent("InspectContext", resources_pb2.InspectContextRequest(turn=turn))
    catalog = as_agent("InspectCatalog", resources_pb2.InspectCatalogRequest(
        turn=turn, question="units sold by sales channel", capability_token=context.capability_token))
    draft = {"mode": "aggregate", "measures": [{"id": "units", "metric": _find(catalog.entities, "Units sold")}],
             "dimensions": [{"id": "channel", "field": _find(catalog.entities, "Sales channel")}]}
    return as_agent("Analyze", resources_pb2.AnalyzeRequest(turn=turn, draft_json=json.dumps(draft),
                                                            capability_token=catalog.capability_token)).descriptor


def test_windows_in_one_call_are_each_answered_or_refused_as_one_call_would(as_agent, as_host, cert_dir,
                                                                            running_set, credentials):
    descriptor = _units_by_channel(as_agent, resources_pb2.TurnRef(session_id="sess-rpc", turn_id="turn-windows"))
    grants = [_grant(cert_dir, descriptor, ["channel", "units"]) for _ in range(4)]
    as_host("RevokeGrants", resources_pb2.RevokeGrantsRequest(grants=[grants[1]]))
    forged = common_pb2.SignedToken()
    forged.CopyFrom(grants[2])
    forged.signature = bytes(64)
    asked = [resources_pb2.ResolveWindowRequest(grant=grants[0], offset=1, limit=2, column_ids=["channel"]),
             resources_pb2.ResolveWindowRequest(grant=grants[1], limit=10),
             resources_pb2.ResolveWindowRequest(grant=forged, limit=10),
             resources_pb2.ResolveWindowRequest(grant=grants[3], limit=10, rows_as_json=True),
             resources_pb2.ResolveWindowRequest(grant=grants[3], limit=5000)]
    outcomes = as_host("ResolveWindows", resources_pb2.ResolveWindowsRequest(windows=asked)).windows
    assert [o.WhichOneof("outcome") for o in outcomes] == ["window", "refused", "refused", "window", "refused"]
    for request, outcome in zip(asked, outcomes, strict=True):
        if outcome.HasField("window"):  # the very answer of ResolveWindow
            assert outcome.window == as_host("ResolveWindow", request)
        else:
            with pytest.raises(grpc.RpcError) as one:
                as_host("ResolveWindow", request)
            refused = error_details(one.value)
            assert (outcome.refused.code, outcome.refused.reason) == (one.value.code().value[0], refused.reason)
    assert [o.refused.reason for o in outcomes if o.HasField("refused")] == [
        "GRANT_REVOKED", "GRANT_BAD_SIGNATURE", "WINDOW_TOO_LARGE"]
    assert json.loads(outcomes[3].window.rows_json)[0][0] == "marketplace"

    # Out of the contract's bounds (resources.proto): the call is refused as a whole, before any window is read.
    too_many = stated(resources_pb2.ResolveWindowsRequest, "windows", "max_items") + 1
    for windows, pointer in ((asked[:1] * 0, "/windows"), (asked[:1] * too_many, "/windows")):
        with pytest.raises(grpc.RpcError) as refused:
            as_host("ResolveWindows", resources_pb2.ResolveWindowsRequest(windows=windows))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = error_details(refused.value)
        assert (details.reason, details.metadata["pointer"]) == ("FIELD_INVALID", pointer)
    with sync_channel(running_set.handles["resources"].address, credentials("agent"), "resources") as channel:
        with pytest.raises(grpc.RpcError) as denied:
            invoke(channel, "resources", "ResolveWindows", resources_pb2.ResolveWindowsRequest(windows=asked[:1]))
    assert error_details(denied.value).reason == "CALLER_NOT_ALLOWED"


def test_rpc_errors_carry_reasons_and_paths(as_agent):
    fresh = resources_pb2.TurnRef(session_id="sess-rpc", turn_id="turn-fresh")
    context = as_agent("InspectContext", resources_pb2.InspectContextRequest(turn=fresh))
    schema = json.loads(context.draft_schema_json)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert context.draft_schema_sha256 == hashlib.sha256(context.draft_schema_json.encode()).hexdigest()
    # A draft may narrow its rows (top-N), never widen them: its limit is bounded, and the row cap still holds.
    for mode in ("aggregate", "records"):
        limit = schema["definitions"][mode]["properties"]["limit"]
        assert (limit["type"], limit["minimum"], limit["maximum"]) == ("integer", 1, 20_000)
    assert context.max_result_rows == 1_000 and "max_result_rows" in limit["description"]
    assert (context.probes_remaining, context.probes_per_turn) == (2, 2)
    assert (context.analyses_remaining, context.analyses_per_turn) == (10, 10)
    assert context.dataset_label == "Retail demo"
    assert context.time_anchor == "latest_data"  # the demo's data ends in 2025: periods count from its last day
    with pytest.raises(grpc.RpcError) as refused:
        as_agent("Analyze", resources_pb2.AnalyzeRequest(turn=TURN, draft_json='{"mode": "aggregate"}',
                                                         capability_token=context.capability_token))
    details = error_details(refused.value)
    assert (details.code, details.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "DRAFT_SCHEMA")
    with pytest.raises(grpc.RpcError) as no_kind:  # the tool's schema lists the kinds; other callers learn them here
        as_agent("Probe", resources_pb2.ProbeRequest(turn=TURN, capability_token=context.capability_token))
    kind = error_details(no_kind.value)
    assert (kind.reason, kind.metadata["pointer"]) == ("FIELD_INVALID", "/kind")
    assert "PROBE_KIND_VALUE_MATCH" in json.loads(kind.metadata["allowed"]) and kind.metadata["next_step"]
    with pytest.raises(grpc.RpcError) as no_turn:
        as_agent("InspectContext", resources_pb2.InspectContextRequest())
    assert error_details(no_turn.value).metadata["pointer"] == "/turn"
    with pytest.raises(grpc.RpcError) as no_token:
        as_agent("InspectCatalog", resources_pb2.InspectCatalogRequest(turn=TURN, question="revenue"))
    assert error_details(no_token.value).reason == "CAPABILITY_MISSING"


def test_value_match_over_rpc_names_the_field_and_widens_the_scope_to_filter_on_it(as_agent, warehouse_url):
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        country = connection.execute(sa.text("SELECT country FROM regions ORDER BY region_id")).scalar()
    engine.dispose()
    turn = resources_pb2.TurnRef(session_id="sess-match", turn_id="turn-1")
    context = as_agent("InspectContext", resources_pb2.InspectContextRequest(turn=turn))
    catalog = as_agent("InspectCatalog", resources_pb2.InspectCatalogRequest(
        turn=turn, question="net revenue", capability_token=context.capability_token))
    assert "Region" not in {e.label for e in catalog.entities}  # the question's words did not bring it
    signups = as_agent("InspectCatalog", resources_pb2.InspectCatalogRequest(
        turn=turn, question="how many signed up", capability_token=context.capability_token))
    signup_date = next(f for e in signups.entities for f in e.fields if f.label == "Signup date")
    assert "signed up" in signup_date.event_verbs
    probe = as_agent("Probe", resources_pb2.ProbeRequest(
        turn=turn, kind=resources_pb2.PROBE_KIND_VALUE_MATCH, text=f"net revenue in {country.lower()}",
        capability_token=catalog.capability_token))
    assert probe.WhichOneof("result") == "value_matches" and probe.capability_token
    match = next(m for m in probe.value_matches.matches if m.value == country)
    assert match.matched_text == country.lower() and not match.approximate
    draft = {"mode": "aggregate", "output": "scalar",
             "measures": [{"id": "revenue", "metric": _find(catalog.entities, "Net revenue")}],
             "filter": {"field": match.field_id, "op": "eq", "value": match.value}}
    with pytest.raises(grpc.RpcError) as out_of_scope:  # the old token does not reach the country
        as_agent("Analyze", resources_pb2.AnalyzeRequest(turn=turn, draft_json=json.dumps(draft),
                                                         capability_token=catalog.capability_token))
    assert error_details(out_of_scope.value).reason == "ID_NOT_IN_SCOPE"
    reply = as_agent("Analyze", resources_pb2.AnalyzeRequest(turn=turn, draft_json=json.dumps(draft),
                                                             capability_token=probe.capability_token))
    assert reply.descriptor.row_count == 1
    near = as_agent("Probe", resources_pb2.ProbeRequest(
        turn=turn, kind=resources_pb2.PROBE_KIND_VALUE_MATCH, text="orders through the stroe",
        capability_token=probe.capability_token))  # a near spelling: the value, marked as a guess
    assert [(m.value, m.matched_text, m.approximate) for m in near.value_matches.matches] == [("store", "stroe", True)]
