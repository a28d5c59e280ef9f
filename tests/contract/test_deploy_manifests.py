"""The Kubernetes manifests agree with the contracts and pass every offline check.

Rendered with the real kubectl/kustomize, validated against the Kubernetes
1.35 schemas, policy-checked by checkov with 0 failed checks (skips only with
a reason in deploy/k8s/checkov-skips.yaml), and checked by our own rules:
hardening, NetworkPolicies = the caller table, Secrets hold only their
owner's files. The tools come from `make k8s-tools` (.venv-deploy).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cli.deploy import ROLES, generated_files, local_settings, service_secrets
from cli.deploy_check import (
    allowed_secret_files,
    hardening_problems,
    mcp_server_problems,
    network_policy_problems,
    policy_edges,
    scaling_problems,
    secret_problems,
)
from cli.deploy_manifests import (
    NODE_LOCAL_DNS,
    SPECS,
    contract_edges,
    network_policies,
    secret_name,
)
from cli.deploy_mcp_servers import (
    BROKER,
    COMPONENT_LABEL,
    DATA_MOUNT,
    HTTP_FORMS,
    MCP_PORT,
    POLICY_KEY,
    POLICY_MOUNT,
    cluster_policy,
    credentials_files,
    credentials_secret,
    load_policy,
    mcp_pods,
    workloads,
)
from cli.deploy_migrations import MIGRATE, job_name
from cli.deploy_migrations import secret_name as migrator_secret
from services.capabilities.tool_policy import ToolPolicyFile
from shared.config import DEFAULT_PORTS
from shared.identity.certs import is_private_file
from shared.identity.principals import HTTP_PROCESS_NAMES
from shared.paths import REPO_ROOT
from shared.rpc.spiffe_channels import SLOTS_PER_NAME

K8S = REPO_ROOT / "deploy" / "k8s"
TOOLS = REPO_ROOT / ".venv-deploy" / "bin"
PRODUCTION_OVERLAYS = ("production", "production-spire", "production-cert-manager-csi")
OVERLAYS = ("local", *PRODUCTION_OVERLAYS)
KUBERNETES_VERSION = "1.35.0"


def _docs(text: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _tool(name: str) -> str:
    path = TOOLS / name
    if not path.exists():
        pytest.skip(f"{path} is missing: `make k8s-tools` installs kubectl, kubernetes-validate and checkov")
    return str(path)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, Path]:
    """Each overlay as `kubectl kustomize` renders it, in a file."""
    kubectl = _tool("kubectl")
    out = tmp_path_factory.mktemp("rendered")
    files = {}
    for overlay in OVERLAYS:
        result = subprocess.run([kubectl, "kustomize", str(K8S / "overlays" / overlay)], capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        files[overlay] = out / f"{overlay}.yaml"
        files[overlay].write_text(result.stdout)
    return files


def test_committed_manifests_are_what_the_contracts_render():
    stale = [name for name, text in generated_files().items() if (REPO_ROOT / name).read_text() != text]
    assert stale == [], f"out of date with proto/: run 'bin/tessera deploy render' ({stale})"


def test_a_caller_added_to_a_proto_without_regenerating_turns_the_check_red(tmp_path):
    """The real path: edit a contract, regenerate its stubs, and `tessera deploy render --check` fails."""
    protos = tmp_path / "proto"
    shutil.copytree(REPO_ROOT / "proto", protos)
    compiler = protos / "tessera" / "compiler" / "v1" / "compiler.proto"
    text = compiler.read_text()
    declared = "rpc Compile(CompileRequest) returns (CompileResponse) {\n" \
               "    // Reads only: clients may retry it when the server is briefly unavailable.\n" \
               "    option idempotency_level = NO_SIDE_EFFECTS;\n    option (tessera.authz.v1.callers) = {\n" \
               "      allow: [PRINCIPAL_HOST]"
    assert declared in text, "the Compile declaration changed shape: update this test"
    widened = declared.replace("[PRINCIPAL_HOST]", "[PRINCIPAL_HOST, PRINCIPAL_AGENT]")
    compiler.write_text(text.replace(declared, widened))
    generated = tmp_path / "gen"
    generated.mkdir()
    sources = sorted(str(path.relative_to(protos)) for path in protos.rglob("*.proto"))
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{protos}", f"--python_out={generated}",
                    f"--grpc_python_out={generated}", *sources], check=True, cwd=protos, timeout=60)
    for folder in (generated / "tessera").rglob("*"):
        if folder.is_dir():
            (folder / "__init__.py").touch()
    (generated / "tessera" / "__init__.py").touch()
    env = {**os.environ, "PYTHONPATH": str(generated)}
    result = subprocess.run([sys.executable, "-m", "cli", "deploy", "render", "--check"], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "deploy/k8s/base/networkpolicies.yaml" in result.stderr and "deploy/k8s/base/workloads.yaml" in result.stderr
    # The committed manifests themselves are also refused against the edited contract.
    check = subprocess.run([sys.executable, "-m", "cli", "deploy", "check", *map(str, sorted((K8S / "base").glob(
        "*.yaml")))], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert check.returncode == 1 and "agent → compiler" in check.stderr


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies_equal_the_caller_table(rendered, overlay):
    docs = _docs(rendered[overlay].read_text())
    assert set(policy_edges((doc, overlay) for doc in docs)) == contract_edges()
    assert network_policy_problems(docs, overlay) == []
    # Deny by default, in both directions, for every pod.
    deny = next(doc for doc in docs if doc["kind"] == "NetworkPolicy" and doc["metadata"]["name"] == "default-deny")
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": []}


def test_the_extra_egress_goes_only_where_it_is_needed(rendered):
    docs = _docs(rendered["production"].read_text())
    policies = {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == "NetworkPolicy"}

    def pods_with(port: int) -> set[str]:
        return {p["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] for p in policies.values()
                if any(rule.get("ports") == [{"protocol": "TCP", "port": port}] and "to" not in rule
                       for rule in p["spec"].get("egress", []))}

    # Their own database, or the warehouse; and the migrate Jobs (each its service's database).
    assert pods_with(5432) == {"host", "capabilities", "resources", MIGRATE}
    # The model endpoint; the OpenID provider people sign in with; the authorization server of MCP clients'
    # tokens. The broker's MCP servers run in the cluster: it opens HTTPS only for one outside (below).
    assert pods_with(443) == {"agent", "web", "mcp"}
    # From outside the pod network: browsers reach web, outside agents the MCP front, and nothing else.
    outside = [p for p in policies.values() if any("from" not in rule for rule in p["spec"].get("ingress", []))]
    assert sorted(p["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] for p in outside) == ["mcp", "web"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_validates_against_kubernetes_1_35(rendered, overlay):
    result = subprocess.run([_tool("kubernetes-validate"), "-k", KUBERNETES_VERSION, "--strict", "--quiet",
                             str(rendered[overlay])], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def _skips() -> dict[str, list[str]]:
    listed = yaml.safe_load((K8S / "checkov-skips.yaml").read_text())["skips"]
    by_overlay: dict[str, list[str]] = {overlay: [] for overlay in OVERLAYS}
    for skip in listed:
        assert len(skip.get("reason", "").split()) >= 10, f"{skip['check']}: a skip needs a written reason"
        for overlay in skip["overlays"]:
            by_overlay[overlay].append(skip["check"])  # KeyError: a skip for an overlay that does not exist
    return by_overlay


def test_checkov_finds_nothing_but_the_reviewed_skips(rendered, tmp_path):
    checkov = _tool("checkov")
    skips = _skips()
    for overlay in OVERLAYS:
        result = subprocess.run(
            [checkov, "--quiet", "--compact", "--skip-download", "--framework", "kubernetes", "--output", "json",
             "--skip-check", ",".join(skips[overlay]), "--file", str(rendered[overlay])],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
            env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_NO_OUTPUT_PROMPT": "1"})
        report = json.loads(result.stdout)
        report = report[0] if isinstance(report, list) else report
        failed = [f"{item['check_id']} {item['resource']}" for item in report.get("results", {}).get(
            "failed_checks", [])]
        assert failed == [], f"{overlay}: {failed}"
        assert report["summary"]["passed"] > 500, f"{overlay}: checkov ran suspiciously few checks"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_is_hardened(rendered, overlay):
    docs = _docs(rendered[overlay].read_text())
    assert hardening_problems(docs, overlay) == []
    namespace = next(doc for doc in docs if doc["kind"] == "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for doc in docs:
        if doc["kind"] == "Deployment":
            pod = doc["spec"]["template"]["spec"]
            container = pod["containers"][0]
            name = doc["metadata"]["name"]
            # Native gRPC probes on the plaintext health-only port (web, mcp and the MCP servers: HTTP).
            probe = container["readinessProbe"]
            assert ("grpc" in probe) == (name in SPECS and name not in HTTP_PROCESS_NAMES)
            secrets = [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
            # An MCP server mounts none: the demo's declare no credentials, and they would come as its own env.
            assert secrets == ([secret_name(name)] if name in SPECS else []), "a Deployment mounts only its own Secret"
            assert not any("secretKeyRef" in env.get("valueFrom", {}) for env in container["env"]), \
                "secrets are files, never env"


def test_an_unhardened_pod_is_named_with_its_file(rendered):
    docs = _docs(rendered["local"].read_text())
    broken = copy.deepcopy(docs)
    agent = next(doc for doc in broken if doc["kind"] == "Deployment" and doc["metadata"]["name"] == "agent")
    del agent["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"]
    agent["spec"]["template"]["spec"]["automountServiceAccountToken"] = True
    problems = hardening_problems(broken, "local.yaml")
    assert problems == [
        "local.yaml: Deployment/agent: automountServiceAccountToken must be false",
        "local.yaml: Deployment/agent container agent: securityContext.readOnlyRootFilesystem must be true",
    ]


def test_a_policy_for_an_undeclared_caller_is_named_with_its_file(rendered):
    docs = _docs(rendered["local"].read_text())
    rogue = copy.deepcopy(next(doc for doc in docs if doc["kind"] == "NetworkPolicy"
                               and doc["metadata"]["name"] == "host-to-compiler-ingress"))
    rogue["metadata"]["name"] = "agent-to-compiler-ingress"
    rogue["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] = "agent"
    problems = network_policy_problems(docs + [rogue], "local.yaml")
    assert problems == ["local.yaml: NetworkPolicy/agent-to-compiler-ingress (ingress): allows agent → compiler, "
                        "a caller the contracts do not declare"]


def test_each_secret_holds_only_its_owners_files(cert_dir, tmp_path):
    secrets = service_secrets(cert_dir, tmp_path, local_settings(dict.fromkeys(ROLES, "pw")))
    assert secret_problems(secrets, "secrets") == []
    for secret in secrets:
        owner = secret["metadata"]["name"].removesuffix("-identity")
        assert set(secret["data"]) == allowed_secret_files(owner)
        for name, value in secret["data"].items():
            if is_private_file(Path(name)):
                assert name.startswith(owner)
                assert base64.b64decode(value) == (cert_dir / name).read_bytes()
    assert {secret["metadata"]["name"] for secret in secrets} == {secret_name(name) for name in SPECS}


def test_a_secret_holding_another_services_key_is_named(cert_dir, tmp_path):
    secrets = service_secrets(cert_dir, tmp_path, local_settings(dict.fromkeys(ROLES, "pw")))
    agent = next(secret for secret in secrets if secret["metadata"]["name"] == "agent-identity")
    agent["data"]["host-signing.key"] = base64.b64encode((cert_dir / "host-signing.key").read_bytes()).decode()
    assert secret_problems(secrets, "agent.yaml") == [
        "agent.yaml: Secret/agent-identity holds 'host-signing.key': another principal's key "
        "(only agent's own may be here)"]


def test_deploy_secrets_writes_private_files_that_pass_the_check(cert_dir, tmp_path):
    out = tmp_path / "secrets"
    env = {**os.environ, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_VAR_DIR": str(tmp_path / "var")}
    written = subprocess.run([sys.executable, "-m", "cli", "deploy", "secrets", "--out", str(out)], cwd=REPO_ROOT,
                             env=env, capture_output=True, text=True, timeout=60)
    assert written.returncode == 0, written.stderr
    files = sorted(out.iterdir())
    assert [path.name for path in files] == sorted(f"{name}.yaml" for name in [
        *(secret_name(service) for service in SPECS), "postgres-identity"])
    assert all(path.stat().st_mode & 0o077 == 0 for path in files)
    checked = subprocess.run([sys.executable, "-m", "cli", "deploy", "check", *map(str, files)], cwd=REPO_ROOT,
                             env=env, capture_output=True, text=True, timeout=60)
    # Secrets alone carry no NetworkPolicies: the only findings allowed are the missing edges.
    assert [line for line in checked.stderr.splitlines() if "NetworkPolicy" not in line] == []
    # Passwords are made once and kept: a second run writes the same database URLs.
    host = yaml.safe_load((out / "host-identity.yaml").read_text())["data"]["tessera_host_database_url"]
    subprocess.run([sys.executable, "-m", "cli", "deploy", "secrets", "--out", str(out)], cwd=REPO_ROOT, env=env,
                   check=True, capture_output=True, timeout=60)
    assert yaml.safe_load((out / "host-identity.yaml").read_text())["data"]["tessera_host_database_url"] == host


def _objects(docs: list[dict], kind: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == kind}


def _mcp_pod_names() -> list[str]:
    return [pod.name for pod in mcp_pods(load_policy())]


def test_every_stdio_server_of_the_policy_is_an_mcp_pod():
    assert _mcp_pod_names() == ["mcp-tickets", "mcp-time"]
    # The time server speaks stdio only: its pod runs it under the bridge, its reviewed command unchanged.
    (time,) = [pod for pod in mcp_pods(load_policy()) if pod.server == "time"]
    bridge = time.command.index("--")
    assert time.command[:3] == ("python", "-m", "services.mcp_bridge") and time.health_path == "/healthz"
    assert list(time.command[bridge + 1:]) == ["python", *load_policy()["servers"]["time"]["command"][1:]]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_mcp_server_runs_in_a_pod_of_its_own(rendered, overlay):
    docs = _docs(rendered[overlay].read_text())
    deployments, services = _objects(docs, "Deployment"), _objects(docs, "Service")
    accounts = _objects(docs, "ServiceAccount")
    policy = load_policy()
    for pod in mcp_pods(policy):
        rule = policy["servers"][pod.server]
        deployment = deployments[pod.name]
        spec = deployment["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        assert deployment["spec"]["replicas"] == 1
        assert spec["serviceAccountName"] == pod.name and accounts[pod.name]["automountServiceAccountToken"] is False
        assert spec["automountServiceAccountToken"] is False
        assert deployment["spec"]["template"]["metadata"]["labels"][COMPONENT_LABEL] == "mcp-server"
        # The reviewed command, run from the image, serving streamable HTTP on the Service's port: told to
        # where it can (tickets), under the bridge where it speaks only stdio (time).
        reviewed, command = ["python", *rule["command"][1:]], container["command"]
        if pod.server in HTTP_FORMS:
            assert command == [*reviewed, "--http-port", "8000", "--http-host", "0.0.0.0",
                               "--allowed-host", f"{pod.name}:8000"]
        else:
            assert command == ["python", "-m", "services.mcp_bridge", "--port", "8000", "--host", "0.0.0.0",
                               "--allowed-host", f"{pod.name}:8000", "--", *reviewed]
        assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        # Its data folder ({var} in its policy) is a volume of its own; nothing else is writable.
        env = {item["name"]: item["value"] for item in container["env"]}
        assert env == {name: value.replace("{var}", DATA_MOUNT) for name, value in rule.get("env", {}).items()}
        mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
        assert mounts == {"/tmp": "tmp", **({DATA_MOUNT: "data"} if "sandbox" in rule and "data" in rule["sandbox"]
                                             else {})}
        assert all("emptyDir" in volume for volume in spec["volumes"])
        (port,) = services[pod.name]["spec"]["ports"]
        assert (port["port"], port["targetPort"]) == (8000, "http")
        assert services[pod.name]["spec"]["selector"] == {"app.kubernetes.io/name": pod.name}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_the_broker_reaches_an_mcp_server_and_it_reaches_nothing(rendered, overlay):
    docs = _docs(rendered[overlay].read_text())
    assert mcp_server_problems(((doc, overlay) for doc in docs), _mcp_pod_names()) == []
    policies = _objects(docs, "NetworkPolicy")
    ingress = policies["capabilities-to-mcp-tickets-ingress"]["spec"]
    assert ingress["ingress"] == [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": BROKER}}}],
                                   "ports": [{"protocol": "TCP", "port": 8000}]}]
    assert ingress["egress"] == [] and ingress["policyTypes"] == ["Ingress", "Egress"]
    egress = policies["capabilities-to-mcp-tickets-egress"]["spec"]
    assert egress["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": BROKER}}
    assert egress["egress"] == [{"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "mcp-tickets"}}}],
                                 "ports": [{"protocol": "TCP", "port": 8000}]}]
    # Not even DNS: the name lookup policy picks every pod but the MCP servers'.
    assert policies["dns"]["spec"]["podSelector"] == {"matchExpressions": [
        {"key": COMPONENT_LABEL, "operator": "NotIn", "values": ["mcp-server"]}]}


def test_an_mcp_server_opened_to_another_pod_or_to_the_world_is_named(rendered):
    docs = _docs(rendered["local"].read_text())
    broken = copy.deepcopy(docs)
    policies = _objects(broken, "NetworkPolicy")
    ingress = policies["capabilities-to-mcp-tickets-ingress"]
    ingress["spec"]["ingress"][0]["from"].append({"podSelector": {"matchLabels": {"app.kubernetes.io/name": "agent"}}})
    policies["dns"]["spec"]["podSelector"] = {}
    del policies["capabilities-to-mcp-tickets-egress"]
    broken = [doc for doc in broken if doc.get("metadata", {}).get("name") != "capabilities-to-mcp-tickets-egress"]
    assert mcp_server_problems(((doc, "local.yaml") for doc in broken), _mcp_pod_names()) == [
        "local.yaml: NetworkPolicy/capabilities-to-mcp-tickets-ingress: admits more than the broker to the MCP "
        "server pod mcp-tickets",
        "local.yaml: NetworkPolicy/dns: lets the MCP server pod mcp-tickets reach out (it may reach nothing)",
        "local.yaml: NetworkPolicy/dns: lets the MCP server pod mcp-time reach out (it may reach nothing)",
        "local.yaml: no NetworkPolicy lets the broker reach the MCP server pod mcp-tickets",
    ]


def test_the_broker_reaches_the_same_reviewed_tools_over_http(rendered):
    """The broker's ConfigMap holds the policy it loads on Kubernetes: each podded server as transport http at
    its Service, with every tool rule and pin as reviewed; the broker mounts it and is pointed at it."""
    docs = _docs(rendered["local"].read_text())
    (config_map,) = [doc for doc in docs if doc["kind"] == "ConfigMap"
                     and doc["metadata"]["name"].startswith("capabilities-tool-policy")]
    in_cluster = ToolPolicyFile.model_validate(yaml.safe_load(config_map["data"][POLICY_KEY]))
    reviewed = ToolPolicyFile.model_validate(load_policy())
    assert set(in_cluster.servers) == set(reviewed.servers) == {"tickets", "time"}
    for name, server in in_cluster.servers.items():
        assert (server.transport, server.url, server.command, server.env) == (
            "http", f"http://mcp-{name}:8000/mcp", [], {})
        assert server.tools == reviewed.servers[name].tools
        assert server.timeout_seconds == reviewed.servers[name].timeout_seconds
    broker = _objects(docs, "Deployment")[BROKER]["spec"]["template"]["spec"]
    (container,) = broker["containers"]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["TESSERA_CAPABILITIES_TOOLS_FILE"] == f"{POLICY_MOUNT}/{POLICY_KEY}"
    mount = next(mount for mount in container["volumeMounts"] if mount["mountPath"] == POLICY_MOUNT)
    volume = next(volume for volume in broker["volumes"] if volume["name"] == mount["name"])
    assert volume["configMap"]["name"] == config_map["metadata"]["name"] and mount["readOnly"] is True


def _policy_with(**servers: dict) -> dict:
    tickets = load_policy()["servers"]["tickets"]
    return {"version": 1, "servers": {name: {**tickets, **rule} for name, rule in servers.items()}}


def test_declared_credentials_come_from_the_servers_own_secret_only():
    policy = _policy_with(tickets={"credential_env": {"TICKETS_TOKEN": "TESSERA_CAPABILITIES_TICKETS_TOKEN"},
                                   "credential_headers": {"Authorization": "TESSERA_CAPABILITIES_TICKETS_AUTH"}})
    deployment = _objects(workloads(policy), "Deployment")["mcp-tickets"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert [item for item in container["env"] if "valueFrom" in item] == [{"name": "TICKETS_TOKEN", "valueFrom": {
        "secretKeyRef": {"name": credentials_secret("tickets"), "key": "TICKETS_TOKEN"}}}]
    assert credentials_files(policy, {"TESSERA_CAPABILITIES_TICKETS_TOKEN": "t0ken", "OTHER": "x"}) == {
        "mcp-tickets-credentials": {"TICKETS_TOKEN": b"t0ken"}}
    assert credentials_files(load_policy(), {}) == {}
    # The broker no longer hands the server a variable (the pod has it); headers it still sends itself.
    rule = cluster_policy(policy)["servers"]["tickets"]
    assert "credential_env" not in rule and rule["credential_headers"] == {
        "Authorization": "TESSERA_CAPABILITIES_TICKETS_AUTH"}
    # Reading another Secret is named.
    container["env"][-1]["valueFrom"]["secretKeyRef"]["name"] = "capabilities-identity"
    problems = mcp_server_problems([(doc, "x.yaml") for doc in workloads(policy)] + [(deployment, "x.yaml")],
                                   ["mcp-tickets"])
    assert "x.yaml: Deployment/mcp-tickets: TICKETS_TOKEN comes from the Secret 'capabilities-identity' (only its " \
           "own, 'mcp-tickets-credentials')" in problems


def test_an_https_server_outside_opens_the_brokers_https_egress_and_no_pod():
    outside = {"transport": "http", "url": "https://tools.example.com/mcp"}
    policy = _policy_with(tickets={}, remote=outside)
    assert [pod.name for pod in mcp_pods(policy)] == ["mcp-tickets"]
    assert cluster_policy(policy)["servers"]["remote"]["url"] == "https://tools.example.com/mcp"
    https = [doc for doc in network_policies(contract_edges(), policy)
             if doc["metadata"]["name"] == f"{BROKER}-https-egress"]
    assert [doc["metadata"]["annotations"]["tessera.dev/why"] for doc in https] == [
        "capabilities reaches the MCP servers remote (deploy/policy/tools.yaml)"]
    assert not any(doc["metadata"]["name"] == f"{BROKER}-https-egress"
                   for doc in network_policies(contract_edges(), load_policy()))


# --- connectivity as an independent analyzer computes it -------------------------------------------------------

NCA = TOOLS.parent / "nca" / "bin" / "nca"
_CONNECTION = re.compile(r"^(?P<source>\S+) => (?P<destination>\S+) : (?P<allowed>.+)$")
_WORKLOAD = re.compile(r"^tessera/(?P<name>[a-z0-9-]+)\[(?:Deployment|StatefulSet|Job)\]$")
_PORTS = re.compile(r"\{protocols:(?P<protocols>[A-Z, ]+),dst_ports:(?P<ports>[0-9,-]+)\}")
NAMESPACE = ("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tessera\n"
             "  labels: {kubernetes.io/metadata.name: tessera}\n")


def _endpoint(text: str) -> str:
    """A Tessera workload by name; the cluster's DNS as `kube-dns`; anything else as the analyzer's address range."""
    found = _WORKLOAD.match(text)
    if found:
        return found["name"]
    return "kube-dns" if text.startswith("kube-system/") else text


def computed_connectivity(rendered_file: Path, tmp_path: Path) -> set[tuple[str, str, str, str]]:
    """(source, destination, protocol, ports) for everything network-config-analyzer finds allowed by the
    rendered NetworkPolicies (ports as it writes them: "8080", "53", "1-65535"; "*" for all connections)."""
    if not NCA.exists():
        pytest.skip(f"{NCA} is missing: `make k8s-tools` installs network-config-analyzer")
    namespace = tmp_path / "namespace.yaml"
    namespace.write_text(NAMESPACE)
    result = subprocess.run([str(NCA), "--connectivity", "-r", str(rendered_file), "-r", str(namespace),
                             "--output_format", "txt_no_fw_rules", "--output_endpoints", "deployments"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    allowed = set()
    for line in result.stdout.splitlines():
        found = _CONNECTION.match(line.strip())
        if not found:
            continue
        source, destination = _endpoint(found["source"]), _endpoint(found["destination"])
        if found["allowed"] == "All connections":
            allowed.add((source, destination, "*", "*"))
        for group in _PORTS.finditer(found["allowed"]):
            for protocol in group["protocols"].replace(" ", "").split(","):
                allowed |= {(source, destination, protocol, ports) for ports in group["ports"].split(",")}
    return allowed


def _mcp_workloads() -> set[str]:
    return {pod.name if pod.name.startswith("mcp-") else f"mcp-{pod.name}" for pod in mcp_pods(load_policy())}


# The local overlay's PostgreSQL: the three services with a database, and the Job that seeds the warehouse.
LOCAL_DATABASE_CLIENTS = ("host", "capabilities", "resources", "seed-warehouse")


def declared_extras(overlay: str) -> set[tuple[str, str, str, str]]:
    """Edges between workloads that the contracts do not declare: the broker's MCP servers, and the local overlay's
    database."""
    extras = {("capabilities", server, "TCP", str(MCP_PORT)) for server in _mcp_workloads()}
    if overlay == "local":
        extras |= {(client, "postgres", "TCP", "5432") for client in LOCAL_DATABASE_CLIENTS}
    return extras


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_analyzer_computes_exactly_the_caller_table_between_workloads(rendered, overlay, tmp_path):
    """network-config-analyzer (not this project's code) reads the rendered policies as a CNI would enforce them:
    between Tessera's workloads it finds each contract edge on the callee's port, the declared extras, and
    nothing else; outside them, DNS, HTTPS for the three that need it and PostgreSQL for the three with a
    database (and, in production, their migrate Jobs); from outside, web and the MCP front only."""
    docs = _docs(rendered[overlay].read_text())
    workloads = {doc["metadata"]["name"] for doc in docs if doc["kind"] in ("Deployment", "StatefulSet", "Job")}
    allowed = computed_connectivity(rendered[overlay], tmp_path)
    between = {edge for edge in allowed if edge[0] in workloads and edge[1] in workloads}
    expected = {(caller, callee, "TCP", str(DEFAULT_PORTS[callee])) for caller, callee in contract_edges()}
    assert between == expected | declared_extras(overlay)
    outward = {(source, protocol, ports) for source, destination, protocol, ports in allowed
               if source in workloads and destination not in workloads}
    servers = _mcp_workloads()
    dns = {(name, protocol, "53") for name in workloads - servers for protocol in ("TCP", "UDP")}  # they reach nothing
    database_clients = {"host", "capabilities", "resources"}
    if overlay in PRODUCTION_OVERLAYS:
        database_clients |= {job_name(name) for name in ("host", "capabilities", "resources")}
    assert outward == dns | {(name, "TCP", "443") for name in ("agent", "web", "mcp")} \
        | {(name, "TCP", "5432") for name in database_clients}
    node_local = NODE_LOCAL_DNS.removesuffix("/32")  # the analyzer writes a single address without its prefix
    for name in workloads - servers:  # NodeLocal DNSCache's address as well as the cluster's DNS pods
        assert {(name, node_local, "UDP", "53"), (name, "kube-dns", "UDP", "53")} <= allowed, name
    inward = {(destination, ports) for source, destination, _, ports in allowed
              if destination in workloads and source not in workloads}
    assert inward == {("web", str(DEFAULT_PORTS["web"])), ("mcp", str(DEFAULT_PORTS["mcp"]))}


# --- balanced replicas ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_grpc_services_are_headless_so_clients_balance_over_the_replicas(rendered, overlay):
    services = _objects(_docs(rendered[overlay].read_text()), "Service")
    for name in SPECS:
        assert (services[name]["spec"].get("clusterIP") == "None") == (name not in HTTP_PROCESS_NAMES), name


@pytest.mark.parametrize("overlay", PRODUCTION_OVERLAYS)
def test_production_replicas_are_counted_once_and_spread_over_nodes_and_zones(rendered, overlay):
    deployments = _objects(_docs(rendered[overlay].read_text()), "Deployment")
    autoscalers = _objects(_docs(rendered[overlay].read_text()), "HorizontalPodAutoscaler")
    for name, spec in SPECS.items():
        deployment = deployments[name]["spec"]
        if spec.single_replica:  # holds turns in memory: one, replaced (never two at once), not autoscaled
            assert (deployment["replicas"], deployment["strategy"]["type"], name in autoscalers) == (1, "Recreate",
                                                                                                     False)
            continue
        if name in autoscalers:
            assert "replicas" not in deployment, f"{name}: the autoscaler owns the count"
            assert autoscalers[name]["spec"]["minReplicas"] == 2
        else:
            assert deployment["replicas"] == 2, name
        spread = {c["topologyKey"]: c for c in deployment["template"]["spec"]["topologySpreadConstraints"]}
        assert spread["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule", name
        assert spread["topology.kubernetes.io/zone"]["whenUnsatisfiable"] == "ScheduleAnyway", name
        for constraint in spread.values():
            assert constraint["maxSkew"] == 1
            assert constraint["labelSelector"] == deployment["selector"], f"{name} spreads another service's pods"
    assert scaling_problems((doc, overlay) for doc in _docs(rendered[overlay].read_text())) == []


def _cpu(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_autoscalers_add_a_replica_between_its_request_and_its_one_core(rendered, overlay):
    """Scaling out at a share of a tiny request (70% of 100m) adds replicas for idle event loops; a Python service
    uses at most one core, so the point must lie above what a replica requests and well below that core."""
    deployments = _objects(_docs(rendered[overlay].read_text()), "Deployment")
    autoscalers = _objects(_docs(rendered[overlay].read_text()), "HorizontalPodAutoscaler")
    assert set(autoscalers) == {name for name, spec in SPECS.items() if spec.stateless and not spec.single_replica}
    for name, autoscaler in autoscalers.items():
        [metric] = autoscaler["spec"]["metrics"]
        scale_out = _cpu(metric["resource"]["target"]["averageValue"])
        resources = deployments[name]["spec"]["template"]["spec"]["containers"][0]["resources"]
        assert _cpu(resources["requests"]["cpu"]) < scale_out <= 0.5 * _cpu(resources["limits"]["cpu"]), name
        assert autoscaler["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] >= 300
        # Through the SPIFFE bridge a client holds SLOTS_PER_NAME connections to a service: one per replica at least.
        assert autoscaler["spec"]["maxReplicas"] <= SLOTS_PER_NAME, name


def test_replicas_beside_an_autoscaler_are_named_with_the_file(rendered):
    docs = _docs(rendered["production"].read_text())
    for doc in docs:
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == "agent":
            doc["spec"]["replicas"] = 3
    assert scaling_problems((doc, "edited.yaml") for doc in docs) == [
        "edited.yaml: Deployment/agent sets replicas, but a HorizontalPodAutoscaler scales it: leave replicas out "
        "(set the autoscaler's minReplicas instead)"]


# --- migrations as Jobs -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("overlay", PRODUCTION_OVERLAYS)
def test_production_services_await_their_migrate_job_which_alone_holds_the_migrator(rendered, overlay):
    docs = _docs(rendered[overlay].read_text())
    deployments, jobs = _objects(docs, "Deployment"), _objects(docs, "Job")
    databases = [name for name, spec in SPECS.items() if spec.database]
    assert set(jobs) == {job_name(name) for name in databases}
    for name in databases:
        env = {e["name"]: e.get("value") for e in deployments[name]["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env[f"TESSERA_{name.upper()}_MIGRATIONS"] == "await", name
        pod = jobs[job_name(name)]["spec"]["template"]["spec"]
        [container] = pod["containers"]
        assert container["command"] == ["python", "-m", f"services.{name}", "migrate"]
        assert container["image"] == deployments[name]["spec"]["template"]["spec"]["containers"][0]["image"]
        secrets = {volume["name"]: volume["secret"]["secretName"] for volume in pod["volumes"] if "secret" in volume}
        assert list(secrets.values()) == [migrator_secret(name)], f"{name}'s Job mounts {secrets}"
        # The migrator reads its URL from that Secret's files (test_migration_job: from TESSERA_SECRETS_DIR).
        [mount] = [m for m in container["volumeMounts"] if m["name"] in secrets]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["TESSERA_SECRETS_DIR"] == mount["mountPath"] and mount["readOnly"] is True
        assert pod["serviceAccountName"] == MIGRATE and pod["automountServiceAccountToken"] is False
    # No service mounts a migrator's Secret.
    for name, deployment in deployments.items():
        volumes = deployment["spec"]["template"]["spec"]["volumes"]
        mounted = {volume["secret"]["secretName"] for volume in volumes if "secret" in volume}
        assert not mounted & {migrator_secret(db) for db in databases}, name


def test_the_local_overlay_migrates_in_the_services_themselves(rendered):
    docs = _docs(rendered["local"].read_text())
    assert not {name for name in _objects(docs, "Job") if name.startswith(f"{MIGRATE}-")}
    for name, deployment in _objects(docs, "Deployment").items():
        env = {e["name"] for e in deployment["spec"]["template"]["spec"]["containers"][0].get("env", [])}
        assert f"TESSERA_{name.upper()}_MIGRATIONS" not in env, name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_a_slow_start_meets_the_startup_probe_not_liveness(rendered, overlay):
    """Liveness starts only once the startup probe passed, so a process slow to answer at all (imports on a busy
    node) is given its two minutes; after that, waiting for a database is not-ready, never a restart."""
    for name, deployment in _objects(_docs(rendered[overlay].read_text()), "Deployment").items():
        if name not in SPECS:
            continue
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        startup, liveness = container["startupProbe"], container["livenessProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 120, name
        check = {key: value for key, value in startup.items() if key in ("grpc", "httpGet")}
        assert check == {key: value for key, value in liveness.items() if key in ("grpc", "httpGet")}, name
        assert "initialDelaySeconds" not in liveness, name
