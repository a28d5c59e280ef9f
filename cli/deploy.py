"""`tessera deploy`: render the Kubernetes base from the contracts, check manifests, write Secrets.

- `render [--check]` writes deploy/k8s/base/{workloads,networkpolicies}.yaml, the
  production component's patches, one Component per identity provider and the Helm
  chart (cli/deploy_helm.py) (with --check: exit 1 naming each file that differs
  from what the contracts give);
- `check FILE...` runs the project's own checks on rendered manifests
  (hardening, NetworkPolicies = caller table, Secrets hold only their owner's files,
  each MCP server's pod reached by the broker alone and reaching nothing, each
  ServiceAccount able to request only its own identity where cert-manager's CSI
  driver issues them);
- `secrets --out DIR` writes one Secret per service for the local overlay, each
  holding only that service's key, certificate, CA certificate, its own token
  keys and settings, plus PostgreSQL's and, for an MCP server whose policy
  declares credentials, its own (from the variables the policy names);
  passwords are made once and kept in
  $TESSERA_VAR_DIR/k8s/passwords.json (0600); with `--production --settings FILE`
  the production Secrets instead (cli/deploy_secrets.py);
- `cli-certificate` mints the operator CLI's production certificate from the trust
  domain's CA (cli/deploy_operator.py).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path

import yaml

from cli import deploy_operator
from cli.deploy_check import (
    certificate_policy_problems,
    file_problems,
    load_documents,
    mcp_server_problems,
    network_policy_problems_in,
    scaling_problems,
    secret_problems,
)
from cli.deploy_helm import CHART, render_chart
from cli.deploy_manifests import SPECS, render_generated, secret_name
from cli.deploy_mcp_servers import credentials_files, load_policy, mcp_pods
from cli.deploy_objects import NAMESPACE, secret_object, setting_file
from cli.deploy_secrets import (
    SettingsError,
    default_keys,
    operator_folder,
    production_secrets,
    refused_out,
    write_secrets,
)
from shared.identity.certs import export_identity, write_private
from shared.paths import REPO_ROOT, var_dir

POSTGRES_HOST = "postgres"
# Roles of the local overlay's PostgreSQL: each stateful service its own role and database;
# the warehouse's read-only role for resources and its writer role for the broker's data changes.
ROLES = ("postgres", "tessera_host", "tessera_capabilities", "tessera_resources", "tessera_reader", "tessera_writer")


def generated_files() -> dict[str, str]:
    """Path under the repository → text: the manifests and pages of the contracts, and the Helm chart composed
    from them."""
    return {**render_generated(), **render_chart()}


def render(check: bool, root: Path = REPO_ROOT) -> int:
    """Write the generated files (with `check`: name each that differs instead). The chart's folder holds only what
    is generated, since Helm renders every template there: a file it no longer makes is removed (named)."""
    stale = []
    files = generated_files()
    chart = root / CHART
    for path in sorted(chart.rglob("*")) if chart.is_dir() else []:
        if path.is_file() and str(path.relative_to(root)) not in files:
            if check:
                stale.append(str(path.relative_to(root)))
            else:
                path.unlink()
                print(f"removed {path}")
    for name, text in files.items():
        path = root / name
        if path.exists() and path.read_text() == text:
            continue
        if check:
            stale.append(str(path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print("tessera: error: out of date with the contracts (run 'tessera deploy render'): "
              + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


def check(files: list[str]) -> int:
    """Hardening and Secrets file by file; NetworkPolicies (and the MCP servers' isolation) over all the files
    together (one deployment)."""
    problems, everything = [], []
    for name in files:
        path = Path(name)
        try:
            docs = load_documents(path)
        except (OSError, yaml.YAMLError) as exc:
            problems.append(f"{path}: cannot read: {exc}")
            continue
        problems += file_problems(docs, str(path))
        everything += [(doc, str(path)) for doc in docs]
    problems += network_policy_problems_in(everything)
    problems += certificate_policy_problems(everything)
    problems += scaling_problems(everything)
    problems += mcp_server_problems(everything, [pod.name for pod in mcp_pods(load_policy())])
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


def _passwords(path: Path) -> dict[str, str]:
    known = json.loads(path.read_text()) if path.exists() else {}
    missing = [role for role in ROLES if role not in known]
    if missing:
        known.update({role: secrets.token_urlsafe(24) for role in missing})
        write_private(path, json.dumps(known, indent=2).encode())
    return known


def local_settings(passwords: dict[str, str]) -> dict[str, dict[str, str]]:
    """The secret settings of each service in the local overlay (database URLs carry passwords)."""
    def url(role: str, database: str) -> str:
        return f"postgresql+psycopg://{role}:{passwords[role]}@{POSTGRES_HOST}:5432/{database}"

    return {
        "agent": {"model_api_key": ""},
        "compiler": {},
        "resources": {"warehouse_url": url("tessera_reader", "warehouse"),
                      "store_url": url("tessera_resources", "tessera_resources")},
        "capabilities": {"database_url": url("tessera_capabilities", "tessera_capabilities"),
                         "changes_url": url("tessera_writer", "warehouse")},
        "host": {"database_url": url("tessera_host", "tessera_host")},
        "web": {"session_secret": secrets.token_hex(32), "oidc_client_secret": ""},  # OpenID sign-in off
        "mcp": {},  # remote MCP off until an authorization server is configured (TESSERA_MCP_OAUTH_ISSUER)
    }


def service_secrets(cert_dir: Path, scratch: Path, settings: dict[str, dict[str, str]]) -> list[dict]:
    """One Secret per service from `tessera certs`' folder: exactly what `tessera up` hands the process."""
    found = []
    for name, spec in SPECS.items():
        folder = export_identity(cert_dir, name, scratch / name)
        files = {path.name: path.read_bytes() for path in folder.iterdir()}
        for setting in spec.secret_settings:
            files[setting_file(name, setting)] = settings[name][setting].encode()
        found.append(secret_object(secret_name(name), files))
    return found


def local_secrets(cert_dir: Path, passwords_file: Path) -> list[dict]:
    """Every Secret of the local overlay: one per service, PostgreSQL's role passwords, and the credentials of
    each MCP server that declares some."""
    passwords = _passwords(passwords_file)
    with tempfile.TemporaryDirectory(prefix="tessera-secrets-") as scratch:  # copies of keys: gone after
        documents = service_secrets(cert_dir, Path(scratch), local_settings(passwords))
    documents.append(secret_object("postgres-identity",
                                   {f"{role}_password": passwords[role].encode() for role in ROLES}))
    documents += [secret_object(name, files)
                  for name, files in credentials_files(load_policy(), dict(os.environ)).items()]
    problems = secret_problems(documents, "tessera deploy secrets")
    if problems:  # our own renderer must never produce one; refuse rather than write it
        raise SystemExit("\n".join(problems))
    return documents


def _keys(args: argparse.Namespace) -> Path:
    """The production deployment's keys folder: token keys, and the operator CLI's own files."""
    return Path(args.keys) if args.keys else default_keys()


def run(args: argparse.Namespace, cert_dir: Path) -> int:
    if args.action == "render":
        return render(args.check)
    if args.action == "check":
        return check(args.files)
    if args.action == "cli-certificate":
        return deploy_operator.issue(Path(args.ca_cert), Path(args.ca_key), _keys(args), args.hours)
    out = Path(args.out)
    if not args.production:
        if args.settings or args.keys:  # the local overlay's Secrets would be written, and applied, by mistake
            print("tessera: error: --settings and --keys go with --production", file=sys.stderr)
            return 2
        return 2 if refused_out(out) else _wrote(out, write_secrets(out, local_secrets(
            cert_dir, var_dir() / "k8s" / "passwords.json")))
    if args.settings is None:
        print("tessera: error: --production needs --settings FILE (docs/deploy-kubernetes.md: production Secrets)",
              file=sys.stderr)
        return 2
    if refused_out(out):
        return 2
    keys = _keys(args)
    try:
        documents, made = production_secrets(Path(args.settings), keys)
    except SettingsError as exc:
        print(f"tessera: error: {exc}", file=sys.stderr)
        return 2
    if made:
        print(f"made {len(made)} token key files in {keys} (a first run; else Secrets written now sign people out "
              "and void grants in flight until every pod restarts with them)", file=sys.stderr)
    _wrote(out, write_secrets(out, documents))
    print(f"token keys in {keys}, kept for the next run; the operator CLI's folder is {operator_folder(keys)}. "
          f"Pods read them at start: kubectl -n {NAMESPACE} rollout restart deployment")
    return 0


def _wrote(out: Path, written: list[Path]) -> int:
    print(f"wrote {len(written)} Secrets to {out} (files 0600: {', '.join(p.stem for p in written)})")
    others = sorted(path.name for path in out.iterdir() if path not in written)
    if others:  # `kubectl apply -f DIR` would apply them too
        print(f"also in {out}, not written now: {', '.join(others)} (remove them before `kubectl apply -f {out}`)",
              file=sys.stderr)
    return 0


def add_parser(sub) -> argparse.ArgumentParser:
    deploy = sub.add_parser("deploy", help="Kubernetes: render the manifests and the chart from the contracts, check "
                                           "them, write Secrets, mint the operator CLI's certificate")
    actions = deploy.add_subparsers(dest="action", required=True)
    rendering = actions.add_parser("render", help="write deploy/k8s/base from proto/ (NetworkPolicies = callers)")
    rendering.add_argument("--check", action="store_true", help="exit 1 if the committed files are out of date")
    actions.add_parser("check", help="check rendered manifests (hardening, policies, secrets)").add_argument(
        "files", nargs="+")
    writing = actions.add_parser("secrets", help="the Secrets: overlays/local's, or with --production the production "
                                                  "overlays' and the Helm chart's")
    writing.add_argument("--out", required=True, help="folder for the Secret manifests (never commit them)")
    writing.add_argument("--production", action="store_true",
                         help="token keys and settings only (the identity provider mounts certificates)")
    writing.add_argument("--settings", help="with --production: the YAML file of database URLs and other secret "
                                            "settings (mode 0600; cli/deploy_secrets.py says what it holds)")
    writing.add_argument("--keys", help="with --production: where the deployment's token keys are made once and "
                                        "kept (default ~/.config/tessera/production)")
    minting = actions.add_parser("cli-certificate", help="the operator CLI's certificate for production, signed by "
                                                         "the trust domain's cert-manager CA")
    minting.add_argument("--ca-cert", required=True, help="the CA certificate (the issuer Secret's tls.crt)")
    minting.add_argument("--ca-key", required=True, help="its key (tls.key): used, never written")
    minting.add_argument("--keys", help="the deployment's keys folder; the certificate goes into its cli/ folder "
                                        "(default ~/.config/tessera/production)")
    minting.add_argument("--hours", type=int, default=deploy_operator.DEFAULT_HOURS,
                         help=f"how long it is valid (default {deploy_operator.DEFAULT_HOURS})")
    return deploy
