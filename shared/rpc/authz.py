"""Caller authorization declared in the contracts.

Each RPC names its allowed principals with the `(tessera.authz.v1.callers)`
method option. `CallerTable` reads those declarations from the descriptors
of the services a process serves; `caller_identity` takes the caller's
SPIFFE id from the verified peer certificate (`context.auth_context()`),
never from request metadata. Anything not declared is denied.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping

import grpc
from cryptography import x509
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

from shared.identity.certs import issued_directly
from shared.identity.principals import principal_for_enum, spiffe_id_for
from shared.rpc.refusals import Denied
from tessera.authz.v1 import authz_pb2

# The only service callable without a declaration: orchestrators and load
# balancers must be able to probe readiness.
EXEMPT_PREFIXES = ("/grpc.health.v1.Health/",)

# Standard services we serve but whose .proto we do not own, so their callers
# are declared here instead: reflection is an operator's debugging aid.
EXTERNAL_CALLERS: Mapping[str, tuple[str, ...]] = {
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": ("cli",),
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo": ("cli",),
}

CALLER_NOT_ALLOWED = "CALLER_NOT_ALLOWED"
CALLER_NOT_ISSUED_BY_CA = "CALLER_NOT_ISSUED_BY_CA"


def declared_callers(method: MethodDescriptor) -> tuple[str, ...]:
    """Principal names declared for one RPC (empty when undeclared)."""
    options = method.GetOptions()
    if not options.HasExtension(authz_pb2.callers):
        return ()
    policy = options.Extensions[authz_pb2.callers]
    return tuple(
        principal_for_enum(number) for number in policy.allow if number != authz_pb2.PRINCIPAL_UNSPECIFIED
    )


class CallerTable:
    """Full method name (`/pkg.Service/Method`) → allowed SPIFFE ids."""

    def __init__(
        self, services: Iterable[ServiceDescriptor], external: Mapping[str, tuple[str, ...]] = EXTERNAL_CALLERS
    ):
        self._allowed: dict[str, frozenset[str]] = {}
        for service in services:
            for method in service.methods:
                path = f"/{service.full_name}/{method.name}"
                self._allowed[path] = frozenset(spiffe_id_for(p) for p in declared_callers(method))
        for path, principals in external.items():
            self._allowed[path] = frozenset(spiffe_id_for(p) for p in principals)

    def allowed(self, method: str) -> frozenset[str]:
        return self._allowed.get(method, frozenset())

    def methods(self) -> list[str]:
        return sorted(self._allowed)


class DirectIssuer:
    """Accepts a peer certificate only when a CA of the deployment's bundle signed it itself.

    gRPC core verifies the chain, but it also accepts a path through an
    intermediate, even one that the CA's pathlen:0 forbids. Every identity is
    issued directly by a CA of the bundle, so anything else is refused.
    `bundle` returns the bundle in use now: it changes when the issuer
    publishes its next CA (shared.rpc.renewal).
    """

    def __init__(self, bundle: Callable[[], bytes]) -> None:
        self._bundle = bundle

        # Callers reuse a handful of certificates: verify each once per bundle, not per call.
        @functools.lru_cache(maxsize=256)
        def issued(ca_pem: bytes, leaf_pem: bytes) -> bool:
            return issued_directly(x509.load_pem_x509_certificate(leaf_pem), x509.load_pem_x509_certificates(ca_pem))

        self._issued = issued

    def issued(self, leaf_pem: bytes) -> bool:
        try:
            return self._issued(self._bundle(), leaf_pem)
        except ValueError:
            return False


def caller_identity(context: grpc.aio.ServicerContext, auth: Mapping | None = None) -> str | None:
    """The caller's SPIFFE id from its verified certificate, or None.

    gRPC core sets `peer_spiffe_id` only when the certificate chain verified
    against our CA and carries exactly one well-formed SPIFFE URI SAN.
    `auth`: the call's auth context when the caller already read it.
    """
    auth = context.auth_context() if auth is None else auth
    if auth.get("transport_security_type") != [b"ssl"]:
        return None
    values = auth.get("peer_spiffe_id")
    if not values or len(values) != 1:
        return None
    return values[0].decode("ascii", "replace")


def check_caller(table: CallerTable, method: str, context: grpc.aio.ServicerContext,
                 issuer: DirectIssuer | None = None) -> str:
    """Return the caller's identity if `method` declares it (and, given an issuer, the
    caller's certificate came straight from the deployment CA); raise otherwise."""
    auth = context.auth_context()  # built anew by each call: read it once per RPC
    identity = caller_identity(context, auth)
    if identity is not None and identity in table.allowed(method):
        if issuer is not None and not issuer.issued((auth.get("x509_pem_cert") or [b""])[0]):
            raise Denied(CALLER_NOT_ISSUED_BY_CA,
                         f"caller {identity} presented a certificate not issued directly by the deployment CA",
                         {"method": method, "caller": identity})
        return identity
    raise Denied(CALLER_NOT_ALLOWED, f"caller {identity or '(no verified identity)'} may not call {method}",
                 {"method": method, "caller": identity or ""})
