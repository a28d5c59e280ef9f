"""The Helm chart deploy/helm/tessera, composed from the same objects as the kustomize overlays.

For the local profile, and in production for every identity provider and way in, the objects are composed as
kustomize composes the overlay (cli/deploy_compose.py); the settings a chart user expects to set become values
(`Value`, defaulting to what the production overlay renders); then the compositions are joined into one set of
templates, where they differ under conditions on `profile`, `identity.provider` and `publicAccess.via`
(cli/helm_text.py). values.yaml and values.schema.json are written from the same defaults, and ci/<overlay>-values.yaml
holds each overlay's settings, so `helm template` with them renders what `kubectl kustomize` renders for the overlay:
a test holds them equal.

Where the chart differs from the overlays, on purpose: it leaves the Namespace out (a release is installed into a
namespace that already exists: label it as deploy/k8s/base/namespace.yaml does); ConfigMaps generated from content
get a hash of their own, not kustomize's; the migrate Jobs are pre-install and pre-upgrade hooks, created afresh for
each release (a Job's pod template cannot change in place), with their ServiceAccount and any migrate Secret the
chart writes made just before them: the schema is the release's before its pods start, so `helm install --wait`
finishes (the services wait, not ready, for their schema; run after them, the Jobs would wait for the services).
"""

from __future__ import annotations

import copy
import json
import textwrap
from itertools import product

import yaml

from cli import deploy_public
from cli.deploy_compose import (
    EXAMPLE_PUBLIC_URL,
    PROFILES,
    PROVIDERS,
    RELEASE_IMAGE,
    WAYS_IN,
    local,
    production,
    rename_config_map,
)
from cli.deploy_manifests import SPECS, secret_name
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
from cli.helm_text import Switch, Value, When, documents, scalar
from shared.identity import PROCESS_NAMES

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
PUBLIC_HOST = Value("(urlParse .Values.publicUrl).host")
PUBLIC_CONFIG_MAP = Value(
    f'printf "%s-%s" "{deploy_public.PUBLIC_CONFIG_MAP}" (.Values.publicUrl | sha256sum | trunc 10)')
MIGRATION_HOOK = "pre-install,pre-upgrade"


def _hook(weight: int) -> dict[str, str]:
    """Made by Helm before the release's other objects, lower weights first; replaced at the next release."""
    return {"helm.sh/hook": MIGRATION_HOOK, "helm.sh/hook-weight": str(weight),
            "helm.sh/hook-delete-policy": "before-hook-creation"}
# Plain settings from values, each set only where the value is not empty (else the service's own default): the
# service → (values section, value → the setting's variable after TESSERA_<SERVICE>_).
PLAIN_SETTINGS = {
    "agent": ("agent.model", {"url": "MODEL_URL", "protocol": "MODEL_PROTOCOL", "name": "MODEL_NAME"}),
    "web": ("web.oidc", {"issuer": "OIDC_ISSUER", "clientId": "OIDC_CLIENT_ID", "scopes": "OIDC_SCOPES",
                         "personClaim": "OIDC_PERSON_CLAIM", "tenantClaim": "OIDC_TENANT_CLAIM",
                         "tenant": "OIDC_TENANT",
                         "nameClaim": "OIDC_NAME_CLAIM", "providerName": "OIDC_PROVIDER_NAME"}),
}
OPTIONAL_SECRET_SETTINGS = {"model_api_key", "oidc_client_secret"}  # empty: that feature is off
# The local profile renders no way in: the schema refuses one rather than render half of it.
LOCAL_HAS_NO_WAY_IN = {"if": {"properties": {"profile": {"const": "local"}}},
                       "then": {"properties": {"publicAccess": {"properties": {"via": {"const": "none"}}}}}}
NAMESPACE_CHECK = (f'{{{{- if ne .Release.Namespace "{NAMESPACE}" }}}}{{{{ fail "install Tessera into the namespace '
                   f'{NAMESPACE} (helm install -n {NAMESPACE}): its services\' SPIFFE ids and policies name it" }}}}'
                   "{{- end }}\n")


class Values:
    """The chart's values: each `take` is a place in the templates that reads `.Values.<path>`, defaulting to what
    the production overlay renders there. Taken while the local profile is composed (`local`), a value the local
    overlay renders differently goes into its values file instead."""

    def __init__(self) -> None:
        self.defaults: dict = {}
        self.local_settings: dict = {}
        self.local = False

    def take(self, path: str, default: object, pipe: str = "") -> Value:
        *parents, leaf = path.split(".")
        known = _node(self.defaults, parents)
        if self.local and leaf in known and known[leaf] != default:
            found = _node(self.local_settings, parents)
            if found.get(leaf, default) != default:
                raise ValueError(f"{path}: two local settings, {found[leaf]!r} and {default!r}")
            found[leaf] = copy.deepcopy(default)
        elif leaf in known and known[leaf] != default:
            raise ValueError(f"{path}: two defaults, {known[leaf]!r} and {default!r}")
        else:
            known[leaf] = copy.deepcopy(default)
        return Value(f".Values.{path}{pipe}")

    def required(self, path: str, why: str) -> Value:
        """A value that must be set where it is read (it has no default that works)."""
        self.take(path, "")
        return Value(f"required {json.dumps(f'{path}: {why}')} .Values.{path}")


def _node(tree: dict, path: list[str]) -> dict:
    for part in path:
        tree = tree.setdefault(part, {})
    return tree


# -- the settings a chart user sets ----------------------------------------------------------------------------


def _container(obj: dict, name: str) -> dict:
    return next(c for c in obj["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def _images(obj: dict, values: Values) -> object:
    """The release image (and how it is pulled) from `image`, in every container that runs it."""
    def released(found: dict) -> dict:
        if found.get("image") in (RELEASE_IMAGE, f"{IMAGE}:{IMAGE_TAG}"):  # production's; local's, built here
            repository, tag = found["image"].rsplit(":", 1)
            values.take("image.repository", repository)
            values.take("image.tag", tag)
            found["image"] = Value('printf "%s:%s" .Values.image.repository .Values.image.tag')
            found["imagePullPolicy"] = values.take("image.pullPolicy", found["imagePullPolicy"])
        return found

    return rewritten(obj, released)


def _public(obj: dict) -> object:
    """The public URL's host wherever the way in names it; the ConfigMap tessera-public by its hashed name, so a new
    URL rolls the pods that read it."""
    found = rename_config_map(obj, deploy_public.PUBLIC_CONFIG_MAP, PUBLIC_CONFIG_MAP)
    return rewritten(found, leaf=lambda value: PUBLIC_HOST if value == deploy_public.PLACEHOLDER_HOST else value)


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
            volume["secret"]["secretName"] = values.take(f"services.{name}.secret.name",
                                                         volume["secret"]["secretName"])
    section, settings = PLAIN_SETTINGS.get(name, ("", {}))
    container["env"] += [When(f".Values.{section}.{key}", {"name": f"TESSERA_{name.upper()}_{variable}",
                                                          "value": values.take(f"{section}.{key}", "")})
                         for key, variable in settings.items()]
    if name == "capabilities":
        origins = values.take("capabilities.webauthnOrigins", [], pipe=" | toJson")
        container["env"].append(When(".Values.capabilities.webauthnOrigins", {
            "name": "TESSERA_CAPABILITIES_WEBAUTHN_ORIGINS", "value": origins}))


def _migrate_job(obj: dict, values: Values) -> None:
    service = obj["metadata"]["labels"][DATABASE_LABEL]
    obj["metadata"]["annotations"] = _hook(0)
    for volume in obj["spec"]["template"]["spec"]["volumes"]:
        if "secret" in volume:
            volume["secret"]["secretName"] = values.take(f"migrations.{service}.secret.name",
                                                         volume["secret"]["secretName"])


def _egress_peers(obj: dict, values: Values) -> None:
    """Egress the policies leave open to any address (PostgreSQL; HTTPS outside the cluster) narrowed to the peers the
    operator lists (NetworkPolicy peers: ipBlocks for a managed database or a provider's ranges, or selectors for a
    database inside the cluster); none listed: any address, as the overlays render."""
    name = obj["metadata"]["name"]
    if name.endswith(POSTGRESQL_POLICY_SUFFIX):
        path = "egress.postgresql"
    elif name.endswith(HTTPS_POLICY_SUFFIX):
        path = f"egress.https.{name.removesuffix(HTTPS_POLICY_SUFFIX)}"
    else:
        return
    rule, = obj["spec"]["egress"]
    obj["spec"]["egress"] = [{"to": When(f".Values.{path}", values.take(path, [])), **rule}]


def _secret(path: str, name: str, files: dict[str, Value], hook: bool = False) -> When:
    metadata = {"name": Value(f".Values.{path}.name"), "namespace": NAMESPACE, "labels": labels(name)}
    if hook:
        metadata["annotations"] = _hook(-1)
    return When(f".Values.{path}.create", {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                           "metadata": metadata, "stringData": files})


def _secrets(values: Values) -> list[When]:
    """Secrets the chart writes from values where asked to (`secret.create`); by default each is the operator's."""
    made = []
    for name in PROCESS_NAMES:
        spec = SPECS[name]
        if not spec.secret_settings:
            continue
        path = f"services.{name}.secret"
        values.take(f"{path}.create", False)
        files = {}
        for setting in spec.secret_settings:
            setting_path = f"{path}.settings.{setting}"
            files[setting_file(name, setting)] = values.take(setting_path, "") \
                if setting in OPTIONAL_SECRET_SETTINGS else \
                values.required(setting_path, f"needed when {path}.create is true (or create {secret_name(name)} "
                                              "yourself)")
        made.append(_secret(path, name, files))
    for name in PROCESS_NAMES:
        if SPECS[name].database:
            path = f"migrations.{name}.secret"
            values.take(f"{path}.create", False)
            made.append(_secret(path, MIGRATE, {setting_file(name, "migrator_url"): values.required(
                f"{path}.migratorUrl", f"needed when {path}.create is true (or create {migrator_secret_name(name)} "
                                       "yourself)")}, hook=True))
    return made


def chart_objects(profile: str, provider: str, way: str, values: Values) -> list:
    """The composition for `profile` (in production with `provider` and `way` in), with the chart's values in
    place."""
    made: list = []
    values.local = profile == "local"
    for obj in local() if values.local else production(provider, way):
        obj = _public(_images(obj, values))  # rebuilt: the composition's objects are not changed below
        kind, name = obj["kind"], obj["metadata"]["name"]
        if kind == "ConfigMap" and name == deploy_public.PUBLIC_CONFIG_MAP:
            obj["metadata"]["name"] = PUBLIC_CONFIG_MAP
            obj["data"][deploy_public.PUBLIC_URL_KEY] = values.take("publicUrl", EXAMPLE_PUBLIC_URL)
        elif kind == "Deployment" and name in SPECS:
            _service(obj, values)
        elif kind == "HorizontalPodAutoscaler":
            for bound in ("minReplicas", "maxReplicas"):
                obj["spec"][bound] = values.take(f"services.{name}.{bound}", obj["spec"][bound])
        elif kind == "Job" and DATABASE_LABEL in obj["metadata"]["labels"]:
            _migrate_job(obj, values)
        elif kind == "ServiceAccount" and name == MIGRATE:
            obj["metadata"]["annotations"] = _hook(-1)
        elif kind == "NetworkPolicy":
            _egress_peers(obj, values)
        elif kind == "Certificate":
            obj["spec"]["issuerRef"] = values.take("publicAccess.certificateIssuer", obj["spec"]["issuerRef"])
        elif kind == "Gateway":
            obj["spec"]["gatewayClassName"] = values.take("publicAccess.gatewayClassName",
                                                          obj["spec"]["gatewayClassName"])
        elif kind == "Ingress":
            obj["spec"] = {"ingressClassName": When(".Values.publicAccess.ingressClassName", values.take(
                "publicAccess.ingressClassName", None)), **obj["spec"]}
        made.append(obj)
    return made + _secrets(values)


# -- one set of templates for every provider and way in ---------------------------------------------------------


Combination = tuple[str, ...]


def condition(having: set[Combination], within: set[Combination]) -> str:
    """A template condition true for the combinations in `having` and false for the rest of `within` (outside
    `within` it does not matter): one test per dimension where that suffices, leaving out each dimension it need
    not name, else one test per combination."""
    chosen = [sorted({combination[index] for combination in having}, key=options.index)
              for index, (_, options) in enumerate(DIMENSIONS)]
    if set(product(*chosen)) & within == having:
        for index, (_, options) in enumerate(DIMENSIONS):
            wider = [*chosen[:index], list(options), *chosen[index + 1:]]
            if set(product(*wider)) & within == having:
                chosen = wider
        tests = [_one_of(expression, values) for (expression, options), values in zip(DIMENSIONS, chosen, strict=True)
                 if len(values) < len(options)]
        return tests[0] if len(tests) == 1 else "and " + " ".join(f"({test})" for test in tests)
    alternatives = ["and " + " ".join(f"({_one_of(expression, [value])})"
                                      for (expression, _), value in zip(DIMENSIONS, combination, strict=True))
                    for combination in sorted(having)]
    return "or " + " ".join(f"({alternative})" for alternative in alternatives)


def _one_of(expression: str, values: list[str]) -> str:
    if len(values) == 1:
        return f"eq {expression} {json.dumps(values[0])}"
    return f"has {expression} (list {' '.join(json.dumps(v) for v in values)})"


def _merge_key(items: list) -> str | None:
    for key in ("name", "mountPath"):
        if all(isinstance(item, dict) and isinstance(item.get(key), str) for item in items):
            return key
    return None


def _holds_named_list(value: object) -> bool:
    if isinstance(value, dict):
        return any(_holds_named_list(item) for item in value.values())
    return isinstance(value, list) and bool(value) and _merge_key(value) is not None


def _ordered(lists: list[list]) -> list:
    """Every key of `lists`, each list's order kept (new keys after the one they follow)."""
    order: list = []
    for keys in lists:
        position = 0
        for key in keys:
            if key in order:
                position = order.index(key) + 1
            else:
                order.insert(position, key)
                position += 1
    return order


def unify(variants: dict[Combination, object]) -> object:
    """One template value for the value each combination has: shared parts once, the rest under conditions."""
    values = list(variants.values())
    within = set(variants)
    if all(value == values[0] for value in values):
        return values[0]
    if all(isinstance(value, dict) for value in values):
        return {key: _part({c: value[key] for c, value in variants.items() if key in value}, within)
                for key in _ordered([list(value) for value in values])}
    if all(isinstance(value, list) for value in values) and _merge_key([i for v in values for i in v]):
        key = _merge_key([i for v in values for i in v])
        indexed = {c: {item[key]: item for item in value} for c, value in variants.items()}
        items = []
        for name in _ordered([[item[key] for item in value] for value in values]):
            having = {c: found[name] for c, found in indexed.items() if name in found}
            items.append(_part(having, within, whole=not any(_holds_named_list(item) for item in having.values())))
        return items
    return _cases(variants)


def _part(having: dict, within: set, whole: bool = False) -> object:
    """What the combinations in `having` hold at one place (the others hold nothing there)."""
    value = _cases(having) if whole else unify(having)
    return value if set(having) == within else When(condition(set(having), within), value)


def _cases(variants: dict[Combination, object]) -> object:
    groups: list[tuple[object, set]] = []
    for combination, value in variants.items():
        group = next((g for g in groups if g[0] == value), None)
        if group is None:
            groups.append((value, {combination}))
        else:
            group[1].add(combination)
    if len(groups) == 1:
        return groups[0][0]
    within = set(variants)
    return Switch(tuple((condition(combinations, within), value) for value, combinations in groups))


def _identity(obj: object) -> tuple[str, str]:
    inner = obj.value if isinstance(obj, When) else obj
    name = inner["metadata"]["name"]
    return inner["kind"], name if isinstance(name, str) else scalar(name)


def templates(values: Values) -> list:
    """Every object of the chart, unified over the combinations: a `When` where only some have it."""
    compositions = {combination: chart_objects(*combination, values) for combination in COMBINATIONS}
    by_identity = {c: {_identity(obj): obj for obj in objects} for c, objects in compositions.items()}
    made = []
    for identity in _ordered([list(found) for found in by_identity.values()]):
        having = {c: found[identity] for c, found in by_identity.items() if identity in found}
        made.append(_part(having, set(COMBINATIONS)))
    return made


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
               "images built there), as ci/local-values.yaml sets it.",
    "image": "The release image every Tessera container runs (pin the digest in your registry).",
    "publicUrl": "The one address people and outside agents reach Tessera at, https://<host> in lower case: the way "
                 "in and its certificate, web's allowed host and Secure cookies, the passkey origin and the MCP "
                 "resource URL follow it.",
    "identity": "Where pods get their SPIFFE identities (docs/deploy-kubernetes.md): csi-driver-spiffe, spire, or "
                "cert-manager-csi (only with approver-policy).",
    "publicAccess": "The way in for web and the MCP front: ingress, gateway-api, or none (bring your own); TLS from "
                    "cert-manager's certificateIssuer.",
    "services": "Per service: replicas (or the autoscaler's bounds), resources, and the Secret holding its setting "
                "files (tessera_<service>_<setting>): an existing one by name, or written by the chart from "
                "settings when create is true (values then hold secrets: prefer Secrets made outside the chart).",
    "agent": "The model the agent asks (services/agent/config.py): empty url, the built-in planner; its API key is "
             "the setting model_api_key in the agent's Secret. Empty values leave the agent's defaults.",
    "web": "OpenID Connect sign-in (services/web/config.py): empty values leave web's defaults.",
    "capabilities": "Page origins allowed to sign approvals with passkeys; empty: the public URL's origin.",
    "egress": "Where pods may open connections the NetworkPolicies otherwise allow to any address, as NetworkPolicy "
              "peers (e.g. {ipBlock: {cidr: 10.20.0.0/16}}): postgresql for every pod that reaches PostgreSQL, https "
              "per service that reaches a provider outside (the model, the OpenID or OAuth server, outside MCP "
              "servers). Empty: any address.",
    "migrations": "Per database, the Secret of its migrate Job: the migrator role's URL "
                  "(tessera_<service>_migrator_url).",
}


def _values_text(defaults: dict) -> str:
    lines = [HEADER.rstrip(), "# Defaults render what deploy/k8s/overlays/production renders (but its Namespace); "
                              "ci/ holds each overlay's values."]
    for key, value in defaults.items():
        lines += ["", *textwrap.wrap(DESCRIPTIONS[key], 116, initial_indent="# ", subsequent_indent="# ")]
        lines += documents("", [{key: value}]).splitlines()[1:]
    return "\n".join(lines) + "\n"


def _schema(value: object, path: str) -> dict:
    if path in ("publicUrl",):
        return {"type": "string", "pattern": "^https://[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$"}
    if path == "identity.provider":
        return {"enum": list(PROVIDERS)}
    if path == "profile":
        return {"enum": list(PROFILES)}
    if path == "publicAccess.via":
        return {"enum": list(WAYS_IN)}
    if path == "image.pullPolicy":
        return {"enum": ["Always", "IfNotPresent", "Never"]}
    if path.endswith((".resources", ".certificateIssuer")):
        return {"type": "object"}
    if path.endswith("ingressClassName"):
        return {"type": ["string", "null"]}
    if path == "agent.model.protocol":
        return {"enum": ["", "openai-chat", "ai-sdk-ui"]}
    if isinstance(value, dict):
        return {"type": "object", "additionalProperties": False,
                "properties": {key: _schema(item, f"{path}.{key}".lstrip(".")) for key, item in value.items()}}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer", "minimum": 1}
    if path.startswith("egress."):
        return {"type": "array", "items": {"type": "object", "minProperties": 1}}
    if isinstance(value, list):
        return {"type": "array", "items": {"type": "string"}}
    return {"type": "string"}


def render_chart() -> dict[str, str]:
    """Path under the repository → text: Chart.yaml, values.yaml, values.schema.json, the templates and one values
    file per production overlay (ci/)."""
    values = Values()
    for (path, options) in DIMENSIONS:  # what the templates' conditions read, first in their sections
        values.take(path.removeprefix(".Values."), options[0])
    objects = templates(values)
    order = ["profile", "image", "publicUrl", "identity", "publicAccess", "services", "agent", "web", "capabilities",
             "egress", "migrations"]
    defaults = {key: values.defaults[key] for key in order}
    assert set(defaults) == set(values.defaults), set(values.defaults) - set(defaults)
    files = {
        f"{CHART}/Chart.yaml": HEADER + yaml.safe_dump({
            "apiVersion": "v2", "name": "tessera", "version": CHART_VERSION, "appVersion": RELEASE_IMAGE.rsplit(":")[1],
            "kubeVersion": ">=1.29.0-0", "type": "application",
            "description": "Tessera: a data agent that answers with a live UI bound to data the model never sees."},
            sort_keys=False),
        f"{CHART}/values.yaml": _values_text(defaults),
        f"{CHART}/values.schema.json": json.dumps({"$schema": "https://json-schema.org/draft-07/schema#",
                                                   **_schema(defaults, ""), **LOCAL_HAS_NO_WAY_IN}, indent=2) + "\n",
    }
    for name, kinds in FILES.items():
        chosen = [obj for obj in objects if _identity(obj)[0] in kinds]
        files[f"{CHART}/templates/{name}"] = documents(HEADER + (NAMESPACE_CHECK if name == "workloads.yaml" else ""),
                                                       chosen)
    placed = {kind for kinds in FILES.values() for kind in kinds}
    assert all(_identity(obj)[0] in placed for obj in objects), "an object kind without a template file"
    for overlay, (profile, provider, way) in OVERLAYS.items():
        settings = {"profile": profile, "identity": {"provider": provider}, "publicAccess": {"via": way},
                    "publicUrl": EXAMPLE_PUBLIC_URL}
        if profile == "local":
            settings = {"profile": profile, "publicAccess": {"via": way}, **values.local_settings}
        files[f"{CHART}/ci/{overlay}-values.yaml"] = (
            HEADER + f"# What deploy/k8s/overlays/{overlay} renders (a test holds them equal).\n"
            + documents("", [settings]).removeprefix("---\n"))
    return files

