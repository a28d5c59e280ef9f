"""`tessera deploy secrets --production`: the production overlays' (and the Helm chart's) Secrets, from a settings
file the operator keeps private and token keys made once per deployment. No value is ever printed: a problem names
the service and the setting, never what it holds.

- `<service>-identity` per service: its own token keys (signing key, capability secret), every signer's verify key,
  and its secret settings as files (tessera_<service>_<setting>); no certificate or TLS key, which the identity
  provider mounts in production;
- `migrate-<service>` per database: the migrator role's URL;
- `<pod>-credentials` per MCP server whose policy declares credentials: the variables it names.

The settings file (YAML, readable by its owner only):

    resources: {warehouse_url: ..., store_url: ...}
    capabilities: {database_url: ..., changes_url: ...}
    host: {database_url: ...}
    agent: {model_api_key: ...}                      # optional: without it, no key is sent to the model
    web: {oidc_client_secret: ..., session_secret: ...}  # optional; session_secret is made once if absent
    migrations: {host: ..., capabilities: ..., resources: ...}
    mcp_credentials: {TICKETS_TOKEN: ...}            # the variables the tool policy's servers name

Token keys (and web's session secret, if not given) are made once into the deployment's keys folder and reused, so
a second run does not sign everyone out or void the grants in flight. The operator CLI's signing key stays there: the
CLI signs as the operator from that machine; every service gets its verify key.
"""

from __future__ import annotations

import secrets
import stat
from pathlib import Path

import sqlalchemy as sa
import yaml

from cli.deploy_check import secret_problems
from cli.deploy_manifests import SPECS, secret_name
from cli.deploy_mcp_servers import credentials_files, load_policy
from cli.deploy_migrations import secret_name as migrator_secret_name
from cli.deploy_objects import secret_object, setting_file
from shared.certs import (
    SECRET_PRINCIPALS,
    SIGNING_PRINCIPALS,
    issue_token_keys,
    private_dir,
    secret_path,
    signing_key_path,
    verify_key_path,
    write_private,
)
from shared.db import check_encoded

OPTIONAL = {("agent", "model_api_key"), ("web", "oidc_client_secret"), ("web", "session_secret")}
MADE_ONCE = {("web", "session_secret")}  # made into the keys folder when the file does not give it
MIGRATIONS, MCP_CREDENTIALS = "migrations", "mcp_credentials"


class SettingsError(Exception):
    """What is wrong with the settings file; names settings, never values."""


def _databases() -> list[str]:
    return [name for name, spec in SPECS.items() if spec.database]


def read_settings(path: Path) -> dict:
    """The settings file, refused when others may read it, when it is not a mapping of the known sections, or when
    a setting is unknown or not text."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise SettingsError(f"{path}: not YAML{where}") from None
    if mode & 0o077:
        raise SettingsError(f"{path}: holds passwords but others may read it (mode {mode:o}): chmod 600 {path}")
    if not isinstance(document, dict):
        raise SettingsError(f"{path}: expected a mapping of sections (services, {MIGRATIONS}, {MCP_CREDENTIALS})")
    known = {name: set(spec.secret_settings) for name, spec in SPECS.items() if spec.secret_settings}
    known |= {MIGRATIONS: set(_databases()), MCP_CREDENTIALS: None}
    problems = []
    for section, values in document.items():
        if section not in known:
            problems.append(f"{section}: no such section (known: {', '.join(sorted(known))})")
        elif not isinstance(values, dict):
            problems.append(f"{section}: expected a mapping of settings")
        else:
            for key, value in values.items():
                if known[section] is not None and key not in known[section]:
                    problems.append(f"{section}.{key}: no such setting (known: {', '.join(sorted(known[section]))})")
                elif not isinstance(value, str):
                    problems.append(f"{section}.{key}: expected text")
    if problems:
        raise SettingsError(f"{path}: " + "; ".join(problems))
    return document


def _check_url(where: str, value: str) -> str | None:
    """Why `value` is no database URL a service can use, without repeating it (it carries a password)."""
    try:
        parsed = sa.make_url(value)
    except sa.exc.ArgumentError:
        return f"{where}: not a database URL (e.g. postgresql+psycopg://role:password@host:5432/database)"
    try:
        check_encoded(parsed)
    except ValueError as exc:
        return f"{where}: {exc}"
    if not parsed.drivername.startswith("postgresql"):
        return f"{where}: production needs PostgreSQL (this URL is {parsed.drivername})"
    return None


def _settings_files(document: dict, keys: Path) -> tuple[dict[str, dict[str, bytes]], list[str]]:
    """Per service its settings as Secret files, and what is missing or unusable."""
    files: dict[str, dict[str, bytes]] = {}
    problems = []
    for name, spec in SPECS.items():
        given = document.get(name, {})
        files[name] = {}
        for setting in spec.secret_settings:
            value = given.get(setting, "")
            if not value and (name, setting) in MADE_ONCE:
                value = _made_once(keys / f"{name}-{setting}", lambda: secrets.token_hex(32))
            if not value and (name, setting) not in OPTIONAL:
                problems.append(f"{name}.{setting}: missing")
            elif value and setting.endswith("_url"):
                problems += filter(None, [_check_url(f"{name}.{setting}", value)])
            files[name][setting_file(name, setting)] = value.encode()
    return files, problems


def _made_once(path: Path, make) -> str:
    if not path.exists():
        write_private(path, make().encode())
    return path.read_text(encoding="utf-8")


def _token_files(keys: Path, name: str) -> dict[str, bytes]:
    """A service's own token keys and every signer's verify key, from the keys folder."""
    own = [signing_key_path(keys, name)] if name in SIGNING_PRINCIPALS else []
    own += [secret_path(keys, name)] if name in SECRET_PRINCIPALS else []
    return {path.name: path.read_bytes() for path in [*own, *(verify_key_path(keys, s) for s in SIGNING_PRINCIPALS)]}


def production_secrets(settings: Path, keys: Path) -> list[dict]:
    """Every production Secret, or SettingsError listing each setting that is missing or unusable."""
    document = read_settings(settings)
    issue_token_keys(private_dir(keys), only_missing=True, cli_directory=keys)
    settings_files, problems = _settings_files(document, keys)
    migrations = document.get(MIGRATIONS, {})
    for name in _databases():
        if not migrations.get(name):
            problems.append(f"{MIGRATIONS}.{name}: missing (the migrator role's URL)")
        else:
            problems += filter(None, [_check_url(f"{MIGRATIONS}.{name}", migrations[name])])
    credentials = credentials_files(load_policy(), document.get(MCP_CREDENTIALS, {}))
    problems += [f"{MCP_CREDENTIALS}: {secret_name_}'s {file} is missing"
                 for secret_name_, files in credentials.items() for file, value in files.items() if not value]
    if problems:
        raise SettingsError(f"{settings}: " + "; ".join(problems))
    documents = [secret_object(secret_name(name), {**_token_files(keys, name), **settings_files[name]})
                 for name in SPECS]
    documents += [secret_object(migrator_secret_name(name),
                                {setting_file(name, "migrator_url"): migrations[name].encode()})
                  for name in _databases()]
    documents += [secret_object(name, files) for name, files in credentials.items()]
    problems = secret_problems(documents, "tessera deploy secrets --production")
    if problems:  # our own renderer must never produce one; refuse rather than write it
        raise SystemExit("\n".join(problems))
    return documents
