"""A process's own certificate, renewed in place without a restart.

cert-manager's CSI driver (and `tessera certs --force`) rewrite a service's
certificate and key files before they expire. `RenewingCredentials` notices a
change of the files (inode, size, mtime) and loads them again with the same
checks as at startup (issued directly by the CA, our SPIFFE id, key matching
the certificate); a pair that fails them — say, caught half-written — is not
used: the current one stays, and the problem is logged once.

The CA bundle is watched too: SPIRE and cert-manager publish their next CA
in the bundle before they sign with it, and a renewed certificate may come
from it. A new bundle is used once a certificate checked against it loads.

The server side uses it through `grpc.dynamic_ssl_server_credentials`, whose
fetcher gRPC calls at each new handshake: existing connections keep their
certificate, new ones get the renewed one (and the renewed bundle, which
authz.DirectIssuer also reads).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import grpc

from shared.identity.certs import CredentialError, Credentials, load_credentials
from shared.logs import log

logger = logging.getLogger("tessera.renewal")


def file_stamp(paths: tuple[Path, ...]) -> tuple | None:
    """What changes when any of the files is rewritten or replaced (None: one is missing)."""
    try:
        return tuple((info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
                     for info in (os.stat(p) for p in paths))
    except OSError:
        return None


class RenewingCredentials:
    def __init__(self, initial: Credentials) -> None:
        self._current = initial
        self._paths = tuple(p for p in (initial.ca_file, initial.cert_file, initial.key_file) if p is not None)
        self._stamp = file_stamp(self._paths)
        self._refused: tuple | None = None
        self._lock = threading.Lock()

    @property
    def current(self) -> Credentials:
        self.refresh()
        return self._current

    @property
    def loaded(self) -> Credentials:
        """What is in use, without looking at the files (per-call paths: new handshakes refresh)."""
        return self._current

    def refresh(self) -> bool:
        """Reload when the files changed; True when a renewed certificate is now in use."""
        if len(self._paths) != 3:
            return False
        stamp = file_stamp(self._paths)
        if stamp is None or stamp == self._stamp or stamp == self._refused:
            return False
        with self._lock:
            if stamp == self._stamp:
                return False
            old = self._current
            try:
                renewed = load_credentials(old.principal, old.ca_file, old.cert_file, old.key_file)
            except CredentialError as exc:
                self._refused = stamp
                log(logger, logging.WARNING, "renewed certificate not used; keeping the current one",
                    problem=str(exc))
                return False
            self._current, self._stamp = renewed, stamp
        if renewed.ca_pem != old.ca_pem:
            log(logger, logging.INFO, "CA bundle renewed", file=str(renewed.ca_file))
        if renewed.cert_pem != old.cert_pem:
            log(logger, logging.INFO, "certificate renewed", identity=renewed.identity, file=str(renewed.cert_file))
        return True

    def server_credentials(self) -> grpc.ServerCredentials:
        """mTLS server credentials (client certificates required) that follow renewals."""
        def configuration(credentials: Credentials):
            return grpc.ssl_server_certificate_configuration(
                [(credentials.key_pem, credentials.cert_pem)], root_certificates=credentials.ca_pem)

        def fetch():
            return configuration(self._current) if self.refresh() else None

        return grpc.dynamic_ssl_server_credentials(configuration(self._current), fetch,
                                                   require_client_authentication=True)
