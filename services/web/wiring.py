"""How web is put together (§3): its signing key, cookie sealing and sign-in provider from its settings; app.py
serves the browser app and its API over them (the peers' channels belong to the server's event loop, so the app
opens them when it starts)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from services.web.config import WebSettings
from services.web.oidc import OidcConfig
from services.web.session import Assertions, SessionCookies, cookie_key
from shared.identity.certs import Credentials, load_signing_key, signing_key_path
from shared.logs import log

logger = logging.getLogger("tessera.web")


@dataclass(frozen=True, kw_only=True)
class WebParts:
    settings: WebSettings
    credentials: Credentials  # web's own mTLS identity, for the channels to host, agent and capabilities
    assertions: Assertions  # signs the person's actor assertions with web's key
    cookies: SessionCookies
    oidc: OidcConfig | None  # None: sign-in by one-time link only


def _cookies(settings: WebSettings) -> SessionCookies:
    secret, shared = cookie_key(settings.session_secret.get_secret_value())
    if not shared:
        log(logger, logging.WARNING, "TESSERA_WEB_SESSION_SECRET is not set: cookies are sealed with a key of "
            "this process only, so browser sessions will not survive a restart of web and will not work across "
            "web replicas; give every replica the same secret to keep them")
    return SessionCookies(secret)


def _oidc(settings: WebSettings) -> OidcConfig | None:
    if not settings.oidc_issuer:
        return None
    return OidcConfig(settings.oidc_issuer, settings.oidc_client_id, settings.oidc_client_secret.get_secret_value(),
                      settings.oidc_scopes, settings.oidc_person_claim, settings.oidc_tenant_claim,
                      settings.oidc_tenant, settings.oidc_name_claim, settings.public_url)


def build(settings: WebSettings, credentials: Credentials) -> WebParts:
    """Web's parts; a missing key or a bad session secret raises (CredentialError, SessionSecretError)."""
    signing_key = load_signing_key(signing_key_path(settings.cert_dir, "web"))
    return WebParts(settings=settings, credentials=credentials, assertions=Assertions(signing_key),
                    cookies=_cookies(settings), oidc=_oidc(settings))
