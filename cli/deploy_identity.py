"""Where production pods get their identities: one kustomize Component per provider, rendered from the contracts'
principals and the deployment's identity scheme (shared/identity/principals.py).

Every provider binds a pod's SPIFFE id to its ServiceAccount, so writing another id into a pod spec gets nothing:

- csi-driver-spiffe (the default): cert-manager's SPIFFE CSI driver requests each pod's certificate with the pod's
  own ServiceAccount token, and its approver signs only `spiffe://<trust domain>/ns/<ns>/sa/<sa>` for that account.
- spire: SPIRE's ClusterSPIFFEID gives each pod the id of its ServiceAccount; spiffe-helper, a native sidecar,
  writes the SVID, its key and the bundle as files (Tessera reads files, and follows their renewal).
- cert-manager-csi: cert-manager's CSI driver writes whatever `uri-sans` a pod asks for, so approver-policy must
  decide: one CertificateRequestPolicy per ServiceAccount, usable by that account alone (RBAC `use`), allowing
  exactly its SPIFFE id and DNS name, for the namespace's own Issuer. Needs the driver's token requests (requests
  made as the pod's account) and cert-manager's default approver off.

Both cert-manager drivers create a pod's CertificateRequest as the pod's ServiceAccount, which may therefore create
CertificateRequests in the namespace (and do nothing else with the API).

The first two issue the URI SAN alone, so clients check it themselves (TESSERA_CLIENT_TLS=spiffe-bridge).
"""

from __future__ import annotations

from cli.deploy_objects import (
    NAMESPACE,
    UID,
    component_file,
    generated_header,
    hardened_container_security,
    labels,
    yaml_documents,
)
from shared.config import CLIENT_TLS_SPIFFE_BRIDGE, CLIENT_TLS_VARIABLE
from shared.identity.principals import (
    CLI_SPIFFE_PATH_VARIABLE,
    DEFAULT_CLI_SPIFFE_PATH,
    HTTP_PROCESS_NAMES,
    PRINCIPAL_PLACEHOLDER,
    PROCESS_NAMES,
    SPIFFE_PATH_VARIABLE,
    TRUST_DOMAIN_VARIABLE,
    IdentityScheme,
)

# The trust domain both SPIFFE issuers default to (csi-driver-spiffe's app.trustDomain; set SPIRE's to match).
TRUST_DOMAIN = "cluster.local"
SCHEME = IdentityScheme(TRUST_DOMAIN, f"/ns/{NAMESPACE}/sa/{PRINCIPAL_PLACEHOLDER}", DEFAULT_CLI_SPIFFE_PATH).check()
PROVIDERS = ("csi-driver-spiffe", "spire", "cert-manager-csi")
COMPONENTS = "deploy/k8s/components/identity"
SVID_MOUNT = "/var/run/tessera/svid"
# cert-manager-csi: an Issuer in Tessera's namespace, so only requests made there can name it (a ClusterIssuer could
# be named from any namespace, and approved by any other team's policy).
ISSUER = "tessera-ca"
CERT_DURATION, RENEW_BEFORE = "720h", "240h"

SPIFFE_HELPER_IMAGE = "ghcr.io/spiffe/spiffe-helper:0.11.0"
SPIFFE_HELPER_CONFIG = "spiffe-helper"
WORKLOAD_API_MOUNT = "/spiffe-workload-api"
HELPER_HEALTH_PORT = 8083

IDENTITY_LABELS = {"app.kubernetes.io/part-of": "tessera", "app.kubernetes.io/component": "identity"}
# Header lines of every file this module writes; the file names the provider.
GENERATED = generated_header("proto/ and cli/deploy_identity.py")


def spiffe_id(name: str) -> str:
    return SCHEME.ids[name]


def dns_name(name: str) -> str | None:
    return SCHEME.server_name(name)


def usages(name: str) -> list[str]:
    return ["digital signature", "client auth"] if name in HTTP_PROCESS_NAMES else \
        ["digital signature", "server auth", "client auth"]


def _env(name: str, uri_only: bool) -> list[dict]:
    prefix = f"TESSERA_{name.upper()}_"
    env = {prefix + "CERT": f"{SVID_MOUNT}/tls.crt", prefix + "KEY": f"{SVID_MOUNT}/tls.key",
           "TESSERA_CA_CERT": f"{SVID_MOUNT}/ca.crt", TRUST_DOMAIN_VARIABLE: SCHEME.trust_domain,
           SPIFFE_PATH_VARIABLE: SCHEME.path, CLI_SPIFFE_PATH_VARIABLE: SCHEME.cli_path}
    if uri_only:
        env[CLIENT_TLS_VARIABLE] = CLIENT_TLS_SPIFFE_BRIDGE
    return [{"name": key, "value": value} for key, value in env.items()]


def _patch(name: str, uri_only: bool, volumes: list[dict], init_containers: list[dict] | None = None) -> dict:
    pod = {"containers": [{"name": name, "env": _env(name, uri_only),
                           "volumeMounts": [{"name": "svid", "mountPath": SVID_MOUNT, "readOnly": True}]}],
           "volumes": volumes}
    if init_containers:
        pod["initContainers"] = init_containers
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"template": {"spec": pod}}}


def _account_role(name: str, role: str, rule: dict) -> list[dict]:
    """A Role holding `rule`, bound to service `name`'s ServiceAccount alone."""
    metadata = {"name": role, "namespace": NAMESPACE, "labels": labels(name)}
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": metadata, "rules": [rule]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": dict(metadata),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
             "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]}]


def _requester(name: str) -> list[dict]:
    """Both cert-manager drivers create the pod's CertificateRequest with the pod's own ServiceAccount token
    (which is what lets an approver tie the id to the account): the account may create requests, nothing else."""
    return _account_role(name, f"{name}-certificate-requester", {
        "apiGroups": ["cert-manager.io"], "resources": ["certificaterequests"], "verbs": ["create"]})


def csi_driver_spiffe() -> tuple[list[dict], list[dict]]:
    """(patches, objects): the driver's volume; the id is the pod's ServiceAccount's, decided by the driver."""
    patches = [_patch(name, True, [{"name": "svid", "csi": {
        "driver": "spiffe.csi.cert-manager.io", "readOnly": True,
        "volumeAttributes": {"spiffe.csi.cert-manager.io/fs-group": str(UID)}}}]) for name in PROCESS_NAMES]
    return patches, [obj for name in PROCESS_NAMES for obj in _requester(name)]


def _spiffe_helper_config() -> str:
    return "\n".join([
        f'agent_address = "{WORKLOAD_API_MOUNT}/spire-agent.sock"',
        f'cert_dir = "{SVID_MOUNT}"',
        'svid_file_name = "tls.crt"',
        'svid_key_file_name = "tls.key"',
        'svid_bundle_file_name = "ca.crt"',
        "key_file_mode = 0600",
        "cert_file_mode = 0644",
        "daemon_mode = true",
        "health_checks {",
        "  listener_enabled = true",
        f"  bind_port = {HELPER_HEALTH_PORT}",
        '  liveness_path = "/live"',
        '  readiness_path = "/ready"',
        "}",
        ""])


def _spiffe_helper() -> dict:
    """A native sidecar (an init container that keeps running): it starts first, and the service starts once its
    startup probe saw the SVID written."""
    def probe(path: str, period: int) -> dict:
        return {"httpGet": {"path": path, "port": HELPER_HEALTH_PORT}, "periodSeconds": period, "timeoutSeconds": 3,
                "failureThreshold": 30 if path == "/ready" else 6}

    return {"name": "spiffe-helper", "image": SPIFFE_HELPER_IMAGE, "imagePullPolicy": "Always",
            "restartPolicy": "Always", "args": ["-config", "/etc/spiffe-helper/helper.conf"],
            "startupProbe": probe("/ready", 2), "readinessProbe": probe("/ready", 10),
            "livenessProbe": probe("/live", 10),
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
            "securityContext": hardened_container_security(),
            "volumeMounts": [{"name": "spire-workload-api", "mountPath": WORKLOAD_API_MOUNT, "readOnly": True},
                             {"name": "spiffe-helper-config", "mountPath": "/etc/spiffe-helper", "readOnly": True},
                             {"name": "svid", "mountPath": SVID_MOUNT}]}


def spire() -> tuple[list[dict], list[dict]]:
    volumes = [{"name": "svid", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
               {"name": "spire-workload-api", "csi": {"driver": "csi.spiffe.io", "readOnly": True}},
               {"name": "spiffe-helper-config", "configMap": {"name": SPIFFE_HELPER_CONFIG, "defaultMode": 0o444}}]
    patches = [_patch(name, True, volumes, [_spiffe_helper()]) for name in PROCESS_NAMES]
    registration = {
        "apiVersion": "spire.spiffe.io/v1alpha1", "kind": "ClusterSPIFFEID",
        "metadata": {"name": f"tessera-{NAMESPACE}", "labels": IDENTITY_LABELS},
        "spec": {
            # The ServiceAccount decides the id: the same template as TESSERA_SPIFFE_PATH.
            "spiffeIDTemplate": "spiffe://{{ .TrustDomain }}/ns/{{ .PodMeta.Namespace }}/sa/"
                                "{{ .PodSpec.ServiceAccountName }}",
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}},
            # Tessera's services only: the MCP servers' pods reach nothing and hold no identity.
            "podSelector": {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In",
                                                  "values": list(PROCESS_NAMES)}]},
        },
    }
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": SPIFFE_HELPER_CONFIG, "namespace": NAMESPACE, "labels": IDENTITY_LABELS},
              "data": {"helper.conf": _spiffe_helper_config()}}
    return patches, [registration, config]


def policy_name(name: str) -> str:
    return f"tessera-{NAMESPACE}-{name}"


def _request_policy(name: str) -> dict:
    allowed: dict = {"uris": {"values": [spiffe_id(name)], "required": True}, "usages": usages(name)}
    if dns_name(name):
        allowed["dnsNames"] = {"values": [dns_name(name)], "required": True}
    return {"apiVersion": "policy.cert-manager.io/v1alpha1", "kind": "CertificateRequestPolicy",
            "metadata": {"name": policy_name(name), "labels": labels(name)},
            "spec": {"allowed": allowed, "constraints": {"maxDuration": CERT_DURATION},
                     "selector": {"issuerRef": {"name": ISSUER, "kind": "Issuer", "group": "cert-manager.io"},
                                  "namespace": {"matchNames": [NAMESPACE]}}}}


def _policy_binding(name: str) -> list[dict]:
    """Only the pod's own ServiceAccount may use its policy (approver-policy checks RBAC `use` for the requester,
    which the driver's token requests make the pod's account)."""
    return _account_role(name, f"{name}-certificate-policy", {
        "apiGroups": ["policy.cert-manager.io"], "resources": ["certificaterequestpolicies"], "verbs": ["use"],
        "resourceNames": [policy_name(name)]})


def cert_manager_csi() -> tuple[list[dict], list[dict]]:
    patches = []
    for name in PROCESS_NAMES:
        attributes = {
            "csi.cert-manager.io/issuer-name": ISSUER,
            "csi.cert-manager.io/issuer-kind": "Issuer",
            "csi.cert-manager.io/uri-sans": spiffe_id(name),
            **({"csi.cert-manager.io/dns-names": dns_name(name)} if dns_name(name) else {}),
            "csi.cert-manager.io/key-usages": ",".join(usages(name)),
            "csi.cert-manager.io/duration": CERT_DURATION,
            "csi.cert-manager.io/renew-before": RENEW_BEFORE,
            "csi.cert-manager.io/fs-group": str(UID),
        }
        patches.append(_patch(name, False, [{"name": "svid", "csi": {
            "driver": "csi.cert-manager.io", "readOnly": True, "volumeAttributes": attributes}}]))
    issuer = {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
              "metadata": {"name": ISSUER, "namespace": NAMESPACE, "labels": IDENTITY_LABELS},
              # The CA's key, in a Secret of this namespace: no Tessera pod holds an API token to read it; keep
              # Secret reads here to the people who may mint identities.
              "spec": {"ca": {"secretName": ISSUER}}}
    objects = [issuer]
    for name in PROCESS_NAMES:
        objects += [_request_policy(name), *_policy_binding(name), *_requester(name)]
    return patches, objects


def render_components() -> dict[str, str]:
    """Path under the repository → text: per provider a Component (kustomization, patches, objects)."""
    files = {}
    for provider, make in zip(PROVIDERS, (csi_driver_spiffe, spire, cert_manager_csi), strict=True):
        patches, objects = make()
        folder = f"{COMPONENTS}/{provider}"
        files[f"{folder}/kustomization.yaml"] = component_file(
            GENERATED, f"# Production identities from {provider}.\n",
            **({"resources": ["objects.yaml"]} if objects else {}), patches=[{"path": "patches.yaml"}])
        files[f"{folder}/patches.yaml"] = yaml_documents(GENERATED, patches)
        if objects:
            files[f"{folder}/objects.yaml"] = yaml_documents(GENERATED, objects)
    return files
