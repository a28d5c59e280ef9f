"""`tessera deploy secrets --production`: the production overlays' (and the Helm chart's) Secrets, from a settings
file the operator keeps private and token keys made once per deployment. No value is ever printed: a problem names
the section and the setting (and only a name that looks like one: a value written where a name belongs is not
echoed), never what it holds.

- `<service>-identity` per service: its own token keys (signing key, capability secret), every signer's verify key,
  and its secret settings as files (tessera_<service>_<setting>); no certificate or TLS key, which the identity
  provider mounts in production;
- `migrate-<service>` per database: the migrator role's URL;
- `<pod>-credentials` per MCP server whose policy declares credentials.

The settings file (YAML, readable by its owner only):

    resources: {warehouse_url: ..., store_url: ...}
    capabilities: {database_url: ..., changes_url: ...}
    host: {database_url: ...}
    agent: {model_api_key: ...}                          # optional: without it, no key is sent to the model
    web: {oidc_client_secret: ..., session_secret: ...}  # optional; session_secret is made once if absent
    migrations: {host: ..., capabilities: ..., resources: ...}
    mcp_credentials: {TESSERA_CAPABILITIES_...: ...}     # each server's credential_env source (tools.yaml)

The keys folder (default ~/.config/tessera/production, outside the repository and its `make clean`) holds the token
keys, made once and reused, so rewriting the Secrets does not sign everyone out or void the grants in flight, and, in
its `cli/` folder, the operator CLI's own files (its signing key here; its certificate from `tessera deploy
cli-certificate`), which is the CLI's TESSERA_CERT_DIR for this deployment. Both carry a marker that `tessera certs`
and `tessera up` refuse to write over.
"""

from __future__ import annotations

import re
import secrets
import stat
import sys
from pathlib import Path

import sqlalchemy as sa
import yaml

from cli.deploy_check import secret_problems
from cli.deploy_manifests import SPECS, secret_name
from cli.deploy_mcp_servers import credentials_files, load_policy, mcp_pods
from cli.deploy_migrations import secret_name as migrator_secret_name
from cli.deploy_objects import secret_object, setting_file
from shared.data.db import check_encoded
from shared.identity.certs import (
    SECRET_PRINCIPALS,
    SIGNING_PRINCIPALS,
    issue_token_keys,
    mark_operator_folder,
    private_dir,
    secret_path,
    signing_key_path,
    verify_key_path,
    write_private,
)
from shared.paths import REPO_ROOT, cli_dir

OPTIONAL = {("agent", "model_api_key"), ("web", "oidc_client_secret"), ("web", "session_secret")}
MADE_ONCE = {("web", "session_secret")}  # made into the keys folder when the file does not give it
# web refuses a shorter session secret at start (services/web/session.py MIN_SECRET_CHARS; a test holds them equal).
MIN_SESSION_SECRET_CHARS = 32
# What the image's services connect with (requirements/runtime.txt has psycopg, no other PostgreSQL driver).
DRIVERS = ("postgresql", "postgresql+psycopg")
MIGRATIONS, MCP_CREDENTIALS = "migrations", "mcp_credentials"
SETTING_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
VARIABLE_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")
CLI_FOLDER = "cli"


def default_keys() -> Path:
    return cli_dir() / "production"


def operator_folder(keys: Path) -> Path:
    """The CLI's own files for the deployment whose keys are in `keys`: its TESSERA_CERT_DIR."""
    return keys / CLI_FOLDER


class SettingsError(Exception):
    """What is wrong with the settings file; names settings, never values."""


def _named(name: object, pattern: re.Pattern) -> str:
    """`name` if it looks like one; else a description that does not repeat it (it may be a value)."""
    return name if isinstance(name, str) and pattern.match(name) else "an entry that is not a name (a value " \
        "without its key?)"


def _databases() -> list[str]:
    return [name for name, spec in SPECS.items() if spec.database]


def read_settings(path: Path) -> dict:
    """The settings file, refused when others may read it, when it is not a mapping of the known sections, or when
    a setting is unknown or not text."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise SettingsError(f"{path}: holds passwords but others may read it (mode {mode:o}): chmod 600 {path}")
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise SettingsError(f"{path}: not YAML{where}") from None
    if not isinstance(document, dict):
        raise SettingsError(f"{path}: expected a mapping of sections (services, {MIGRATIONS}, {MCP_CREDENTIALS})")
    known = {name: set(spec.secret_settings) for name, spec in SPECS.items() if spec.secret_settings}
    known |= {MIGRATIONS: set(_databases()), MCP_CREDENTIALS: _credential_sources()}
    problems = []
    for section, values in document.items():
        if section not in known:
            problems.append(f"{_named(section, SETTING_NAME)}: no such section (known: {', '.join(sorted(known))})")
        elif not isinstance(values, dict):
            problems.append(f"{section}: expected a mapping of settings")
        else:
            pattern = VARIABLE_NAME if section == MCP_CREDENTIALS else SETTING_NAME
            for key, value in values.items():
                if key not in known[section]:
                    listed = ", ".join(sorted(known[section])) or "none: no server of the tool policy declares any"
                    problems.append(f"{section}.{_named(key, pattern)}: no such setting (known: {listed})")
                elif not isinstance(value, str):
                    problems.append(f"{section}.{key}: expected text")
    if problems:
        raise SettingsError(f"{path}: " + "; ".join(problems))
    return document


def _credential_sources() -> set[str]:
    """The variables the MCP servers' credentials are read from (each server's credential_env in the tool policy)."""
    return {source for pod in mcp_pods(load_policy()) for _, source in pod.credentials}


def check_url(where: str, value: str) -> str | None:
    """Why `value` is no database URL a production service can use, without repeating any of it (it carries a
    password: even a parser's message may quote it)."""
    try:
        parsed = sa.make_url(value)
        check_encoded(parsed)
    except (sa.exc.ArgumentError, ValueError, TypeError) as exc:
        if "percent-encoded" in str(exc):  # check_encoded's own words, which quote nothing
            return f"{where}: {exc}"
        return f"{where}: not a database URL (e.g. postgresql+psycopg://role:password@host:5432/database; an @ or : " \
               "in the password is written %40 or %3A)"
    if parsed.drivername not in DRIVERS:
        return f"{where}: production connects with psycopg: the URL must start with postgresql+psycopg:// (it " \
               f"names {parsed.drivername})"
    return None


def _checked(document: dict) -> list[str]:
    """Every setting that is missing or unusable, at once."""
    problems = []
    for name, spec in SPECS.items():
        given = document.get(name, {})
        for setting in spec.secret_settings:
            value, where = given.get(setting, ""), f"{name}.{setting}"
            if not value and (name, setting) not in OPTIONAL:
                problems.append(f"{where}: missing")
            elif value and setting.endswith("_url"):
                problems += filter(None, [check_url(where, value)])
            elif value and setting == "session_secret" and len(value) < MIN_SESSION_SECRET_CHARS:
                problems.append(f"{where}: at least {MIN_SESSION_SECRET_CHARS} characters (web refuses a shorter "
                                "one); leave it out and one is made")
    migrations = document.get(MIGRATIONS, {})
    for name in _databases():
        if not migrations.get(name):
            problems.append(f"{MIGRATIONS}.{name}: missing (the migrator role's URL)")
        else:
            problems += filter(None, [check_url(f"{MIGRATIONS}.{name}", migrations[name])])
    given = document.get(MCP_CREDENTIALS, {})
    problems += [f"{MCP_CREDENTIALS}.{source}: missing (server {pod.server}'s {variable})"
                 for pod in mcp_pods(load_policy()) for variable, source in pod.credentials if not given.get(source)]
    return problems


def _made_once(path: Path) -> str:
    if not path.exists():
        write_private(path, secrets.token_hex(32).encode())
    return path.read_text(encoding="utf-8")


def _token_files(keys: Path, name: str) -> dict[str, bytes]:
    """A service's own token keys and every signer's verify key, from the keys folder."""
    own = [signing_key_path(keys, name)] if name in SIGNING_PRINCIPALS else []
    own += [secret_path(keys, name)] if name in SECRET_PRINCIPALS else []
    return {path.name: path.read_bytes() for path in [*own, *(verify_key_path(keys, s) for s in SIGNING_PRINCIPALS)]}


def token_keys(keys: Path) -> list[Path]:
    """The deployment's token keys in `keys` (the CLI's signing key in its own folder), made where missing: the
    files made now."""
    cli = operator_folder(keys)
    made = issue_token_keys(private_dir(keys), only_missing=True, cli_directory=private_dir(cli))
    mark_operator_folder(keys)
    mark_operator_folder(cli)
    return made


def production_secrets(settings: Path, keys: Path) -> tuple[list[dict], list[Path]]:
    """Every production Secret and the key files made for it now, or SettingsError listing each setting that is
    missing or unusable (before anything is made)."""
    document = read_settings(settings)
    problems = _checked(document)
    if problems:
        raise SettingsError(f"{settings}: " + "; ".join(problems))
    made = token_keys(keys)
    documents = []
    for name, spec in SPECS.items():
        given = document.get(name, {})
        files = _token_files(keys, name)
        for setting in spec.secret_settings:
            value = given.get(setting, "")
            if not value and (name, setting) in MADE_ONCE:
                value = _made_once(keys / f"{name}-{setting}")
            files[setting_file(name, setting)] = value.encode()
        documents.append(secret_object(secret_name(name), files))
    migrations = document[MIGRATIONS]
    documents += [secret_object(migrator_secret_name(name),
                                {setting_file(name, "migrator_url"): migrations[name].encode()})
                  for name in _databases()]
    documents += [secret_object(name, files)
                  for name, files in credentials_files(load_policy(), document.get(MCP_CREDENTIALS, {})).items()]
    problems = secret_problems(documents, "tessera deploy secrets --production")
    if problems:  # our own renderer must never produce one; refuse rather than write it
        raise SystemExit("\n".join(problems))
    return documents, made


def refused_out(out: Path) -> bool:
    """True (said on stderr) for a folder inside the repository's working tree, where git would see the Secrets; its
    var/ folder is ignored."""
    resolved = out.resolve()
    if resolved.is_relative_to(REPO_ROOT) and not resolved.is_relative_to(REPO_ROOT / "var"):
        print(f"tessera: error: --out {out}: inside the repository, where git would see the Secrets; write them "
              "outside it", file=sys.stderr)
        return True
    return False


def write_secrets(out: Path, documents: list[dict]) -> list[Path]:
    """Each Secret in a file of its own, 0600, in `out` (0700)."""
    private_dir(out)
    written = []
    for document in documents:
        path = out / f"{document['metadata']['name']}.yaml"
        write_private(path, yaml.safe_dump(document, sort_keys=False).encode())
        written.append(path)
    return written
