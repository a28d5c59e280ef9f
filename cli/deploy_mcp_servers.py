"""The tool policy's MCP servers on Kubernetes: each in a pod of its own, reached over streamable HTTP.

Outside tool servers are the least trusted code (§8). Locally the broker starts a stdio
server as a boxed child; on Kubernetes the pod is the box. Every stdio server in
deploy/policy/tools.yaml becomes (serving streamable HTTP itself where it has an HTTP form below, under
services/mcp_bridge otherwise):
- a ServiceAccount (no token), a Deployment (non-root, read-only root, its data folder as a volume
  when its policy gives it one, no Secret but its own credentials if its policy declares any) and a
  Service named `mcp-<server>`;
- a NetworkPolicy admitting only the broker's pods, and no egress at all (not even DNS): the policy
  gives these servers no network; the broker's own egress allows exactly these pods;
- in the broker's copy of the tool policy (a ConfigMap), the same server as `transport: http` at
  `http://mcp-<server>:<port>/mcp`, every tool rule and pin unchanged, so the broker judges the same
  reviewed tools whichever way it reaches them.
No stdio server is ever spawned inside the broker's pod; an http server stays as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from cli import deploy_objects as k8s
from shared.paths import REPO_ROOT
from shared.rpc.mcp_http import HEALTH_PATH, MCP_PATH

TOOL_POLICY = REPO_ROOT / "deploy" / "policy" / "tools.yaml"
BROKER = "capabilities"
MCP_PORT = 8000
COMPONENT_LABEL = "app.kubernetes.io/component"
COMPONENT = "mcp-server"
DATA_MOUNT = "/var/lib/mcp-server"  # `{var}` of the policy, in the server's pod
APP_ROOT = "/opt/tessera/app"  # `{repo}` in the image
# The broker reads its copy of the tool policy from here (TESSERA_CAPABILITIES_TOOLS_FILE).
POLICY_MOUNT = "/etc/tessera/policy"
POLICY_CONFIG_MAP = "capabilities-tool-policy"
POLICY_KEY = "tools.yaml"
CLUSTER_POLICY_FILE = "deploy/k8s/base/capabilities-tools.yaml"
# What the broker's copy keeps of an http server's rule; the rest (command, env, credentials handed to
# a child process, its sandbox) is about starting a process, which the pod does instead.
HTTP_RULE_KEYS = ("credential_headers", "timeout_seconds", "tools")


@dataclass(frozen=True)
class HttpForm:
    """How one stdio server of the policy serves streamable HTTP in its pod: arguments added to its reviewed
    command ({port}, {host}: the port and the Service name the broker dials), and its readiness path."""

    arguments: tuple[str, ...]
    health_path: str = ""  # "": readiness is an open TCP port


HTTP_FORMS: dict[str, HttpForm] = {
    "tickets": HttpForm(("--http-port", "{port}", "--http-host", "0.0.0.0", "--allowed-host", "{host}:{port}"),
                        health_path=HEALTH_PATH),
}
# Any other stdio server runs in its pod under services/mcp_bridge, which serves its tools over streamable
# HTTP (forwarded unchanged, so the pins hold) and answers readiness once the server lists its tools.
BRIDGE = ("python", "-m", "services.mcp_bridge", "--port", "{port}", "--host", "0.0.0.0",
          "--allowed-host", "{host}:{port}", "--")


@dataclass(frozen=True)
class McpPod:
    """One MCP server as its pod runs it, derived from its policy rule and its HTTP form."""

    server: str
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    # The server's variables that come from its own Secret, each with the broker's variable that holds it
    # where the broker starts the server itself (credential_env).
    credentials: tuple[tuple[str, str], ...]
    data_folder: bool
    health_path: str

    @property
    def name(self) -> str:
        return pod_name(self.server)

    @property
    def url(self) -> str:
        return f"http://{self.name}:{MCP_PORT}{MCP_PATH}"


def pod_name(server: str) -> str:
    return "mcp-" + server.replace("_", "-")  # policy names are lower_snake_case; Kubernetes names are not


def credentials_secret(server: str) -> str:
    return credentials_secret_of_pod(pod_name(server))


def credentials_secret_of_pod(pod: str) -> str:
    return f"{pod}-credentials"


def _in_pod(text: str, host: str) -> str:
    return (text.replace("{python}", "python").replace("{repo}", APP_ROOT).replace("{var}", DATA_MOUNT)
            .replace("{port}", str(MCP_PORT)).replace("{host}", host))


def load_policy(path: Path = TOOL_POLICY) -> dict:
    return yaml.safe_load(path.read_text())


def mcp_pods(policy: dict) -> list[McpPod]:
    pods = []
    for server, rule in sorted(policy.get("servers", {}).items()):
        if rule.get("transport") != "stdio":
            continue
        host = pod_name(server)
        form = HTTP_FORMS.get(server)
        if form is None:
            command, health_path = [*BRIDGE, *rule["command"]], HEALTH_PATH
        else:
            command, health_path = [*rule["command"], *form.arguments], form.health_path
        sandbox = rule.get("sandbox")
        data_folder = "{var}" in " ".join([*command, *rule.get("env", {}).values()]) or (
            isinstance(sandbox, dict) and bool(sandbox.get("data")))
        pods.append(McpPod(server, tuple(_in_pod(part, host) for part in command),
                           tuple((name, _in_pod(value, host)) for name, value in rule.get("env", {}).items()),
                           tuple(sorted(rule.get("credential_env", {}).items())), data_folder, health_path))
    return pods


def https_servers(policy: dict) -> list[str]:
    """Servers the broker reaches outside the cluster (its HTTPS egress exists for them alone)."""
    return sorted(server for server, rule in policy.get("servers", {}).items()
                  if rule.get("transport") == "http" and rule.get("url", "").startswith("https://"))


def cluster_policy(policy: dict) -> dict:
    """The broker's copy: each podded server as an http server at its Service; pins and rules unchanged."""
    pods = {pod.server: pod for pod in mcp_pods(policy)}
    servers = {}
    for server, rule in policy.get("servers", {}).items():
        if server in pods:
            servers[server] = {"transport": "http", "url": pods[server].url,
                               **{key: rule[key] for key in HTTP_RULE_KEYS if key in rule}}
        elif rule.get("transport") == "http":
            servers[server] = rule
    return {**policy, "servers": servers}


def cluster_policy_text(policy: dict) -> str:
    header = ["# Generated by `tessera deploy render` from deploy/policy/tools.yaml and cli/deploy_mcp_servers.py:",
              "# do not edit. The broker's tool policy on Kubernetes: each MCP server in a pod of its own, reached",
              "# over streamable HTTP; tools, descriptions and pins exactly as reviewed in deploy/policy/tools.yaml."]
    return "\n".join(header) + "\n" + yaml.safe_dump(cluster_policy(policy), sort_keys=False, width=120)


def _probe(pod: McpPod, period: int, failures: int) -> dict:
    check = ({"httpGet": {"path": pod.health_path, "port": "http"}} if pod.health_path
             else {"tcpSocket": {"port": "http"}})
    return {**check, "periodSeconds": period, "timeoutSeconds": 3, "failureThreshold": failures}


def _deployment(pod: McpPod) -> dict:
    env = [{"name": name, "value": value} for name, value in pod.env]
    # A third-party server reads its credentials from its environment: from its own Secret, nobody else's.
    env += [{"name": name, "valueFrom": {"secretKeyRef": {"name": credentials_secret(pod.server), "key": name}}}
            for name, _ in pod.credentials]
    mounts = [{"name": "tmp", "mountPath": "/tmp"}]
    volumes = [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]
    if pod.data_folder:
        mounts.append({"name": "data", "mountPath": DATA_MOUNT})
        volumes.append({"name": "data", "emptyDir": {"sizeLimit": "1Gi"}})
    container = {
        "name": pod.name,
        "image": f"{k8s.IMAGE}:{k8s.IMAGE_TAG}",
        "imagePullPolicy": "Always",
        "command": list(pod.command),
        "ports": [{"name": "http", "containerPort": MCP_PORT, "protocol": "TCP"}],
        "env": env,
        "readinessProbe": _probe(pod, 3, 2),
        "livenessProbe": {**_probe(pod, 10, 6), "initialDelaySeconds": 10},
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        "securityContext": k8s.hardened_container_security(),
        "volumeMounts": mounts,
    }
    pod_labels = {**k8s.labels(pod.name), COMPONENT_LABEL: COMPONENT}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": pod.name, "labels": pod_labels},
        "spec": {
            "replicas": 1,  # its data folder is its own: one pod
            "selector": k8s.selector(pod.name),
            "template": {
                "metadata": {"labels": dict(pod_labels)},  # a copy: no YAML anchor in the output
                "spec": {"serviceAccountName": pod.name, "automountServiceAccountToken": False,
                         "enableServiceLinks": False, "securityContext": k8s.hardened_pod_security(),
                         "containers": [container], "volumes": volumes},
            },
        },
    }


def credentials_files(policy: dict, environ: dict[str, str]) -> dict[str, dict[str, bytes]]:
    """Secret name → its files, for each MCP server that declares credentials: valued from the variables its
    policy names (the operator sets them as they would for the broker). None for a server without any."""
    return {credentials_secret(pod.server): {name: environ.get(source, "").encode() for name, source in pod.credentials}
            for pod in mcp_pods(policy) if pod.credentials}


def workloads(policy: dict) -> list[dict]:
    objects = []
    for pod in mcp_pods(policy):
        objects += [k8s.service_account(pod.name), _deployment(pod), k8s.service(pod.name, "http", MCP_PORT)]
    return objects


def network_policies(policy: dict) -> list[dict]:
    """Per server: ingress from the broker only, no egress; and the broker's egress to it."""
    policies = []
    for pod in mcp_pods(policy):
        why = f"the broker reaches the MCP server {pod.server!r} (deploy/policy/tools.yaml), and nothing else does"
        broker, server = k8s.selector(BROKER), k8s.selector(pod.name)
        policies.append(k8s.network_policy(f"{BROKER}-to-{pod.name}-ingress", server,
                                           [{"from": [{"podSelector": broker}], "ports": k8s.tcp(MCP_PORT)}], [],
                                           why + "; it reaches nothing"))
        policies.append(k8s.network_policy(f"{BROKER}-to-{pod.name}-egress", broker, None,
                                           [{"to": [{"podSelector": server}], "ports": k8s.tcp(MCP_PORT)}], why))
    return policies


def without_mcp_servers() -> dict:
    """A pod selector for every pod but the MCP servers' (they resolve no names: they reach nothing)."""
    return {"matchExpressions": [{"key": COMPONENT_LABEL, "operator": "NotIn", "values": [COMPONENT]}]}
