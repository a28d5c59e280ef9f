"""Principals and their SPIFFE ids, read from the authz contract itself.

`tessera.authz.v1.Principal` is the single list of identities; each value
carries its URI SAN in the `spiffe_id` option, so Python, Node and any other
client derive the same mapping from the same .proto.
"""

from __future__ import annotations

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


def principal_for_spiffe(spiffe_id: str) -> str | None:
    return _BY_SPIFFE.get(spiffe_id)


def principal_for_enum(number: int) -> str:
    return _BY_NUMBER[number]
