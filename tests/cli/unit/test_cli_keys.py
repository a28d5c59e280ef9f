"""The operator CLI's keys live in its own folder ($XDG_CONFIG_HOME/tessera), outside the services' var folder."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from cli.launcher import cli_credentials
from shared.identity.certs import (
    CLI_OWN_FILES,
    issue_deployment,
    key_path,
    load_signing_key,
    move_cli_files,
    signing_key_path,
    verify_key_path,
)
from shared.paths import REPO_ROOT, cli_dir


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_cli_dir_follows_xdg_config_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert cli_dir() == tmp_path / "tessera"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")  # the XDG specification: only absolute paths count
    assert cli_dir() == Path.home() / ".config" / "tessera"


def test_the_cli_keys_go_to_their_own_folder_and_are_found_there(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    certs = tmp_path / "var" / "certs"
    issue_deployment(certs, cli_directory=cli_dir())
    assert not any((certs / name).exists() for name in CLI_OWN_FILES)
    assert _mode(cli_dir()) == 0o700 and all(_mode(cli_dir() / name) == 0o600 for name in CLI_OWN_FILES[1:])
    # The services keep the public key that verifies what the CLI signs.
    assert verify_key_path(certs, "cli").exists()
    # With a copy of the CA certificate, the folder is all a client of the CLI's (the TypeScript one) needs.
    assert (cli_dir() / "ca.pem").read_bytes() == (certs / "ca.pem").read_bytes()
    assert key_path(certs, "cli") == cli_dir() / "cli.key"
    assert cli_credentials(certs).identity.endswith("/user-agent/cli")
    load_signing_key(signing_key_path(certs, "cli"))


def test_a_deployment_kept_in_one_folder_finds_the_cli_keys_in_it(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    issue_deployment(tmp_path / "certs")
    assert key_path(tmp_path / "certs", "cli") == tmp_path / "certs" / "cli.key"
    assert not cli_dir().exists()


def test_moving_the_cli_files_out(tmp_path):
    issue_deployment(tmp_path / "certs")
    key = (tmp_path / "certs" / "cli.key").read_bytes()
    moved = move_cli_files(tmp_path / "certs", tmp_path / "cli")
    assert sorted(path.name for path in moved) == sorted(CLI_OWN_FILES)
    assert (tmp_path / "cli" / "cli.key").read_bytes() == key and _mode(tmp_path / "cli" / "cli.key") == 0o600
    assert (tmp_path / "cli" / "ca.pem").read_bytes() == (tmp_path / "certs" / "ca.pem").read_bytes()
    assert not any((tmp_path / "certs" / name).exists() for name in CLI_OWN_FILES)
    assert move_cli_files(tmp_path / "certs", tmp_path / "cli") == []


def _certs(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", "certs", *extra], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_tessera_certs_moves_keys_from_the_former_place_once(tmp_path):
    var = tmp_path / "var"
    issue_deployment(var / "certs")  # the former layout: the CLI's keys beside every service's
    key = (var / "certs" / "cli-signing.key").read_bytes()
    env = {**{k: v for k, v in os.environ.items() if k != "TESSERA_CERT_DIR"}, "TESSERA_VAR_DIR": str(var),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    first = _certs(env)
    assert first.returncode == 0, first.stderr
    assert "moved the CLI's keys" in first.stdout and "are valid" in first.stdout
    assert (tmp_path / "config" / "tessera" / "cli-signing.key").read_bytes() == key
    assert not (var / "certs" / "cli.key").exists()
    second = _certs(env)
    assert "moved" not in second.stdout and "are valid" in second.stdout
    forced = _certs(env, "--force")
    assert str(tmp_path / "config" / "tessera") in forced.stdout and not (var / "certs" / "cli.key").exists()
    assert (tmp_path / "config" / "tessera" / "cli-signing.key").read_bytes() != key
