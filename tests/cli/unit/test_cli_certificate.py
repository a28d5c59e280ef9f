"""The operator CLI's production certificate (`tessera deploy cli-certificate`): signed by the trust domain's CA
(EC or RSA, as cert-manager CA issuers hold either) with the CLI's SPIFFE id, for client use only, short-lived; the
CA's key is used and never written; what is not a CA and its own key is refused by what is wrong."""

from __future__ import annotations

import datetime as dt
import io
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from cli import main as cli_main
from cli.deploy_identity import SCHEME
from shared.identity.certs import issued_directly, uri_sans


def _ca(tmp_path: Path, key, is_ca: bool = True, name: str = "ca", days: float = 1,
        key_id: bytes | None = None, signs: bool = True) -> tuple[Path, Path, x509.Certificate]:
    """A CA; `key_id`: its Subject Key Identifier as written (none: it carries none); `signs`: keyCertSign."""
    now = dt.datetime.now(dt.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"trust domain {name}")])
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=1))
               .not_valid_after(now + dt.timedelta(days))
               .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=signs,
                                            crl_sign=signs, encipher_only=False, decipher_only=False), critical=True))
    if key_id is not None:
        builder = builder.add_extension(x509.SubjectKeyIdentifier(key_id), critical=False)
    cert = builder.sign(key, hashes.SHA256())
    cert_file, key_file = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file, cert


def _mint(cert_file: Path, key_file: Path, keys: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main.main(["deploy", "cli-certificate", "--ca-cert", str(cert_file), "--ca-key", str(key_file),
                              "--keys", str(keys), *extra])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("key", [ec.generate_private_key(ec.SECP256R1()), rsa.generate_private_key(65537, 2048)],
                         ids=["ec", "rsa"])
def test_the_cli_certificate_is_the_clis_id_for_clients_only_signed_by_the_ca(tmp_path, key):
    cert_file, key_file, ca = _ca(tmp_path, key)
    code, out, err = _mint(cert_file, key_file, tmp_path / "keys", "--hours", "2")
    assert code == 0, err
    keys = tmp_path / "keys" / "cli"  # the CLI's own folder of the deployment's keys
    cert = x509.load_pem_x509_certificate((keys / "cli.pem").read_bytes())
    assert uri_sans(cert) == [SCHEME.ids["cli"]] and SCHEME.principals[uri_sans(cert)[0]] == "cli"
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH]
    assert issued_directly(cert, [ca])
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature  # as SVIDs carry it
    assert dt.timedelta(hours=1.9) < cert.not_valid_after_utc - dt.datetime.now(dt.UTC) <= dt.timedelta(hours=2)
    assert (keys / "cli.key").stat().st_mode & 0o077 == 0 and (keys / "ca.pem").read_bytes() == cert_file.read_bytes()
    ca_key = key_file.read_bytes()
    assert not [path for path in keys.iterdir() if path.read_bytes() == ca_key]  # the CA's key is not kept
    assert str(keys) in out and "TESSERA_CERT_DIR" in out


def test_what_is_not_a_ca_and_its_own_key_is_refused_by_what_is_wrong(tmp_path):
    cert_file, key_file, _ = _ca(tmp_path, ec.generate_private_key(ec.SECP256R1()))
    _, other_key, _ = _ca(tmp_path, ec.generate_private_key(ec.SECP256R1()), name="other")
    leaf_cert, leaf_key, _ = _ca(tmp_path, ec.generate_private_key(ec.SECP256R1()), is_ca=False, name="leaf")
    soon_cert, soon_key, _ = _ca(tmp_path, ec.generate_private_key(ec.SECP256R1()), name="soon", days=0.25)
    mute_cert, mute_key, _ = _ca(tmp_path, ec.generate_private_key(ec.SECP256R1()), name="mute", signs=False)
    for args, said in (((cert_file, other_key), "not the CA certificate's key"),
                       ((soon_cert, soon_key), "ask for fewer hours"),
                       ((mute_cert, mute_key), "lacks keyCertSign"),
                       ((leaf_cert, leaf_key), "is not a CA"),
                       ((key_file, key_file), "not a PEM certificate"),
                       ((cert_file, cert_file), "not an unencrypted PEM private key"),
                       ((cert_file, tmp_path / "missing.key"), "cannot read")):
        code, _, err = _mint(*args, tmp_path / "keys")
        assert code == 2 and said in err, (said, err)
    assert not (tmp_path / "keys" / "cli" / "cli.pem").exists()
    code, _, err = _mint(cert_file, key_file, tmp_path / "keys", "--hours", "0")
    assert code == 2 and "--hours 0" in err


def test_the_certificate_names_its_issuer_by_the_key_identifier_the_ca_wrote(tmp_path):
    """A CA whose key identifier is not SHA-1 of its key (RFC 7093's truncated SHA-256, as newer issuers write it):
    the certificate's Authority Key Identifier repeats the CA's, so TLS stacks find the CA when they build the
    chain (OpenSSL's verify here, where installed)."""
    key = ec.generate_private_key(ec.SECP256R1())
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(spki)
    key_id = digest.finalize()[:20]
    cert_file, key_file, _ = _ca(tmp_path, key, key_id=key_id)
    assert _mint(cert_file, key_file, tmp_path / "keys")[0] == 0
    leaf = tmp_path / "keys" / "cli" / "cli.pem"
    cert = x509.load_pem_x509_certificate(leaf.read_bytes())
    assert cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier == key_id
    if shutil.which("openssl"):
        verified = subprocess.run(["openssl", "verify", "-CAfile", str(cert_file), "-purpose", "sslclient",
                                   str(leaf)], capture_output=True, text=True, timeout=30)
        assert verified.returncode == 0, verified.stdout + verified.stderr
