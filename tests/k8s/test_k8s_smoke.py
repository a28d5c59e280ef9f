"""`make k8s-smoke`: the local overlay as real pods under `podman kube play`, end to end.

Renders the Helm chart with the local overlay's values (helm template; tests/contract/test_deploy_helm.py holds that
equal to `kubectl kustomize overlays/local`), creates the Secrets, plays the pods on a network
of their own (each pod its own network namespace, DNS by pod name), waits until every pod is
ready, asks a demo question through web's API from outside the pods and checks the committed
surface's rows against SQL on the warehouse, proves a forbidden edge is refused across pods,
makes a read tool call through the broker to the tickets MCP server's own pod (over streamable
HTTP, no child process in the broker's pod), reads every pod's environment and mounted files for
other services' secrets, then tears everything down and checks nothing is left. Runs only with
TESSERA_K8S_SMOKE=1 (the make target sets it): it needs root, podman and the images `make image`
builds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
import yaml
from grpc_health.v1 import health_pb2

from cli.deploy import ROLES, local_secrets
from cli.deploy_check import allowed_secret_files
from cli.deploy_manifests import SPECS
from cli.deploy_mcp_servers import MCP_PORT, load_policy, mcp_pods
from cli.launcher import cli_credentials
from shared.config import DEFAULT_PORTS
from shared.identity.actors import assert_actor
from shared.identity.certs import ca_key_path, is_private_file, issue_deployment, load_signing_key, signing_key_path
from shared.identity.principals import HTTP_PROCESS_NAMES
from shared.paths import REPO_ROOT
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.fixtures.isolation import foreign_variables
from tests.fixtures.waiting import wait_until
from tests.k8s.podman_play import (
    IDENTITY_COPY,
    SECRET_SOURCE,
    container_state,
    create_secret,
    for_podman,
    pod_ip,
    podman,
)
from tests.web.integration.test_web_api import sse

pytestmark = pytest.mark.skipif(os.environ.get("TESSERA_K8S_SMOKE") != "1",
                                reason="the Kubernetes smoke test runs with `make k8s-smoke` (podman, root, images)")

NETWORK = "tessera-smoke"
HELM = REPO_ROOT / ".venv-deploy" / "bin" / "helm"
CHART = REPO_ROOT / "deploy" / "helm" / "tessera"
READY_TIMEOUT = 300.0


def _grpc_health(address: str) -> str:
    import grpc
    from grpc_health.v1 import health_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=3)
        except grpc.RpcError as exc:
            return exc.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def _http_health(address: str) -> str:
    """web's or the MCP front's /healthz (they answer only their allowed host names)."""
    try:
        reply = httpx.get(f"http://{address}/healthz", headers={"Host": "localhost"}, timeout=3)
        return reply.json().get("status", "")
    except (httpx.HTTPError, ValueError):
        return ""


def _teardown(manifest: Path, secrets: list[str], volumes: list[str]) -> None:
    podman("kube", "down", str(manifest), check=False, timeout=180)
    for name in secrets:
        podman("secret", "rm", name, check=False)
    for name in volumes:  # podman keeps a named volume per mounted Secret and ConfigMap
        podman("volume", "rm", "-f", name, check=False)
    podman("network", "rm", "-f", NETWORK, check=False)


def _leftovers(names: list[str], secrets: list[str], volumes: list[str]) -> list[str]:
    pods = set(podman("pod", "ps", "--format", "{{.Name}}").stdout.split())
    kept = set(podman("secret", "ls", "--format", "{{.Name}}").stdout.split())
    stored = set(podman("volume", "ls", "--format", "{{.Name}}").stdout.split())
    networks = set(podman("network", "ls", "--format", "{{.Name}}").stdout.split())
    return sorted((pods & set(names)) | (kept & set(secrets)) | (stored & set(volumes)) | ({NETWORK} & networks))


FORBIDDEN_CALL = """
import json, sys
from pathlib import Path
from cli.launcher import cli_credentials
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from shared.rpc.errors import error_details
import grpc
credentials = cli_credentials(Path(sys.argv[1]), "agent")
outcome = {}
with sync_channel("capabilities:50054", credentials, "capabilities") as channel:
    for method in ("GetInfo", "Decide"):
        try:
            invoke(channel, "capabilities", method, timeout=20)
            outcome[method] = "OK"
        except grpc.RpcError as exc:
            details = error_details(exc)
            outcome[method] = f"{details.code.name} {details.reason}"
print(json.dumps(outcome))
"""


# The command lines of every process in a container (its image has no ps).
COMMAND_LINES = """
from pathlib import Path
for proc in Path("/proc").iterdir():
    if proc.name.isdigit():
        try:
            print((proc / "cmdline").read_bytes().replace(b"\\0", b" ").decode(errors="replace"))
        except OSError:
            pass
"""


def _call_tool(certs, broker_ip: str, tool_id: str, arguments: dict) -> cap.CallToolResponse:
    """A read tool through the broker, called as the agent calls it (its own identity), for the local person
    (an assertion the operator's CLI signs), from outside the pods."""
    person = assert_actor(load_signing_key(signing_key_path(certs, "cli")), "local-user", "local")
    with sync_channel(f"{broker_ip}:50054", cli_credentials(certs, "agent"), "capabilities") as channel:
        return invoke(channel, "capabilities", "CallTool", cap.CallToolRequest(
            actor=person, session_id="ses_k8s_smoke", turn_id="trn_k8s_smoke", call_id=f"smoke-{tool_id}",
            tool_id=tool_id, arguments_json=json.dumps(arguments)), timeout=120)


def _sign_in_token(certs, broker_ip: str) -> str:
    """A one-time sign-in link's token for the local person, made from outside the pods as the operator's CLI
    makes it (the CLI's own identity, straight to the broker's pod)."""
    operator = assert_actor(load_signing_key(signing_key_path(certs, "cli")), "operator", "local")
    with sync_channel(f"{broker_ip}:50054", cli_credentials(certs, "cli"), "capabilities") as channel:
        return invoke(channel, "capabilities", "CreateEnrollment", cap.CreateEnrollmentRequest(
            actor=operator, person=cap.Person(actor_id="local-user", tenant_id="local")), timeout=60).token


def test_the_local_overlay_runs_as_real_pods(tmp_path):
    started = time.monotonic()
    assert shutil.which("podman"), "podman is missing: `make image` installs it"
    certs = tmp_path / "certs"
    issue_deployment(certs)  # as `tessera certs` issues them: the SPIFFE id and its derived DNS name
    secrets = local_secrets(certs, tmp_path / "passwords.json")
    passwords = json.loads((tmp_path / "passwords.json").read_text())
    rendered = subprocess.run([str(HELM), "template", "tessera", str(CHART), "-n", "tessera",
                               "-f", str(CHART / "ci" / "local-values.yaml")],
                              capture_output=True, text=True, check=True, timeout=120).stdout
    pods = for_podman([doc for doc in yaml.safe_load_all(rendered) if doc])
    manifest = tmp_path / "local-podman.yaml"
    manifest.write_text("".join("---\n" + yaml.safe_dump(doc, sort_keys=False) for doc in pods))
    pod_names = [doc["metadata"]["name"] for doc in pods if doc["kind"] == "Pod"]
    secret_names = [secret["metadata"]["name"] for secret in secrets]
    volume_names = secret_names + [doc["metadata"]["name"] for doc in pods if doc["kind"] == "ConfigMap"]

    _teardown(manifest, secret_names, volume_names)  # a run that was killed may have left its pods
    podman("network", "create", NETWORK)
    try:
        for secret in secrets:
            create_secret(secret, tmp_path)
        podman("kube", "play", "--network", NETWORK, str(manifest), timeout=300)
        ips = {name: pod_ip(name, NETWORK) for name in pod_names}

        # Ready: PostgreSQL answers, the warehouse is seeded, every service's health port says SERVING.
        wait_until(lambda: podman("exec", "postgres-postgres", "pg_isready", "-h", "127.0.0.1",
                                  check=False).returncode == 0, READY_TIMEOUT, what="postgres ready")
        seeded = wait_until(lambda: (
            state := container_state("seed-warehouse-seed")) and state.get("Status") == "exited" and state,
            READY_TIMEOUT, what="the warehouse seeded")
        assert seeded["ExitCode"] == 0, podman("logs", "seed-warehouse-seed", check=False).stdout[-2000:]
        for name in SPECS:
            if name in HTTP_PROCESS_NAMES:
                wait_until(lambda name=name: _http_health(f"{ips[name]}:{DEFAULT_PORTS[name]}") == "SERVING",
                           READY_TIMEOUT, what=f"{name} ready")
            else:
                wait_until(lambda name=name: _grpc_health(f"{ips[name]}:8081") == "SERVING", READY_TIMEOUT,
                           what=f"{name} ready")
        mcp_servers = [pod.name for pod in mcp_pods(load_policy())]
        assert mcp_servers == ["mcp-tickets", "mcp-time"]  # the time server under the bridge
        for name in mcp_servers:
            wait_until(lambda name=name: _http_health(f"{ips[name]}:{MCP_PORT}") == "SERVING", READY_TIMEOUT,
                       what=f"{name} ready")
        ready_after = time.monotonic() - started

        # A demo question, through web's API, from outside the pods; rows checked against SQL.
        base = f"http://{ips['web']}:8080"
        headers = {"Host": "localhost:8080", "Origin": "http://localhost:8080"}
        with httpx.Client(base_url=base, headers=headers, timeout=120) as browser:
            assert browser.get("/api/session").status_code == 401  # nobody, until signed in
            signed_in = browser.post("/api/sign-in/link", json={"token": _sign_in_token(certs, ips["capabilities"])})
            assert signed_in.status_code == 200, signed_in.text
            assert browser.get("/api/session").status_code == 200
            with browser.stream("POST", "/api/ask", json={"question": "What is our net revenue by region?"}) as r:
                assert r.status_code == 200, r.read()
                events = [data for _, data in sse(r, until=lambda d: "done" in d)]
            assert "done" in events[-1], events[-3:]
            (revision,) = events[-1]["done"]["revision_ids"]
            with browser.stream("GET", "/api/surface/stream") as r:
                sse(r, until=lambda d: d["kind"] == "a2ui" and "updateComponents" in d["message"])
            window = browser.post("/api/commands", json={"command_id": "smoke-window", "revision_id": revision,
                                                         "resource_window": {"node_id": "table", "limit": 100}})
            assert window.status_code == 200, window.text
            sequence = int(window.json()["cursor"]["sequence"])
            with browser.stream("GET", "/api/surface/stream") as r:
                published = sse(r, until=lambda d: d["sequence"] == sequence)
        rows = published[-1][1]["message"]["updateDataModel"]["value"]["rows"]
        from tests.fixtures.golden.reference import expected_figures

        reader = (f"postgresql+psycopg://tessera_reader:{passwords['tessera_reader']}@{ips['postgres']}:5432/"
                  "warehouse")
        expected = expected_figures(reader, {"metric": "net_revenue", "by": "region"}, "")
        assert rows and {row[0] for row in rows} == set(expected)
        assert all(abs(Decimal(str(value)) - expected[key]) < Decimal("0.01") for key, value in rows)

        # Across pods: the agent reaches the broker, and the contract still refuses it a decision.
        call = podman("exec", "agent-agent", "python", "-c", FORBIDDEN_CALL, IDENTITY_COPY, timeout=120)
        outcome = json.loads(call.stdout.strip().splitlines()[-1])
        assert outcome == {"GetInfo": "OK", "Decide": "PERMISSION_DENIED CALLER_NOT_ALLOWED"}, outcome

        # A read tool call through the broker reaches each MCP server's own pod over streamable HTTP: the
        # tickets server's own HTTP form, and the stdio-only time server through the bridge (pins unchanged).
        found = _call_tool(certs, ips["capabilities"], "tickets.search_tickets", {"query": "refund"})
        assert found.WhichOneof("outcome") == "content", found
        assert "ticket 4812 [open]: Refund not received" in found.content.text, found.content.text
        assert found.content.source == "tickets.search_tickets" and found.tainted  # screened as untrusted
        told = _call_tool(certs, ips["capabilities"], "time.get_current_time", {"timezone": "Europe/Berlin"})
        assert told.WhichOneof("outcome") == "content" and "Europe/Berlin" in told.content.text, told
        running = podman("exec", "capabilities-capabilities", "python", "-c", COMMAND_LINES, timeout=60).stdout
        assert "services.mcp_tickets" not in running and "mcp_server_time" not in running, running

        # No pod holds another service's secret, in its environment or its files.
        deployment_secrets = {path.read_bytes(): path.name for path in certs.iterdir()
                              if path.is_file() and is_private_file(path)}
        deployment_secrets[ca_key_path(certs).read_bytes()] = "ca.key"
        for role in ROLES:
            deployment_secrets[passwords[role].encode()] = f"{role}_password"
        for name in SPECS:
            container = f"{name}-{name}"
            environ = podman("exec", container, "cat", "/proc/1/environ").stdout.split("\0")
            foreign = foreign_variables((item.split("=", 1)[0] for item in environ), name)
            assert foreign == [], (name, foreign)
            values = "\0".join(environ).encode()
            assert _foreign(values, name, deployment_secrets) == [], (name, "environment")
            for folder in (SECRET_SOURCE, IDENTITY_COPY):
                listing = podman("exec", container, "ls", "-A", folder).stdout.split()
                assert set(listing) <= allowed_secret_files(name), (name, folder, listing)
                for file_name in listing:
                    data = podman("exec", container, "cat", f"{folder}/{file_name}").stdout.encode()
                    assert _foreign(data, name, deployment_secrets) == [], (name, folder, file_name)
        # An MCP server's pod holds no secret of the deployment at all, and no Secret folder.
        for name in mcp_servers:
            environ = podman("exec", f"{name}-{name}", "cat", "/proc/1/environ").stdout.encode()
            assert _foreign(environ, name, deployment_secrets) == [], (name, "environment")
            assert podman("exec", f"{name}-{name}", "ls", "/etc/tessera", check=False).returncode != 0
    finally:
        _teardown(manifest, secret_names, volume_names)
    assert _leftovers(pod_names, secret_names, volume_names) == []
    elapsed = time.monotonic() - started
    print(f"\nk8s smoke: every pod ready after {ready_after:.0f} s; whole run {elapsed:.0f} s")
    (REPO_ROOT / "var").mkdir(exist_ok=True)
    (REPO_ROOT / "var" / "k8s-smoke.json").write_text(json.dumps(
        {"ready_seconds": round(ready_after, 1), "wall_seconds": round(elapsed, 1)}))


def _foreign(data: bytes, service: str, deployment_secrets: dict[bytes, str]) -> list[str]:
    """Which of the deployment's keys, secrets and passwords that are not `service`'s own appear in `data`."""
    def own(what: str) -> bool:
        if what.endswith("_password"):
            return what.removesuffix("_password") in _roles_of(service)
        return what.startswith(service)

    return sorted(what for secret, what in deployment_secrets.items() if secret.strip() in data and not own(what))


def _roles_of(service: str) -> set[str]:
    """The database roles whose password a service's own URLs carry."""
    return {"resources": {"tessera_reader", "tessera_resources"},
            "capabilities": {"tessera_capabilities", "tessera_writer"},
            "host": {"tessera_host"}}.get(service, set())
