"""`tessera persons enroll PERSON`: a one-time link that signs a person in to web and lets them add a passkey.

The link is printed here, on the operator's terminal, and nowhere else: the
broker keeps only its SHA-256, web never logs it, and it works once within ten
minutes. The token travels in the link's fragment (after `#`), which browsers
never send to a server, so it does not end up in a proxy's access log either;
the page reads it and hands it to web once.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from cli.launcher import cli_credentials
from shared.actors import assert_actor
from shared.certs import load_signing_key, signing_key_path
from shared.channels import sync_channel
from shared.contracts import invoke
from tessera.capabilities.v1 import capabilities_pb2 as cap

OPERATOR = ("operator", "local", "Operator")
LOCAL_PERSON = ("local-user", "local", "Local user")  # the development person `tessera demo` signs in


def web_url(address: str) -> str:
    """Web's address as a person opens it: `localhost` rather than 127.0.0.1, because a passkey belongs to a
    domain name (WebAuthn refuses IP addresses) and the development relying party is `localhost`."""
    host, _, port = address.rpartition(":")
    if host in ("127.0.0.1", "[::1]", "0.0.0.0", ""):
        host = "localhost"
    return f"http://{host}:{port}"


def enrollment_link(address: str, cert_dir: Path, person: str, tenant: str, name: str,
                    base_url: str) -> tuple[str, str]:
    """(link, what it is for, in words) for `person`, minted by the broker at `address`."""
    with sync_channel(address, cli_credentials(cert_dir, "cli"), "capabilities") as channel:
        operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)
        reply = invoke(channel, "capabilities", "CreateEnrollment", cap.CreateEnrollmentRequest(
            actor=operator, person=cap.Person(actor_id=person, tenant_id=tenant, display_name=name)), timeout=30)
    expires = reply.expires_at.ToDatetime(dt.UTC).strftime("%H:%M:%S UTC")
    keys = "no passkey yet" if not reply.passkeys else f"{reply.passkeys} passkey(s) already"
    about = (f"one-time sign-in link for {person} (tenant {tenant}; {keys}); it works once, until {expires}. "
             f"Open it in the person's browser: it signs them in and offers to add a passkey, which approving "
             f"actions needs.")
    return f"{base_url.rstrip('/')}/sign-in#token={reply.token}", about
