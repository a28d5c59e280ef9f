"""Settings of the browser gateway (TESSERA_WEB_*)."""

from __future__ import annotations

from pydantic import Field, SecretStr

from shared.config import ServiceSettings


class WebSettings(ServiceSettings):
    # Signs the session cookie: the same value on every replica (a Secret on Kubernetes), at least 32
    # characters. Empty: a random key per process, so sessions end with it and do not cross replicas.
    session_secret: SecretStr = SecretStr("")
    # Served to people over https (behind a TLS-terminating ingress): session cookies are marked Secure and
    # browsers are told to keep to https (Strict-Transport-Security).
    secure_cookies: bool = False
    # Host names this gateway answers to. Anything else is refused, so a page on another name that
    # resolves to this machine (DNS rebinding) cannot become "same origin" with it.
    allowed_hosts: list[str] = Field(default_factory=lambda: ["127.0.0.1", "localhost", "[::1]"])
    # Seconds without an event after which the event streams send a keep-alive comment (proxies often cut
    # connections idle for 30-60 s).
    keepalive_seconds: float = Field(default=15.0, gt=0, le=300)
