"""The way in from outside, for the production overlays: web and the MCP front (with the MCP authorization
well-known route) behind one public host name, over TLS from cert-manager, as an Ingress (components/ingress) or
a Gateway API Gateway and HTTPRoute (components/gateway-api).

The host name comes from one place: the overlay's ConfigMap `tessera-public` (its `url`, e.g.
https://tessera.example.com), which web, the MCP front and the broker also read as TESSERA_PUBLIC_URL
(shared/identity/public_url.py). The Component components/public copies its host into these objects (kustomize
replacements), so the URL is written once.
"""

from __future__ import annotations

from cli.deploy_objects import NAMESPACE, component_file, generated_header, labels, yaml_documents
from shared.config import DEFAULT_PORTS
from shared.rpc.mcp_http import MCP_PATH

PUBLIC_CONFIG_MAP = "tessera-public"
PUBLIC_URL_KEY = "url"
PLACEHOLDER_HOST = "public-host.invalid"  # always replaced with the host of the overlay's URL
NAME = "tessera"
TLS_SECRET = "tessera-public-tls"
# Set to the cert-manager issuer that signs the public certificate (ACME, your organisation's CA ...).
ISSUER = {"kind": "ClusterIssuer", "name": "public-tls", "group": "cert-manager.io"}
GATEWAY_CLASS = "your-gateway-class"  # set to your cluster's GatewayClass
# Where MCP clients look up how to get a token for the MCP front (RFC 9728: the resource's path appended).
PROTECTED_RESOURCE_PATH = f"/.well-known/oauth-protected-resource{MCP_PATH}"
COMPONENTS = "deploy/k8s/components"
GENERATED = generated_header("cli/deploy_public.py")


def routes() -> list[tuple[str, str, str]]:
    """(path, match, service) of every public route, most specific first: the metadata MCP clients look up
    before authorizing (RFC 9728), the MCP front's endpoint, then everything else to web."""
    return [(PROTECTED_RESOURCE_PATH, "Exact", "mcp"), (MCP_PATH, "Prefix", "mcp"), ("/", "Prefix", "web")]


def _metadata(name: str) -> dict:
    return {"name": name, "namespace": NAMESPACE, "labels": labels(NAME)}


def certificate() -> dict:
    """The public certificate, renewed by cert-manager into TLS_SECRET."""
    return {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": _metadata(TLS_SECRET),
            "spec": {"secretName": TLS_SECRET, "dnsNames": [PLACEHOLDER_HOST], "issuerRef": ISSUER,
                     "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}}}


def ingress() -> dict:
    paths = [{"path": path, "pathType": match, "backend": {"service": {
        "name": service, "port": {"number": DEFAULT_PORTS[service]}}}} for path, match, service in routes()]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": _metadata(NAME),
            "spec": {"tls": [{"hosts": [PLACEHOLDER_HOST], "secretName": TLS_SECRET}],
                     "rules": [{"host": PLACEHOLDER_HOST, "http": {"paths": paths}}]}}


def gateway() -> list[dict]:
    """A Gateway of Tessera's own (HTTPS on 443, the certificate's Secret in the same namespace) and the route."""
    listener = {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": PLACEHOLDER_HOST,
                "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": TLS_SECRET}]},
                "allowedRoutes": {"namespaces": {"from": "Same"}}}
    rules = [{"matches": [{"path": {"type": "Exact" if match == "Exact" else "PathPrefix", "value": path}}],
              "backendRefs": [{"name": service, "port": DEFAULT_PORTS[service]}]}
             for path, match, service in routes()]
    return [{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": _metadata(NAME),
             "spec": {"gatewayClassName": GATEWAY_CLASS, "listeners": [listener]}},
            {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": _metadata(NAME),
             "spec": {"parentRefs": [{"name": NAME, "sectionName": "https"}], "hostnames": [PLACEHOLDER_HOST],
                      "rules": rules}}]


def host_replacements() -> list[dict]:
    """Kustomize replacements: the host of the ConfigMap's URL (https://HOST) into every place that names it."""
    targets = [("Ingress", ["spec.tls.0.hosts.0", "spec.rules.0.host"]), ("Certificate", ["spec.dnsNames.0"]),
               ("Gateway", ["spec.listeners.0.hostname"]), ("HTTPRoute", ["spec.hostnames.0"])]
    return [{"source": {"kind": "ConfigMap", "name": PUBLIC_CONFIG_MAP, "fieldPath": f"data.{PUBLIC_URL_KEY}",
                        "options": {"delimiter": "/", "index": 2}},
             "targets": [{"select": {"kind": kind}, "fieldPaths": paths} for kind, paths in targets]}]


def public_url_env() -> dict:
    return {"name": "TESSERA_PUBLIC_URL", "valueFrom": {"configMapKeyRef": {
        "name": PUBLIC_CONFIG_MAP, "key": PUBLIC_URL_KEY, "optional": False}}}


def render_components() -> dict[str, str]:
    """Path under the repository → text: the two ways in, each a Component, and components/public, which the
    production overlays list after the way in."""
    files = {}
    for folder, objects, what in (("ingress", [ingress(), certificate()], "an Ingress"),
                                  ("gateway-api", [*gateway(), certificate()], "a Gateway API Gateway and HTTPRoute")):
        files[f"{COMPONENTS}/{folder}/kustomization.yaml"] = component_file(
            GENERATED,
            f"# web and the MCP front at the public URL's host, through {what}, over TLS from cert-manager.\n",
            resources=["objects.yaml"])
        files[f"{COMPONENTS}/{folder}/objects.yaml"] = yaml_documents(GENERATED, objects)
    files[f"{COMPONENTS}/public/kustomization.yaml"] = component_file(
        GENERATED,
        "# The host of the overlay's ConfigMap tessera-public (its url) into the way in and its certificate.\n"
        "# List it after the way in: it runs after the overlay's own configMapGenerator, before its patches.\n",
        replacements=host_replacements())
    return files
