"""Production identities are bound to ServiceAccounts, whichever provider issues them: csi-driver-spiffe and
SPIRE derive the id from the pod's account; with cert-manager's CSI driver, approver-policy must let each account
request exactly its own SPIFFE id and DNS name and nothing else (checked here on the rendered objects, and by
`tessera deploy check`, which names a policy that lets anyone claim more)."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from cli.deploy_check import _policy_users, certificate_policy_problems
from cli.deploy_identity import SCHEME, TRUST_DOMAIN, dns_name, policy_name
from cli.deploy_objects import NAMESPACE
from shared.identity.principals import GRPC_SERVICE_NAMES, PROCESS_NAMES
from shared.paths import REPO_ROOT

K8S = REPO_ROOT / "deploy" / "k8s"
KUBECTL = REPO_ROOT / ".venv-deploy" / "bin" / "kubectl"
PROVIDERS = {"production": "csi-driver-spiffe", "production-spire": "spire",
             "production-cert-manager-csi": "cert-manager-csi"}


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict]]:
    if not KUBECTL.exists():
        pytest.skip(f"{KUBECTL} is missing: `make k8s-tools` installs kubectl")
    found = {}
    for overlay in PROVIDERS:
        result = subprocess.run([str(KUBECTL), "kustomize", str(K8S / "overlays" / overlay)], capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        found[overlay] = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    return found


def _deployments(docs: list[dict]) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"]
            in PROCESS_NAMES}


def _env(deployment: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}


def _located(docs: list[dict]) -> list[tuple[dict, str]]:
    return [(doc, "production-cert-manager-csi") for doc in docs]


def test_each_service_account_may_request_exactly_its_own_id_and_name(rendered):
    docs = rendered["production-cert-manager-csi"]
    policies = {d["metadata"]["name"]: d for d in docs if d["kind"] == "CertificateRequestPolicy"}
    usable: dict[tuple[str, str, str], list[str]] = {}
    for name in policies:
        for subject in _policy_users(docs, name):
            usable.setdefault(subject, []).append(name)
    # Exactly one subject per policy, each a Tessera ServiceAccount, each with exactly one policy.
    assert sorted(usable) == sorted(("ServiceAccount", NAMESPACE, name) for name in PROCESS_NAMES)
    for name in PROCESS_NAMES:
        (policy,) = usable[("ServiceAccount", NAMESPACE, name)]
        assert policy == policy_name(name)
        allowed = policies[policy]["spec"]["allowed"]
        own = {"uris": {"values": [f"spiffe://{TRUST_DOMAIN}/ns/{NAMESPACE}/sa/{name}"], "required": True}}
        if name in GRPC_SERVICE_NAMES:
            own["dnsNames"] = {"values": [f"{name}.sa.{NAMESPACE}.ns.{TRUST_DOMAIN}"], "required": True}
        assert {k: v for k, v in allowed.items() if k != "usages"} == own
        assert set(allowed["usages"]) <= {"digital signature", "server auth", "client auth"}
        assert ("server auth" in allowed["usages"]) == (name in GRPC_SERVICE_NAMES)
        selector = policies[policy]["spec"]["selector"]
        assert selector["issuerRef"] == {"name": "tessera-ca", "kind": "Issuer", "group": "cert-manager.io"}
        assert selector["namespace"] == {"matchNames": [NAMESPACE]}
    # Each pod asks for what its account's policy allows, as that account.
    for name, deployment in _deployments(docs).items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == name
        (volume,) = [v for v in pod["volumes"] if v.get("csi", {}).get("driver") == "csi.cert-manager.io"]
        attributes = volume["csi"]["volumeAttributes"]
        assert attributes["csi.cert-manager.io/uri-sans"] == SCHEME.ids[name]
        assert attributes.get("csi.cert-manager.io/dns-names") == dns_name(name)
        assert attributes["csi.cert-manager.io/issuer-kind"] == "Issuer"
    # The issuer can be named only from Tessera's namespace (a ClusterIssuer could be named from any).
    (issuer,) = [d for d in docs if d["kind"] in ("Issuer", "ClusterIssuer")]
    assert (issuer["kind"], issuer["metadata"]["namespace"]) == ("Issuer", NAMESPACE)
    assert certificate_policy_problems(_located(docs)) == []


def _policy(docs: list[dict], name: str) -> dict:
    return next(d for d in docs if d["kind"] == "CertificateRequestPolicy" and d["metadata"]["name"]
                == policy_name(name))


def _wildcard(docs):
    _policy(docs, "agent")["spec"]["allowed"]["uris"]["values"] = [f"spiffe://{TRUST_DOMAIN}/ns/{NAMESPACE}/sa/*"]


def _shared_binding(docs):
    binding = next(d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["name"]
                   == "capabilities-certificate-policy")
    binding["subjects"].append({"kind": "ServiceAccount", "name": "agent", "namespace": NAMESPACE})


def _every_policy(docs):
    role = next(d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "web-certificate-policy")
    del role["rules"][0]["resourceNames"]


def _a_group_of_people(docs):
    docs += [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "all"},
              "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
             {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "all"},
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "all"},
              "subjects": [{"kind": "Group", "name": "developers"}]}]


def _an_ip_address(docs):
    _policy(docs, "host")["spec"]["allowed"]["ipAddresses"] = {"values": ["10.0.0.1"]}


def _no_policy_for_the_broker(docs):
    docs.remove(_policy(docs, "capabilities"))


def _a_pod_asking_for_another_id(docs):
    pod = _deployments(docs)["agent"]["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v.get("csi", {}).get("driver") == "csi.cert-manager.io"]
    volume["csi"]["volumeAttributes"]["csi.cert-manager.io/uri-sans"] = SCHEME.ids["capabilities"]


def _a_cluster_issuer(docs):
    for deployment in _deployments(docs).values():
        for volume in deployment["spec"]["template"]["spec"]["volumes"]:
            if volume.get("csi", {}).get("driver") == "csi.cert-manager.io":
                volume["csi"]["volumeAttributes"]["csi.cert-manager.io/issuer-kind"] = "ClusterIssuer"


def _no_requester(docs):
    docs[:] = [d for d in docs if d["metadata"]["name"] != "host-certificate-requester"]


@pytest.mark.parametrize("break_it,named", [
    (_a_cluster_issuer, "Deployment/web: names a ClusterIssuer, which a request in any namespace can name"),
    (_no_requester, "Deployment/host: ServiceAccount host may not create CertificateRequests"),
    (_wildcard, "allows the wildcard 'spiffe://cluster.local/ns/tessera/sa/*'"),
    (_shared_binding, f"CertificateRequestPolicy/{policy_name('capabilities')}: ServiceAccount {NAMESPACE}/agent "
                      f"may use it to request capabilities.sa.tessera.ns.cluster.local, {SCHEME.ids['capabilities']}"),
    (_every_policy, f"CertificateRequestPolicy/{policy_name('host')}: ServiceAccount {NAMESPACE}/web may use it"),
    (_a_group_of_people, "Group /developers may use it to request"),
    (_an_ip_address, f"CertificateRequestPolicy/{policy_name('host')}: allows ipAddresses"),
    (_no_policy_for_the_broker, "Deployment/capabilities: no CertificateRequestPolicy that ServiceAccount "
                                f"capabilities may use allows exactly {SCHEME.ids['capabilities']}"),
    (_a_pod_asking_for_another_id, f"Deployment/agent: runs as ServiceAccount agent and requests "
                                   f"('{SCHEME.ids['capabilities']}'"),
])
def test_a_policy_that_lets_an_account_claim_more_is_named(rendered, break_it, named):
    docs = copy.deepcopy(rendered["production-cert-manager-csi"])
    break_it(docs)
    problems = certificate_policy_problems(_located(docs))
    assert any(named in problem for problem in problems), problems


def test_deploy_check_refuses_the_csi_driver_without_approver_policy(rendered, tmp_path):
    docs = [d for d in rendered["production-cert-manager-csi"] if d["kind"] not in
            ("CertificateRequestPolicy", "Role", "RoleBinding")]
    path = tmp_path / "unguarded.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    result = subprocess.run([sys.executable, "-m", "cli", "deploy", "check", str(path)], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    for name in PROCESS_NAMES:
        assert f"{path}: Deployment/{name}: no CertificateRequestPolicy that ServiceAccount {name} may use" \
            in result.stderr, result.stderr
    assert "issues any id a pod asks for" in result.stderr


def test_csi_driver_spiffe_pods_may_request_their_certificates_and_nothing_else(rendered):
    """The driver requests as the pod's account: each account may create CertificateRequests, and that is all."""
    docs = rendered["production"]
    assert certificate_policy_problems([(d, "production") for d in docs]) == []
    roles = [d for d in docs if d["kind"] in ("Role", "ClusterRole")]
    assert {r["metadata"]["name"] for r in roles} == {f"{name}-certificate-requester" for name in PROCESS_NAMES}
    assert all(r["rules"] == [{"apiGroups": ["cert-manager.io"], "resources": ["certificaterequests"],
                               "verbs": ["create"]}] for r in roles)
    without = [d for d in docs if d["metadata"]["name"] != "agent-certificate-requester"]
    problems = certificate_policy_problems([(d, "production") for d in without])
    assert problems == ["production: Deployment/agent: ServiceAccount agent may not create CertificateRequests, "
                        "which cert-manager's driver does as the pod's account: the certificate never comes and the "
                        "pod never starts"]


@pytest.mark.parametrize("overlay", PROVIDERS)
def test_every_pod_reads_the_scheme_its_issuer_writes(rendered, overlay):
    """The services' TESSERA_* identity settings name each account's id exactly as the rendered objects have the
    provider issue it. The provider's own trust domain is its install setting, outside these files (documented:
    it must be cluster.local)."""
    docs = rendered[overlay]
    uri_only = PROVIDERS[overlay] != "cert-manager-csi"
    for name, deployment in _deployments(docs).items():
        env = _env(deployment)
        assert (env["TESSERA_TRUST_DOMAIN"], env["TESSERA_SPIFFE_PATH"]) == (TRUST_DOMAIN, "/ns/tessera/sa/{principal}")
        assert (env.get("TESSERA_CLIENT_TLS") == "spiffe-bridge") == uri_only, name
        assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == name
    if PROVIDERS[overlay] == "spire":
        (registration,) = [d for d in docs if d["kind"] == "ClusterSPIFFEID"]
        template = registration["spec"]["spiffeIDTemplate"]
        for name in PROCESS_NAMES:  # what spire-controller-manager fills in for each pod
            filled = template.replace("{{ .TrustDomain }}", TRUST_DOMAIN).replace(
                "{{ .PodMeta.Namespace }}", NAMESPACE).replace("{{ .PodSpec.ServiceAccountName }}", name)
            assert filled == SCHEME.ids[name]
        assert registration["spec"]["podSelector"]["matchExpressions"][0]["values"] == list(PROCESS_NAMES)
        for deployment in _deployments(docs).values():
            (helper,) = deployment["spec"]["template"]["spec"]["initContainers"]
            assert helper["restartPolicy"] == "Always" and "startupProbe" in helper  # a native sidecar, first
