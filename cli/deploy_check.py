"""Checks on rendered Kubernetes objects that a generic linter cannot know about.

Each finding names the file and the object, so a person can go straight to it:
- every pod is hardened (non-root, read-only root, no privilege escalation,
  all capabilities dropped, seccomp RuntimeDefault, requests and limits,
  no service-account token);
- NetworkPolicies allow exactly the caller edges the contracts declare;
- a service's Secret holds only that service's own keys and settings;
- where cert-manager's CSI driver issues identities, approver-policy lets each
  ServiceAccount request exactly its own SPIFFE id and DNS name;
- a workload an autoscaler scales does not also set `replicas`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from cli.deploy_manifests import SPECS, contract_edges, secret_name, settings_secret_name
from cli.deploy_mcp_servers import BROKER, COMPONENT, COMPONENT_LABEL, credentials_secret_of_pod
from cli.deploy_objects import NAME_LABEL, NAMESPACE, setting_file
from shared.identity.certs import identity_files, is_private_file
from shared.identity.principals import (
    PRINCIPAL_NAMES,
    IdentityScheme,
    IdentitySchemeError,
    identity_scheme,
    scheme_from,
)

WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "Pod"}


def load_documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _name(doc: dict) -> str:
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name', '?')}"


def _pod_spec(doc: dict) -> dict:
    if doc["kind"] == "Pod":
        return doc.get("spec", {})
    if doc["kind"] == "Job":
        return doc.get("spec", {}).get("template", {}).get("spec", {})
    return doc.get("spec", {}).get("template", {}).get("spec", {})


def hardening_problems(docs: Iterable[dict], origin: str) -> list[str]:
    problems = []
    for doc in docs:
        if doc.get("kind") not in WORKLOAD_KINDS:
            continue
        where = f"{origin}: {_name(doc)}"
        pod = _pod_spec(doc)
        pod_security = pod.get("securityContext", {})
        if pod.get("automountServiceAccountToken") is not False:
            problems.append(f"{where}: automountServiceAccountToken must be false")
        if pod.get("hostNetwork") or pod.get("hostPID") or pod.get("hostIPC"):
            problems.append(f"{where}: must not share the node's network, PID or IPC namespace")
        for container in pod.get("initContainers", []) + pod.get("containers", []):
            at = f"{where} container {container.get('name')}"
            security = {**pod_security, **container.get("securityContext", {})}
            wanted = {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False}
            for key, value in wanted.items():
                if security.get(key) is not value:
                    problems.append(f"{at}: securityContext.{key} must be {str(value).lower()}")
            if security.get("runAsUser", 1) == 0:
                problems.append(f"{at}: must not run as UID 0")
            if security.get("privileged"):
                problems.append(f"{at}: must not be privileged")
            if "ALL" not in security.get("capabilities", {}).get("drop", []) or \
                    security.get("capabilities", {}).get("add"):
                problems.append(f"{at}: must drop ALL capabilities and add none")
            if security.get("seccompProfile", {}).get("type") != "RuntimeDefault":
                problems.append(f"{at}: seccompProfile.type must be RuntimeDefault")
            resources = container.get("resources", {})
            for part in ("requests", "limits"):
                if not {"cpu", "memory"} <= set(resources.get(part, {})):
                    problems.append(f"{at}: resources.{part} must set cpu and memory")
            for port in container.get("ports", []):
                if "hostPort" in port:
                    problems.append(f"{at}: must not bind a host port")
    return problems


def scaling_problems(located: Iterable[tuple[dict, str]]) -> list[str]:
    """A workload that sets `replicas` beside the autoscaler scaling it: every apply of the file resets the
    count the autoscaler chose (scaling a busy service in until it reacts again)."""
    located = list(located)
    scaled = {(target.get("kind"), target.get("name")) for doc, _ in located
              if doc.get("kind") == "HorizontalPodAutoscaler"
              for target in [doc.get("spec", {}).get("scaleTargetRef", {})]}
    return [f"{origin}: {_name(doc)} sets replicas, but a HorizontalPodAutoscaler scales it: leave replicas out "
            f"(set the autoscaler's minReplicas instead)"
            for doc, origin in located if (doc.get("kind"), doc.get("metadata", {}).get("name")) in scaled
            and "replicas" in doc.get("spec", {})]


def _label_of(selector: dict) -> str | None:
    return (selector or {}).get("matchLabels", {}).get(NAME_LABEL)


def policy_edges(located: Iterable[tuple[dict, str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(caller, callee) → (where, "ingress" | "egress") of each rule allowing it, between Tessera services."""
    services = set(SPECS)
    edges: dict[tuple[str, str], list[str]] = {}
    for doc, origin in located:
        if doc.get("kind") != "NetworkPolicy":
            continue
        spec = doc.get("spec", {})
        subject = _label_of(spec.get("podSelector", {}))
        where = f"{origin}: {_name(doc)}"
        for rule in spec.get("ingress", []) or []:
            for peer in rule.get("from", []) or []:
                caller = _label_of(peer.get("podSelector", {}))
                if caller in services and subject in services:
                    edges.setdefault((caller, subject), []).append((where, "ingress"))
        for rule in spec.get("egress", []) or []:
            for peer in rule.get("to", []) or []:
                callee = _label_of(peer.get("podSelector", {}))
                if callee in services and subject in services:
                    edges.setdefault((subject, callee), []).append((where, "egress"))
    return edges


def network_policy_problems(docs: Iterable[dict], origin: str) -> list[str]:
    return network_policy_problems_in((doc, origin) for doc in docs)


def network_policy_problems_in(located: Iterable[tuple[dict, str]]) -> list[str]:
    """Every allowed edge between services is a declared caller edge, and every declared edge is allowed
    both ways (the callee's ingress and the caller's egress). `located`: (object, the file it came from)."""
    located = list(located)
    origin = ", ".join(sorted({where for _, where in located})) or "(no manifests)"
    declared = contract_edges()
    found, problems = policy_edges(located), []
    for edge, rules in sorted(found.items()):
        if edge not in declared:
            for where, direction in rules:
                problems.append(f"{where} ({direction}): allows {edge[0]} → {edge[1]}, "
                                "a caller the contracts do not declare")
    for edge in sorted(declared):
        directions = {direction for _, direction in found.get(edge, [])}
        for missing in sorted({"ingress", "egress"} - directions):
            problems.append(f"{origin}: no NetworkPolicy {missing} rule allows {edge[0]} → {edge[1]} "
                            f"(declared in proto/); run 'tessera deploy render'")
    return problems


def allowed_secret_files(service: str) -> set[str]:
    """What `<service>-identity` may hold: identity_files (own key, certificate, CA certificate, own token
    keys, public verify keys) and the service's own secret settings."""
    files = {path.name for path in identity_files(Path("."), service)}
    return files | {setting_file(service, setting) for setting in SPECS[service].secret_settings}


def secret_problems(docs: Iterable[dict], origin: str) -> list[str]:
    problems = []
    owners = {secret_name(name): name for name in SPECS}
    settings_owners = {settings_secret_name(name): name for name in SPECS}
    for doc in docs:
        if doc.get("kind") != "Secret":
            continue
        name = doc.get("metadata", {}).get("name", "")
        owner = owners.get(name) or settings_owners.get(name)
        if owner is None:
            continue
        held = set(doc.get("data", {}) or {}) | set(doc.get("stringData", {}) or {})
        allowed = allowed_secret_files(owner) if name in owners else \
            {setting_file(owner, setting) for setting in SPECS[owner].secret_settings}  # settings alone
        for item in sorted(held):
            if item not in allowed:
                kind = "another principal's key" if is_private_file(Path(item)) else "a file it does not need"
                problems.append(f"{origin}: {_name(doc)} holds {item!r}: {kind} (only {owner}'s own may be here)")
    return problems


def file_problems(docs: list[dict], origin: str) -> list[str]:
    """What one file can be checked for alone; NetworkPolicies need the whole deployment."""
    return hardening_problems(docs, origin) + secret_problems(docs, origin)


def _selects(pod_selector: dict, pod_labels: dict[str, str]) -> bool:
    """Whether a label selector picks a pod with these labels (matchLabels and matchExpressions)."""
    if any(pod_labels.get(key) != value for key, value in (pod_selector.get("matchLabels") or {}).items()):
        return False
    for expression in pod_selector.get("matchExpressions") or []:
        present, value = expression["key"] in pod_labels, pod_labels.get(expression["key"])
        holds = {"In": present and value in expression.get("values", []),
                 "NotIn": not present or value not in expression.get("values", []),
                 "Exists": present, "DoesNotExist": not present}[expression["operator"]]
        if not holds:
            return False
    return True


def _mcp_secret_problems(doc: dict, at: str) -> list[str]:
    """An MCP server's pod mounts no Secret and reads only its own credentials Secret."""
    pod = _pod_spec(doc)
    own = credentials_secret_of_pod(doc["metadata"]["name"])
    problems = [f"{at}: mounts the Secret {volume['secret'].get('secretName')!r} (an MCP server mounts none)"
                for volume in pod.get("volumes", []) if "secret" in volume]
    for container in pod.get("containers", []):
        for variable in container.get("env", []):
            reference = variable.get("valueFrom", {}).get("secretKeyRef")
            if reference and reference.get("name") != own:
                problems.append(f"{at}: {variable['name']} comes from the Secret {reference.get('name')!r} "
                                f"(only its own, {own!r})")
    return problems


def mcp_server_problems(located: Iterable[tuple[dict, str]], expected: Iterable[str]) -> list[str]:
    """Each MCP server's pod (`expected`: their names) is reached by the broker alone and reaches nothing;
    the broker's egress to MCP servers names exactly these pods. `located`: (object, the file it came from)."""
    located = list(located)
    origin = ", ".join(sorted({where for _, where in located})) or "(no manifests)"
    policies = [(doc, where) for doc, where in located if doc.get("kind") == "NetworkPolicy"]
    expected = sorted(expected)
    problems = []
    for pod in expected:
        pod_labels = {NAME_LABEL: pod, COMPONENT_LABEL: COMPONENT}
        admitted = False
        for doc, where in policies:
            spec = doc.get("spec", {})
            if not _selects(spec.get("podSelector", {}), pod_labels):
                continue
            at = f"{where}: {_name(doc)}"
            for rule in spec.get("ingress", []) or []:
                peers = rule.get("from") or [{}]  # no peers: anyone
                broker = [set(peer) == {"podSelector"} and _label_of(peer["podSelector"]) == BROKER for peer in peers]
                admitted = admitted or any(broker)
                if not all(broker):
                    problems.append(f"{at}: admits more than the broker to the MCP server pod {pod}")
            if spec.get("egress"):
                problems.append(f"{at}: lets the MCP server pod {pod} reach out (it may reach nothing)")
        if not admitted:
            problems.append(f"{origin}: no NetworkPolicy admits the broker to the MCP server pod {pod}; "
                            "run 'tessera deploy render'")
    for doc, where in located:
        if doc.get("kind") == "Deployment" and doc.get("metadata", {}).get("name") in expected:
            problems += _mcp_secret_problems(doc, f"{where}: {_name(doc)}")
    reached = set()
    for doc, _ in policies:
        spec = doc.get("spec", {})
        if _label_of(spec.get("podSelector", {})) == BROKER:
            reached |= {_label_of(peer.get("podSelector", {})) for rule in spec.get("egress", []) or []
                        for peer in rule.get("to", []) or []}
    mcp_reached = reached - set(SPECS) - {None}
    for pod in sorted(set(expected) - mcp_reached):
        problems.append(f"{origin}: no NetworkPolicy lets the broker reach the MCP server pod {pod}")
    for pod in sorted(mcp_reached - set(expected)):
        problems.append(f"{origin}: a NetworkPolicy lets the broker reach {pod}, which no MCP server of the "
                        "tool policy runs in")
    return problems


CERT_MANAGER_CSI = "csi.cert-manager.io"
CERT_MANAGER_DRIVERS = (CERT_MANAGER_CSI, "spiffe.csi.cert-manager.io")
POLICY_GROUP, POLICY_RESOURCE = "policy.cert-manager.io", "certificaterequestpolicies"
# What a Tessera identity never carries: a policy allowing any of them lets a holder claim more than its id.
NEVER_ALLOWED = ("commonName", "emailAddresses", "ipAddresses", "subject", "isCA")


def _env_of(doc: dict) -> dict[str, str]:
    containers = _pod_spec(doc).get("containers", [])
    return {e["name"]: e.get("value", "") for c in containers[:1] for e in c.get("env", [])}


def _csi_attributes(doc: dict, driver: str = CERT_MANAGER_CSI) -> dict[str, str] | None:
    for volume in _pod_spec(doc).get("volumes", []):
        if volume.get("csi", {}).get("driver") == driver:
            return volume["csi"].get("volumeAttributes", {})
    return None


EVERYTHING = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]


def _grants(rule: dict, group: str, resource: str, verb: str, name: str | None) -> bool:
    def has(values: list[str], wanted: str) -> bool:
        return wanted in values or "*" in values

    return has(rule.get("apiGroups", []), group) and has(rule.get("resources", []), resource) \
        and has(rule.get("verbs", []), verb) and (not rule.get("resourceNames") or name in rule["resourceNames"])


def _allowed_subjects(docs: list[dict], group: str, resource: str, verb: str,
                      name: str | None = None) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of every subject the rendered RBAC lets `verb` `resource` (named `name`). A role
    whose rules the cluster aggregates is taken to grant everything: its rules are not in the files."""
    roles = {(doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"]):
             EVERYTHING if doc.get("aggregationRule") else doc.get("rules", [])
             for doc in docs if doc.get("kind") in ("Role", "ClusterRole")}
    subjects = []
    for binding in (doc for doc in docs if doc.get("kind") in ("RoleBinding", "ClusterRoleBinding")):
        ref = binding.get("roleRef", {})
        namespace = binding["metadata"].get("namespace", "") if ref.get("kind") == "Role" else ""
        rules = roles.get((ref.get("kind"), namespace, ref.get("name")), [])
        if any(_grants(rule, group, resource, verb, name) for rule in rules):
            subjects += [(s.get("kind", ""), s.get("namespace", binding["metadata"].get("namespace", "")),
                          s.get("name", "")) for s in binding.get("subjects", [])]
    return subjects


def _policy_users(docs: list[dict], policy: str) -> list[tuple[str, str, str]]:
    """Every subject RBAC lets use `policy` (approver-policy's binding check)."""
    return _allowed_subjects(docs, POLICY_GROUP, POLICY_RESOURCE, "use", policy)


def certificate_policy_problems(located: Iterable[tuple[dict, str]]) -> list[str]:
    """cert-manager's CSI driver writes whatever `uri-sans` a pod asks for; approver-policy is what binds an id to
    a ServiceAccount. Each account that mounts the driver must be able to use a CertificateRequestPolicy for
    exactly its own SPIFFE id and DNS name, and no subject may use one naming another account's id, a wildcard,
    or any other name. Both cert-manager drivers request as the pod's account, which must be allowed to."""
    located = list(located)
    docs = [doc for doc, _ in located]
    origin = {id(doc): where for doc, where in located}
    problems = _requester_problems(docs, origin)
    pods = [doc for doc in docs if doc.get("kind") in WORKLOAD_KINDS and _csi_attributes(doc) is not None]
    policies = [doc for doc in docs if doc.get("kind") == "CertificateRequestPolicy"]
    if not pods and not policies:
        return problems
    try:
        schemes = {scheme_from(_env_of(pod)) for pod in pods}
    except IdentitySchemeError as exc:
        return problems + [f"pods mounting {CERT_MANAGER_CSI}: {exc}"]
    if len(schemes) > 1:
        return problems + [f"pods mounting {CERT_MANAGER_CSI} disagree on the identity scheme: "
                           f"{sorted(map(str, schemes))}"]
    scheme = next(iter(schemes)) if schemes else identity_scheme()
    users = {policy["metadata"]["name"]: _policy_users(docs, policy["metadata"]["name"]) for policy in policies}
    for policy in policies:
        problems += _policy_problems(policy, users[policy["metadata"]["name"]], scheme,
                                     f"{origin[id(policy)]}: {_name(policy)}")
    for pod in pods:
        account = ("ServiceAccount", NAMESPACE, _pod_spec(pod).get("serviceAccountName", "default"))
        usable = [policy for policy in policies if account in users[policy["metadata"]["name"]]]
        problems += _pod_request_problems(pod, usable, scheme, f"{origin[id(pod)]}: {_name(pod)}")
    return problems


def _allowed_names(policy: dict) -> tuple[list[str], list[str]]:
    """(URI SANs, DNS names) a CertificateRequestPolicy allows."""
    allowed = policy.get("spec", {}).get("allowed", {})
    return allowed.get("uris", {}).get("values", []), allowed.get("dnsNames", {}).get("values", [])


def _policy_problems(policy: dict, users: list[tuple[str, str, str]], scheme: IdentityScheme,
                     where: str) -> list[str]:
    """A policy may allow only names of one account, and only that account may use it."""
    allowed = policy.get("spec", {}).get("allowed", {})
    problems = [f"{where}: allows {field}" for field in NEVER_ALLOWED if allowed.get(field)]
    names = [name for values in _allowed_names(policy) for name in values]
    problems += [f"{where}: allows the wildcard {value!r}" for value in names if "*" in value]
    dns_owners = {scheme.server_name(name): name for name in PRINCIPAL_NAMES}
    owners = {scheme.principals.get(value) or dns_owners.get(value) for value in names}
    for kind, namespace, subject in users:
        if kind != "ServiceAccount" or namespace != NAMESPACE or owners - {subject}:
            problems.append(f"{where}: {kind} {namespace}/{subject} may use it to request "
                            f"{', '.join(sorted(names)) or 'any name'}")
    return problems


def _pod_request_problems(pod: dict, usable: list[dict], scheme: IdentityScheme, where: str) -> list[str]:
    """A pod asks, as its own account, for its own id from the namespace's Issuer, which a policy it may use
    allows exactly."""
    name, attributes = pod["metadata"]["name"], _csi_attributes(pod) or {}
    account = _pod_spec(pod).get("serviceAccountName", "default")
    requested = (attributes.get(f"{CERT_MANAGER_CSI}/uri-sans", ""), attributes.get(f"{CERT_MANAGER_CSI}/dns-names"))
    own = (scheme.ids[name], scheme.server_name(name)) if name in scheme.ids else None
    if account != name or requested != own:
        return [f"{where}: runs as ServiceAccount {account} and requests {requested}; its own identity is "
                f"ServiceAccount {name} with {own}"]
    problems = []
    kind = attributes.get(f"{CERT_MANAGER_CSI}/issuer-kind", "Issuer")
    if kind != "Issuer":
        problems.append(f"{where}: names a {kind}, which a request in any namespace can name (and any team's "
                        "approver policy approve): use an Issuer in Tessera's namespace")
    exactly = ([own[0]], [own[1]] if own[1] else [])
    if not any(_allowed_names(policy) == exactly for policy in usable):
        problems.append(f"{where}: no CertificateRequestPolicy that ServiceAccount {account} may use allows "
                        f"exactly {own[0]}" + (f" and {own[1]}" if own[1] else "")
                        + f": without approver-policy, {CERT_MANAGER_CSI} issues any id a pod asks for")
    return problems


def _requester_problems(docs: list[dict], origin: dict[int, str]) -> list[str]:
    """cert-manager's drivers request a pod's certificate as its ServiceAccount: without `create` on
    CertificateRequests in its namespace the volume never mounts and the pod never starts."""
    requesters = _allowed_subjects(docs, "cert-manager.io", "certificaterequests", "create")
    problems = []
    for pod in (doc for doc in docs if doc.get("kind") in WORKLOAD_KINDS):
        if all(_csi_attributes(pod, driver) is None for driver in CERT_MANAGER_DRIVERS):
            continue
        account = _pod_spec(pod).get("serviceAccountName", "default")
        if ("ServiceAccount", pod["metadata"].get("namespace", NAMESPACE), account) not in requesters:
            problems.append(f"{origin[id(pod)]}: {_name(pod)}: ServiceAccount {account} may not create "
                            "CertificateRequests, which cert-manager's driver does as the pod's account: the "
                            "certificate never comes and the pod never starts")
    return problems
