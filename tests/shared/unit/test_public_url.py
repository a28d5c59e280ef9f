"""One public URL, from which web, the MCP front and the broker derive what must agree with it: host names
answered, Secure cookies, the OpenID redirect base, the MCP resource URL, the WebAuthn relying party and origin.
A service's own setting wins where it is set."""

from __future__ import annotations

import pytest

from services.capabilities.config import CapabilitiesSettings
from services.mcp.config import McpSettings
from services.web.config import WebSettings
from shared.config import ConfigError, load_settings
from shared.identity.public_url import PUBLIC_URL_VARIABLE, PublicUrl, parse_public_url


@pytest.mark.parametrize("value, parsed", [
    ("https://tessera.example.com", PublicUrl("https", "tessera.example.com")),
    ("https://tessera.example.com/", PublicUrl("https", "tessera.example.com")),
    ("https://xn--bcher-kva.example", PublicUrl("https", "xn--bcher-kva.example")),
    ("http://tessera.internal", PublicUrl("http", "tessera.internal")),
])
def test_a_public_url_is_its_origin(value, parsed):
    assert parse_public_url(value) == parsed


@pytest.mark.parametrize("value, says", [
    ("tessera.example.com", "must start with https://"),
    ("ftp://tessera.example.com", "must start with https://"),
    ("https://tessera.example.com/tessera", "without a path"),
    ("https://tessera.example.com/?a=1", "without a path, query or fragment"),
    ("https://admin:pw@tessera.example.com", "must not hold a user or password"),
    ("https://10.0.0.7", "by its DNS name"),
    ("https://[::1]", "by its DNS name"),
    ("https://127.1", "by its DNS name"),  # browsers read these as IPv4 addresses
    ("https://0x7f.1", "by its DNS name"),
    ("https://under_score.example.com", "by its DNS name"),
    ("https://tessera.example.com.", "by its DNS name"),
    # The text is copied into the Ingress host and the certificate as written: only the plain form.
    ("https://Tessera.Example.COM", "in lower case"),
    ("https://tessera.example.com:443", "must not name a port"),
    ("https://tessera.example.com:8443", "must not name a port"),
    ("https://tessera.example.com:0", "must not name a port"),
    ("https://tessera.example.com:", "must not name a port"),
    ("https://tessera.example.com?", "without a path, query or fragment"),
    ("https://tessera.example.com/#", "without a path, query or fragment"),
    ("https://tessera.example.com:99999", "not a URL"),
])
def test_a_public_url_that_cannot_be_used_is_refused_naming_the_variable(value, says):
    with pytest.raises(ConfigError) as refused:
        parse_public_url(value)
    assert str(refused.value).startswith(f"{PUBLIC_URL_VARIABLE}={value!r}: ") and says in str(refused.value)


def test_web_answers_the_public_host_over_secure_cookies(monkeypatch):
    monkeypatch.setenv(PUBLIC_URL_VARIABLE, "https://tessera.example.com")
    web = load_settings("web", WebSettings)
    assert web.public_url == "https://tessera.example.com" and web.secure_cookies is True
    # The probes ask for localhost: still answered.
    assert web.allowed_hosts == ["tessera.example.com", "127.0.0.1", "localhost", "[::1]"]


def test_the_mcp_front_is_the_resource_at_the_public_url(monkeypatch):
    monkeypatch.setenv(PUBLIC_URL_VARIABLE, "https://tessera.example.com")
    mcp = load_settings("mcp", McpSettings)
    assert mcp.resource_url == "https://tessera.example.com/mcp"
    assert mcp.web_url == "https://tessera.example.com"
    assert mcp.allowed_hosts[0] == "tessera.example.com" and "localhost:*" in mcp.allowed_hosts
    assert mcp.allowed_origins[0] == "https://tessera.example.com"


def test_passkeys_are_bound_to_the_public_host_and_origin(monkeypatch):
    monkeypatch.setenv(PUBLIC_URL_VARIABLE, "https://tessera.example.com")
    broker = load_settings("capabilities", CapabilitiesSettings)
    assert (broker.webauthn_rp_id, broker.webauthn_origins) == ("tessera.example.com", ["https://tessera.example.com"])


def test_a_services_own_setting_wins_over_the_public_url(monkeypatch):
    monkeypatch.setenv(PUBLIC_URL_VARIABLE, "https://tessera.example.com")
    monkeypatch.setenv("TESSERA_WEB_ALLOWED_HOSTS", '["tessera.example.com", "tessera.example.org"]')
    monkeypatch.setenv("TESSERA_WEB_SECURE_COOKIES", "false")
    monkeypatch.setenv("TESSERA_CAPABILITIES_WEBAUTHN_RP_ID", "example.com")
    monkeypatch.setenv("TESSERA_MCP_RESOURCE_URL", "https://mcp.example.com/mcp")
    assert load_settings("mcp", McpSettings).resource_url == "https://mcp.example.com/mcp"
    web = load_settings("web", WebSettings)
    assert web.allowed_hosts == ["tessera.example.com", "tessera.example.org"] and web.secure_cookies is False
    assert web.public_url == "https://tessera.example.com"
    assert load_settings("capabilities", CapabilitiesSettings).webauthn_rp_id == "example.com"


def test_without_a_public_url_the_local_defaults_hold(monkeypatch):
    monkeypatch.delenv(PUBLIC_URL_VARIABLE, raising=False)
    web, mcp = load_settings("web", WebSettings), load_settings("mcp", McpSettings)
    assert (web.public_url, web.secure_cookies, web.allowed_hosts) == ("", False, ["127.0.0.1", "localhost", "[::1]"])
    assert mcp.resource_url == "" and load_settings("capabilities", CapabilitiesSettings).webauthn_rp_id == "localhost"


def test_a_setting_from_the_secrets_directory_wins_too(monkeypatch, tmp_path):
    monkeypatch.setenv(PUBLIC_URL_VARIABLE, "https://tessera.example.com")
    monkeypatch.setenv("TESSERA_SECRETS_DIR", str(tmp_path))
    (tmp_path / "tessera_web_public_url").write_text("https://portal.example.com")
    assert load_settings("web", WebSettings).public_url == "https://portal.example.com"


def test_a_bad_public_url_stops_a_service_with_one_line(monkeypatch):
    monkeypatch.setenv(PUBLIC_URL_VARIABLE, "https://tessera.example.com/app")
    with pytest.raises(ConfigError, match="TESSERA_PUBLIC_URL='https://tessera.example.com/app': must be the origin"):
        load_settings("web", WebSettings)
