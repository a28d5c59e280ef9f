"""Certificate issuance and the checks a process runs before trusting its files."""

from __future__ import annotations

import stat

import pytest
from cryptography import x509

from shared.identity.certs import (
    CredentialError,
    add_server_names,
    ca_key_path,
    dns_sans,
    export_identity,
    is_private_file,
    issue_deployment,
    load_credentials,
    uri_sans,
)
from shared.identity.principals import GRPC_SERVICE_NAMES, PRINCIPAL_NAMES, server_name_for, spiffe_id_for


def _load(directory, principal, **overrides):
    paths = {
        "ca_file": directory / "ca.pem",
        "cert_file": directory / f"{principal}.pem",
        "key_file": directory / f"{principal}.key",
    }
    paths.update(overrides)
    return load_credentials(principal, **paths)


def test_every_principal_gets_a_0600_key_and_its_spiffe_id(tmp_path):
    issue_deployment(tmp_path)
    assert stat.S_IMODE(ca_key_path(tmp_path).stat().st_mode) == 0o600
    assert stat.S_IMODE(ca_key_path(tmp_path).parent.stat().st_mode) == 0o700
    assert not (tmp_path / "ca.key").exists()  # apart from everything a process may be handed
    for principal in PRINCIPAL_NAMES:
        assert stat.S_IMODE((tmp_path / f"{principal}.key").stat().st_mode) == 0o600
        credentials = _load(tmp_path, principal)
        cert = x509.load_pem_x509_certificate(credentials.cert_pem)
        assert uri_sans(cert) == [spiffe_id_for(principal)]
    assert spiffe_id_for("cli") == "spiffe://tessera.local/user-agent/cli"
    assert spiffe_id_for("host") == "spiffe://tessera.local/svc/host"


def test_the_cli_certificate_cannot_serve(tmp_path):
    issue_deployment(tmp_path)
    cert = x509.load_pem_x509_certificate((tmp_path / "cli.pem").read_bytes())
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert [u.dotted_string for u in usages] == ["1.3.6.1.5.5.7.3.2"]  # clientAuth only


def test_reissuing_replaces_keys_and_keeps_them_private(tmp_path):
    issue_deployment(tmp_path)
    first = (tmp_path / "host.key").read_bytes()
    (tmp_path / "host.key").chmod(0o644)
    issue_deployment(tmp_path)
    assert (tmp_path / "host.key").read_bytes() != first
    assert stat.S_IMODE((tmp_path / "host.key").stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o777])
def test_loose_key_permissions_are_refused(tmp_path, mode):
    issue_deployment(tmp_path)
    (tmp_path / "agent.key").chmod(mode)
    with pytest.raises(CredentialError, match=f"{mode:04o}"):
        _load(tmp_path, "agent")


def test_certificate_from_another_ca_is_refused(tmp_path):
    issue_deployment(tmp_path / "a")
    issue_deployment(tmp_path / "b")
    with pytest.raises(CredentialError, match="not issued by the CA"):
        _load(tmp_path / "a", "agent", cert_file=tmp_path / "b" / "agent.pem", key_file=tmp_path / "b" / "agent.key")


def test_wrong_identity_is_refused(tmp_path):
    issue_deployment(tmp_path)
    with pytest.raises(CredentialError, match="expected exactly"):
        _load(tmp_path, "agent", cert_file=tmp_path / "web.pem", key_file=tmp_path / "web.key")


def test_mismatched_key_is_refused(tmp_path):
    issue_deployment(tmp_path)
    with pytest.raises(CredentialError, match="does not match"):
        _load(tmp_path, "agent", key_file=tmp_path / "web.key")


def test_garbage_key_is_refused(tmp_path):
    issue_deployment(tmp_path)
    (tmp_path / "agent.key").write_text("not a key")
    with pytest.raises(CredentialError, match="not an unencrypted PEM private key"):
        _load(tmp_path, "agent")


def test_an_exported_identity_holds_only_its_own_private_files(tmp_path):
    issue_deployment(tmp_path / "all")
    target = tmp_path / "resources"
    target.mkdir()
    (target / "host.key").write_text("left over from an older export")
    export_identity(tmp_path / "all", "resources", target)
    private = sorted(path.name for path in target.iterdir() if is_private_file(path))
    assert private == ["resources-capability.secret", "resources-signing.key", "resources.key"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in target.iterdir())
    # What it holds is usable as is: the service's own credentials load from the folder alone.
    load_credentials("resources", target / "ca.pem", target / "resources.pem", target / "resources.key")


@pytest.mark.parametrize(("mode", "owner", "group_is_ours", "accepted"), [
    (0o440, 0, True, True),    # a Kubernetes Secret volume with the pod's fsGroup: root's file, our group reads
    (0o640, 0, True, True),    # root may write it; we only read
    (0o444, 0, True, False),   # others may read it
    (0o460, 0, True, False),   # our group may write it
    (0o440, 0, False, False),  # another group reads it
    (0o440, "us", True, False),  # our own file must be 0600: a group bit on it is a mistake, not a mount
])
def test_a_secret_mounted_for_our_group_is_accepted_and_nothing_looser(tmp_path, monkeypatch, mode, owner,
                                                                       group_is_ours, accepted):
    import os

    issue_deployment(tmp_path)
    key = tmp_path / "agent.key"
    gid = 4242
    os.chown(key, 10001 if owner == "us" else 0, gid if group_is_ours else 4343)
    key.chmod(mode)
    # This process plays the pod's non-root user (uid 10001) whose group is the fsGroup.
    monkeypatch.setattr(os, "getuid", lambda: 10001)
    monkeypatch.setattr(os, "getgid", lambda: gid)
    if accepted:
        _load(tmp_path, "agent")
    else:
        with pytest.raises(CredentialError, match="must not be readable"):
            _load(tmp_path, "agent")


def _cert(directory, principal) -> x509.Certificate:
    return x509.load_pem_x509_certificate((directory / f"{principal}.pem").read_bytes())


def test_a_grpc_service_carries_the_dns_name_derived_from_its_id_and_uri_only_ones_none(tmp_path):
    issue_deployment(tmp_path / "named")
    issue_deployment(tmp_path / "uri-only", spiffe_only=True)
    for principal in GRPC_SERVICE_NAMES:
        assert dns_sans(_cert(tmp_path / "named", principal))[0] == server_name_for(principal)
        assert dns_sans(_cert(tmp_path / "uri-only", principal)) == []
    assert dns_sans(_cert(tmp_path / "named", "cli")) == []


def test_an_older_deployment_gets_the_names_from_its_own_ca_and_nothing_else_changes(tmp_path):
    issue_deployment(tmp_path, spiffe_only=True)  # what an older version wrote: the URI SAN alone
    ca_before = (tmp_path / "ca.pem").read_bytes()
    untouched = {p: (tmp_path / f"{p}.pem").read_bytes() for p in PRINCIPAL_NAMES if p not in GRPC_SERVICE_NAMES}
    assert add_server_names(tmp_path) == list(GRPC_SERVICE_NAMES)
    for principal in GRPC_SERVICE_NAMES:
        credentials = _load(tmp_path, principal)  # issued by the same CA, key matching, 0600
        assert dns_sans(x509.load_pem_x509_certificate(credentials.cert_pem)) == [
            server_name_for(principal), "localhost"]
    assert (tmp_path / "ca.pem").read_bytes() == ca_before
    assert {p: (tmp_path / f"{p}.pem").read_bytes() for p in untouched} == untouched
    assert add_server_names(tmp_path) == []  # once is enough
