"""Deployment CA and per-principal mTLS credentials.

`issue_deployment` writes a CA plus one key and certificate per principal;
`load_credentials` reads one principal's files back and checks them before a
process trusts them, so that a broken setup fails at startup with one line
naming the file, instead of as a TLS handshake error much later. The operator
CLI's own key, certificate and signing key may live apart from the services'
folder, in the CLI's own ($XDG_CONFIG_HOME/tessera, see cli_files_dir).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from shared.identity.principals import GRPC_SERVICE_NAMES, PRINCIPAL_NAMES, server_name_for, spiffe_id_for
from shared.paths import cli_dir

CA_CERT_FILE = "ca.pem"
CA_KEY_FILE = "ca.key"
# The CA key lives apart, in a 0700 folder of its own that only `tessera certs` reads:
# no process is ever handed the folder that holds it (see export_identity).
CA_KEY_DIR = "ca-private"
# Leaf certificates are short enough to force rotation, long enough for a
# development deployment not to expire mid-week.
LEAF_VALIDITY = dt.timedelta(days=30)
CA_VALIDITY = dt.timedelta(days=365)
CLI_PRINCIPAL = "cli"
# The CLI's own files: its certificate, its mTLS key and the key that signs people's assertions and the
# operator's decisions. Its public verify key stays with the services, who check what it signs.
CLI_OWN_FILES = (f"{CLI_PRINCIPAL}.pem", f"{CLI_PRINCIPAL}.key", f"{CLI_PRINCIPAL}-signing.key")


class CredentialError(Exception):
    """A certificate or key that cannot be used; the message names the file."""


@dataclass(frozen=True)
class Credentials:
    """PEM bytes for one principal, ready for grpc.ssl_*_credentials."""

    principal: str
    identity: str
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    # Where they were read from: a renewed certificate is picked up from the same files.
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None


def cli_files_dir(directory: Path) -> Path:
    """Where the operator CLI's own files are, for the deployment in `directory`: there, if it holds them (a
    deployment kept in one folder, as tests and benchmarks make one, or an older layout under a TESSERA_CERT_DIR
    the operator named), else in the CLI's own folder, which no service's var folder holds."""
    return directory if (directory / f"{CLI_PRINCIPAL}.key").exists() else cli_dir()


def _home(directory: Path, principal: str) -> Path:
    return cli_files_dir(directory) if principal == CLI_PRINCIPAL else directory


def cert_path(directory: Path, principal: str) -> Path:
    return _home(directory, principal) / f"{principal}.pem"


def key_path(directory: Path, principal: str) -> Path:
    return _home(directory, principal) / f"{principal}.key"


def private_dir(path: Path) -> Path:
    """Create (or tighten) a folder that only its owner can enter."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def ca_key_path(directory: Path) -> Path:
    return directory / CA_KEY_DIR / CA_KEY_FILE


def write_private(path: Path, data: bytes) -> None:
    """Create the file 0600 from the start (never briefly world-readable) and put it in place at once: a
    reader sees the old file or the new one, never a missing or half-written one (the supervisor rewrites
    the run state while `tessera status` reads it)."""
    private_dir(path.parent)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _write_public(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o644)


def _key_pem(key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def create_ca(common_name: str = "Tessera deployment CA") -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    now = dt.datetime.now(dt.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def issue_leaf(
    ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, principal: str,
    spiffe_only: bool = False, identity: str | None = None, validity: dt.timedelta = LEAF_VALIDITY,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """One certificate per principal: its only URI SAN is its SPIFFE id.

    Unless `spiffe_only`, a service's certificate also carries the DNS name derived from that id
    (identity.server_name_for), which Tessera's clients expect through gRPC's own TLS, and loopback
    DNS/IP SANs for tools that dial an address and check it (grpcurl). With it, the certificate is
    what identity providers that issue the URI SAN alone make; clients then need the SPIFFE bridge
    (TESSERA_CLIENT_TLS=spiffe-bridge). The CLI only ever acts as a client. `identity`: the SPIFFE id of another
    deployment's scheme (default: this process's).
    """
    key = _new_key()
    now = dt.datetime.now(dt.UTC)
    identity = identity or spiffe_id_for(principal)
    is_server = principal != CLI_PRINCIPAL
    sans: list[x509.GeneralName] = [x509.UniformResourceIdentifier(identity)]
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if is_server:
        if not spiffe_only:
            sans += [x509.DNSName(server_name_for(principal)), x509.DNSName("localhost"),
                     x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        usages.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"tessera-{principal}")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(_authority_key_id(ca_cert, ca_key), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def _authority_key_id(ca_cert: x509.Certificate, ca_key) -> x509.AuthorityKeyIdentifier:
    """The CA's own key identifier, as it wrote it (not every CA derives it the same way, and TLS stacks match the
    two when they build the chain); derived from its key where it carries none."""
    try:
        identifier = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(identifier)


# Principals that sign tokens others verify (§2): the host signs grants, the
# resources service signs resource offers, web, the CLI and the MCP front sign
# the actor assertions of the people they authenticated. Each gets an Ed25519 key pair.
SIGNING_PRINCIPALS = ("host", "resources", "web", CLI_PRINCIPAL, "mcp")
# Services that mint HMAC tokens only they verify: resources' capability tokens.
SECRET_PRINCIPALS = ("resources",)


def signing_key_path(directory: Path, principal: str) -> Path:
    return _home(directory, principal) / f"{principal}-signing.key"


def verify_key_path(directory: Path, principal: str) -> Path:
    return directory / f"{principal}-signing.pub"


def secret_path(directory: Path, principal: str) -> Path:
    return directory / f"{principal}-capability.secret"


def issue_deployment(directory: Path, principals: tuple[str, ...] = PRINCIPAL_NAMES,
                     spiffe_only: bool = False, cli_directory: Path | None = None) -> list[Path]:
    """Write a fresh CA and a key + certificate for every principal, plus token keys. The CLI's own files go to
    `cli_directory` (`tessera certs` names the CLI's folder), or beside the rest when it is None."""
    ca_cert, ca_key = create_ca()
    private_dir(directory)
    cli_folder = directory if cli_directory is None else private_dir(cli_directory)
    (directory / CA_KEY_FILE).unlink(missing_ok=True)  # where older versions kept it, beside everything else
    if cli_folder != directory:  # an older layout's CLI files would otherwise be found before the new ones
        for name in CLI_OWN_FILES:
            (directory / name).unlink(missing_ok=True)
    written = [directory / CA_CERT_FILE, ca_key_path(directory)]
    _write_public(written[0], ca_cert.public_bytes(serialization.Encoding.PEM))
    write_private(written[1], _key_pem(ca_key))
    if cli_folder != directory:  # the CA certificate beside the CLI's own: a client's folder, complete
        _write_public(cli_folder / CA_CERT_FILE, ca_cert.public_bytes(serialization.Encoding.PEM))
        written.append(cli_folder / CA_CERT_FILE)
    for principal in principals:
        cert, key = issue_leaf(ca_cert, ca_key, principal, spiffe_only)
        folder = cli_folder if principal == CLI_PRINCIPAL else directory
        own_cert, own_key = folder / f"{principal}.pem", folder / f"{principal}.key"
        _write_public(own_cert, cert.public_bytes(serialization.Encoding.PEM))
        write_private(own_key, _key_pem(key))
        written += [own_cert, own_key]
    return written + issue_token_keys(directory, only_missing=False, cli_directory=cli_folder)


OPERATOR_MARKER = "tessera-operator-folder"  # in a production deployment's keys folders (cli/deploy_secrets.py)


def mark_operator_folder(directory: Path) -> None:
    path = directory / OPERATOR_MARKER
    if not path.exists():
        write_private(path, b"A production deployment's token keys or operator CLI files (tessera deploy secrets "
                            b"--production): `tessera certs` and `tessera up` refuse this folder.\n")


def refuse_operator_folder(directory: Path) -> None:
    """CredentialError if `directory` holds a production deployment's keys, which making a local deployment there
    would replace (its token keys: everyone signed out; the CLI's signing key gone)."""
    if (directory / OPERATOR_MARKER).exists():
        raise CredentialError(f"{directory} holds a production deployment's keys (tessera deploy secrets "
                              "--production); a local deployment would replace them: point TESSERA_CERT_DIR "
                              "elsewhere (or unset it) for `tessera certs`, `up` and `demo`")


def issue_cli_certificate(ca_cert_pem: bytes, ca_key_pem: bytes, identity: str, directory: Path,
                          validity: dt.timedelta) -> x509.Certificate:
    """The operator CLI's certificate (SPIFFE id `identity`, client use only) signed by another deployment's CA,
    written with a new key and that CA's certificate into `directory` (cli.pem, cli.key 0600, ca.pem). The CA's key
    is used, never written. CredentialError when the two are not a CA certificate and its own EC or RSA key."""
    try:
        ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    except ValueError:
        raise CredentialError("the CA certificate is not a PEM certificate") from None
    try:
        ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    except (ValueError, TypeError):
        raise CredentialError("the CA key is not an unencrypted PEM private key") from None
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise CredentialError(f"the CA key is {type(ca_key).__name__}: expected an EC or RSA key")
    if ca_key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo) \
            != ca_cert.public_key().public_bytes(serialization.Encoding.DER,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo):
        raise CredentialError("the CA key is not the CA certificate's key")
    try:
        is_ca = ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise CredentialError("the CA certificate is not a CA (no basicConstraints CA:TRUE)")
    try:
        if not ca_cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign:
            raise CredentialError("the CA certificate may not sign certificates (its keyUsage lacks keyCertSign)")
    except x509.ExtensionNotFound:
        pass
    now = dt.datetime.now(dt.UTC)
    if not ca_cert.not_valid_before_utc <= now < ca_cert.not_valid_after_utc:
        raise CredentialError(f"the CA certificate is not valid now (valid {ca_cert.not_valid_before_utc:%Y-%m-%d} to "
                              f"{ca_cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC)")
    if now + validity > ca_cert.not_valid_after_utc:
        raise CredentialError(f"the CA certificate expires at {ca_cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC, "
                              "before the certificate asked for would: ask for fewer hours")
    cert, key = issue_leaf(ca_cert, ca_key, CLI_PRINCIPAL, identity=identity, validity=validity)
    private_dir(directory)
    mark_operator_folder(directory)
    _write_public(directory / CA_CERT_FILE, ca_cert_pem)
    _write_public(directory / f"{CLI_PRINCIPAL}.pem", cert.public_bytes(serialization.Encoding.PEM))
    write_private(directory / f"{CLI_PRINCIPAL}.key", _key_pem(key))
    return cert


def move_cli_files(directory: Path, target: Path) -> list[Path]:
    """Move the CLI's own files out of the deployment's folder into `target` (older layouts kept them beside
    every service's), with a copy of the CA certificate; the moved files' new paths."""
    moved = []
    for name in CLI_OWN_FILES:
        source = directory / name
        if source.exists():
            write_private(target / name, source.read_bytes())
            source.unlink()
            moved.append(target / name)
    if moved:
        _write_public(target / CA_CERT_FILE, _read(directory / CA_CERT_FILE, "CA certificate"))
    return moved


def issue_token_keys(directory: Path, only_missing: bool = True, cli_directory: Path | None = None) -> list[Path]:
    """Ed25519 signing keys and HMAC secrets; with only_missing, keep existing ones. The CLI's signing key goes
    to `cli_directory`, or where its other files are when None."""
    written = []
    for principal in SIGNING_PRINCIPALS:
        private, public = signing_key_path(directory, principal), verify_key_path(directory, principal)
        if principal == CLI_PRINCIPAL and cli_directory is not None:
            private = cli_directory / private.name
        if only_missing and private.exists() and public.exists():
            continue
        signing = ed25519.Ed25519PrivateKey.generate()
        write_private(private, _key_pem(signing))
        _write_public(public, signing.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        written += [private, public]
    for principal in SECRET_PRINCIPALS:
        if only_missing and secret_path(directory, principal).exists():
            continue
        write_private(secret_path(directory, principal), secrets.token_hex(32).encode())
        written.append(secret_path(directory, principal))
    return written


def identity_files(directory: Path, principal: str) -> list[Path]:
    """What one principal may hold: its own key and certificate, the CA certificate (never
    the CA key), its own token-signing key and secret if it has them, and the public keys
    that verify other principals' tokens (public: whoever holds them can only verify)."""
    files = [directory / CA_CERT_FILE, cert_path(directory, principal), key_path(directory, principal)]
    if principal in SIGNING_PRINCIPALS:
        files.append(signing_key_path(directory, principal))
    if principal in SECRET_PRINCIPALS:
        files.append(secret_path(directory, principal))
    return files + [verify_key_path(directory, signer) for signer in SIGNING_PRINCIPALS]


def is_private_file(path: Path) -> bool:
    """Key material no other principal may hold (keys and secrets; certificates and .pub are public)."""
    return path.name.endswith((".key", ".secret"))


def export_identity(directory: Path, principal: str, target: Path) -> Path:
    """Copy one principal's files (identity_files) into `target`, a 0700 folder holding nothing else.

    `tessera up` hands each process such a folder instead of the deployment's
    whole certificate folder; Kubernetes mounts the same set from one Secret.
    """
    private_dir(target)
    wanted = identity_files(directory, principal)
    names = {path.name for path in wanted}
    for stale in target.iterdir():
        if stale.name not in names:
            stale.unlink()
    for source in wanted:
        write_private(target / source.name, _read(source, "credential file"))  # 0600, public ones too
    return target


def _mounted_for_our_group(info: os.stat_result, mode: int) -> bool:
    """A Kubernetes Secret volume with the pod's fsGroup: root owns the file, the pod's own group
    (ours) may read it, nobody else and nobody may write. Our own files never qualify."""
    return (info.st_uid == 0 != os.getuid() and info.st_gid == os.getgid()
            and not mode & 0o137)


def _check_private_mode(path: Path, what: str) -> None:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise CredentialError(f"{what} {path} does not exist (run 'tessera certs')") from None
    mode = stat.S_IMODE(info.st_mode)
    if _mounted_for_our_group(info, mode):
        return
    if mode & 0o077:
        raise CredentialError(
            f"{what} {path} has permissions {mode:04o}; it must not be readable by "
            f"group or others (chmod 600 {path})"
        )


def load_signing_key(path: Path) -> ed25519.Ed25519PrivateKey:
    """A service's own Ed25519 token-signing key."""
    _check_private_mode(path, "signing key")
    try:
        key = serialization.load_pem_private_key(_read(path, "signing key"), password=None)
    except (ValueError, TypeError):
        raise CredentialError(f"signing key {path} is not an unencrypted PEM private key") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise CredentialError(f"signing key {path} is not an Ed25519 key")
    return key


def load_verify_key(path: Path) -> ed25519.Ed25519PublicKey:
    """Another service's Ed25519 public key, to verify the tokens it signs."""
    try:
        key = serialization.load_pem_public_key(_read(path, "public key"))
    except ValueError:
        raise CredentialError(f"public key {path} is not a PEM public key") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise CredentialError(f"public key {path} is not an Ed25519 key")
    return key


def load_secret(path: Path) -> bytes:
    """A 32-byte HMAC secret, stored as hex."""
    _check_private_mode(path, "secret")
    try:
        secret = bytes.fromhex(_read(path, "secret").decode("ascii").strip())
    except (ValueError, UnicodeDecodeError):
        secret = b""
    if len(secret) < 32:
        raise CredentialError(f"secret {path} must hold at least 32 bytes as hex")
    return secret


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CredentialError(f"{what} {path} does not exist (run 'tessera certs')") from None
    except OSError as exc:
        raise CredentialError(f"{what} {path} cannot be read: {exc.strerror}") from None


def _parse_cert(data: bytes, path: Path, what: str) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError:
        raise CredentialError(f"{what} {path} is not a PEM certificate") from None


def ca_bundle(data: bytes, path: Path) -> list[x509.Certificate]:
    """Every CA certificate in a bundle: SPIRE and cert-manager publish the next CA beside the current one
    before they switch, so a bundle may hold several."""
    try:
        found = x509.load_pem_x509_certificates(data)
    except ValueError:
        found = []
    if not found:
        raise CredentialError(f"CA certificate {path} holds no PEM certificate")
    return found


def issued_directly(cert: x509.Certificate, cas: list[x509.Certificate]) -> bool:
    """Whether one of `cas` signed `cert` itself (no intermediate)."""
    for ca in cas:
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return True
    return False


def _sans(cert: x509.Certificate, kind: type[x509.GeneralName]) -> list[str]:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return ext.value.get_values_for_type(kind)


def uri_sans(cert: x509.Certificate) -> list[str]:
    return _sans(cert, x509.UniformResourceIdentifier)


def dns_sans(cert: x509.Certificate) -> list[str]:
    return _sans(cert, x509.DNSName)


def missing_server_name(credentials: Credentials) -> str | None:
    """The DNS name a gRPC service's certificate lacks but clients on gRPC's own TLS check (None: it has it, or
    the principal serves no gRPC)."""
    if credentials.principal not in GRPC_SERVICE_NAMES:
        return None
    name = server_name_for(credentials.principal)
    return None if name in dns_sans(x509.load_pem_x509_certificate(credentials.cert_pem)) else name


def add_server_names(directory: Path) -> list[str]:
    """Reissue, from the deployment's own CA, the service certificates an older version made without the DNS
    name clients check; the principals reissued. The CA stays, so every other certificate stays good."""
    ca_file, ca_key_file = directory / CA_CERT_FILE, ca_key_path(directory)
    if not ca_key_file.exists():
        return []
    ca_cert = _parse_cert(_read(ca_file, "CA certificate"), ca_file, "CA certificate")
    ca_key = None
    reissued = []
    for principal in GRPC_SERVICE_NAMES:
        own = load_credentials(principal, ca_file, cert_path(directory, principal), key_path(directory, principal))
        if missing_server_name(own) is None:
            continue
        if ca_key is None:
            _check_private_mode(ca_key_file, "CA key")
            ca_key = serialization.load_pem_private_key(_read(ca_key_file, "CA key"), password=None)
        cert, key = issue_leaf(ca_cert, ca_key, principal)
        write_private(key_path(directory, principal), _key_pem(key))
        _write_public(cert_path(directory, principal), cert.public_bytes(serialization.Encoding.PEM))
        reissued.append(principal)
    return reissued


def load_credentials(principal: str, ca_file: Path, cert_file: Path, key_file: Path) -> Credentials:
    """Read and check one principal's credentials; raise CredentialError otherwise."""
    ca_pem = _read(ca_file, "CA certificate")
    cas = ca_bundle(ca_pem, ca_file)
    cert_pem = _read(cert_file, "certificate")
    cert = _parse_cert(cert_pem, cert_file, "certificate")

    _check_private_mode(key_file, "private key")
    key_pem = _read(key_file, "private key")
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        raise CredentialError(f"private key {key_file} is not an unencrypted PEM private key") from None

    if not issued_directly(cert, cas):
        raise CredentialError(f"certificate {cert_file} was not issued by the CA in {ca_file}")
    now = dt.datetime.now(dt.UTC)
    if not (cert.not_valid_before_utc <= now <= cert.not_valid_after_utc):
        raise CredentialError(
            f"certificate {cert_file} is not valid now (valid {cert.not_valid_before_utc:%Y-%m-%d} "
            f"to {cert.not_valid_after_utc:%Y-%m-%d}); run 'tessera certs'"
        )
    pub = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.PEM, pub) != cert.public_key().public_bytes(
        serialization.Encoding.PEM, pub
    ):
        raise CredentialError(f"private key {key_file} does not match certificate {cert_file}")
    expected = spiffe_id_for(principal)
    if uri_sans(cert) != [expected]:
        raise CredentialError(
            f"certificate {cert_file} carries URI SANs {uri_sans(cert)}, expected exactly [{expected}]"
        )
    # Clients on gRPC's own TLS check a server's DNS name only: a certificate that also carries another
    # service's name would let its holder answer as that service.
    others = sorted(set(dns_sans(cert)) & {server_name_for(p) for p in PRINCIPAL_NAMES if p != principal})
    if others:
        raise CredentialError(f"certificate {cert_file} also carries {', '.join(others)}, another service's name")
    return Credentials(principal, expected, ca_pem, cert_pem, key_pem, ca_file, cert_file, key_file)
