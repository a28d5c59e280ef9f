"""Building blocks of the rendered Kubernetes objects, shared by the services' renderer
(cli/deploy_manifests.py) and the MCP servers' (cli/deploy_mcp_servers.py), so both harden
pods and write NetworkPolicies the same way."""

from __future__ import annotations

NAMESPACE = "tessera"
IMAGE = "localhost/tessera"
IMAGE_TAG = "0.1.0"
UID = 10001
NAME_LABEL = "app.kubernetes.io/name"


def labels(name: str) -> dict[str, str]:
    return {NAME_LABEL: name, "app.kubernetes.io/part-of": "tessera"}


def selector(name: str) -> dict:
    return {"matchLabels": {NAME_LABEL: name}}


def hardened_container_security() -> dict:
    return {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True, "privileged": False, "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"}}


def hardened_pod_security() -> dict:
    return {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "fsGroup": UID,
            "seccompProfile": {"type": "RuntimeDefault"}}


def service_account(name: str) -> dict:
    """No API token: no pod of ours talks to the Kubernetes API."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "automountServiceAccountToken": False,
            "metadata": {"name": name, "labels": labels(name)}}


def network_policy(name: str, pod_selector: dict, ingress: list[dict] | None, egress: list[dict] | None,
                   why: str) -> dict:
    """A policy for the pods `pod_selector` picks ({}: every pod); None leaves that direction alone."""
    spec: dict = {"podSelector": pod_selector, "policyTypes": []}
    if ingress is not None:
        spec["policyTypes"].append("Ingress")
        spec["ingress"] = ingress
    if egress is not None:
        spec["policyTypes"].append("Egress")
        spec["egress"] = egress
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "tessera"},
                         "annotations": {"tessera.dev/why": why}},
            "spec": spec}


def tcp(port: int) -> list[dict]:
    return [{"protocol": "TCP", "port": port}]


def service(name: str, port_name: str, port: int, headless: bool = False) -> dict:
    """A Service for `name`'s pods. Headless (no virtual IP): its DNS name answers every ready pod's address,
    for clients that balance calls themselves (gRPC's round_robin); a virtual IP would pin each long-lived
    HTTP/2 connection, and so all its calls, to whichever pod it reached first."""
    spec: dict = {"selector": {NAME_LABEL: name},
                  "ports": [{"name": port_name, "port": port, "targetPort": port_name, "protocol": "TCP"}]}
    if headless:
        spec = {"clusterIP": "None", **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels(name)},
            "spec": spec}
