"""Principals (from the authz contract) and their SPIFFE ids (from configuration).

`tessera.authz.v1.Principal` is the single list of identities: the contract
names who may call what. Which SPIFFE id a principal's certificate carries
depends on who issues it, so it is configuration, shared by every process of
one deployment:

  TESSERA_TRUST_DOMAIN     the trust domain (default tessera.local)
  TESSERA_SPIFFE_PATH      the path of each workload's id, with {principal}
                           (default /svc/{principal}; on Kubernetes with
                           csi-driver-spiffe or SPIRE: /ns/<namespace>/sa/{principal},
                           the ServiceAccount each pod runs as)
  TESSERA_CLI_SPIFFE_PATH  the operator CLI's path (default /user-agent/cli): a
                           person's tool, not a workload

Any language derives the same mapping from these three values
(clients/ts/src/identity.ts does).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tessera.authz.v1 import authz_pb2

_PREFIX = "PRINCIPAL_"

TRUST_DOMAIN_VARIABLE = "TESSERA_TRUST_DOMAIN"
SPIFFE_PATH_VARIABLE = "TESSERA_SPIFFE_PATH"
CLI_SPIFFE_PATH_VARIABLE = "TESSERA_CLI_SPIFFE_PATH"
IDENTITY_VARIABLES = (TRUST_DOMAIN_VARIABLE, SPIFFE_PATH_VARIABLE, CLI_SPIFFE_PATH_VARIABLE)
DEFAULT_TRUST_DOMAIN = "tessera.local"
DEFAULT_SPIFFE_PATH = "/svc/{principal}"
DEFAULT_CLI_SPIFFE_PATH = "/user-agent/cli"
PRINCIPAL_PLACEHOLDER = "{principal}"
CLI = "cli"

_NUMBERS = {value.name[len(_PREFIX):].lower(): value.number for value in authz_pb2.Principal.DESCRIPTOR.values
            if value.number != authz_pb2.PRINCIPAL_UNSPECIFIED}
_BY_NUMBER = {number: name for name, number in _NUMBERS.items()}

# Every principal with a certificate, in contract order.
PRINCIPAL_NAMES: tuple[str, ...] = tuple(_NUMBERS)
# Processes that serve gRPC (web serves HTTP to browsers and is a gRPC client).
GRPC_SERVICE_NAMES: tuple[str, ...] = ("agent", "compiler", "resources", "capabilities", "host")
# Every process `tessera up` starts: web serves browsers, mcp outside agents (MCP over streamable HTTP).
HTTP_PROCESS_NAMES: tuple[str, ...] = ("web", "mcp")
PROCESS_NAMES: tuple[str, ...] = GRPC_SERVICE_NAMES + HTTP_PROCESS_NAMES

_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


class IdentitySchemeError(ValueError):
    """The identity settings cannot name every principal; the message names the variable."""


def server_name_for_spiffe(spiffe_id: str) -> str:
    """The DNS name a certificate carries beside SPIFFE id `spiffe_id`: its path segments in reverse, then its
    trust domain (spiffe://tessera.local/svc/host -> host.svc.tessera.local).

    gRPC's own TLS checks a server's DNS name, not its URI SAN, so clients dial with this name as the
    expected one; any language derives it from the id alone.
    """
    trust_domain, _, path = spiffe_id.removeprefix("spiffe://").partition("/")
    labels = [*reversed(path.split("/")), *trust_domain.split(".")]
    name = ".".join(labels)
    if not spiffe_id.startswith("spiffe://") or not all(_DNS_LABEL.match(label) for label in labels) \
            or len(name) > 253:
        raise ValueError(f"SPIFFE id {spiffe_id!r} has no DNS form: its trust domain and path segments must be "
                         "lower-case DNS labels")
    return name


@dataclass(frozen=True)
class IdentityScheme:
    """principal name <-> SPIFFE id for one deployment; build with identity_scheme()."""

    trust_domain: str
    path: str  # with {principal}
    cli_path: str

    @functools.cached_property
    def ids(self) -> dict[str, str]:
        return {name: f"spiffe://{self.trust_domain}"
                      + (self.cli_path if name == CLI else self.path.replace(PRINCIPAL_PLACEHOLDER, name))
                for name in PRINCIPAL_NAMES}

    @functools.cached_property
    def principals(self) -> dict[str, str]:
        return {spiffe_id: name for name, spiffe_id in self.ids.items()}

    def server_name(self, name: str) -> str | None:
        """The one DNS name a gRPC server's certificate carries beside its id (web, mcp and the CLI: none)."""
        return server_name_for_spiffe(self.ids[name]) if name in GRPC_SERVICE_NAMES else None

    def check(self) -> IdentityScheme:
        """Raise IdentitySchemeError unless every principal gets its own id with a DNS form."""
        if not all(_DNS_LABEL.match(label) for label in self.trust_domain.split(".")) or len(self.trust_domain) > 200:
            raise IdentitySchemeError(
                f"{TRUST_DOMAIN_VARIABLE}={self.trust_domain!r}: expected a lower-case DNS name, e.g. "
                f"{DEFAULT_TRUST_DOMAIN} or example.org")
        if self.path.count(PRINCIPAL_PLACEHOLDER) != 1 or not self.path.startswith("/") \
                or "{" in self.path.replace(PRINCIPAL_PLACEHOLDER, ""):
            raise IdentitySchemeError(
                f"{SPIFFE_PATH_VARIABLE}={self.path!r}: expected a path starting with / holding "
                f"{PRINCIPAL_PLACEHOLDER} once, e.g. {DEFAULT_SPIFFE_PATH} or /ns/tessera/sa/{PRINCIPAL_PLACEHOLDER}")
        if not self.cli_path.startswith("/") or "{" in self.cli_path:
            raise IdentitySchemeError(
                f"{CLI_SPIFFE_PATH_VARIABLE}={self.cli_path!r}: expected a path starting with /, e.g. "
                f"{DEFAULT_CLI_SPIFFE_PATH}")
        for name, spiffe_id in self.ids.items():
            try:
                server_name_for_spiffe(spiffe_id)
            except ValueError:
                variable = CLI_SPIFFE_PATH_VARIABLE if name == CLI else SPIFFE_PATH_VARIABLE
                raise IdentitySchemeError(
                    f"{variable}: {name}'s SPIFFE id would be {spiffe_id!r}; each path segment must be a lower-case "
                    "DNS label (letters, digits, '-')") from None
        # The operator's id must not have a workload's form: where ids follow ServiceAccounts, anyone who may
        # create an account and a pod with that name would get it.
        workload = re.escape(self.path).replace(re.escape(PRINCIPAL_PLACEHOLDER), _DNS_LABEL.pattern[1:-1])
        if re.fullmatch(workload, self.cli_path):
            raise IdentitySchemeError(
                f"{CLI_SPIFFE_PATH_VARIABLE}={self.cli_path!r} has the workloads' form ({SPIFFE_PATH_VARIABLE}="
                f"{self.path!r}): a workload of that name would hold the operator CLI's SPIFFE id; choose a path "
                f"outside it, e.g. {DEFAULT_CLI_SPIFFE_PATH}")
        return self


@functools.lru_cache(maxsize=8)
def _scheme(trust_domain: str, path: str, cli_path: str) -> IdentityScheme:
    return IdentityScheme(trust_domain, path, cli_path).check()


def scheme_from(env: Mapping[str, str]) -> IdentityScheme:
    """The checked scheme the three variables of `env` set (unset or empty: the defaults)."""
    return _scheme(env.get(TRUST_DOMAIN_VARIABLE) or DEFAULT_TRUST_DOMAIN,
                   env.get(SPIFFE_PATH_VARIABLE) or DEFAULT_SPIFFE_PATH,
                   env.get(CLI_SPIFFE_PATH_VARIABLE) or DEFAULT_CLI_SPIFFE_PATH)


def identity_scheme() -> IdentityScheme:
    """This process's scheme, from its environment (checked once per distinct setting)."""
    return scheme_from(os.environ)


def spiffe_id_for(principal: str) -> str:
    try:
        return identity_scheme().ids[principal]
    except KeyError:
        raise KeyError(f"unknown principal {principal!r}; known: {', '.join(PRINCIPAL_NAMES)}") from None


def server_name_for(principal: str) -> str:
    """The DNS name principal's certificate carries and clients expect (server_name_for_spiffe)."""
    return server_name_for_spiffe(spiffe_id_for(principal))


def principal_for_spiffe(spiffe_id: str) -> str | None:
    return identity_scheme().principals.get(spiffe_id)


def principal_for_enum(number: int) -> str:
    return _BY_NUMBER[number]
