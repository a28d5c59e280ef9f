"""An overlay's objects composed in Python, as kustomize composes them from the base, the Components and the
overlay's own files: the source of the Helm chart (cli/deploy_helm.py). A test holds each composition equal to
`kubectl kustomize` of the overlay with the same profile, identity provider and way in.

Kustomize merges the Components' patches strategically: list items with the same merge key (a container's name, a
mount's path ...) are merged, new ones go before the base's, in the order the patches apply.
"""

from __future__ import annotations

import copy
import functools
import hashlib
from pathlib import Path

import yaml

from cli import deploy_identity, deploy_public
from cli.deploy_manifests import contract_edges, migration_objects, network_policies, production_patches, workloads
from cli.deploy_mcp_servers import POLICY_CONFIG_MAP, POLICY_KEY, cluster_policy_text, load_policy
from cli.deploy_objects import IMAGE, IMAGE_TAG, NAMESPACE, rewritten
from shared.paths import REPO_ROOT

PROFILES = ("production", "local")  # local: one machine, PostgreSQL inside, certificates from `tessera certs`
LOCAL_OVERLAY = REPO_ROOT / "deploy" / "k8s" / "overlays" / "local"
LOCAL_RESOURCES = ("postgres.yaml", "seed-warehouse.yaml")
LOCAL_CONFIG_MAP = ("postgres-init", "postgres-init/10-roles.sh")  # its name, and its one file
PROVIDERS = deploy_identity.PROVIDERS
WAYS_IN = ("ingress", "gateway-api", "none")  # none: the operator brings their own way in
# What components/production's `images` makes of the base's image (its kustomization.yaml).
RELEASE_IMAGE = f"registry.example.com/tessera:{IMAGE_TAG}"
EXAMPLE_PUBLIC_URL = "https://tessera.example.com"  # the production overlays' tessera-public url
# Kubernetes' merge keys for the lists our patches touch (strategic merge patch).
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath"}
CLUSTER_SCOPED = {"Namespace", "CertificateRequestPolicy", "ClusterSPIFFEID"}


def strategic_merge(base: dict, patch: dict) -> dict:
    merged = dict(base)
    for key, value in patch.items():
        if key in MERGE_KEYS and isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = _merge_list(merged[key], value, MERGE_KEYS[key])
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = strategic_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _merge_list(base: list[dict], patch: list[dict], key: str) -> list[dict]:
    patched = {item[key]: item for item in patch}
    known = {item[key] for item in base}
    return [copy.deepcopy(item) for item in patch if item[key] not in known] + \
        [strategic_merge(item, patched[item[key]]) if item[key] in patched else item for item in base]


def _apply(objects: list[dict], patches: list[dict]) -> list[dict]:
    by_name = {(patch["kind"], patch["metadata"]["name"]): patch for patch in patches}
    return [strategic_merge(obj, by_name[(obj["kind"], obj["metadata"]["name"])])
            if (obj["kind"], obj["metadata"]["name"]) in by_name else obj for obj in objects]


def config_map(name: str, data: dict[str, str]) -> dict:
    """As kustomize's configMapGenerator writes one (no labels)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE},
            "data": data}


def content_name(name: str, data: dict[str, str]) -> str:
    """`name` with a suffix from the content, so pods mounting it roll when it changes (kustomize's generators do
    the same with their own hash)."""
    digest = hashlib.sha256(repr(sorted(data.items())).encode()).hexdigest()[:10]
    return f"{name}-{digest}"


def rename_config_map(value: object, old: str, new: object) -> object:
    """Every reference to ConfigMap `old` (a volume, an env entry) made to `new`."""
    def renamed(found: dict) -> dict:
        for reference in ("configMap", "configMapKeyRef"):
            if isinstance(found.get(reference), dict) and found[reference].get("name") == old:
                found[reference] = {**found[reference], "name": new}
        return found

    return rewritten(value, renamed)


def _in_namespace(obj: dict) -> dict:
    if obj["kind"] in CLUSTER_SCOPED or "namespace" in obj["metadata"]:
        return obj
    return {**obj, "metadata": {**obj["metadata"], "namespace": NAMESPACE}}


def _released(found: dict) -> dict:
    if found.get("image") == f"{IMAGE}:{IMAGE_TAG}":
        found["image"] = RELEASE_IMAGE
    return found


def base() -> list[dict]:
    """deploy/k8s/base without its Namespace: the workloads, the NetworkPolicies and the broker's tool policy, whose
    ConfigMap name carries a hash of its content. A copy: every composition changes its own."""
    return copy.deepcopy(_base())


@functools.cache
def _base() -> list[dict]:
    """Built once per process: the chart composes twelve overlays from it (the contracts and the tool policy read
    once, not twelve times)."""
    tool_policy = load_policy()
    edges = contract_edges()
    data = {POLICY_KEY: cluster_policy_text(tool_policy)}
    policy_map = content_name(POLICY_CONFIG_MAP, data)
    objects = [*workloads(edges, tool_policy), *network_policies(edges, tool_policy)]
    objects = [_in_namespace(obj) for obj in rename_config_map(objects, POLICY_CONFIG_MAP, policy_map)]
    return [*objects, config_map(policy_map, data)]


def way_in(kind: str) -> list[dict]:
    if kind == "ingress":
        return [deploy_public.ingress(), deploy_public.certificate()]
    if kind == "gateway-api":
        return [*deploy_public.gateway(), deploy_public.certificate()]
    return []


def local() -> list[dict]:
    """What deploy/k8s/overlays/local renders, but for the Namespace: the base, PostgreSQL inside with its roles'
    script, the demo warehouse's seed Job, and every Deployment's image used as built on the machine, never pulled."""
    objects = base()
    for obj in objects:
        if obj["kind"] == "Deployment":
            obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    for name in LOCAL_RESOURCES:
        objects += [_in_namespace(doc) for doc in yaml.safe_load_all((LOCAL_OVERLAY / name).read_text()) if doc]
    name, script = LOCAL_CONFIG_MAP
    return [*objects, config_map(name, {Path(script).name: (LOCAL_OVERLAY / script).read_text()})]


def production(provider: str, way: str) -> list[dict]:
    """What a production overlay with `provider`'s identities and `way` in renders, but for the Namespace (a Helm
    release cannot own the namespace it is installed into), with the public host left as
    deploy_public.PLACEHOLDER_HOST and the ConfigMap tessera-public named without a hash."""
    identity_patches, identity_objects = dict(zip(PROVIDERS, (
        deploy_identity.csi_driver_spiffe, deploy_identity.spire, deploy_identity.cert_manager_csi),
        strict=True))[provider]()
    objects = _apply(base(), production_patches())
    objects = _apply(objects, identity_patches)
    public = config_map(deploy_public.PUBLIC_CONFIG_MAP, {deploy_public.PUBLIC_URL_KEY: EXAMPLE_PUBLIC_URL})
    return rewritten([*objects, *migration_objects(), *identity_objects, *way_in(way), public], _released)
