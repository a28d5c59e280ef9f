"""Typed service configuration from environment variables.

Every setting has a typed default; a bad value stops startup with one line
naming the variable (`ConfigError`). Per-service settings use the prefix
`TESSERA_<SERVICE>_`; deployment-wide ones are `TESSERA_CA_CERT`,
`TESSERA_CERT_DIR`, `TESSERA_LOG_LEVEL` and `TESSERA_CLIENT_TLS`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.identity.certs import CA_CERT_FILE, cert_path, key_path
from shared.identity.principals import GRPC_SERVICE_NAMES, PROCESS_NAMES, IdentitySchemeError, identity_scheme
from shared.paths import cert_dir

DEFAULT_PORTS = {
    "agent": 50051, "compiler": 50052, "resources": 50053, "capabilities": 50054, "host": 50055, "web": 8080,
    "mcp": 8090,
}
_ADDRESS = re.compile(r"^(?P<host>[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:]+\]):(?P<port>\d{1,5})$")


class ConfigError(Exception):
    """A setting that cannot be used; the message names the variable."""


class ServiceSettings(BaseSettings):
    """Settings of one process; build with `load_settings(name)`."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    name: str = Field(exclude=True)
    listen_host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)
    cert: Path | None = None
    key: Path | None = None
    ca_cert: Path | None = Field(default=None, validation_alias=AliasChoices("TESSERA_CA_CERT"))
    cert_dir: Path | None = Field(default=None, validation_alias=AliasChoices("TESSERA_CERT_DIR"))
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", validation_alias=AliasChoices("TESSERA_LOG_LEVEL")
    )
    # Seconds in-flight RPCs get to finish after SIGTERM.
    grace_seconds: float = Field(default=5.0, ge=0, le=300)
    # A plaintext port serving grpc.health.v1 only (Kubernetes probes carry no client certificate);
    # unset: none. Web has no such port: its /healthz is on its own HTTP port.
    health_port: int | None = Field(default=None, ge=0, le=65535)
    # A connection this old gets HTTP/2 GOAWAY (calls under way finish on it): its client re-dials, and
    # with round_robin over every replica's address (shared.rpc.channels) a replica added since gets its share.
    max_connection_age_seconds: float = Field(default=120.0, ge=1, le=86400)
    # A service with a database: "run" migrates its schema at start; "await" waits, not ready, for the migration
    # Job to have done it, and its role needs no DDL (shared.data.db.prepare_schema).
    migrations: Literal["run", "await"] = "run"
    # How long to wait, not ready, for a database that does not answer yet (0: fail at once, exit 2).
    dependency_wait_seconds: float = Field(default=0, ge=0, le=10_000_000)
    # Written (atomically, JSON) once the process serves; launchers wait on it.
    ready_file: Path | None = None

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _fill_credential_paths(self) -> ServiceSettings:
        directory = self.cert_dir or cert_dir()
        object.__setattr__(self, "cert_dir", directory)
        object.__setattr__(self, "ca_cert", self.ca_cert or directory / CA_CERT_FILE)
        object.__setattr__(self, "cert", self.cert or cert_path(directory, self.name))
        object.__setattr__(self, "key", self.key or key_path(directory, self.name))
        return self


S = TypeVar("S", bound=ServiceSettings)


def peer_target(peer: str) -> str:
    variable = f"TESSERA_{peer.upper()}_ADDR"
    value = os.environ.get(variable) or f"127.0.0.1:{DEFAULT_PORTS[peer]}"
    match = _ADDRESS.match(value)
    if not match or not 0 < int(match["port"]) <= 65535:
        raise ConfigError(f"{variable}={value!r}: expected host:port, e.g. 127.0.0.1:{DEFAULT_PORTS[peer]}")
    return value


# How Tessera's clients check the server they dial (deployment-wide):
#   native         gRPC's own TLS checks the chain and the DNS name derived from the peer's SPIFFE id
#                  (identity.server_name_for); certificates must carry that name.
#   spiffe-bridge  an in-process bridge checks the peer's URI SAN itself (shared.rpc.spiffe_channels), for identity
#                  providers that issue certificates with the URI SAN alone; it costs a copy of every byte.
CLIENT_TLS_VARIABLE = "TESSERA_CLIENT_TLS"
# The database `tessera semantic init` drafts from and `semantic check` binds to, when no URL is given: from the
# environment, which keeps a password out of process listings.
WAREHOUSE_URL_VARIABLE = "TESSERA_WAREHOUSE_URL"
CLIENT_TLS_NATIVE = "native"
CLIENT_TLS_SPIFFE_BRIDGE = "spiffe-bridge"


def client_tls_mode() -> str:
    value = os.environ.get(CLIENT_TLS_VARIABLE) or CLIENT_TLS_NATIVE
    if value not in (CLIENT_TLS_NATIVE, CLIENT_TLS_SPIFFE_BRIDGE):
        raise ConfigError(f"{CLIENT_TLS_VARIABLE}={value!r}: expected {CLIENT_TLS_NATIVE} (the default) or "
                          f"{CLIENT_TLS_SPIFFE_BRIDGE}")
    return value


def _env_name(settings_class: type[ServiceSettings], field: str, prefix: str) -> str:
    alias = settings_class.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices):
        return str(alias.choices[0])
    return prefix + field.upper()


def load_settings(name: str, settings_class: type[S] = ServiceSettings) -> S:
    """Settings of process `name`; `settings_class` may add service-specific fields.

    Every field of the class reads TESSERA_<NAME>_<FIELD> unless it declares
    its own variable with a validation alias.
    """
    if name not in PROCESS_NAMES:
        raise ConfigError(f"unknown service {name!r}; known: {', '.join(PROCESS_NAMES)}")
    prefix = f"TESSERA_{name.upper()}_"

    class _Settings(settings_class):
        model_config = SettingsConfigDict(env_prefix=prefix, extra="ignore", frozen=True)
        port: int = Field(default=DEFAULT_PORTS[name], ge=0, le=65535)

    # On Kubernetes, secret settings (database URLs with passwords, the model key) are files in
    # the service's own mounted Secret, named like their variables in lower case
    # (tessera_host_database_url): never environment variables, which leak into process listings.
    secrets_dir = os.environ.get("TESSERA_SECRETS_DIR") or None
    if secrets_dir and not Path(secrets_dir).is_dir():
        raise ConfigError(f"TESSERA_SECRETS_DIR={secrets_dir!r}: not a directory")
    try:
        settings = _Settings(name=name, _secrets_dir=secrets_dir)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "?"
        variable = _env_name(_Settings, field, prefix) if field in _Settings.model_fields else field
        if first["type"] == "missing":
            raise ConfigError(f"{variable} is not set (an environment variable, or the file {variable.lower()} "
                              f"in TESSERA_SECRETS_DIR)") from None
        value = os.environ.get(variable, first.get("input"))
        raise ConfigError(f"{variable}={value!r}: {first['msg']}") from None
    # Peers and how to dial them are resolved now so a malformed setting fails at startup.
    for peer in GRPC_SERVICE_NAMES:
        peer_target(peer)
    client_tls_mode()
    try:
        identity_scheme()
    except IdentitySchemeError as exc:
        raise ConfigError(str(exc)) from None
    return settings
