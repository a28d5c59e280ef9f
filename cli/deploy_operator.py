"""`tessera deploy cli-certificate`: the operator CLI's certificate for a production deployment whose identities come
from cert-manager (csi-driver-spiffe, or the CSI driver with approver-policy).

The CLI's SPIFFE id is not a workload's (no ServiceAccount holds it), so no identity provider issues it to a pod; it
is signed here by the trust domain's CA, whose key the operator reads from the issuer's Secret for the moment (anyone
who may read that Secret may mint any identity already, so this widens nothing). The key is used, never written. The
certificate is short-lived (DEFAULT_HOURS) and for client use only, and goes into the operator folder of the
deployment's keys (keys/cli) beside the CLI's signing key (`tessera deploy secrets --production`), so that folder is
the CLI's whole TESSERA_CERT_DIR.
With SPIRE, `spire-server x509 mint` makes the same three files (docs/deploy-kubernetes.md).
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from cli.deploy_identity import SCHEME
from cli.deploy_secrets import operator_folder
from shared.identity.certs import CA_CERT_FILE, CLI_PRINCIPAL, CredentialError, issue_cli_certificate
from shared.identity.principals import CLI_SPIFFE_PATH_VARIABLE, SPIFFE_PATH_VARIABLE, TRUST_DOMAIN_VARIABLE

DEFAULT_HOURS = 12
MAX_HOURS = 24 * 30


def issue(ca_cert: Path, ca_key: Path, keys: Path, hours: int) -> int:
    """Mint into `keys`' operator folder (keys/cli), beside the CLI's signing key."""
    folder = operator_folder(keys)
    if not 1 <= hours <= MAX_HOURS:
        print(f"tessera: error: --hours {hours}: expected 1 to {MAX_HOURS}", file=sys.stderr)
        return 2
    try:
        cert_pem, key_pem = ca_cert.read_bytes(), ca_key.read_bytes()
        cert = issue_cli_certificate(cert_pem, key_pem, SCHEME.ids[CLI_PRINCIPAL], folder, dt.timedelta(hours=hours))
    except OSError as exc:
        print(f"tessera: error: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    except CredentialError as exc:
        print(f"tessera: error: {ca_cert}, {ca_key}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {folder / f'{CLI_PRINCIPAL}.pem'} ({SCHEME.ids[CLI_PRINCIPAL]}, until "
          f"{cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC), its key and the CA certificate ({CA_CERT_FILE}).")
    print(f"Use it through kubectl port-forward (docs/deploy-kubernetes.md, the operator CLI in production), e.g.:\n"
          f"  TESSERA_CERT_DIR={folder} {TRUST_DOMAIN_VARIABLE}={SCHEME.trust_domain} "
          f"{SPIFFE_PATH_VARIABLE}='{SCHEME.path}' {CLI_SPIFFE_PATH_VARIABLE}={SCHEME.cli_path} \\\n"
          f"    TESSERA_CAPABILITIES_ADDR=127.0.0.1:50054\n"
          "adding TESSERA_CLIENT_TLS=spiffe-bridge where the services' certificates carry their SPIFFE id alone "
          "(csi-driver-spiffe, SPIRE), and the CLI's signing key (cli-signing.key, made by `tessera deploy secrets "
          "--production`) beside it.")
    return 0
