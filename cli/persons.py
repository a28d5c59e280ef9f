"""`tessera persons enroll|passkeys|revoke|sign-out`: people's sign-in links, passkeys and web sessions, from the
operator's terminal.

`enroll PERSON` makes a one-time link that signs a person in to web and lets them add a passkey;
`passkeys PERSON` lists the passkeys they registered (so one nobody expected stands out: whoever held the
link registered it); `revoke PERSON CREDENTIAL` removes one (a lost device); `sign-out PERSON` ends every
web session they have open, on every web replica within a few seconds (a lost laptop, a person who left).

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
from cli.output import table
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
                    base_url: str, replace: bool = False) -> tuple[str, str]:
    """(link, what it is for, in words) for `person`, minted by the broker at `address`; `replace` revokes the
    passkeys they have first (the broker audits it, and tells the person at their next sign-in)."""
    with sync_channel(address, cli_credentials(cert_dir, "cli"), "capabilities") as channel:
        operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)
        reply = invoke(channel, "capabilities", "CreateEnrollment", cap.CreateEnrollmentRequest(
            actor=operator, person=cap.Person(actor_id=person, tenant_id=tenant, display_name=name),
            replace=replace), timeout=30)
    expires = reply.expires_at.ToDatetime(dt.UTC).strftime("%H:%M:%S UTC")
    if replace:
        keys = f"{reply.passkeys_revoked} passkey(s) revoked, {reply.sessions_ended} web session(s) ended"
    else:
        keys = "no passkey yet" if not reply.passkeys else \
            f"{reply.passkeys} passkey(s) already: one of them must confirm a new one, or use --replace"
    about = (f"one-time sign-in link for {person} (tenant {tenant}; {keys}); it works once, until {expires}. "
             f"Open it in the person's browser: it signs them in and offers to add a passkey, which approving "
             f"actions needs.")
    return f"{base_url.rstrip('/')}/sign-in#token={reply.token}", about


class People:
    """The operator's calls to the broker about people."""

    def __init__(self, address: str, cert_dir: Path) -> None:
        self.channel = sync_channel(address, cli_credentials(cert_dir, "cli"), "capabilities")
        self.operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)

    def __enter__(self) -> People:
        return self

    def __exit__(self, *_exc) -> None:
        self.channel.close()

    def passkeys(self, person: str, tenant: str) -> str:
        reply = invoke(self.channel, "capabilities", "ListPasskeys", cap.ListPasskeysRequest(
            actor=self.operator, person=cap.Person(actor_id=person, tenant_id=tenant)), timeout=30)
        if not reply.passkeys:
            return f"{person} (tenant {tenant}) has no passkey"
        return table([[p.credential_id, p.aaguid, _when(p.created_at),
                       _when(p.last_used_at) if p.HasField("last_used_at") else "never"] for p in reply.passkeys],
                     ["passkey", "authenticator model (AAGUID)", "registered (UTC)", "last decision (UTC)"])

    def revoke(self, person: str, tenant: str, credential_id: str) -> str:
        reply = invoke(self.channel, "capabilities", "RevokePasskey", cap.RevokePasskeyRequest(
            actor=self.operator, person=cap.Person(actor_id=person, tenant_id=tenant), credential_id=credential_id),
            timeout=30)
        return (f"revoked; {person} has {reply.passkeys} passkey(s) left; {reply.sessions_ended} web session(s) "
                f"ended")

    def sign_out(self, person: str, tenant: str) -> str:
        reply = invoke(self.channel, "capabilities", "SignOutPerson", cap.SignOutPersonRequest(
            actor=self.operator, person=cap.Person(actor_id=person, tenant_id=tenant)), timeout=30)
        return f"signed out {person} (tenant {tenant}): {reply.ended} web session(s) ended"


def _when(timestamp) -> str:
    return timestamp.ToDatetime(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
