"""The typed TypeScript clients (clients/ts, generated from proto/ by protoc-gen-es): the example asks a
question through the agent and follows the surface over mTLS, and its figure is what SQL gives; the caller
table the clients read from the contracts is the one the services enforce."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from decimal import Decimal

import pytest

from cli.main import DEMO_QUESTIONS
from shared.identity.actors import ActorVerifier, assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.identity.principals import server_name_for, spiffe_id_for
from shared.paths import REPO_ROOT
from shared.rpc.authz import CallerTable
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


def _dev_actor(running_set, tmp_path, person: str) -> str:
    """`tessera dev actor PERSON --tenant local` against the running set, as the example's reader runs it."""
    (tmp_path / "run").mkdir(exist_ok=True)
    (tmp_path / "run" / "services.json").write_text(json.dumps(running_set.state()))
    made = subprocess.run([sys.executable, "-m", "cli", "dev", "actor", person, "--tenant", "local", "--name",
                           "TS client"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "TESSERA_VAR_DIR": str(tmp_path)})
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def test_the_example_asks_through_the_agent_and_its_surface_shows_what_sql_gives(built, running_set, cert_dir,
                                                                                 warehouse_url, tmp_path):
    question = DEMO_QUESTIONS[0]  # net revenue by region: a table, whose first window the host sends itself
    outcome = _run(built, "ask.js", running_set.handles["host"].address, running_set.handles["agent"].address,
                   str(cert_dir), question, env={"TESSERA_ACTOR_ASSERTION": _dev_actor(running_set, tmp_path,
                                                                                        "ts-client")})
    assert outcome["outcome"] == common_pb2.TurnOutcome.Name(common_pb2.TURN_OUTCOME_ANSWERED), outcome  # by name
    assert outcome["revisionIds"], outcome
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


def test_the_clients_read_the_deployments_identity_scheme_as_the_services_do(built, monkeypatch):
    """The SPIFFE ids are configuration, not contract: under the same three settings Node names every principal
    with the id the services enforce."""
    scheme = {"TESSERA_TRUST_DOMAIN": "example.org", "TESSERA_SPIFFE_PATH": "/ns/tessera/sa/{principal}",
              "TESSERA_CLI_SPIFFE_PATH": "/people/operator"}
    for name, value in scheme.items():
        monkeypatch.setenv(name, value)
    exported = _run(built, "callers.js", env=scheme)
    ids = {p["name"]: p["spiffeId"] for allowed in exported.values() for p in allowed}
    assert ids["host"] == "spiffe://example.org/ns/tessera/sa/host" == spiffe_id_for("host")
    assert ids["cli"] == "spiffe://example.org/people/operator" == spiffe_id_for("cli")
    assert ids == {name: spiffe_id_for(name) for name in ids}

    node, out = built
    for wrong, message in [
        ({"TESSERA_SPIFFE_PATH": "/ns/tessera/sa"},
         'TESSERA_SPIFFE_PATH="/ns/tessera/sa": expected a path starting with / holding {principal} once'),
        ({"TESSERA_CLI_SPIFFE_PATH": "/ns/tessera/sa/operator"},
         'TESSERA_CLI_SPIFFE_PATH="/ns/tessera/sa/operator" has the workloads\' form'),
    ]:
        refused = subprocess.run([node, str(out / "examples" / "callers.js")], cwd=REPO_ROOT, capture_output=True,
                                 text=True, timeout=180, env={"PATH": "/usr/bin:/bin", **scheme, **wrong})
        assert refused.returncode != 0
        assert message in refused.stderr, refused.stderr


def test_dev_actor_is_short_lived_recorded_and_refuses_what_it_cannot_make(running_set, cert_dir, tmp_path):
    encoded = _dev_actor(running_set, tmp_path, "script-user")
    assertion = common_pb2.ActorAssertion.FromString(base64.b64decode(encoded))
    actor = ActorVerifier.from_cert_dir(cert_dir).verify(assertion)  # valid, and signed with the operator CLI's key
    assert (actor.actor_id, actor.tenant_id, actor.asserted_by) == ("script-user", "local", "cli")
    binding = common_pb2.ActorClaims.FromString(assertion.signed.claims).binding
    assert (binding.expires_at.ToDatetime() - binding.issued_at.ToDatetime()).total_seconds() == 15 * 60
    (record,) = [json.loads(line) for line in (tmp_path / "audit" / "dev-actors.jsonl").read_text().splitlines()]
    assert (record["actor_id"], record["tenant_id"], record["nonce"]) == ("script-user", "local", binding.nonce)
    assert (tmp_path / "audit" / "dev-actors.jsonl").stat().st_mode & 0o077 == 0
    env = {"PATH": "/usr/bin:/bin", "TESSERA_VAR_DIR": str(tmp_path)}
    for args in (["not a person", "--tenant", "local"], ["p", "--tenant", "local", "--minutes", "61"]):
        refused = subprocess.run([sys.executable, "-m", "cli", "dev", "actor", *args], cwd=REPO_ROOT,
                                 capture_output=True, text=True, timeout=60, env=env)
        assert refused.returncode == 2 and refused.stdout == "" and refused.stderr.startswith("tessera: error:")
