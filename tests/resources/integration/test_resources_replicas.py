"""Two Resource Gateway processes on one PostgreSQL store: results, windows, revocations and the
per-turn probe budget are shared; a replica that loses the store says so and rejoins without a restart."""

from __future__ import annotations

import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
import sqlalchemy as sa

from cli.launcher import ServiceSet, check_health, cli_credentials, stop_together
from services.resources.config import ResourcesSettings
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from shared.rpc.errors import error_details
from tessera.resources.v1 import resources_pb2
from tests.cli.integration.test_startup_errors import assert_one_line_error
from tests.conftest import run_module
from tests.fixtures.postgres import postgres_database
from tests.fixtures.store_outage import allow_connections
from tests.fixtures.waiting import wait_until
from tests.resources.integration.test_resources_rpc import _find, _grant

REVOCATION_BOUND = ResourcesSettings.model_fields["revocation_check_seconds"].default
WAIT_SECONDS = 60.0  # readiness is re-checked every 5 s; a loaded machine may take a few rounds


@pytest.fixture(scope="module")
def store_url(request) -> str:
    return postgres_database(request, "tessera_gateway")


@pytest.fixture(scope="module")
def replicas(store_url, cert_dir, tmp_path_factory, service_env):
    """Replicas "a" and "b", started at the same time (the migration lock lets one migrate)."""
    env = {**service_env, "TESSERA_RESOURCES_STORE_URL": store_url}
    sets = {name: ServiceSet(cert_dir, tmp_path_factory.mktemp(f"gateway-{name}"), names=("resources",),
                             ephemeral_ports=True, extra_env=env) for name in ("a", "b")}
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda services: services.start(), sets.values()))
    yield sets
    codes = stop_together(list(sets.values()))
    assert all(code == 0 for stopped in codes for code in stopped.values()), codes


@pytest.fixture(scope="module")
def call(replicas, credentials):
    """call(replica, principal, method, request), over one channel per (replica, principal)."""
    channels = {}

    def invoke_on(replica: str, principal: str, method: str, request):
        if (replica, principal) not in channels:
            address = replicas[replica].handles["resources"].address
            channels[replica, principal] = sync_channel(address, credentials(principal), "resources")
        return invoke(channels[replica, principal], "resources", method, request, timeout=30)

    yield invoke_on
    for channel in channels.values():
        channel.close()


def _turn() -> resources_pb2.TurnRef:
    return resources_pb2.TurnRef(session_id=f"sess-{uuid.uuid4().hex[:8]}", turn_id="turn-1")


def _catalog(call, replica: str, turn) -> resources_pb2.InspectCatalogResponse:
    context = call(replica, "agent", "InspectContext", resources_pb2.InspectContextRequest(turn=turn))
    return call(replica, "agent", "InspectCatalog", resources_pb2.InspectCatalogRequest(
        turn=turn, question="units sold by sales channel", capability_token=context.capability_token))


def _analyze(call, replica: str, turn) -> resources_pb2.AnalyzeResponse:
    catalog = _catalog(call, replica, turn)
    draft = {"mode": "aggregate", "measures": [{"id": "units", "metric": _find(catalog.entities, "Units sold")}],
             "dimensions": [{"id": "channel", "field": _find(catalog.entities, "Sales channel")}]}
    return call(replica, "agent", "Analyze", resources_pb2.AnalyzeRequest(
        turn=turn, draft_json=json.dumps(draft), capability_token=catalog.capability_token))


def _probe_request(call, replica: str, turn) -> resources_pb2.ProbeRequest:
    catalog = _catalog(call, replica, turn)
    return resources_pb2.ProbeRequest(turn=turn, kind=resources_pb2.PROBE_KIND_FIELD_PROFILE,
                                      field_id=_find(catalog.entities, "Sales channel"),
                                      capability_token=catalog.capability_token)


def _refusal(function, *args) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as refused:
        function(*args)
    details = error_details(refused.value)
    return details.code, details.reason


def test_a_window_granted_for_a_result_pinned_on_a_is_served_by_b(call, cert_dir):
    turn = _turn()
    analysis = _analyze(call, "a", turn)
    grant = _grant(cert_dir, analysis.descriptor, ["channel", "units"])
    request = resources_pb2.ResolveWindowRequest(grant=grant, offset=0, limit=10)
    on_a, on_b = call("a", "host", "ResolveWindow", request), call("b", "host", "ResolveWindow", request)
    assert on_b.resource_id == analysis.descriptor.resource_id and on_b.version_id == analysis.descriptor.version_id
    assert [r.cells[0].string_value for r in on_b.rows] == ["marketplace", "phone", "store", "web"]
    assert on_b == on_a and on_b.total_rows == analysis.descriptor.row_count == 4

    # A revocation sent to b holds on b at once, and on a (which read with the grant) within the bound.
    revoked_at = time.monotonic()
    assert call("b", "host", "RevokeGrants", resources_pb2.RevokeGrantsRequest(grants=[grant])).revoked == 1
    assert _refusal(call, "b", "host", "ResolveWindow", request) == (grpc.StatusCode.PERMISSION_DENIED,
                                                                       "GRANT_REVOKED")
    wait_until(lambda: _window_refused(call, "a", request), timeout=REVOCATION_BOUND + 30,
               what="replica a refusing the grant revoked on b")
    assert time.monotonic() - revoked_at < REVOCATION_BOUND + 5  # the bound, and a loaded machine's slack


def _window_refused(call, replica: str, request) -> bool:
    """True once the replica refuses the window as revoked; False while it still serves it."""
    try:
        call(replica, "host", "ResolveWindow", request)
    except grpc.RpcError as refused:
        details = error_details(refused)
        assert (details.code, details.reason) == (grpc.StatusCode.PERMISSION_DENIED, "GRANT_REVOKED")
        return True
    return False


def test_the_probe_budget_is_shared_by_both_replicas(call):
    turn = _turn()
    request = _probe_request(call, "a", turn)
    assert call("a", "agent", "Probe", request).probes_remaining == 1
    assert call("b", "agent", "Probe", request).probes_remaining == 0
    for replica in ("a", "b"):
        refused = _refusal(call, replica, "agent", "Probe", request)
        assert refused == (grpc.StatusCode.RESOURCE_EXHAUSTED, "PROBE_BUDGET_EXHAUSTED")
        context = call(replica, "agent", "InspectContext", resources_pb2.InspectContextRequest(turn=turn))
        assert context.probes_remaining == 0


def test_racing_probes_on_both_replicas_spend_exactly_the_budget(call):
    racers = 8
    request = _probe_request(call, "a", _turn())
    barrier = threading.Barrier(racers)

    def probe(index: int) -> str:
        barrier.wait()
        try:
            call("ab"[index % 2], "agent", "Probe", request)
            return "ran"
        except grpc.RpcError as exc:
            return error_details(exc).reason

    with ThreadPoolExecutor(racers) as pool:
        outcomes = list(pool.map(probe, range(racers)))
    assert sorted(outcomes) == ["PROBE_BUDGET_EXHAUSTED"] * (racers - 2) + ["ran"] * 2


def _wait_for_health(services: ServiceSet, cert_dir, wanted: str) -> None:
    credentials = cli_credentials(cert_dir)
    wait_until(lambda: check_health(services.handles["resources"], credentials) == wanted, WAIT_SECONDS,
               what=f"the resources service's health becoming {wanted}",
               detail=lambda: f"health is {check_health(services.handles['resources'], credentials)}")


def _store_calls(call, cert_dir) -> dict[str, tuple[str, str, object]]:
    """One request of each RPC that needs the store, prepared while it answers: name → (principal, method, request)."""
    turn = _turn()
    analysis = _analyze(call, "a", turn)
    catalog = _catalog(call, "a", turn)
    draft = {"mode": "aggregate", "measures": [{"id": "units", "metric": _find(catalog.entities, "Units sold")}]}
    grant = _grant(cert_dir, analysis.descriptor, ["channel"])
    return {
        "context": ("agent", "InspectContext", resources_pb2.InspectContextRequest(turn=turn)),
        "probe": ("agent", "Probe", _probe_request(call, "a", turn)),
        "analyze": ("agent", "Analyze", resources_pb2.AnalyzeRequest(
            turn=turn, draft_json=json.dumps(draft), capability_token=catalog.capability_token)),
        "window": ("host", "ResolveWindow", resources_pb2.ResolveWindowRequest(grant=grant, limit=10)),
        "revoke": ("host", "RevokeGrants", resources_pb2.RevokeGrantsRequest(grants=[grant])),
    }


def test_a_replica_that_loses_the_store_refuses_and_rejoins_without_a_restart(
        call, replicas, store_url, cert_dir, request):
    calls = _store_calls(call, cert_dir)
    pids = {name: services.handles["resources"].pid for name, services in replicas.items()}
    database = sa.make_url(store_url).database
    allow_connections(database, False)
    request.addfinalizer(lambda: allow_connections(database, True))
    for name in ("a", "b"):
        _wait_for_health(replicas[name], cert_dir, "NOT_SERVING")
        for principal, method, message in calls.values():
            refused = _refusal(call, name, principal, method, message)
            assert refused == (grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE"), (name, method)

    allow_connections(database, True)
    for name in ("a", "b"):
        _wait_for_health(replicas[name], cert_dir, "SERVING")
    assert call("b", *calls["probe"]).probes_remaining == 1 and call("a", *calls["probe"]).probes_remaining == 0
    assert call("b", *calls["analyze"]).descriptor.row_count == 1
    assert len(call("b", *calls["window"]).rows) == 4
    assert call("a", *calls["revoke"]).revoked == 1
    assert {name: services.handles["resources"].pid for name, services in replicas.items()} == pids
    assert not [services for services in replicas.values() if services.exited()]


def test_a_store_of_another_kind_stops_the_gateway_with_one_line(cert_dir, tmp_path, warehouse_url):
    result = run_module("services.resources", {
        "TESSERA_VAR_DIR": str(tmp_path), "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_RESOURCES_PORT": "0",
        "TESSERA_RESOURCES_WAREHOUSE_URL": warehouse_url,
        "TESSERA_RESOURCES_STORE_URL": f"duckdb:///{tmp_path / 'results.duckdb'}"})
    assert_one_line_error(result, "tessera-resources: error:", "TESSERA_RESOURCES_STORE_URL", "not duckdb")
