"""Typed configuration: defaults, overrides, one-line errors naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.config import DEFAULT_PORTS, ConfigError, load_settings, peer_target


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    import os

    for key in list(os.environ):
        if key.startswith("TESSERA_"):
            monkeypatch.delenv(key)


def test_defaults_derive_credential_paths_from_the_cert_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TESSERA_CERT_DIR", str(tmp_path))
    settings = load_settings("resources")
    assert settings.port == DEFAULT_PORTS["resources"]
    assert settings.cert == tmp_path / "resources.pem"
    assert settings.key == tmp_path / "resources.key"
    assert settings.ca_cert == tmp_path / "ca.pem"
    assert settings.log_level == "INFO"


def test_per_service_overrides(monkeypatch):
    monkeypatch.setenv("TESSERA_HOST_PORT", "6000")
    monkeypatch.setenv("TESSERA_HOST_CERT", "/etc/tessera/host.pem")
    monkeypatch.setenv("TESSERA_LOG_LEVEL", "debug")
    monkeypatch.setenv("TESSERA_AGENT_PORT", "7000")  # another service's setting: ignored
    settings = load_settings("host")
    assert settings.port == 6000
    assert settings.cert == Path("/etc/tessera/host.pem")
    assert settings.log_level == "DEBUG"


@pytest.mark.parametrize("variable,value,message", [
    ("TESSERA_HOST_PORT", "http", "valid integer"),
    ("TESSERA_HOST_PORT", "-1", "greater than or equal to 0"),
    ("TESSERA_HOST_GRACE_SECONDS", "soon", "valid number"),
    ("TESSERA_LOG_LEVEL", "chatty", "'DEBUG', 'INFO'"),
    ("TESSERA_RESOURCES_ADDR", "localhost", "expected host:port"),
    ("TESSERA_RESOURCES_ADDR", "127.0.0.1:99999", "expected host:port"),
])
def test_bad_values_name_the_variable(monkeypatch, variable, value, message):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as error:
        load_settings("host")
    text = str(error.value)
    assert text.startswith(f"{variable}={value!r}: ") and message in text and "\n" not in text


def test_unknown_service_is_refused():
    with pytest.raises(ConfigError, match="unknown service"):
        load_settings("warehouse")


def test_peer_targets(monkeypatch):
    assert peer_target("compiler") == f"127.0.0.1:{DEFAULT_PORTS['compiler']}"
    monkeypatch.setenv("TESSERA_COMPILER_ADDR", "[::1]:7001")
    assert peer_target("compiler") == "[::1]:7001"
