"""Kubernetes manifests for Tessera, rendered from one table and from the contracts.

`render_generated()` writes `deploy/k8s/base/`: per service a ServiceAccount (no
token), a Deployment, a Service (headless for gRPC: clients balance over the
replicas themselves, shared.rpc.channels), a PodDisruptionBudget, an autoscaler for
the stateless ones (which then own the replica count), and the NetworkPolicies. The policies come from the
callers declared in `proto/` (`option (tessera.authz.v1.callers)`): deny all,
then one allow per declared edge, so a new caller in a contract changes the
rendered files and `tessera deploy render --check` (and a test) fails until
they are regenerated. It also writes the production component's patches
(replicas, spread over nodes and zones, services awaiting their migrations)
and its migrate Jobs (cli/deploy_migrations.py), one Component per identity provider (cli/deploy_identity.py),
docs/trust-graph.md, the caller table as a page, and the
tool policy's MCP servers as pods of their own with the broker's copy of the
policy that reaches them (cli/deploy_mcp_servers.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from cli import deploy_identity, deploy_migrations, deploy_public
from cli import deploy_mcp_servers as mcp_servers
from cli.deploy_mcp_servers import POLICY_CONFIG_MAP, POLICY_KEY, POLICY_MOUNT
from cli.deploy_objects import (
    HTTPS_POLICY_SUFFIX,
    IMAGE,
    IMAGE_TAG,
    POSTGRES_PORT,
    POSTGRESQL_POLICY_SUFFIX,
    SECRET_MOUNT,
    generated_header,
    hardened_container_security,
    hardened_pod_security,
    labels,
    network_policy,
    selector,
    service,
    service_account,
    tcp,
    yaml_documents,
)
from shared.config import DEFAULT_PORTS
from shared.identity.principals import HTTP_PROCESS_NAMES, PROCESS_NAMES
from shared.rpc.authz import declared_callers
from shared.rpc.contracts import SERVICES
from shared.rpc.runtime import LIVENESS_SERVICE

HEALTH_PORT = 8081
STATE_MOUNT = "/var/lib/tessera"
DEPENDENCY_WAIT_SECONDS = 86400
STARTUP_SECONDS = 120  # how long a process may take to answer its first health check
# The operator CLI reaches services with `kubectl port-forward`, which enters the pod through the
# kubelet, not the pod network: its declared edges need no NetworkPolicy.
OUTSIDE_THE_POD_NETWORK = {"cli"}


# A Python service's event loop uses at most one core (limit "1"). The autoscaler adds a replica when the
# replicas' average CPU passes this, the loop about 40% busy, where queueing starts to add latency; scaling
# earlier would add replicas for idle loops (a replica idles at 3-8m; a turn costs the agent about 36 ms of
# CPU with the built-in planner, the compiler 12 ms, web 4 ms: measured on `tessera up`, docs/deploy-kubernetes.md).
SCALE_OUT_CPU = "400m"
# What the autoscaled services request: a replica's steady share below the scale-out point.
AUTOSCALED_CPU = "250m"


@dataclass(frozen=True)
class ServiceSpec:
    """How one process runs on Kubernetes; the trust edges come from the contracts, not from here."""

    name: str
    stateless: bool  # no database of its own: scaled by an autoscaler
    cpu: str = "100m"
    memory: str = "256Mi"
    cpu_limit: str = "1"
    memory_limit: str = "512Mi"
    database: bool = False  # reaches PostgreSQL (its own database, or the warehouse)
    egress_https: str = ""  # why it may open HTTPS connections outside the cluster ("" = never)
    browsers: bool = False  # takes connections from browsers
    outside_agents: bool = False  # takes connections from outside agents (MCP clients)
    # Holds conversations in memory (the MCP front's open turns): one replica, never autoscaled, until turns
    # can move between replicas; replaced by Recreate, so two never run at once.
    single_replica: bool = False
    # Settings read from files in its own Secret (TESSERA_SECRETS_DIR), never from the environment.
    secret_settings: tuple[str, ...] = ()
    # Reads the cluster's copy of the tool policy (cli/deploy_mcp_servers.py) from a ConfigMap.
    tool_policy: bool = False
    # Derives settings from the public URL in production (TESSERA_PUBLIC_URL, shared/identity/public_url.py).
    public_url: bool = False


SPECS: dict[str, ServiceSpec] = {spec.name: spec for spec in (
    ServiceSpec("agent", stateless=True, cpu=AUTOSCALED_CPU,
                egress_https="the model endpoint (TESSERA_AGENT_MODEL_URL)", secret_settings=("model_api_key",)),
    ServiceSpec("compiler", stateless=True, cpu=AUTOSCALED_CPU, memory="192Mi"),
    ServiceSpec("resources", stateless=False, database=True, memory="384Mi", memory_limit="1Gi",
                secret_settings=("warehouse_url", "store_url")),
    # Its HTTPS egress, and its egress to the MCP servers' pods, come from the tool policy (network_policies).
    ServiceSpec("capabilities", stateless=False, database=True, secret_settings=("database_url", "changes_url"),
                tool_policy=True, public_url=True),
    ServiceSpec("host", stateless=False, database=True, secret_settings=("database_url",)),
    ServiceSpec("web", stateless=True, cpu=AUTOSCALED_CPU, browsers=True, public_url=True,
                secret_settings=("session_secret", "oidc_client_secret"),
                egress_https="the OpenID provider people sign in with (TESSERA_WEB_OIDC_ISSUER: discovery, token "
                             "and keys)"),
    ServiceSpec("mcp", stateless=True, outside_agents=True, single_replica=True, public_url=True,
                egress_https="the OAuth authorization server that issues MCP clients' tokens "
                             "(TESSERA_MCP_OAUTH_ISSUER: discovery and keys)"),
)}


NODE_LOCAL_DNS = "169.254.20.10/32"  # NodeLocal DNSCache's default address (its `-localip`)


def contract_edges() -> set[tuple[str, str]]:
    """(caller, callee) for every caller the contracts declare, except those outside the pod network."""
    edges = set()
    for callee, (descriptor, _) in SERVICES.items():
        for method in descriptor.methods:
            edges |= {(caller, callee) for caller in declared_callers(method) if caller not in OUTSIDE_THE_POD_NETWORK}
    return edges


def _port(name: str) -> int:
    return DEFAULT_PORTS[name]


def _autoscaled(spec: ServiceSpec) -> bool:
    return spec.stateless and not spec.single_replica


def _port_name(name: str) -> str:
    return "http" if name in HTTP_PROCESS_NAMES else "grpc"  # web serves browsers, mcp MCP clients; the rest gRPC


def secret_name(name: str) -> str:
    return f"{name}-identity"


# Where a pod mounts the Secret of its settings when the chart writes them from values (cli/deploy_helm.py).
SETTINGS_MOUNT = "/etc/tessera/settings"


def settings_secret_name(name: str) -> str:
    return f"{name}-settings"


def _env(spec: ServiceSpec, edges: set[tuple[str, str]]) -> list[dict]:
    prefix = f"TESSERA_{spec.name.upper()}_"
    env = {
        prefix + "LISTEN_HOST": "0.0.0.0",
        prefix + "PORT": str(_port(spec.name)),
        "TESSERA_CERT_DIR": SECRET_MOUNT,
        "TESSERA_SECRETS_DIR": SECRET_MOUNT,
        "TESSERA_VAR_DIR": STATE_MOUNT,
        "TESSERA_LOG_LEVEL": "INFO",
    }
    if spec.name not in HTTP_PROCESS_NAMES:
        env[prefix + "HEALTH_PORT"] = str(HEALTH_PORT)
    if spec.tool_policy:
        env[prefix + "TOOLS_FILE"] = f"{POLICY_MOUNT}/{POLICY_KEY}"
    if spec.database:
        # A database that is not up yet (or restarting) leaves the pod alive and not ready, with one log line.
        env[prefix + "DEPENDENCY_WAIT_SECONDS"] = str(DEPENDENCY_WAIT_SECONDS)
    for caller, callee in sorted(edges):
        if caller == spec.name:
            env[f"TESSERA_{callee.upper()}_ADDR"] = f"{callee}:{_port(callee)}"
    return [{"name": key, "value": value} for key, value in env.items()]


def _probe(spec: ServiceSpec, period: int, failures: int, liveness: bool) -> dict:
    """Readiness asks for the overall status (database reachable, keys loaded ...); liveness asks for
    LIVENESS_SERVICE, SERVING while the process runs: waiting for a database is not-ready, not dead."""
    if spec.name in HTTP_PROCESS_NAMES:
        # web answers only its allowed host names (no DNS rebinding), so the probe names one of them.
        check = {"httpGet": {"path": "/healthz", "port": "http",
                             "httpHeaders": [{"name": "Host", "value": "localhost"}]}}
    else:
        check = {"grpc": {"port": HEALTH_PORT, **({"service": LIVENESS_SERVICE} if liveness else {})}}
    return {**check, "periodSeconds": period, "timeoutSeconds": 3, "failureThreshold": failures}


def _deployment(spec: ServiceSpec, edges: set[tuple[str, str]]) -> dict:
    ports = [{"name": _port_name(spec.name), "containerPort": _port(spec.name), "protocol": "TCP"}]
    if spec.name not in HTTP_PROCESS_NAMES:
        ports.append({"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"})
    container = {
        "name": spec.name,
        "image": f"{IMAGE}:{IMAGE_TAG}",
        "imagePullPolicy": "Always",
        "command": ["python", "-m", f"services.{spec.name}"],
        "ports": ports,
        "env": _env(spec, edges),
        # Until the process answers at all (imports, keys, its health port: seconds, longer on a busy node) only
        # the startup probe asks, for up to STARTUP_SECONDS; a database or migration waited for after that is
        # not-ready, never dead (LIVENESS_SERVICE is SERVING from the first moment the health port answers).
        "startupProbe": _probe(spec, 2, STARTUP_SECONDS // 2, liveness=True),
        "readinessProbe": _probe(spec, 3, 2, liveness=False),
        "livenessProbe": _probe(spec, 10, 6, liveness=True),
        "resources": {"requests": {"cpu": spec.cpu, "memory": spec.memory},
                      "limits": {"cpu": spec.cpu_limit, "memory": spec.memory_limit}},
        "securityContext": hardened_container_security(),
        "volumeMounts": [
            {"name": "identity", "mountPath": SECRET_MOUNT, "readOnly": True},
            {"name": "state", "mountPath": STATE_MOUNT},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    volumes = [
        # Its own Secret only: key, certificate, CA certificate, its own token keys and settings.
        {"name": "identity", "secret": {"secretName": secret_name(spec.name), "defaultMode": 0o400,
                                        "optional": False}},
        {"name": "state", "emptyDir": {"sizeLimit": "1Gi"}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}},
    ]
    if spec.tool_policy:
        container["volumeMounts"].append({"name": "tool-policy", "mountPath": POLICY_MOUNT, "readOnly": True})
        volumes.append({"name": "tool-policy", "configMap": {"name": POLICY_CONFIG_MAP, "defaultMode": 0o444}})
    deployment_spec: dict = {} if _autoscaled(spec) else {"replicas": 1}  # an autoscaler owns the count
    if spec.single_replica:
        # A rolling update would run the new pod beside the old, each holding turns the other cannot see.
        deployment_spec["strategy"] = {"type": "Recreate"}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": spec.name, "labels": labels(spec.name)},
        "spec": {
            **deployment_spec,
            "selector": selector(spec.name),
            "template": {
                "metadata": {"labels": labels(spec.name)},
                "spec": {
                    "serviceAccountName": spec.name,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": hardened_pod_security(),
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def _disruption_budget(spec: ServiceSpec) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": spec.name, "labels": labels(spec.name)},
            "spec": {"maxUnavailable": 1, "selector": selector(spec.name)}}


def _autoscaler(spec: ServiceSpec) -> dict:
    """Out at SCALE_OUT_CPU per replica, at once; in one replica a minute after five quiet minutes, so a
    burst of questions does not make replicas come and go (each going ends its connections)."""
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": spec.name, "labels": labels(spec.name)},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.name},
                     "minReplicas": 1, "maxReplicas": 6,
                     "metrics": [{"type": "Resource", "resource": {
                         "name": "cpu", "target": {"type": "AverageValue", "averageValue": SCALE_OUT_CPU}}}],
                     "behavior": {
                         "scaleUp": {"stabilizationWindowSeconds": 0,
                                     "policies": [{"type": "Percent", "value": 100, "periodSeconds": 30}]},
                         "scaleDown": {"stabilizationWindowSeconds": 300,
                                       "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}}}


def network_policies(edges: set[tuple[str, str]], tool_policy: dict) -> list[dict]:
    """Deny everything, then one ingress and one egress allow per contract edge, plus the named extras and
    the MCP servers' (cli/deploy_mcp_servers.py)."""
    policies = [
        network_policy("default-deny", {}, [], [], "nothing moves unless a policy below allows it"),
        network_policy("dns", mcp_servers.without_mcp_servers(), None, [
            {"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}},
                    # NodeLocal DNSCache answers on this link-local address of every node, where it runs
                    {"ipBlock": {"cidr": NODE_LOCAL_DNS}}],
             "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}],
            "every pod resolves service names (cluster DNS, or NodeLocal DNSCache), but the MCP servers: they "
            "reach nothing"),
    ]
    for caller, callee in sorted(edges):
        why = f"{caller} calls {callee}: declared by option (tessera.authz.v1.callers) in proto/"
        policies.append(network_policy(f"{caller}-to-{callee}-ingress", selector(callee),
                                       [{"from": [{"podSelector": selector(caller)}], "ports": tcp(_port(callee))}],
                                       None, why))
        policies.append(network_policy(f"{caller}-to-{callee}-egress", selector(caller), None,
                                       [{"to": [{"podSelector": selector(callee)}], "ports": tcp(_port(callee))}],
                                       why))
    https_egress = {spec.name: spec.egress_https for spec in SPECS.values() if spec.egress_https}
    outside = mcp_servers.https_servers(tool_policy)
    if outside:
        https_egress[mcp_servers.BROKER] = f"the MCP servers {', '.join(outside)} (deploy/policy/tools.yaml)"
    for spec in SPECS.values():
        if spec.database:
            policies.append(network_policy(spec.name + POSTGRESQL_POLICY_SUFFIX, selector(spec.name), None,
                                           [{"ports": tcp(POSTGRES_PORT)}],
                                           f"{spec.name} reaches PostgreSQL (its own database or the warehouse)"))
        if spec.name in https_egress:
            policies.append(network_policy(spec.name + HTTPS_POLICY_SUFFIX, selector(spec.name), None,
                                           [{"ports": tcp(443)}], f"{spec.name} reaches {https_egress[spec.name]}"))
        if spec.browsers:
            policies.append(network_policy(f"browsers-to-{spec.name}", selector(spec.name),
                                           [{"ports": tcp(_port(spec.name))}], None,
                                           "browsers reach web, and only web"))
        if spec.outside_agents:
            policies.append(network_policy(
                f"outside-agents-to-{spec.name}", selector(spec.name), [{"ports": tcp(_port(spec.name))}], None,
                "outside agents (MCP clients, with OAuth bearer tokens) reach the MCP front"))
    return policies + mcp_servers.network_policies(tool_policy)


HEADER = (generated_header("proto/ and cli/deploy_manifests.py")
          + "# A test fails when this file and the contracts disagree.\n")


def _documents(objects: list[dict]) -> str:
    return yaml_documents(HEADER, objects)


PRODUCTION_MIN_REPLICAS = 2


def _spread(spec: ServiceSpec) -> list[dict]:
    """Replicas on different nodes (required: one node lost must not take a service with it) and, where the
    nodes carry zone labels, different zones (preferred: a cluster may have one zone). Counted per revision
    (pod-template-hash), so a rolling update is not blocked by the pods it replaces; nodes whose taints the
    pod does not tolerate are not counted as places it could go."""
    return [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector(spec.name),
             "matchLabelKeys": ["pod-template-hash"], "nodeTaintsPolicy": "Honor"}
            for key, when in (("kubernetes.io/hostname", "DoNotSchedule"),
                              ("topology.kubernetes.io/zone", "ScheduleAnyway"))]


def _production_patch(spec: ServiceSpec) -> list[dict]:
    """Every service runs at least two replicas in production, spread over nodes and zones: the stateless
    ones under their autoscaler (which alone sets the count), the stateful ones on their shared PostgreSQL
    database (claims and wake-ups go through it). A service holding conversations in memory stays at one. A
    service with a database waits for its migrate Job instead of changing the schema itself; the services that
    face people read the public URL from the overlay's ConfigMap."""
    env = ([deploy_migrations.migrations_setting(spec.name)] if spec.database else []) + \
        ([deploy_public.public_url_env()] if spec.public_url else [])
    pod = {} if spec.single_replica else {"topologySpreadConstraints": _spread(spec)}
    if env:
        pod["containers"] = [{"name": spec.name, "env": env}]
    deployment = {"template": {"spec": pod}} if pod else {}
    if not spec.single_replica and not _autoscaled(spec):
        deployment["replicas"] = PRODUCTION_MIN_REPLICAS
    patches = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": spec.name},
                "spec": deployment}] if deployment else []
    if _autoscaled(spec):
        patches.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                        "metadata": {"name": spec.name}, "spec": {"minReplicas": PRODUCTION_MIN_REPLICAS}})
    return patches


def trust_graph_markdown() -> str:
    """The caller table of proto/ as Markdown: who may call what, and which edges the NetworkPolicies open."""
    rpcs: dict[tuple[str, str], list[str]] = {}
    for callee, (descriptor, _) in SERVICES.items():
        for method in descriptor.methods:
            for caller in declared_callers(method):
                rpcs.setdefault((caller, callee), []).append(method.name)
    lines = [
        "# Trust graph",
        "",
        "Generated by `tessera deploy render` from `option (tessera.authz.v1.callers)` in `proto/`: do not edit.",
        "Each row is one caller edge. The interceptor enforces it per RPC from the caller's certificate; on",
        "Kubernetes a NetworkPolicy pair (the callee's ingress, the caller's egress) opens exactly these edges.",
        "The operator CLI reaches pods through `kubectl port-forward`, outside the pod network: no policy.",
        "",
        "| caller | callee | port | NetworkPolicy | RPCs |",
        "|---|---|---|---|---|",
    ]
    for (caller, callee), names in sorted(rpcs.items()):
        policy = "—" if caller in OUTSIDE_THE_POD_NETWORK else f"`{caller}-to-{callee}-ingress`, `-egress`"
        lines.append(f"| {caller} | {callee} | {_port(callee)} | {policy} | {', '.join(sorted(names))} |")
    return "\n".join(lines) + "\n"


def workloads(edges: set[tuple[str, str]], tool_policy: dict) -> list[dict]:
    """The base's workloads: per service its ServiceAccount, Deployment, Service, disruption budget and autoscaler,
    then the MCP servers' pods."""
    objects: list[dict] = []
    for name in PROCESS_NAMES:
        spec = SPECS[name]
        objects += [service_account(spec.name), _deployment(spec, edges),
                    service(spec.name, _port_name(spec.name), _port(spec.name),
                            headless=spec.name not in HTTP_PROCESS_NAMES),
                    _disruption_budget(spec)]
        if _autoscaled(spec):
            objects.append(_autoscaler(spec))
    return objects + mcp_servers.workloads(tool_policy)


def production_patches() -> list[dict]:
    return [patch for name in PROCESS_NAMES for patch in _production_patch(SPECS[name])]


def migration_objects() -> list[dict]:
    return deploy_migrations.objects([name for name in PROCESS_NAMES if SPECS[name].database])


def render_generated() -> dict[str, str]:
    """Path under the repository → generated text (manifests, and the trust graph page); the Helm chart is
    cli/deploy_helm.py's, composed from these."""
    edges = contract_edges()
    tool_policy = mcp_servers.load_policy()
    return {"deploy/k8s/base/workloads.yaml": _documents(workloads(edges, tool_policy)),
            "deploy/k8s/base/networkpolicies.yaml": _documents(network_policies(edges, tool_policy)),
            mcp_servers.CLUSTER_POLICY_FILE: mcp_servers.cluster_policy_text(tool_policy),
            "deploy/k8s/components/production/generated-patches.yaml": _documents(production_patches()),
            "deploy/k8s/components/production/generated-migrations.yaml": _documents(migration_objects()),
            "docs/trust-graph.md": trust_graph_markdown(),
            **deploy_identity.render_components(),
            **deploy_public.render_components()}
