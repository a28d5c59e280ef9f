"""The typed TypeScript clients (clients/ts, generated from proto/ by protoc-gen-es): the example asks a
question through the agent and follows the surface over mTLS, and its figure is what SQL gives; the caller
table the clients read from the contracts is the one the services enforce."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from decimal import Decimal

import pytest

from cli.main import DEMO_QUESTIONS
from shared.actors import assert_actor
from shared.authz import CallerTable
from shared.certs import load_signing_key, signing_key_path
from shared.identity import server_name_for, spiffe_id_for
from shared.paths import REPO_ROOT
from tessera.agent.v1 import agent_pb2
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2
from tessera.compiler.v1 import compiler_pb2
from tessera.host.v1 import host_pb2
from tessera.resources.v1 import resources_pb2
from tests.fixtures.golden.reference import expected_figures

CLIENTS = REPO_ROOT / "clients" / "ts"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The clients and examples type-checked and compiled with tsc (a type error fails here)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the TypeScript client test needs Node.js")
    assert (CLIENTS / "gen" / "tessera" / "host" / "v1" / "host_pb.ts").exists(), "run 'make setup' (make proto)"
    compiled = subprocess.run([str(REPO_ROOT / "node_modules" / ".bin" / "tsc"), "-p", str(CLIENTS / "tsconfig.json")],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    return node, CLIENTS / "dist"  # the tsconfig's outDir


def _run(built, script: str, *args: str, env: dict | None = None) -> dict:
    node, out = built
    result = subprocess.run([node, str(out / "examples" / script), *args], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=180, env={"PATH": "/usr/bin:/bin", **(env or {})})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_example_asks_through_the_agent_and_its_surface_shows_what_sql_gives(built, running_set, cert_dir,
                                                                                 warehouse_url):
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "ts-client", "local", "TS client")
    question = DEMO_QUESTIONS[0]  # net revenue by region: a table, whose first window the host sends itself
    outcome = _run(built, "ask.js", running_set.handles["host"].address, running_set.handles["agent"].address,
                   str(cert_dir), question,
                   env={"TESSERA_ACTOR_ASSERTION": base64.b64encode(person.SerializeToString()).decode()})
    assert outcome["outcome"] == common_pb2.TURN_OUTCOME_ANSWERED and outcome["revisionIds"], outcome
    assert "run_analysis" in outcome["steps"] and "present_ui" in outcome["steps"]
    messages = outcome["a2uiMessages"]
    assert any("createSurface" in m for m in messages)
    components = [c["component"] for m in messages if "updateComponents" in m
                  for c in m["updateComponents"]["components"]]
    assert "DataTable" in components
    windows = [m["updateDataModel"]["value"] for m in messages
               if m.get("updateDataModel", {}).get("path", "").endswith("/window")]
    assert windows, [m.get("updateDataModel", {}).get("path") for m in messages]
    assert len(outcome["tables"]) == 1, outcome["tables"]
    table = [w for w in windows if w["node"] == outcome["tables"][0]][-1]  # sent by the host, or asked for
    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"})
    got = {row[0]: Decimal(str(row[1])) for row in table["rows"]}
    assert table["totalRows"] == len(expected) and got.keys() == expected.keys()
    assert all(abs(got[k] - expected[k]) < Decimal("0.01") for k in expected)


def test_the_example_checks_the_name_derived_from_the_peers_spiffe_id(built, running_set, cert_dir):
    """The agent answers where the host was expected: its certificate names agent.svc.tessera.local, and Node
    refuses it before any call, though it chains to our CA."""
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "ts-client", "local", "TS client")
    node, out = built
    agent = running_set.handles["agent"].address
    refused = subprocess.run([node, str(out / "examples" / "ask.js"), agent, agent, str(cert_dir), "Hello?"],
                             cwd=REPO_ROOT, capture_output=True, text=True, timeout=180,
                             env={"PATH": "/usr/bin:/bin",
                                  "TESSERA_ACTOR_ASSERTION": base64.b64encode(person.SerializeToString()).decode()})
    assert refused.returncode != 0
    assert f"does not match certificate's altnames: Host: {server_name_for('host')}" in refused.stderr, \
        refused.stderr


def test_the_clients_caller_table_is_the_one_the_services_enforce(built):
    exported = _run(built, "callers.js")
    services = [agent_pb2.DESCRIPTOR.services_by_name["AgentService"],
                capabilities_pb2.DESCRIPTOR.services_by_name["CapabilityBrokerService"],
                compiler_pb2.DESCRIPTOR.services_by_name["CompilerService"],
                host_pb2.DESCRIPTOR.services_by_name["HostService"],
                resources_pb2.DESCRIPTOR.services_by_name["ResourceGatewayService"]]
    enforced = CallerTable(services, external={})
    assert sorted(exported) == enforced.methods()
    for path in enforced.methods():
        assert {p["spiffeId"] for p in exported[path]} == enforced.allowed(path), path
        assert {spiffe_id_for(p["name"]) for p in exported[path]} == enforced.allowed(path), path
    assert {p["name"] for p in exported["/tessera.host.v1.HostService/OpenSession"]} == {"web", "cli", "mcp"}
