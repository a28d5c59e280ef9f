"""The way in: web and the MCP front (with its authorization well-known route) at the one public URL, over TLS
from cert-manager, as an Ingress or a Gateway API route; the host written once, in the overlay's ConfigMap, and
followed by the routes, the certificate and the services' settings."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from cli.deploy_public import PROTECTED_RESOURCE_PATH, PUBLIC_CONFIG_MAP, TLS_SECRET
from shared.config import DEFAULT_PORTS
from shared.identity.public_url import parse_public_url
from shared.paths import REPO_ROOT

K8S = REPO_ROOT / "deploy" / "k8s"
KUBECTL = REPO_ROOT / ".venv-deploy" / "bin" / "kubectl"
WAYS_IN = {"production": "Ingress", "production-cert-manager-csi": "Ingress", "production-spire": "HTTPRoute"}
# (path, match) -> service: what every way in must route, and nothing else (Gateway API's PathPrefix is Prefix).
ROUTES = {(PROTECTED_RESOURCE_PATH, "Exact"): "mcp", ("/mcp", "Prefix"): "mcp", ("/", "Prefix"): "web"}


def _render(directory) -> list[dict]:
    if not KUBECTL.exists():
        pytest.skip(f"{KUBECTL} is missing: `make k8s-tools` installs kubectl")
    result = subprocess.run([str(KUBECTL), "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(directory)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _one(docs: list[dict], kind: str, name: str | None = None) -> dict:
    [found] = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    return found


def _public_config(docs: list[dict]) -> dict:
    """The overlay's ConfigMap: named tessera-public plus a hash of its contents, so pods restart on a new URL."""
    [found] = [d for d in docs
               if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith(f"{PUBLIC_CONFIG_MAP}-")]
    return found


def _routes(docs: list[dict], way: str) -> tuple[set[str], dict]:
    """(hosts, {(path, exact): (service, port)}) of the overlay's way in."""
    if way == "Ingress":
        spec = _one(docs, "Ingress")["spec"]
        [rule] = spec["rules"]
        assert [entry["secretName"] for entry in spec["tls"]] == [TLS_SECRET]
        assert {host for entry in spec["tls"] for host in entry["hosts"]} == {rule["host"]}
        return {rule["host"]}, {(p["path"], p["pathType"]): (p["backend"]["service"]["name"],
                                                             p["backend"]["service"]["port"]["number"])
                                for p in rule["http"]["paths"]}
    route, gateway = _one(docs, "HTTPRoute")["spec"], _one(docs, "Gateway")["spec"]
    [listener] = gateway["listeners"]
    assert listener["protocol"] == "HTTPS" and listener["tls"]["certificateRefs"] == [{"kind": "Secret",
                                                                                       "name": TLS_SECRET}]
    assert route["hostnames"] == [listener["hostname"]]
    found = {}
    for rule in route["rules"]:
        [match], [backend] = rule["matches"], rule["backendRefs"]
        kind = {"PathPrefix": "Prefix"}.get(match["path"]["type"], match["path"]["type"])
        found[(match["path"]["value"], kind)] = (backend["name"], backend["port"])
    return set(route["hostnames"]), found


@pytest.mark.parametrize("overlay", list(WAYS_IN))
def test_one_way_in_routes_web_and_the_mcp_front_at_the_public_host(overlay):
    docs = _render(K8S / "overlays" / overlay)
    written = _public_config(docs)["data"]["url"]
    url = parse_public_url(written)
    assert written == url.origin, "the URL is copied into routes and certificate as written: its plain form only"
    other = "HTTPRoute" if WAYS_IN[overlay] == "Ingress" else "Ingress"
    assert not [d for d in docs if d["kind"] == other], f"{overlay} opens two ways in"
    hosts, routes = _routes(docs, WAYS_IN[overlay])
    assert hosts == {url.host}
    assert routes == {key: (service, DEFAULT_PORTS[service]) for key, service in ROUTES.items()}
    assert _one(docs, "Certificate", TLS_SECRET)["spec"]["dnsNames"] == [url.host]
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    for service, port in routes.values():  # each backend is a Service with that port
        assert port in [p["port"] for p in services[service]["spec"]["ports"]]


@pytest.mark.parametrize("base", list(WAYS_IN))
def test_the_url_set_in_an_overlay_of_your_own_is_followed_everywhere(tmp_path, base):
    """What docs/deploy-kubernetes.md tells a person to write: their overlay on ours, the ConfigMap replaced,
    components/public listed again."""
    overlay = tmp_path / "acme"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(K8S / "overlays" / base, overlay)],
        "components": [os.path.relpath(K8S / "components" / "public", overlay)],
        "configMapGenerator": [{"name": PUBLIC_CONFIG_MAP, "namespace": "tessera", "behavior": "replace",
                                "literals": ["url=https://data.acme.test"]}]}))
    docs = _render(overlay)
    hosts, _ = _routes(docs, WAYS_IN[base])
    assert hosts == {"data.acme.test"}
    assert _one(docs, "Certificate", TLS_SECRET)["spec"]["dnsNames"] == ["data.acme.test"]
    config = _public_config(docs)
    assert config["data"]["url"] == "https://data.acme.test"
    for name in ("web", "mcp", "capabilities"):
        env = {e["name"]: e for e in _one(docs, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["TESSERA_PUBLIC_URL"]["valueFrom"]["configMapKeyRef"] == {
            "name": config["metadata"]["name"], "key": "url", "optional": False}, name
