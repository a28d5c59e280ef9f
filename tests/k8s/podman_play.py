"""Run a rendered overlay under Debian's podman 4.3 (`podman kube play`): real pods, each with its
own network namespace, Secrets mounted from Secret objects, DNS between pods by pod name.

podman kube play runs Pods (and Deployments, as pods named `<name>-pod`), not the rest of
Kubernetes, so `for_podman` adapts the rendered objects, and says each adaptation here:
- a Deployment, the StatefulSet and the Job become a Pod named like the object, so that the
  Service names the manifests use (`host:50055`, `postgres:5432`) resolve as pod names;
- the StatefulSet's volume claim becomes an emptyDir, and every emptyDir gets a name of its
  own pod's (podman 4.3 shares same-named emptyDirs across the pods of one play);
- Services, NetworkPolicies, PodDisruptionBudgets, autoscalers, ServiceAccounts and the
  Namespace are left out: podman has none of them (the policies are checked offline instead);
- probes are left out: podman 4.3 has no gRPC probe; readiness is asked by the test itself,
  over each pod's plaintext health port, from outside the pods;
- container ports are left out: podman 4.3 publishes every containerPort on the host (where
  they collide: every pod's health port is 8081, and the machine's own PostgreSQL has 5432);
  pods reach each other, and the test reaches them, on the pod network without it;
- podman 4.3 mounts a Secret's `data` values as they are written, without base64-decoding
  them, and every file 0644 root (defaultMode is ignored). Secrets are therefore created
  with their values in plain text, and the container copies the mounted files into the
  pod's own state volume, 0600 and owned by the service's user, then execs the service:
  the service still reads only what its own Secret object held.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
from pathlib import Path

import yaml

from shared.paths import REPO_ROOT

CONTAINERS_CONF = REPO_ROOT / "deploy" / "image" / "containers.conf"
LEFT_OUT = {"Namespace", "ServiceAccount", "Service", "NetworkPolicy", "PodDisruptionBudget",
            "HorizontalPodAutoscaler"}
IDENTITY_COPY = "/var/lib/tessera/identity"
SECRET_SOURCE = "/etc/tessera/secret-source"


def podman(*args: str, check: bool = True, timeout: float = 300, input: str | None = None
           ) -> subprocess.CompletedProcess:
    env = {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}
    result = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, env=env,
                            input=input)
    if check and result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {result.stderr.strip() or result.stdout.strip()}")
    return result


def _own_volumes(name: str, spec: dict) -> None:
    """podman 4.3 gives every emptyDir of one `kube play` with the same name the same volume, across
    pods: each pod's emptyDirs get names of their own, or every service would share /var/lib/tessera."""
    renamed = {}
    for volume in spec.get("volumes", []):
        if "emptyDir" in volume:
            renamed[volume["name"]] = volume["name"] = f"{name}-{volume['name']}"
    for container in spec.get("initContainers", []) + spec["containers"]:
        for mount in container.get("volumeMounts", []):
            mount["name"] = renamed.get(mount["name"], mount["name"])


def _pod(name: str, template: dict, restart: str) -> dict:
    spec = copy.deepcopy(template["spec"])
    spec["restartPolicy"] = restart
    for container in spec["containers"]:
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            container.pop(probe, None)
        container.pop("ports", None)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": template["metadata"]["labels"]},
            "spec": spec}


def _copy_identity_first(pod: dict) -> None:
    """The service reads its Secret's files from a 0600 copy in its own state volume (see above). The copy
    runs in the service's container, just before it: podman 4.3's init containers race their own removal."""
    spec = pod["spec"]
    if not any("secret" in v and v["name"] == "identity" for v in spec["volumes"]):
        return
    main = spec["containers"][0]
    for mount in main["volumeMounts"]:
        if mount["name"] == "identity":
            mount["mountPath"] = SECRET_SOURCE
    for variable in main["env"]:
        if variable["name"] in ("TESSERA_CERT_DIR", "TESSERA_SECRETS_DIR"):
            variable["value"] = IDENTITY_COPY
    service = " ".join(main["command"])
    main["command"] = ["sh", "-c", f"set -e; mkdir -p {IDENTITY_COPY}; chmod 0700 {IDENTITY_COPY}; "
                                   f"cp {SECRET_SOURCE}/* {IDENTITY_COPY}/; chmod 0600 {IDENTITY_COPY}/*; "
                                   f"exec {service}"]


def for_podman(docs: list[dict]) -> list[dict]:
    adapted = []
    for doc in docs:
        kind = doc["kind"]
        if kind in LEFT_OUT:
            continue
        if kind == "Deployment":
            pod = _pod(doc["metadata"]["name"], doc["spec"]["template"], "Always")
            _copy_identity_first(pod)
        elif kind == "StatefulSet":
            pod = _pod(doc["metadata"]["name"], doc["spec"]["template"], "Always")
            for claim in doc["spec"].get("volumeClaimTemplates", []):
                pod["spec"]["volumes"].append({"name": claim["metadata"]["name"], "emptyDir": {}})
        elif kind == "Job":
            pod = _pod(doc["metadata"]["name"], doc["spec"]["template"], "OnFailure")
        elif kind == "ConfigMap":
            adapted.append(doc)
            continue
        else:
            raise AssertionError(f"{kind}/{doc['metadata']['name']}: no podman adaptation for this kind")
        _own_volumes(pod["metadata"]["name"], pod["spec"])
        adapted.append(pod)
    return adapted


def create_secret(secret: dict, folder: Path) -> str:
    """`podman secret create NAME FILE` with the values in plain text (podman 4.3 does not decode)."""
    plain = {**secret, "data": {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}}
    path = folder / f"{secret['metadata']['name']}.podman.yaml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(yaml.safe_dump(plain, sort_keys=False))
    name = secret["metadata"]["name"]
    podman("secret", "rm", name, check=False)
    podman("secret", "create", name, str(path))
    return name


def pod_ip(pod: str, network: str) -> str:
    infra = json.loads(podman("pod", "inspect", pod).stdout)
    infra = infra[0] if isinstance(infra, list) else infra
    details = json.loads(podman("inspect", infra["InfraContainerID"]).stdout)[0]
    return details["NetworkSettings"]["Networks"][network]["IPAddress"]


def container_state(container: str) -> dict:
    result = podman("inspect", container, check=False)
    if result.returncode != 0:
        return {}
    return json.loads(result.stdout)[0]["State"]
