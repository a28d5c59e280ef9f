"""The one address people and outside agents reach Tessera at (TESSERA_PUBLIC_URL, e.g.
https://tessera.example.com), from which what must agree with it is derived: the host names web and the MCP
front answer to, Secure cookies, the WebAuthn relying party and origin, the OpenID redirect, the MCP resource
URL. Each service's own setting still wins where it is set; unset, it follows the public URL. Empty: each
keeps its local default (localhost).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

from shared.config import ConfigError, ServiceSettings

S = TypeVar("S", bound=ServiceSettings)

PUBLIC_URL_VARIABLE = "TESSERA_PUBLIC_URL"
_HOST = re.compile(r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")


@dataclass(frozen=True)
class PublicUrl:
    """Served on the scheme's own port (what an Ingress or Gateway listens on), so the host is also the
    authority browsers send as Host."""

    scheme: str  # "https" (or "http", for a trial without TLS: passkeys then work only on localhost)
    host: str  # lower case

    @property
    def https(self) -> bool:
        return self.scheme == "https"

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host}"


def parse_public_url(value: str) -> PublicUrl:
    """The public URL, or ConfigError naming the variable and what is wrong. Only its plain form is taken,
    `https://<host>` with the host in lower case, because the same text is copied into the Ingress or Gateway
    and the certificate as it is written (components/public)."""
    def refuse(why: str) -> ConfigError:
        return ConfigError(f"{PUBLIC_URL_VARIABLE}={value!r}: {why} (e.g. https://tessera.example.com)")

    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise refuse(f"not a URL: {exc}") from None
    if parts.scheme not in ("https", "http"):
        raise refuse("must start with https:// (or http:// for a trial without TLS)")
    if parts.username is not None or parts.password is not None:
        raise refuse("must not hold a user or password")
    if port is not None or parts.netloc.endswith(":"):
        raise refuse("must not name a port: it is served on the scheme's own (443 for https)")
    if parts.path not in ("", "/") or parts.query or parts.fragment or value.rstrip("/").endswith(("?", "#")):
        raise refuse("must be the origin alone, without a path, query or fragment: Tessera is served at its root")
    host = parts.hostname or ""  # lower-cased by urlsplit
    if not _HOST.match(host) or _ends_in_a_number(host):  # IPv6 has colons; IPv4 ends in a number
        raise refuse("must name the host by its DNS name (passkeys cannot be bound to an IP address)")
    if parts.netloc != host:
        raise refuse("must write the host name in lower case")
    return PublicUrl(parts.scheme, host)


def _ends_in_a_number(host: str) -> bool:
    """Browsers read a host whose last label is a number (127.1, 0x7f.1, 1234) as an IPv4 address."""
    last = host.rsplit(".", 1)[-1]
    return last.isdigit() or last.startswith("0x")


def public_url() -> PublicUrl | None:
    """TESSERA_PUBLIC_URL as set for this process, or None when unset."""
    value = os.environ.get(PUBLIC_URL_VARIABLE, "").strip()
    return parse_public_url(value) if value else None


def follow_public_url(settings: S, derive: Callable[[PublicUrl], dict]) -> S:
    """For a settings model validator: the fields `derive(url)` names take its values, unless set explicitly
    (from the environment or the Secrets directory)."""
    url = public_url()
    if url is not None:
        for field, value in derive(url).items():
            if field not in settings.model_fields_set:
                object.__setattr__(settings, field, value)
    return settings
