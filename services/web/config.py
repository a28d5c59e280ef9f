"""Settings of the browser gateway (TESSERA_WEB_*)."""

from __future__ import annotations

from pydantic import Field, SecretStr, model_validator

from shared.config import ServiceSettings
from shared.identity.public_url import follow_public_url

LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")


class WebSettings(ServiceSettings):
    # Signs the session cookie: the same value on every replica (a Secret on Kubernetes), at least 32
    # characters. Empty: a random key per process, so sessions end with it and do not cross replicas.
    session_secret: SecretStr = SecretStr("")
    # OpenID Connect sign-in (authorization code with PKCE), off while the issuer is empty. The person's id and
    # tenant come from the ID token's claims: `oidc_person_claim`, and `oidc_tenant_claim` or one fixed
    # `oidc_tenant` for everyone. A confidential client has a secret; a public one uses PKCE alone.
    oidc_issuer: str = Field(default="", max_length=500)
    oidc_client_id: str = Field(default="", max_length=200)
    oidc_client_secret: SecretStr = SecretStr("")
    oidc_scopes: str = "openid profile email"
    oidc_person_claim: str = "sub"
    oidc_tenant_claim: str = ""
    oidc_tenant: str = ""
    oidc_name_claim: str = "name"
    oidc_provider_name: str = Field(default="your organisation", max_length=80)  # "Sign in with …"
    # The next three follow TESSERA_PUBLIC_URL where they are not set (shared/identity/public_url.py).
    # Where people's browsers reach web (e.g. https://tessera.example.com): the OpenID redirect URI is built
    # from it. Empty: from each request's own scheme and host.
    public_url: str = ""
    # Served to people over https (behind a TLS-terminating ingress): session cookies are marked Secure and
    # browsers are told to keep to https (Strict-Transport-Security).
    secure_cookies: bool = False
    # Host names this gateway answers to. Anything else is refused, so a page on another name that
    # resolves to this machine (DNS rebinding) cannot become "same origin" with it. The local names stay
    # allowed beside the public one: the orchestrator's probes ask for localhost.
    allowed_hosts: list[str] = Field(default_factory=lambda: list(LOCAL_HOSTS))
    # How long a replica relies on the broker's answer about a session (seconds): a session ended on any replica
    # (sign-out, `tessera persons sign-out`) is refused on every replica within this. 0: ask on every request.
    session_check_seconds: float = Field(default=5.0, ge=0, le=30)
    # Seconds without an event after which the event streams send a keep-alive comment (proxies often cut
    # connections idle for 30-60 s).
    keepalive_seconds: float = Field(default=15.0, gt=0, le=300)
    # How long a replica relies on the host's answer that a person's session may watch a surface (seconds): a
    # viewer the host no longer allows stops receiving within this.
    viewer_access_seconds: float = Field(default=5.0, gt=0, le=60)
    # The browsers watching a surface here are woken at most once per this many milliseconds when there are many
    # of them (a person's own few tabs: at once): a burst goes out in fewer, larger writes (0: every change).
    wake_interval_ms: float = Field(default=50.0, ge=0, le=1_000)

    @model_validator(mode="after")
    def _follow_public_url(self) -> WebSettings:
        return follow_public_url(self, lambda url: {"public_url": url.origin, "secure_cookies": url.https,
                                                    "allowed_hosts": [url.host, *LOCAL_HOSTS]})

    @model_validator(mode="after")
    def _oidc_is_complete(self) -> WebSettings:
        if self.oidc_issuer:
            if not self.oidc_issuer.startswith(("https://", "http://")):
                raise ValueError("TESSERA_WEB_OIDC_ISSUER: the provider's issuer URL (https://…)")
            if not self.oidc_client_id:
                raise ValueError("TESSERA_WEB_OIDC_CLIENT_ID: required with TESSERA_WEB_OIDC_ISSUER")
            if bool(self.oidc_tenant_claim) == bool(self.oidc_tenant):
                raise ValueError("set one of TESSERA_WEB_OIDC_TENANT_CLAIM (a claim naming each person's tenant) "
                                 "or TESSERA_WEB_OIDC_TENANT (one tenant for everyone who signs in)")
        return self
