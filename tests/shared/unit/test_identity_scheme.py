"""Which SPIFFE id names which principal is configuration (trust domain, path template, the CLI's path); a
setting that cannot name every principal distinctly, with a DNS form, is refused naming the variable."""

from __future__ import annotations

import pytest

from shared.config import ConfigError, load_settings
from shared.identity.principals import (
    PRINCIPAL_NAMES,
    IdentitySchemeError,
    identity_scheme,
    principal_for_spiffe,
    server_name_for,
    spiffe_id_for,
)

KUBERNETES = {"TESSERA_TRUST_DOMAIN": "cluster.local", "TESSERA_SPIFFE_PATH": "/ns/tessera/sa/{principal}"}


def _set(monkeypatch, values: dict[str, str]) -> None:
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def test_defaults_keep_the_local_ids(monkeypatch):
    for name in ("TESSERA_TRUST_DOMAIN", "TESSERA_SPIFFE_PATH", "TESSERA_CLI_SPIFFE_PATH"):
        monkeypatch.delenv(name, raising=False)
    assert spiffe_id_for("host") == "spiffe://tessera.local/svc/host"
    assert spiffe_id_for("cli") == "spiffe://tessera.local/user-agent/cli"


def test_a_service_account_scheme_maps_both_ways(monkeypatch):
    _set(monkeypatch, KUBERNETES)
    assert spiffe_id_for("capabilities") == "spiffe://cluster.local/ns/tessera/sa/capabilities"
    assert server_name_for("host") == "host.sa.tessera.ns.cluster.local"
    for name in PRINCIPAL_NAMES:
        assert principal_for_spiffe(spiffe_id_for(name)) == name
    # The local scheme's ids name nobody here: a certificate issued for them is no principal.
    assert principal_for_spiffe("spiffe://tessera.local/svc/capabilities") is None
    assert principal_for_spiffe("spiffe://cluster.local/ns/other/sa/capabilities") is None


@pytest.mark.parametrize("values,message", [
    ({"TESSERA_TRUST_DOMAIN": "Example.org"}, "TESSERA_TRUST_DOMAIN='Example.org': expected a lower-case DNS name"),
    ({"TESSERA_TRUST_DOMAIN": "example..org"}, "TESSERA_TRUST_DOMAIN='example..org'"),
    ({"TESSERA_SPIFFE_PATH": "/ns/tessera/sa"}, "holding {principal} once"),
    ({"TESSERA_SPIFFE_PATH": "/{principal}/{principal}"}, "holding {principal} once"),
    ({"TESSERA_SPIFFE_PATH": "svc/{principal}"}, "expected a path starting with /"),
    ({"TESSERA_SPIFFE_PATH": "/{namespace}/{principal}"}, "holding {principal} once"),
    ({"TESSERA_SPIFFE_PATH": "/svc_x/{principal}"}, "TESSERA_SPIFFE_PATH: agent's SPIFFE id would be"),
    ({"TESSERA_CLI_SPIFFE_PATH": "/svc/host"}, "TESSERA_CLI_SPIFFE_PATH='/svc/host' has the workloads' form"),
    # Not a principal's name, but a ServiceAccount anyone with pod rights could create would hold it.
    ({**KUBERNETES, "TESSERA_CLI_SPIFFE_PATH": "/ns/tessera/sa/operator"},
     "TESSERA_CLI_SPIFFE_PATH='/ns/tessera/sa/operator' has the workloads' form (TESSERA_SPIFFE_PATH="
     "'/ns/tessera/sa/{principal}'): a workload of that name would hold the operator CLI's SPIFFE id"),
    ({"TESSERA_CLI_SPIFFE_PATH": "/People/Alice"}, "TESSERA_CLI_SPIFFE_PATH: cli's SPIFFE id would be"),
])
def test_a_scheme_that_cannot_name_everyone_is_refused_naming_the_variable(monkeypatch, values, message):
    _set(monkeypatch, values)
    with pytest.raises(IdentitySchemeError) as refused:
        identity_scheme()
    assert message in str(refused.value)
    # A service refuses to start on it with the same one line (ConfigError names the variable).
    with pytest.raises(ConfigError) as at_startup:
        load_settings("host")
    assert message in str(at_startup.value)
