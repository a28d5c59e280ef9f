"""The Helm chart deploy/helm/tessera, composed from the same objects as the kustomize overlays.

For the local profile, and in production for every identity provider and way in, the objects are composed as
kustomize composes the overlay (cli/deploy_compose.py); the settings a chart user expects to set become values
(`Value`, each with its schema, defaulting to what the production overlay renders); then the compositions are joined
into one set of templates, where they differ under conditions on `profile`, `identity.provider` and
`publicAccess.via` (cli/helm_unify.py, cli/helm_text.py). values.yaml and values.schema.json are written from the
same values, and ci/<overlay>-values.yaml holds each overlay's settings, so `helm template` with them renders what
`kubectl kustomize` renders for the overlay: a test holds them equal.

Where the chart differs from the overlays, on purpose:
- no Namespace: a release is installed into a namespace that already exists (label it as base/namespace.yaml does);
- what the overlays hold as examples to edit (the public URL, the registry, the Gateway class) has no default: the
  chart refuses to render without it;
- ConfigMaps generated from content get a hash of their own, not kustomize's;
- Jobs are hooks, made afresh for each release (a Job's pod template cannot change in place): the migrate Jobs run
  before the release's pods (pre-install, pre-upgrade), with their ServiceAccount, NetworkPolicy and any Secret the
  chart writes for them made just before and removed once they succeeded, so the schema is the release's before its
  pods start and `helm install --wait` finishes (the services wait, not ready, for their schema); the local
  profile's seed Job runs after them.
"""

from __future__ import annotations

import copy
import json
import textwrap
from itertools import product

import yaml

from cli import deploy_public
from cli.deploy_compose import EXAMPLE_PUBLIC_URL, PROFILES, PROVIDERS, WAYS_IN, local, production, rename_config_map
from cli.deploy_manifests import SETTINGS_MOUNT, SPECS, settings_secret_name
from cli.deploy_migrations import DATABASE_LABEL, MIGRATE
from cli.deploy_migrations import secret_name as migrator_secret_name
from cli.deploy_objects import (
    HTTPS_POLICY_SUFFIX,
    IMAGE,
    IMAGE_TAG,
    NAMESPACE,
    POSTGRESQL_POLICY_SUFFIX,
    generated_header,
    labels,
    rewritten,
    setting_file,
)
from cli.deploy_secrets import OPTIONAL
from cli.helm_text import Value, When, documents, scalar
from cli.helm_unify import Combination, Joiner

CHART = "deploy/helm/tessera"
CHART_VERSION = "0.1.0"
HEADER = generated_header("cli/deploy_helm.py (the objects of cli/deploy_compose.py)")
DIMENSIONS = ((".Values.profile", PROFILES), (".Values.identity.provider", PROVIDERS),
              (".Values.publicAccess.via", WAYS_IN))
# Every combination the chart renders: the local profile has no identity provider (its certificates are files in
# each service's Secret) and no way in, which the schema holds it to (via: none); it ignores the provider.
COMBINATIONS = (*product(["production"], PROVIDERS, WAYS_IN), *product(["local"], PROVIDERS, ["none"]))
# Each overlay as the chart's values (ci/<overlay>-values.yaml): profile, identity provider and way in.
OVERLAYS = {"local": ("local", PROVIDERS[0], "none"),
            "production": ("production", "csi-driver-spiffe", "ingress"),
            "production-spire": ("production", "spire", "gateway-api"),
            "production-cert-manager-csi": ("production", "cert-manager-csi", "ingress")}
# Plain settings from values, each set only where the value is not empty (else the service's own default): the
# service → (values section, value → the setting's variable after TESSERA_<SERVICE>_).
PLAIN_SETTINGS = {
    "agent": ("agent.model", {"url": "MODEL_URL", "protocol": "MODEL_PROTOCOL", "name": "MODEL_NAME"}),
    "web": ("web.oidc", {"issuer": "OIDC_ISSUER", "clientId": "OIDC_CLIENT_ID", "scopes": "OIDC_SCOPES",
                         "personClaim": "OIDC_PERSON_CLAIM", "tenantClaim": "OIDC_TENANT_CLAIM",
                         "tenant": "OIDC_TENANT", "nameClaim": "OIDC_NAME_CLAIM",
                         "providerName": "OIDC_PROVIDER_NAME"}),
}
PLAIN_SCHEMAS = {"agent.model.protocol": {"enum": ["", "openai-chat", "ai-sdk-ui"]}}
# The overlays' examples to edit: the chart has no default for them (`required`), the production overlays' values
# files set them. The local profile's image is its own (localhost/tessera, built on the machine).
EXAMPLES = {"publicUrl": EXAMPLE_PUBLIC_URL, "image.repository": "registry.example.com/tessera",
            "publicAccess.gatewayClassName": deploy_public.GATEWAY_CLASS}
PUBLIC_URL_PATTERN = "^https://[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$"
MIGRATION_HOOK = "pre-install,pre-upgrade"
SEED_HOOK = "post-install,post-upgrade"
NAME = {"type": "string", "minLength": 1}
CHECKS = (  # template guards, before anything renders (the schema says the same where it is not skipped)
    f'{{{{- if ne .Release.Namespace "{NAMESPACE}" }}}}{{{{ fail "install Tessera into the namespace {NAMESPACE} '
    f'(helm install -n {NAMESPACE}): its services\' SPIFFE ids and policies name it" }}}}{{{{- end }}}}\n'
    '{{- if and (eq .Values.profile "local") (ne .Values.publicAccess.via "none") }}{{ fail "publicAccess.via: the '
    'local profile has no way in; set it to none" }}{{- end }}\n')


def _hook(when: str, weight: int, remove_when_done: bool = False) -> dict[str, str]:
    """Made by Helm `when`, lower weights first, replaced at the next release (and removed once every hook of its
    phase succeeded, when `remove_when_done`)."""
    policy = "before-hook-creation,hook-succeeded" if remove_when_done else "before-hook-creation"
    return {"helm.sh/hook": when, "helm.sh/hook-weight": str(weight), "helm.sh/hook-delete-policy": policy}


def _annotate(obj: dict, annotations: dict[str, str]) -> None:
    obj["metadata"]["annotations"] = {**obj["metadata"].get("annotations", {}), **annotations}


def _schema_of(default: object) -> dict:
    if isinstance(default, bool):
        return {"type": "boolean"}
    if isinstance(default, int):
        return {"type": "integer", "minimum": 1}
    if isinstance(default, str):
        return NAME if default else {"type": "string"}
    if isinstance(default, list):
        return {"type": "array", "items": {"type": "string"}}
    return {"type": "object"}


class Values:
    """The values one composition reads: each `take` is a place in its templates reading `.Values.<path>`, with the
    value the overlay renders there and the schema of what may be set."""

    def __init__(self) -> None:
        self.seen: dict[str, object] = {}
        self.schemas: dict[str, dict] = {}

    def take(self, path: str, value: object, schema: dict | None = None, pipe: str = "") -> Value:
        if path in self.seen and self.seen[path] != value:
            raise ValueError(f"{path}: two values in one overlay, {self.seen[path]!r} and {value!r}")
        self.seen[path] = copy.deepcopy(value)
        self.schemas[path] = schema or _schema_of(value)
        return required(path, "set it (no default)", pipe) if path in EXAMPLES else Value(f".Values.{path}{pipe}")

    def required(self, path: str, why: str) -> Value:
        """A value that must be set where it is read (its default, empty, works nowhere)."""
        self.take(path, "")
        return required(path, why)


def required(path: str, why: str, pipe: str = "") -> Value:
    """`.Values.<path>`, or no rendering at all, naming the value and `why`, where it is empty."""
    return Value(f"required {json.dumps(f'{path}: {why}')} .Values.{path}{pipe}")


# -- the settings a chart user sets ----------------------------------------------------------------------------


def _container(obj: dict, name: str) -> dict:
    return next(c for c in obj["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def _images(obj: dict, values: Values) -> object:
    """The release image (and how it is pulled) from `image`, in every container that runs it."""
    def released(found: dict) -> dict:
        image = found.get("image")
        if isinstance(image, str) and image.endswith(f"/{IMAGE.rsplit('/', 1)[1]}:{IMAGE_TAG}"):
            repository, tag = image.rsplit(":", 1)  # production's release image, or local's built on the machine
            found["image"] = Value(f'printf "%s:%s" ({values.take("image.repository", repository).expression}) '
                                   f'{values.take("image.tag", tag).expression}')
            found["imagePullPolicy"] = values.take("image.pullPolicy", found["imagePullPolicy"],
                                                   {"enum": ["Always", "IfNotPresent", "Never"]})
        return found

    return rewritten(obj, released)


def _public(obj: dict, values: Values) -> object:
    """The public URL's host wherever the way in names it; the ConfigMap tessera-public by a name hashed from it, so
    a new URL rolls the pods that read it."""
    if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == deploy_public.PUBLIC_CONFIG_MAP:
        url = values.take("publicUrl", obj["data"][deploy_public.PUBLIC_URL_KEY],
                          {"type": "string", "pattern": PUBLIC_URL_PATTERN})
        obj = {**obj, "data": {deploy_public.PUBLIC_URL_KEY: url}}
    name = Value(f'printf "%s-%s" "{deploy_public.PUBLIC_CONFIG_MAP}" (.Values.publicUrl | sha256sum | trunc 10)')
    obj = rename_config_map(obj, deploy_public.PUBLIC_CONFIG_MAP, name)
    if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == deploy_public.PUBLIC_CONFIG_MAP:
        obj["metadata"]["name"] = name
    host = Value("(urlParse .Values.publicUrl).host")
    return rewritten(obj, leaf=lambda value: host if value == deploy_public.PLACEHOLDER_HOST else value)


def _service(obj: dict, values: Values) -> None:
    """A service's replicas, resources and Secret; its plain settings (the agent's model, web's OpenID sign-in); the
    broker's passkey origins."""
    name, spec = obj["metadata"]["name"], obj["spec"]
    if "replicas" in spec and not SPECS[name].single_replica:
        spec["replicas"] = values.take(f"services.{name}.replicas", spec["replicas"])
    container = _container(obj, name)
    container["resources"] = values.take(f"services.{name}.resources", container["resources"])
    for volume in obj["spec"]["template"]["spec"]["volumes"]:
        if volume["name"] == "identity":
            volume["secret"]["secretName"] = values.take(f"services.{name}.secretName",
                                                         volume["secret"]["secretName"])
    if SPECS[name].secret_settings:
        _settings_from_values(obj, container, values)
    section, settings = PLAIN_SETTINGS.get(name, ("", {}))
    container["env"] += [When(f".Values.{section}.{key}", {
        "name": f"TESSERA_{name.upper()}_{variable}",
        "value": values.take(f"{section}.{key}", "", PLAIN_SCHEMAS.get(f"{section}.{key}"))})
        for key, variable in settings.items()]
    if name == "capabilities":
        origins = values.take("capabilities.webauthnOrigins", [], pipe=" | toJson")
        container["env"].append(When(".Values.capabilities.webauthnOrigins", {
            "name": "TESSERA_CAPABILITIES_WEBAUTHN_ORIGINS", "value": origins}))


def _settings_from_values(obj: dict, container: dict, values: Values) -> None:
    """With `services.<service>.settings` given, the chart writes them into a Secret of their own, mounted as the
    service's settings folder (TESSERA_SECRETS_DIR), and the pods roll when they change; its own Secret then holds
    its token keys alone that matter (the settings files in it are no longer read). Empty: the overlays' way."""
    name = obj["metadata"]["name"]
    given = f".Values.services.{name}.settings"
    secret = settings_secret_name(name)
    for variable in container["env"]:
        if variable["name"] == "TESSERA_SECRETS_DIR":
            variable["value"] = Value(f'ternary "{SETTINGS_MOUNT}" "{variable["value"]}" (not (empty {given}))')
    container["volumeMounts"].append(When(given, {"name": "settings", "mountPath": SETTINGS_MOUNT,
                                                  "readOnly": True}))
    pod = obj["spec"]["template"]
    pod["spec"]["volumes"].append(When(given, {"name": "settings", "secret": {
        "secretName": secret, "defaultMode": 0o400, "optional": False}}))
    pod["metadata"]["annotations"] = When(given, {"tessera.dev/settings-sha256": Value(
        f"{given} | toJson | sha256sum")})


def _settings_secrets(values: Values) -> list[When]:
    """Per service with secret settings, the Secret the chart writes them into when given as values: each required
    but the optional ones (values then hold passwords: Helm keeps them in its release history)."""
    made = []
    for name, spec in SPECS.items():
        if not spec.secret_settings:
            continue
        path = f"services.{name}.settings"
        values.take(path, {}, {"type": "object", "additionalProperties": False,
                               "properties": {setting: {"type": "string"} for setting in spec.secret_settings}})
        files = {setting_file(name, setting): Value(f'.Values.{path}.{setting} | default ""')
                 if (name, setting) in OPTIONAL else
                 required(f"{path}.{setting}", f"needed when {path} is given")
                 for setting in spec.secret_settings}
        made.append(When(f".Values.{path}", {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": settings_secret_name(name), "namespace": NAMESPACE, "labels": labels(name)},
            "stringData": files}))
    return made


def _egress_peers(obj: dict, values: Values) -> None:
    """Egress the policies leave open to any address (PostgreSQL; HTTPS outside the cluster) narrowed to the peers the
    operator lists (NetworkPolicy peers: ipBlocks for a managed database or a provider's ranges, or selectors for a
    database inside the cluster); none listed: any address, as the overlays render. A rule that names its peers
    already (the local seed Job's, to the PostgreSQL pod) keeps them."""
    name = obj["metadata"]["name"]
    if name.endswith(POSTGRESQL_POLICY_SUFFIX):
        path = "egress.postgresql"
    elif name.endswith(HTTPS_POLICY_SUFFIX):
        path = f"egress.https.{name.removesuffix(HTTPS_POLICY_SUFFIX)}"
    else:
        return
    rule, = obj["spec"]["egress"]
    if "to" not in rule:
        peers = values.take(path, [], {"type": "array", "items": {"type": "object", "minProperties": 1}})
        obj["spec"]["egress"] = [{"to": When(f".Values.{path}", peers), **rule}]


def _migration(obj: dict, values: Values) -> None:
    """A migrate Job, its ServiceAccount and NetworkPolicy: hooks before the release's pods."""
    _annotate(obj, _hook(MIGRATION_HOOK, 0 if obj["kind"] == "Job" else -1, remove_when_done=obj["kind"] != "Job"))
    if obj["kind"] == "Job":
        service = obj["metadata"]["labels"][DATABASE_LABEL]
        for volume in obj["spec"]["template"]["spec"]["volumes"]:
            if "secret" in volume:
                volume["secret"]["secretName"] = values.take(f"migrations.{service}.secret.name",
                                                             volume["secret"]["secretName"])


def _migrator_secrets(values: Values) -> list[When]:
    """Each migrate Job's Secret, written by the chart where asked (`create`), just before the Job, and removed once
    the Jobs succeeded: it holds the migrator's password. By default each is the operator's. (A service's own Secret
    also holds its token keys, so it is always the operator's.)"""
    made = []
    for name in (name for name, spec in SPECS.items() if spec.database):
        path = f"migrations.{name}.secret"
        url = values.required(f"{path}.migratorUrl", f"needed when {path}.create is true (or create "
                                                     f"{migrator_secret_name(name)} yourself)")
        values.take(f"{path}.create", False)
        made.append(When(f".Values.{path}.create", {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": Value(f".Values.{path}.name"), "namespace": NAMESPACE, "labels": labels(MIGRATE),
                         "annotations": _hook(MIGRATION_HOOK, -1, remove_when_done=True)},
            "stringData": {setting_file(name, "migrator_url"): url}}))
    return made


def chart_objects(combination: Combination, values: Values) -> list:
    """The composition of `combination` (profile, identity provider, way in), with the chart's values in place."""
    profile, provider, way = combination
    made: list = []
    for obj in local() if profile == "local" else production(provider, way):
        obj = _public(_images(obj, values), values)  # rebuilt: the composition's objects are not changed below
        kind, name = obj["kind"], obj["metadata"]["name"]
        if kind == "Deployment" and name in SPECS:
            _service(obj, values)
        elif kind == "HorizontalPodAutoscaler":
            for bound in ("minReplicas", "maxReplicas"):
                obj["spec"][bound] = values.take(f"services.{name}.{bound}", obj["spec"][bound])
        elif DATABASE_LABEL in obj["metadata"].get("labels", {}) or (
                kind in ("ServiceAccount", "NetworkPolicy") and name.startswith(MIGRATE)):
            _migration(obj, values)
        elif kind == "Job":  # the local profile's seed: after the release's pods, PostgreSQL's among them
            _annotate(obj, _hook(SEED_HOOK, 0))
        elif kind == "Certificate":
            obj["spec"]["issuerRef"] = values.take("publicAccess.certificateIssuer", obj["spec"]["issuerRef"], {
                "type": "object", "additionalProperties": False, "required": ["kind", "name"],
                "properties": {"kind": {"enum": ["ClusterIssuer", "Issuer"]}, "name": NAME, "group": NAME}})
        elif kind == "Gateway":
            obj["spec"]["gatewayClassName"] = values.take("publicAccess.gatewayClassName",
                                                          obj["spec"]["gatewayClassName"])
        elif kind == "Ingress":
            obj["spec"] = {"ingressClassName": When(".Values.publicAccess.ingressClassName", values.take(
                "publicAccess.ingressClassName", None, {"type": ["string", "null"]})), **obj["spec"]}
        if kind == "NetworkPolicy":
            _egress_peers(obj, values)
        made.append(obj)
    return made + _settings_secrets(values) + _migrator_secrets(values)


def _identity(obj: object) -> tuple[str, str]:
    inner = obj.value if isinstance(obj, When) else obj
    name = inner["metadata"]["name"]
    return inner["kind"], name if isinstance(name, str) else scalar(name)


# -- the chart's files ------------------------------------------------------------------------------------------

FILES = {  # template file → the kinds it holds
    "workloads.yaml": {"ServiceAccount", "Deployment", "StatefulSet", "Service", "PodDisruptionBudget",
                       "HorizontalPodAutoscaler"},
    "networkpolicies.yaml": {"NetworkPolicy"},
    "config.yaml": {"ConfigMap"},
    "secrets.yaml": {"Secret"},
    "jobs.yaml": {"Job"},
    "identity.yaml": {"Role", "RoleBinding", "Issuer", "CertificateRequestPolicy", "ClusterSPIFFEID"},
    "public.yaml": {"Ingress", "Gateway", "HTTPRoute", "Certificate"},
}

DESCRIPTIONS = {
    "profile": "production: PostgreSQL outside, identities from identity.provider, a way in, two replicas or more; "
               "local: one machine (PostgreSQL inside, certificates from `tessera certs` in each service's Secret, "
               "images built there), with the rest of ci/local-values.yaml (its image, one replica each).",
    "image": "The release image every Tessera container runs; repository has no default (pin the digest in your "
             "registry).",
    "publicUrl": "The one address people and outside agents reach Tessera at, https://<host> in lower case, no "
                 "default: the way in and its certificate, web's allowed host and Secure cookies, the passkey origin "
                 "and the MCP resource URL follow it.",
    "identity": "Where pods get their SPIFFE identities (docs/deploy-kubernetes.md): csi-driver-spiffe, spire, or "
                "cert-manager-csi (only with approver-policy).",
    "publicAccess": "The way in for web and the MCP front: ingress, gateway-api (gatewayClassName has no default), "
                    "or none (bring your own); TLS from cert-manager's certificateIssuer.",
    "services": "Per service: replicas (or the autoscaler's bounds), resources, and the Secret you made for it "
                "(its token keys and setting files tessera_<service>_<setting>, as `tessera deploy secrets "
                "--production` writes it); or its secret settings (database URLs ...) as values in settings, which "
                "the chart writes into a Secret <service>-settings of their own (values then hold passwords, and "
                "Helm keeps them in its release history: prefer the Secret).",
    "agent": "The model the agent asks (services/agent/config.py): empty url, the built-in planner; its API key is "
             "the setting model_api_key in the agent's Secret. Empty values leave the agent's defaults.",
    "web": "OpenID Connect sign-in (services/web/config.py): empty values leave web's defaults.",
    "capabilities": "Page origins allowed to sign approvals with passkeys; empty: the public URL's origin.",
    "egress": "Where pods may open connections the NetworkPolicies otherwise allow to any address, as NetworkPolicy "
              "peers (e.g. {ipBlock: {cidr: 10.20.0.0/16}}): postgresql for every pod that reaches PostgreSQL, https "
              "per service that reaches a provider outside (the model, the OpenID or OAuth server, outside MCP "
              "servers). Empty: any address.",
    "migrations": "Per database, the Secret of its migrate Job, holding the migrator role's URL "
                  "(tessera_<service>_migrator_url): yours by name (`tessera deploy secrets --production` writes it), "
                  "or written by the chart from migratorUrl when "
                  "create is true (just before the Job, removed once it succeeded).",
}


def _tree(flat: dict[str, object]) -> dict:
    tree: dict = {}
    for path, value in flat.items():
        *parents, leaf = path.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def _schema(tree: dict, schemas: dict[str, dict], path: str = "") -> dict:
    """The values' schema: each value's own; every mapping closed, so a misspelt key is refused."""
    properties = {key: _schema(item, schemas, f"{path}{key}.") if isinstance(item, dict) and f"{path}{key}" not in
                  schemas else schemas[f"{path}{key}"] for key, item in tree.items()}
    if not path:
        properties["global"] = {"type": "object"}  # what Helm hands every chart used as a dependency
    return {"type": "object", "additionalProperties": False, "properties": properties}


def _values_text(defaults: dict) -> str:
    lines = [HEADER.rstrip(), "# Defaults render what deploy/k8s/overlays/production renders with its examples set "
                              "(ci/ holds each overlay's values)."]
    for key, value in defaults.items():
        lines += ["", *textwrap.wrap(DESCRIPTIONS[key], 116, initial_indent="# ", subsequent_indent="# ")]
        lines += yaml.safe_dump({key: value}, sort_keys=False).splitlines()
    return "\n".join(lines) + "\n"


def _yaml_file(comment: str, values: dict) -> str:
    return HEADER + comment + yaml.safe_dump(values, sort_keys=False)


def render_chart() -> dict[str, str]:
    """Path under the repository → text: Chart.yaml, values.yaml, values.schema.json, the templates and one values
    file per overlay (ci/)."""
    seen: dict[Combination, Values] = {combination: Values() for combination in COMBINATIONS}
    compositions = {combination: chart_objects(combination, seen[combination]) for combination in COMBINATIONS}
    objects = Joiner(DIMENSIONS).items(compositions, _identity)
    chart_values, schemas = _chart_values(seen)
    defaults = _tree(chart_values)
    files = {
        f"{CHART}/Chart.yaml": HEADER + yaml.safe_dump({
            "apiVersion": "v2", "name": "tessera", "version": CHART_VERSION, "appVersion": IMAGE_TAG,
            "kubeVersion": ">=1.29.0-0", "type": "application",
            "description": "Tessera: a data agent that answers with a live UI bound to data the model never sees."},
            sort_keys=False),
        f"{CHART}/values.yaml": _values_text(defaults),
        f"{CHART}/values.schema.json": json.dumps({
            "$schema": "https://json-schema.org/draft-07/schema#", **_schema(defaults, schemas),
            # The local profile has no way in: the schema refuses one rather than render half of it.
            "if": {"properties": {"profile": {"const": "local"}}},
            "then": {"properties": {"publicAccess": {"properties": {"via": {"const": "none"}}}}}}, indent=2) + "\n",
    }
    for name, kinds in FILES.items():
        chosen = [obj for obj in objects if _identity(obj)[0] in kinds]
        files[f"{CHART}/templates/{name}"] = documents(HEADER + (CHECKS if name == "workloads.yaml" else ""), chosen)
    placed = {kind for kinds in FILES.values() for kind in kinds}
    assert all(_identity(obj)[0] in placed for obj in objects), "an object kind without a template file"
    return files | _overlay_values(seen, chart_values)


def _chart_values(seen: dict[Combination, Values]) -> tuple[dict[str, object], dict[str, dict]]:
    """(path → default, path → schema) of the chart: what every production composition reads, the examples empty."""
    chart_values: dict[str, object] = {path.removeprefix(".Values."): options[0] for path, options in DIMENSIONS}
    schemas = {path.removeprefix(".Values."): {"enum": list(options)} for path, options in DIMENSIONS}
    for combination, values in seen.items():
        schemas |= values.schemas
        if combination[0] == "production":
            for path, value in values.seen.items():
                if chart_values.setdefault(path, value) != value:
                    raise ValueError(f"{path}: {chart_values[path]!r} in one production overlay, {value!r} in another")
    schemas |= {path: {"type": "string"} for path in EXAMPLES}  # empty until set, and refused empty where read
    schemas["publicUrl"] = {"type": "string", "pattern": f"({PUBLIC_URL_PATTERN})|^$"}
    return chart_values | dict.fromkeys(EXAMPLES, ""), schemas


def _overlay_values(seen: dict[Combination, Values], chart_values: dict[str, object]) -> dict[str, str]:
    """ci/<overlay>-values.yaml: what each overlay renders differently from the chart's defaults (the production
    overlays' examples; the local overlay's image and replicas)."""
    files = {}
    for overlay, combination in OVERLAYS.items():
        profile, provider, way = combination
        settings = {"profile": profile, "identity.provider": provider, "publicAccess.via": way}
        settings |= {path: value for path, value in seen[combination].seen.items() if chart_values[path] != value}
        files[f"{CHART}/ci/{overlay}-values.yaml"] = _yaml_file(
            f"# What deploy/k8s/overlays/{overlay} renders (a test holds them equal).\n", _tree(settings))
    return files
