"""The Helm chart deploy/helm/tessera: with an overlay's settings `helm template` renders the objects `kubectl
kustomize` renders for that overlay, and in every other combination what the Python composition holds; the values a
chart user sets land where they should and keep the checks green; bad or missing values are refused by name before
anything is rendered."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from cli import deploy, deploy_public
from cli.deploy_compose import EXAMPLE_PUBLIC_URL, local, production, strategic_merge
from cli.deploy_helm import CHART, COMBINATIONS, DIMENSIONS, MIGRATION_HOOK, OVERLAYS, PLAIN_SETTINGS, SEED_HOOK
from cli.deploy_manifests import SETTINGS_MOUNT, contract_edges
from cli.deploy_migrations import MIGRATE, job_name
from cli.deploy_objects import NAMESPACE, rewritten, setting_file
from cli.helm_text import Switch, Value, When, documents
from cli.helm_unify import Joiner, condition
from shared.config import DEFAULT_PORTS
from shared.paths import REPO_ROOT
from tests.contract.test_deploy_manifests import computed_connectivity, declared_extras

TOOLS = REPO_ROOT / ".venv-deploy" / "bin"
CHART_DIR = REPO_ROOT / CHART
# ConfigMaps named after their content: kustomize's hash and the chart's differ (cli/deploy_helm.py).
HASHED = re.compile(r"^(tessera-public|capabilities-tool-policy)-[a-z0-9]{10}$")
DATABASES = ("host", "resources", "capabilities")


def _tool(name: str) -> str:
    path = TOOLS / name
    if not path.exists():
        pytest.skip(f"{path} is missing: `make k8s-tools` installs kubectl and helm")
    return str(path)


def _docs(text: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def helm_template(*args: str, namespace: str = NAMESPACE) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("helm"), "template", "tessera", str(CHART_DIR), "-n", namespace, *args],
                          capture_output=True, text=True, timeout=120)


def _values_file(tmp_path: Path, values: dict, name: str = "values.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(values))
    return str(path)


def _overlay_values(overlay: str) -> str:
    return str(CHART_DIR / "ci" / f"{overlay}-values.yaml")


def _without_content_hash(value: object) -> object:
    return rewritten(value, leaf=lambda found: found.rsplit("-", 1)[0]
                     if isinstance(found, str) and HASHED.match(found) else found)


def _without_hooks(obj: dict) -> dict:
    annotations = {k: v for k, v in obj["metadata"].pop("annotations", {}).items() if not k.startswith("helm.sh/")}
    if annotations:
        obj["metadata"]["annotations"] = annotations
    return obj


def _by_identity(objects: list[dict]) -> dict[tuple[str, str], dict]:
    return {(obj["kind"], obj["metadata"]["name"]): obj for obj in map(_without_content_hash, objects)}


def _hooks(rendered: str) -> dict[tuple[str, str], dict[str, str]]:
    return {(doc["kind"], doc["metadata"]["name"]): doc["metadata"]["annotations"] for doc in _docs(rendered)
            if "helm.sh/hook" in doc["metadata"].get("annotations", {})}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_chart_with_an_overlays_values_renders_what_kustomize_renders(overlay):
    kustomized = subprocess.run([_tool("kubectl"), "kustomize", str(REPO_ROOT / "deploy/k8s/overlays" / overlay)],
                                capture_output=True, text=True, timeout=120)
    assert kustomized.returncode == 0, kustomized.stderr
    helm = helm_template("-f", _overlay_values(overlay))
    assert helm.returncode == 0, helm.stderr
    # The chart's documented differences: no Namespace, its own content hashes, Jobs as hooks.
    expected = _by_identity([doc for doc in _docs(kustomized.stdout) if doc["kind"] != "Namespace"])
    rendered = _by_identity([_without_hooks(doc) for doc in _docs(helm.stdout)])
    assert sorted(rendered) == sorted(expected)
    different = [identity for identity in expected if rendered[identity] != expected[identity]]
    assert different == []


def test_migrate_jobs_run_before_the_pods_with_what_they_need_made_just_before_them(tmp_path):
    created = {"migrations": {service: {"secret": {"create": True, "migratorUrl": f"postgresql://m@db/{service}"}}
                              for service in DATABASES}}
    helm = helm_template("-f", _overlay_values("production"), "-f", _values_file(tmp_path, created))
    assert helm.returncode == 0, helm.stderr
    hooks = _hooks(helm.stdout)
    jobs = {name for kind, name in hooks if kind == "Job"}
    assert jobs == {job_name(service) for service in DATABASES}
    before = set(hooks) - {("Job", name) for name in jobs}
    assert before == {("ServiceAccount", MIGRATE), ("NetworkPolicy", f"{MIGRATE}-to-postgresql"),
                      *(("Secret", f"{MIGRATE}-{service}") for service in DATABASES)}
    assert all(a["helm.sh/hook"] == MIGRATION_HOOK for a in hooks.values())
    assert max(int(hooks[h]["helm.sh/hook-weight"]) for h in before) < \
        min(int(hooks[("Job", name)]["helm.sh/hook-weight"]) for name in jobs)
    # What holds the migrator's password goes once the Jobs succeeded; the Jobs stay for their logs (their TTL).
    assert all("hook-succeeded" in hooks[h]["helm.sh/hook-delete-policy"] for h in before)
    assert all(hooks[("Job", name)]["helm.sh/hook-delete-policy"] == "before-hook-creation" for name in jobs)
    local_hooks = _hooks(helm_template("-f", _overlay_values("local")).stdout)  # the services migrate themselves
    assert local_hooks == {("Job", "seed-warehouse"): {
        "helm.sh/hook": SEED_HOOK, "helm.sh/hook-weight": "0", "helm.sh/hook-delete-policy": "before-hook-creation"}}


def _composition(combination: tuple[str, str, str]) -> dict[tuple[str, str], dict]:
    """The Python composition as the chart renders it with the examples' values."""
    objects = local() if combination[0] == "local" else production(*combination[1:])
    host = EXAMPLE_PUBLIC_URL.removeprefix("https://")
    return _by_identity([json.loads(json.dumps(obj).replace(deploy_public.PLACEHOLDER_HOST, host)) for obj in objects])


def test_every_combination_renders_its_composition(tmp_path):
    """The four overlays are compared with kustomize above; here all twelve combinations of profile, provider and way
    in, each against what cli/deploy_compose.py composes for it."""
    for combination in COMBINATIONS:
        profile, provider, way = combination
        chosen = {"profile": profile, "identity": {"provider": provider}, "publicAccess": {"via": way}}
        base = _overlay_values("local" if profile == "local" else "production-spire")  # the examples, a class
        helm = helm_template("-f", base, "-f", _values_file(tmp_path, chosen))
        assert helm.returncode == 0, (combination, helm.stderr)
        rendered = _by_identity([_without_hooks(doc) for doc in _docs(helm.stdout)])
        expected = _composition(combination)
        assert sorted(rendered) == sorted(expected), combination
        assert [identity for identity in expected if rendered[identity] != expected[identity]] == [], combination


def test_the_default_values_choose_the_production_overlay_and_its_examples_must_be_set(tmp_path):
    defaults = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    assert (defaults["profile"], defaults["identity"]["provider"], defaults["publicAccess"]["via"]) == \
        OVERLAYS["production"]
    bare = helm_template()
    assert bare.returncode != 0 and bare.stdout == ""
    assert "publicUrl: set it" in bare.stderr or "image.repository: set it" in bare.stderr, bare.stderr
    without_url = helm_template("--set", "image.repository=registry.acme.test/tessera")
    assert without_url.returncode != 0 and "publicUrl: set it" in without_url.stderr
    gateway = helm_template("-f", _overlay_values("production"), "--set", "publicAccess.via=gateway-api")
    assert gateway.returncode != 0 and "publicAccess.gatewayClassName: set it" in gateway.stderr


def test_helm_lint_is_clean_for_every_overlays_values():
    for overlay in OVERLAYS:
        result = subprocess.run([_tool("helm"), "lint", "--strict", "-n", NAMESPACE, str(CHART_DIR), "-f",
                                 _overlay_values(overlay)], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "0 chart(s) failed" in result.stdout


def test_the_chart_renders_as_another_charts_dependency(tmp_path):
    """Helm hands a dependency `global` values: the closed schema still takes them."""
    result = helm_template("-f", _overlay_values("production"), "--set", "global.imageRegistry=registry.acme.test")
    assert result.returncode == 0, result.stderr


SET_EVERYTHING = {
    "image": {"repository": "registry.internal/tessera", "tag": "0.1.1", "pullPolicy": "IfNotPresent"},
    "publicUrl": "https://data.acme.test",
    "identity": {"provider": "spire"},
    "publicAccess": {"via": "ingress", "ingressClassName": "nginx",
                     "certificateIssuer": {"kind": "Issuer", "name": "acme", "group": "cert-manager.io"}},
    "services": {"agent": {"minReplicas": 3, "maxReplicas": 9},
                 "resources": {"secretName": "resources-keys-and-settings"},
                 "host": {"replicas": 3, "settings": {"database_url": "postgresql+psycopg://host:pw@db/tessera_host"}}},
    "agent": {"model": {"url": "https://models.acme.test/v1", "name": "acme-large"}},
    "web": {"oidc": {"issuer": "https://login.acme.test", "clientId": "tessera", "tenant": "acme",
                     "providerName": 'Acme "SSO" {{ .Values }} 🔑'}},
    "capabilities": {"webauthnOrigins": ["https://data.acme.test", "https://approvals.acme.test"]},
    "egress": {"postgresql": [{"ipBlock": {"cidr": "10.20.0.0/16"}}],
               "https": {"agent": [{"ipBlock": {"cidr": "203.0.113.0/24"}}]}},
    "migrations": {"host": {"secret": {"create": True, "migratorUrl": "postgresql+psycopg://migrator:pw@db/host"}}},
}


@pytest.fixture(scope="module")
def set_everything(tmp_path_factory) -> tuple[Path, dict[tuple[str, str], dict]]:
    path = tmp_path_factory.mktemp("helm") / "rendered.yaml"
    result = helm_template("-f", _values_file(path.parent, SET_EVERYTHING))
    assert result.returncode == 0, result.stderr
    path.write_text(result.stdout)
    return path, {(doc["kind"], doc["metadata"]["name"]): doc for doc in _docs(result.stdout)}


def _env(deployment: dict) -> dict[str, object]:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container["env"]}


def test_the_values_a_chart_user_sets_land_where_they_should(set_everything):
    _, objects = set_everything
    deployments = {name: doc for (kind, name), doc in objects.items() if kind == "Deployment"}
    tessera_images = {c["image"] for d in deployments.values() for c in d["spec"]["template"]["spec"]["containers"]
                      if c["name"] != "spiffe-helper"}
    assert tessera_images == {"registry.internal/tessera:0.1.1"}
    assert objects[("Ingress", "tessera")]["spec"]["ingressClassName"] == "nginx"
    assert objects[("Ingress", "tessera")]["spec"]["rules"][0]["host"] == "data.acme.test"
    assert objects[("Certificate", "tessera-public-tls")]["spec"]["dnsNames"] == ["data.acme.test"]
    assert objects[("Certificate", "tessera-public-tls")]["spec"]["issuerRef"]["name"] == "acme"
    public = [doc for (kind, name), doc in objects.items() if kind == "ConfigMap" and name.startswith("tessera-pub")]
    assert [doc["data"]["url"] for doc in public] == ["https://data.acme.test"]
    assert _env(deployments["web"])["TESSERA_PUBLIC_URL"]["configMapKeyRef"]["name"] == public[0]["metadata"]["name"]
    assert deployments["host"]["spec"]["replicas"] == 3
    assert (objects[("HorizontalPodAutoscaler", "agent")]["spec"]["minReplicas"],
            objects[("HorizontalPodAutoscaler", "agent")]["spec"]["maxReplicas"]) == (3, 9)
    web = _env(deployments["web"])
    assert (web["TESSERA_WEB_OIDC_ISSUER"], web["TESSERA_WEB_OIDC_CLIENT_ID"], web["TESSERA_WEB_OIDC_TENANT"]) == (
        "https://login.acme.test", "tessera", "acme")
    assert web["TESSERA_WEB_OIDC_PROVIDER_NAME"] == SET_EVERYTHING["web"]["oidc"]["providerName"]  # as written
    assert "TESSERA_WEB_OIDC_SCOPES" not in web  # unset: web's own default
    agent = _env(deployments["agent"])
    assert (agent["TESSERA_AGENT_MODEL_URL"], agent["TESSERA_AGENT_MODEL_NAME"]) == (
        "https://models.acme.test/v1", "acme-large")
    assert "TESSERA_AGENT_MODEL_PROTOCOL" not in agent
    assert yaml.safe_load(_env(deployments["capabilities"])["TESSERA_CAPABILITIES_WEBAUTHN_ORIGINS"]) == \
        SET_EVERYTHING["capabilities"]["webauthnOrigins"]
    assert ("ClusterSPIFFEID", f"tessera-{NAMESPACE}") in objects and ("Ingress", "tessera") in objects
    mounted = [v["secret"]["secretName"] for v in deployments["resources"]["spec"]["template"]["spec"]["volumes"]
               if "secret" in v]
    assert mounted == ["resources-keys-and-settings"]
    # The Secrets asked for: the host's settings (mounted as its settings folder, the pods rolling when they change)
    # and a migrate Job's URL. A service's own Secret, which holds its token keys, is never written.
    secrets = {name: doc for (kind, name), doc in objects.items() if kind == "Secret"}
    assert set(secrets) == {"migrate-host", "host-settings"}
    assert secrets["host-settings"]["stringData"] == {setting_file("host", "database_url"): SET_EVERYTHING[
        "services"]["host"]["settings"]["database_url"]}
    host = deployments["host"]["spec"]["template"]
    assert _env(deployments["host"])["TESSERA_SECRETS_DIR"] == SETTINGS_MOUNT
    assert {"name": "settings", "mountPath": SETTINGS_MOUNT, "readOnly": True} in \
        host["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "settings", "secret": {"secretName": "host-settings", "defaultMode": 0o400, "optional": False}} \
        in host["spec"]["volumes"]
    assert len(host["metadata"]["annotations"]["tessera.dev/settings-sha256"]) == 64
    assert _env(deployments["web"])["TESSERA_SECRETS_DIR"] == "/etc/tessera/secret"  # not given: its own Secret
    assert secrets["migrate-host"]["stringData"] == {setting_file("host", "migrator_url"): "postgresql+psycopg://"
                                                     "migrator:pw@db/host"}


def test_a_rendering_with_every_value_set_passes_the_projects_checks_and_kubernetes(set_everything):
    path, _ = set_everything
    check = subprocess.run([str(REPO_ROOT / "bin" / "tessera"), "deploy", "check", str(path)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr
    validate = subprocess.run([_tool("kubernetes-validate"), "-k", "1.35.0", "--strict", "--quiet", str(path)],
                              capture_output=True, text=True, timeout=300)
    assert validate.returncode == 0, validate.stdout + validate.stderr


def test_the_analyzer_finds_the_caller_table_and_egress_narrowed_to_the_listed_peers(set_everything, tmp_path):
    """network-config-analyzer on the chart with every value set: between workloads exactly the contract's edges
    (and the broker's MCP servers); PostgreSQL reached only in the listed range, the agent's HTTPS only in its
    own; web's and the MCP front's HTTPS, not narrowed, anywhere."""
    path, objects = set_everything
    workloads = {name for kind, name in objects if kind in ("Deployment", "StatefulSet", "Job")}
    allowed = computed_connectivity(path, tmp_path)
    between = {edge for edge in allowed if edge[0] in workloads and edge[1] in workloads}
    assert between == {(caller, callee, "TCP", str(DEFAULT_PORTS[callee])) for caller, callee in contract_edges()} \
        | declared_extras("production")
    reached: dict[tuple[str, str], set[str]] = {}
    for source, destination, _, ports in allowed:
        if source in workloads and destination not in workloads and ports in ("443", "5432"):
            reached.setdefault((source, ports), set()).add(destination)
    databases = {name for (name, ports) in reached if ports == "5432"}
    assert databases == {*DATABASES, *(job_name(name) for name in DATABASES)}
    assert all(reached[(name, "5432")] == {"10.20.0.0-10.20.255.255"} for name in databases)
    assert reached[("agent", "443")] == {"203.0.113.0-203.0.113.255"}
    assert "0.0.0.0-169.254.20.9" in reached[("web", "443")] and "0.0.0.0-169.254.20.9" in reached[("mcp", "443")]


def test_no_way_in_renders_no_ingress_gateway_or_certificate(tmp_path):
    result = helm_template("-f", _overlay_values("production"), "-f",
                           _values_file(tmp_path, {"publicAccess": {"via": "none"}}))
    assert result.returncode == 0, result.stderr
    kinds = {doc["kind"] for doc in _docs(result.stdout)}
    assert kinds.isdisjoint({"Ingress", "Gateway", "HTTPRoute", "Certificate"}) and "Deployment" in kinds


@pytest.mark.parametrize("values,named", [
    ({"identity": {"provider": "spiffe"}}, "/identity/provider"),
    ({"publicUrl": "http://tessera.example.com"}, "/publicUrl"),
    ({"publicUrl": "https://Tessera.example.com:8443"}, "/publicUrl"),
    ({"publicURL": "https://tessera.example.com"}, "publicURL"),
    ({"services": {"agent": {"minReplicas": 0}}}, "/services/agent/minReplicas"),
    ({"services": {"host": {"replicas": "two"}}}, "/services/host/replicas"),
    ({"services": {"host": {"secretName": ""}}}, "/services/host/secretName"),
    ({"services": {"host": {"secret": {"create": True}}}}, "additional properties 'secret'"),  # the operator's
    ({"publicAccess": {"certificateIssuer": {"kind": "Isuer", "name": "acme"}}},
     "/publicAccess/certificateIssuer/kind"),
    ({"agent": {"model": {"protocol": "anthropic"}}}, "/agent/model/protocol"),
    ({"egress": {"postgresql": ["10.0.0.0/8"]}}, "/egress/postgresql/0"),
    ({"profile": "local"}, "/publicAccess/via"),  # the local profile has no way in: asked for one, it says so
    ({"migrations": {"host": {"secret": {"create": True}}}}, "migrations.host.secret.migratorUrl"),
    ({"services": {"resources": {"settings": {"warehouse_url": "postgresql+psycopg://r@db/w"}}}},
     "services.resources.settings.store_url: needed when services.resources.settings is given"),
    ({"services": {"resources": {"settings": {"warehouse_ur": "x"}}}}, "additional properties 'warehouse_ur'"),
])
def test_bad_values_are_refused_by_name_before_anything_renders(tmp_path, values, named):
    result = helm_template("-f", _overlay_values("production"), "-f", _values_file(tmp_path, values))
    assert result.returncode != 0 and result.stdout == ""
    assert named in result.stderr, result.stderr


def test_the_templates_refuse_what_the_schema_refuses_when_it_is_skipped(tmp_path):
    result = helm_template("-f", _overlay_values("production"), "--skip-schema-validation", "--set", "profile=local")
    assert result.returncode != 0 and "the local profile has no way in" in result.stderr


def test_a_template_the_generator_no_longer_makes_is_named_and_removed(tmp_path, capsys):
    assert deploy.render(check=False, root=tmp_path) == 0
    leftover = tmp_path / CHART / "templates" / "renamed-since.yaml"
    leftover.write_text("kind: ConfigMap\n")
    assert deploy.render(check=True, root=tmp_path) == 1
    assert f"{CHART}/templates/renamed-since.yaml" in capsys.readouterr().err
    assert deploy.render(check=False, root=tmp_path) == 0 and not leftover.exists()
    assert deploy.render(check=True, root=tmp_path) == 0


def test_another_namespace_is_refused_with_the_reason(tmp_path):
    result = helm_template("-f", _overlay_values("production"), namespace="default")
    assert result.returncode != 0
    assert "install Tessera into the namespace tessera" in result.stderr


# -- the generator's parts, without helm -------------------------------------------------------------------------


def test_a_strategic_merge_puts_new_items_first_and_merges_known_ones_by_key():
    base = {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}], "image": "i"}]}
    patch = {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "3"}]}]}
    assert strategic_merge(base, patch) == {"containers": [{"name": "a", "image": "i", "env": [
        {"name": "Y", "value": "2"}, {"name": "X", "value": "3"}]}]}
    assert base["containers"][0]["env"] == [{"name": "X", "value": "1"}]  # the base is not changed


def test_a_condition_names_only_the_dimensions_that_differ():
    everything = set(COMBINATIONS)
    spire = {c for c in everything if c[:2] == ("production", "spire")}
    assert condition(spire, everything, DIMENSIONS) == \
        'and (eq .Values.profile "production") (eq .Values.identity.provider "spire")'
    # The local profile has no way in, so "ingress" alone already means production.
    both = {c for c in everything if c[0] == "production" and c[1] != "cert-manager-csi" and c[2] == "ingress"}
    assert condition(both, everything, DIMENSIONS) == (
        'and (has .Values.identity.provider (list "csi-driver-spiffe" "spire")) (eq .Values.publicAccess.via '
        '"ingress")')
    assert condition({c for c in everything if c[0] == "local"}, everything, DIMENSIONS) == 'eq .Values.profile "local"'
    odd = {("production", "spire", "ingress"), ("production", "csi-driver-spiffe", "none")}
    assert condition(odd, everything, DIMENSIONS).startswith("or (and ")


def test_joining_keeps_what_is_shared_once_and_puts_the_rest_under_conditions():
    a, b = ("production", "csi-driver-spiffe", "ingress"), ("production", "spire", "ingress")
    optional = When(".Values.x", {"name": "O", "value": "o"})
    joined = Joiner(DIMENSIONS).join({
        a: {"env": [{"name": "X", "value": "1"}, {"name": "T", "value": "bridge"}, optional], "k": 1},
        b: {"env": [{"name": "X", "value": "1"}, optional], "k": 2}})
    assert joined["env"][0] == {"name": "X", "value": "1"} and joined["env"][2] == optional  # once, not per variant
    assert isinstance(joined["env"][1], When) and joined["env"][1].value == {"name": "T", "value": "bridge"}
    assert isinstance(joined["k"], Switch) and [value for _, value in joined["k"].cases] == [1, 2]


def test_template_text_prints_literal_braces_and_characters_and_marks_values():
    text = documents("", [{"spiffeIDTemplate": "spiffe://{{ .TrustDomain }}/x", "tag": Value(".Values.image.tag"),
                           "script": "line 1\nkey 🔑"}])
    assert 'spiffeIDTemplate: {{ "spiffe://{{ .TrustDomain }}/x" | toJson }}' in text
    assert "tag: {{ .Values.image.tag | toJson }}" in text
    assert 'script: "line 1\\nkey 🔑"' in text  # no \\u escapes: YAML and Go read no surrogate pairs


def test_each_plain_setting_the_chart_sets_is_a_setting_of_its_service():
    from services.agent.config import AgentSettings
    from services.web.config import WebSettings

    fields = {"agent": AgentSettings.model_fields, "web": WebSettings.model_fields}
    for service, (_, settings) in PLAIN_SETTINGS.items():
        assert {variable.lower() for variable in settings.values()} <= set(fields[service]), service


def test_a_settings_secret_holding_anything_but_its_services_settings_is_named():
    from cli.deploy_check import secret_problems
    from cli.deploy_objects import secret_object

    holding = secret_object("host-settings", {setting_file("host", "database_url"): b"u", "host-signing.key": b"k",
                                              setting_file("web", "session_secret"): b"s"})
    problems = secret_problems([holding], "chart")
    assert len(problems) == 2 and all("host-settings" in problem for problem in problems)
    assert any("host-signing.key" in problem for problem in problems)
