"""`tessera deploy secrets --production`: each Secret the production overlays and the Helm chart mount, holding
exactly its owner's token keys and settings, written privately, with keys made once and reused; a settings file
that is missing something, unusable or readable by others is refused by setting, never echoing a value."""

from __future__ import annotations

import base64
import contextlib
import io
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from cli import deploy_secrets
from cli import main as cli_main
from cli.deploy_manifests import SPECS, secret_name
from cli.deploy_mcp_servers import credentials_secret, load_policy
from cli.deploy_migrations import secret_name as migrator_secret_name
from cli.deploy_objects import setting_file
from shared.identity.certs import SECRET_PRINCIPALS, SIGNING_PRINCIPALS, load_signing_key
from shared.paths import REPO_ROOT

# Distinct passwords, so any of them showing up in what the command prints is a leak.
PASSWORDS = {name: f"pw-{name}-Zq8" for name in ("reader", "store", "broker", "writer", "host", "model", "m1", "m2",
                                                  "m3")}
SETTINGS = {
    "resources": {"warehouse_url": f"postgresql+psycopg://reader:{PASSWORDS['reader']}@db:5432/warehouse",
                  "store_url": f"postgresql+psycopg://resources:{PASSWORDS['store']}@db:5432/tessera_resources"},
    "capabilities": {"database_url": f"postgresql+psycopg://capabilities:{PASSWORDS['broker']}@db/tessera_caps",
                     "changes_url": f"postgresql+psycopg://writer:{PASSWORDS['writer']}@db/warehouse"},
    "host": {"database_url": f"postgresql+psycopg://host:{PASSWORDS['host']}@db/tessera_host"},
    "agent": {"model_api_key": PASSWORDS["model"]},
    "migrations": {"host": f"postgresql+psycopg://m:{PASSWORDS['m1']}@db/tessera_host",
                   "capabilities": f"postgresql+psycopg://m:{PASSWORDS['m2']}@db/tessera_caps",
                   "resources": f"postgresql+psycopg://m:{PASSWORDS['m3']}@db/tessera_resources"},
}


def _settings(tmp_path: Path, document: object, mode: int = 0o600) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document))
    path.chmod(mode)
    return path


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def _run(tmp_path: Path, settings: Path | None, *args: str, production: bool = True) -> Ran:
    """The command as the operator types it, in this process (the CLI's own parser and exit codes)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TESSERA_VAR_DIR", str(tmp_path / "var"))
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the keys' default folder is the operator's
        patch.setenv("TESSERA_CERT_DIR", str(tmp_path / "no-certs"))  # never needed: nothing local is read
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main.main(["deploy", "secrets", *(["--production"] if production else []),
                                  "--out", str(tmp_path / "out"),
                                  *(["--settings", str(settings)] if settings else []), *args])
    return Ran(code, out.getvalue(), err.getvalue())


def _keys(tmp_path: Path) -> Path:
    return tmp_path / "config" / "tessera" / "production"


def _printed_nothing_secret(result: Ran) -> None:
    printed = result.stdout + result.stderr
    assert not [password for password in PASSWORDS.values() if password in printed], printed


def _files(out: Path, name: str) -> dict[str, bytes]:
    document = yaml.safe_load((out / f"{name}.yaml").read_text())
    return {key: base64.b64decode(value) for key, value in document["data"].items()}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, Ran]:
    tmp_path = tmp_path_factory.mktemp("production-secrets")
    result = _run(tmp_path, _settings(tmp_path, SETTINGS))
    assert result.returncode == 0, result.stderr
    return tmp_path, result


def test_each_secret_holds_its_owners_token_keys_and_settings_and_nothing_else(written):
    tmp_path, result = written
    out = tmp_path / "out"
    _printed_nothing_secret(result)
    expected = {*(secret_name(name) for name in SPECS), *(migrator_secret_name(name) for name, spec in SPECS.items()
                                                          if spec.database)}
    assert {path.stem for path in out.iterdir()} == expected
    assert all(path.stat().st_mode & 0o077 == 0 for path in out.iterdir())
    verify_keys = {f"{signer}-signing.pub" for signer in SIGNING_PRINCIPALS}
    for name, spec in SPECS.items():
        files = _files(out, secret_name(name))
        own = {f"{name}-signing.key"} if name in SIGNING_PRINCIPALS else set()
        own |= {f"{name}-capability.secret"} if name in SECRET_PRINCIPALS else set()
        settings = {setting_file(name, setting) for setting in spec.secret_settings}
        assert set(files) == own | verify_keys | settings, name  # no certificate or TLS key: the provider mounts them
        for setting in spec.secret_settings:
            given = SETTINGS.get(name, {}).get(setting)
            if given is not None:
                assert files[setting_file(name, setting)].decode() == given
    web = _files(out, secret_name("web"))
    assert len(web[setting_file("web", "session_secret")]) == 64  # made, as none was given
    assert web[setting_file("web", "oidc_client_secret")] == b""  # optional: OpenID sign-in off
    for name in ("host", "capabilities", "resources"):
        assert _files(out, migrator_secret_name(name)) == {
            setting_file(name, "migrator_url"): SETTINGS["migrations"][name].encode()}
    check = subprocess.run([str(REPO_ROOT / "bin" / "tessera"), "deploy", "check", *map(str, out.iterdir())],
                           capture_output=True, text=True, timeout=60)
    assert [line for line in check.stderr.splitlines() if "NetworkPolicy" not in line] == []


def test_the_operator_clis_signing_key_stays_in_the_keys_folder_and_every_service_can_verify_it(written):
    tmp_path, _ = written
    keys = _keys(tmp_path)
    public = load_signing_key(keys / "cli" / "cli-signing.key").public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert stat_mode(keys) == 0o700 and stat_mode(keys / "cli") == 0o700
    assert stat_mode(keys / "cli" / "cli-signing.key") == 0o600
    for name in SPECS:
        files = _files(tmp_path / "out", secret_name(name))
        assert files["cli-signing.pub"] == public and "cli-signing.key" not in files


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_a_second_run_keeps_the_keys_and_the_made_session_secret(written):
    tmp_path, first = written
    made = 2 * len(SIGNING_PRINCIPALS) + len(SECRET_PRINCIPALS)  # key pairs, and the capability secret
    assert f"made {made} token key files" in first.stderr  # said, on the first run only
    before = {name: _files(tmp_path / "out", secret_name(name)) for name in SPECS}
    again = _run(tmp_path, tmp_path / "settings.yaml")
    assert again.returncode == 0, again.stderr
    assert {name: _files(tmp_path / "out", secret_name(name)) for name in SPECS} == before
    assert "made" not in again.stderr


def test_tessera_certs_and_up_refuse_the_operator_folders(written):
    """`tessera certs` there would make a local deployment over the production keys: every token key new, the CLI's
    signing key gone."""
    tmp_path, _ = written
    for folder in (_keys(tmp_path), _keys(tmp_path) / "cli"):
        before = {path.name: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("TESSERA_CERT_DIR", str(folder))
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                assert cli_main.main(["certs", "--force"]) == 2
                assert cli_main.main(["up"]) != 0
        assert "holds a production deployment's keys" in err.getvalue()
        assert {path.name: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == before


@pytest.mark.parametrize("change,named", [
    (lambda s: s["resources"].pop("store_url"), "resources.store_url: missing"),
    (lambda s: s["migrations"].pop("host"), "migrations.host: missing"),
    (lambda s: s["host"].update(database_url=f"postgresql+psycopg://host:{PASSWORDS['host']}@x@db/h"),
     "host.database_url: the database URL's password must be percent-encoded"),
    (lambda s: s["host"].update(database_url=f"sqlite:///{PASSWORDS['host']}.db"),
     "host.database_url: production connects with psycopg"),
    (lambda s: s["host"].update(database_url=f"postgresql+asyncpg://host:{PASSWORDS['host']}@db/h"),
     "host.database_url: production connects with psycopg"),
    # An unencoded @ and then a : make the parser read the password's tail as a port: still not echoed.
    (lambda s: s["host"].update(database_url=f"postgresql+psycopg://host:a@{PASSWORDS['host']}:x@db:5432/h"),
     "host.database_url: not a database URL"),
    (lambda s: s["capabilities"].update({s["capabilities"].pop("changes_url"): ""}),  # a value without its key
     "capabilities.an entry that is not a name (a value without its key?): no such setting"),
    (lambda s: s.update(web={"session_secret": "short"}), "web.session_secret: at least 32 characters"),
    (lambda s: s["host"].update(database_url=f"{PASSWORDS['host']} is no url"), "host.database_url: not a database"),
    (lambda s: s["host"].update(databse_url="x"), "host.databse_url: no such setting"),
    (lambda s: s.update(hosts={}), "hosts: no such section"),
    (lambda s: s["agent"].update(model_api_key=123), "agent.model_api_key: expected text"),
])
def test_a_settings_file_with_something_wrong_is_refused_by_setting_without_its_value(tmp_path, change, named):
    document = yaml.safe_load(yaml.safe_dump(SETTINGS))
    change(document)
    result = _run(tmp_path, _settings(tmp_path, document))
    assert result.returncode == 2 and named in result.stderr, result.stderr
    _printed_nothing_secret(result)
    assert not (tmp_path / "out").exists()  # nothing written


def test_every_missing_setting_is_named_at_once(tmp_path):
    result = _run(tmp_path, _settings(tmp_path, {"agent": {"model_api_key": PASSWORDS["model"]}}))
    assert result.returncode == 2
    for missing in ("resources.warehouse_url", "resources.store_url", "capabilities.database_url",
                    "capabilities.changes_url", "host.database_url", "migrations.host"):
        assert f"{missing}: missing" in result.stderr


def test_a_settings_file_others_may_read_or_that_is_not_yaml_is_refused(tmp_path):
    shared = _run(tmp_path, _settings(tmp_path, SETTINGS, mode=0o644))
    assert shared.returncode == 2 and "others may read it" in shared.stderr and "chmod 600" in shared.stderr
    _printed_nothing_secret(shared)
    broken = _run(tmp_path, _settings(tmp_path, f"host: {{database_url: {PASSWORDS['host']}"))
    assert broken.returncode == 2 and "not YAML" in broken.stderr
    _printed_nothing_secret(broken)


def test_production_needs_a_settings_file_and_the_local_secrets_take_none(tmp_path):
    result = _run(tmp_path, None)
    assert result.returncode == 2 and "--settings" in result.stderr
    local = _run(tmp_path, _settings(tmp_path, SETTINGS), production=False)  # would write the local overlay's
    assert local.returncode == 2 and "--settings and --keys go with --production" in local.stderr
    assert not (tmp_path / "out").exists()


def test_secrets_are_not_written_where_git_would_see_them(tmp_path):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli_main.main(["deploy", "secrets", "--production", "--settings",
                                  str(_settings(tmp_path, SETTINGS)), "--out", str(REPO_ROOT / "secrets-here")])
    assert code == 2 and "inside the repository" in err.getvalue() and not (REPO_ROOT / "secrets-here").exists()


def test_mcp_server_credentials_come_from_the_variables_the_policy_names(tmp_path, monkeypatch):
    policy = load_policy()
    server = next(name for name, rule in policy["servers"].items() if rule.get("transport") == "stdio")
    policy["servers"][server]["credential_env"] = {"API_TOKEN": "TESSERA_CAPABILITIES_TEST_TOKEN"}
    monkeypatch.setattr(deploy_secrets, "load_policy", lambda: policy)
    missing = _run(tmp_path, _settings(tmp_path, SETTINGS))
    assert missing.returncode == 2
    assert f"mcp_credentials.TESSERA_CAPABILITIES_TEST_TOKEN: missing (server {server}'s API_TOKEN)" in missing.stderr
    wrong = _run(tmp_path, _settings(tmp_path, {**SETTINGS, "mcp_credentials": {"API_TOKEN": "t"}}))
    assert "mcp_credentials.API_TOKEN: no such setting (known: TESSERA_CAPABILITIES_TEST_TOKEN)" in wrong.stderr
    given = _run(tmp_path, _settings(tmp_path, {**SETTINGS, "mcp_credentials": {
        "TESSERA_CAPABILITIES_TEST_TOKEN": PASSWORDS["model"]}}))
    assert given.returncode == 0, given.stderr
    _printed_nothing_secret(given)
    assert _files(tmp_path / "out", credentials_secret(server)) == {"API_TOKEN": PASSWORDS["model"].encode()}


def test_the_session_secret_minimum_is_webs():
    from services.web.session import MIN_SECRET_CHARS

    assert deploy_secrets.MIN_SESSION_SECRET_CHARS == MIN_SECRET_CHARS
