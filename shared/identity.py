"""Principals and their SPIFFE ids, read from the authz contract itself.

`tessera.authz.v1.Principal` is the single list of identities; each value
carries its URI SAN in the `spiffe_id` option, so Python, Node and any other
client derive the same mapping from the same .proto.
"""

from __future__ import annotations

import re

from tessera.authz.v1 import authz_pb2

_PREFIX = "PRINCIPAL_"


def _principal_table() -> dict[str, tuple[int, str]]:
    table: dict[str, tuple[int, str]] = {}
    for value in authz_pb2.Principal.DESCRIPTOR.values:
        if value.number == authz_pb2.PRINCIPAL_UNSPECIFIED:
            continue
        spiffe_id = value.GetOptions().Extensions[authz_pb2.spiffe_id]
        if not spiffe_id:
            raise RuntimeError(f"authz.proto: {value.name} has no spiffe_id option")
        table[value.name[len(_PREFIX):].lower()] = (value.number, spiffe_id)
    return table


_TABLE = _principal_table()

# Every principal with a certificate, in contract order.
PRINCIPAL_NAMES: tuple[str, ...] = tuple(_TABLE)
# Processes that serve gRPC (web serves HTTP to browsers and is a gRPC client).
GRPC_SERVICE_NAMES: tuple[str, ...] = ("agent", "compiler", "resources", "capabilities", "host")
# Every process `tessera up` starts: web serves browsers, mcp outside agents (MCP over streamable HTTP).
HTTP_PROCESS_NAMES: tuple[str, ...] = ("web", "mcp")
PROCESS_NAMES: tuple[str, ...] = GRPC_SERVICE_NAMES + HTTP_PROCESS_NAMES

_BY_SPIFFE = {spiffe: name for name, (_, spiffe) in _TABLE.items()}
_BY_NUMBER = {number: name for name, (number, _) in _TABLE.items()}


def spiffe_id_for(principal: str) -> str:
    try:
        return _TABLE[principal][1]
    except KeyError:
        raise KeyError(f"unknown principal {principal!r}; known: {', '.join(PRINCIPAL_NAMES)}") from None


_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


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


def server_name_for(principal: str) -> str:
    """The DNS name principal's certificate carries and clients expect (server_name_for_spiffe)."""
    return server_name_for_spiffe(spiffe_id_for(principal))


def principal_for_spiffe(spiffe_id: str) -> str | None:
    return _BY_SPIFFE.get(spiffe_id)


def principal_for_enum(number: int) -> str:
    return _BY_NUMBER[number]
