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
import sys
from dataclasses import dataclass
from pathlib import Path

from cli.launcher import cli_credentials, web_url
from cli.output import human_time, iso_time, print_json, table, utc
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.capabilities.v1 import capabilities_pb2 as cap

OPERATOR = ("operator", "local", "Operator")
LOCAL_PERSON = ("local-user", "local", "Local user")  # the development person `tessera demo` signs in


@dataclass(frozen=True)
class Enrollment:
    """A one-time sign-in link the broker minted for a person, and what it did to their passkeys."""

    link: str
    person: str
    tenant: str
    expires_at: dt.datetime
    passkeys: int  # they had before, kept (none with `replace`)
    passkeys_revoked: int
    sessions_ended: int
    replaced: bool

    @property
    def about(self) -> str:
        """What the link is for, in words (printed beside it, never inside `--json`'s link)."""
        if self.replaced:
            keys = f"{self.passkeys_revoked} passkey(s) revoked, {self.sessions_ended} web session(s) ended"
        else:
            keys = "no passkey yet" if not self.passkeys else \
                f"{self.passkeys} passkey(s) already: one of them must confirm a new one, or use --replace"
        return (f"one-time sign-in link for {self.person} (tenant {self.tenant}; {keys}); it works once, until "
                f"{self.expires_at.strftime('%H:%M:%S UTC')}. Open it in the person's browser: it signs them in and "
                f"offers to add a passkey, which approving actions needs.")

    def record(self) -> dict:
        return {"link": self.link, "person": self.person, "tenant": self.tenant,
                "expires_at": iso_time(self.expires_at), "passkeys": self.passkeys,
                "passkeys_revoked": self.passkeys_revoked, "sessions_ended": self.sessions_ended}


def enrollment_link(address: str, cert_dir: Path, person: str, tenant: str, name: str,
                    base_url: str, replace: bool = False, surface: str = "") -> Enrollment:
    """A link for `person`, minted by the broker at `address`; `replace` revokes the passkeys they have first
    (the broker audits it, and tells the person at their next sign-in); `surface`, the page it lands on
    (web's `?surface=`, e.g. the session `tessera ask` answered in)."""
    with sync_channel(address, cli_credentials(cert_dir, "cli"), "capabilities") as channel:
        operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)
        reply = invoke(channel, "capabilities", "CreateEnrollment", cap.CreateEnrollmentRequest(
            actor=operator, person=cap.Person(actor_id=person, tenant_id=tenant, display_name=name),
            replace=replace), timeout=30)
    landing = f"?surface={surface}" if surface else ""
    return Enrollment(f"{base_url.rstrip('/')}/sign-in{landing}#token={reply.token}", person, tenant,
                      utc(reply.expires_at.ToDatetime(dt.UTC)), 0 if replace else reply.passkeys,
                      reply.passkeys_revoked, reply.sessions_ended, replace)


class People:
    """The operator's calls to the broker about people, each answered as a record."""

    def __init__(self, address: str, cert_dir: Path) -> None:
        self.channel = sync_channel(address, cli_credentials(cert_dir, "cli"), "capabilities")
        self.operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)

    def __enter__(self) -> People:
        return self

    def __exit__(self, *_exc) -> None:
        self.channel.close()

    def passkeys(self, person: str, tenant: str) -> dict:
        reply = invoke(self.channel, "capabilities", "ListPasskeys", cap.ListPasskeysRequest(
            actor=self.operator, person=cap.Person(actor_id=person, tenant_id=tenant)), timeout=30)
        return {"person": person, "tenant": tenant, "passkeys": [
            {"credential_id": p.credential_id, "aaguid": p.aaguid,
             "registered_at": iso_time(p.created_at.ToDatetime(dt.UTC)),
             "last_used_at": iso_time(p.last_used_at.ToDatetime(dt.UTC)) if p.HasField("last_used_at") else None}
            for p in reply.passkeys]}

    def revoke(self, person: str, tenant: str, credential_id: str) -> dict:
        reply = invoke(self.channel, "capabilities", "RevokePasskey", cap.RevokePasskeyRequest(
            actor=self.operator, person=cap.Person(actor_id=person, tenant_id=tenant), credential_id=credential_id),
            timeout=30)
        return {"person": person, "tenant": tenant, "revoked": credential_id, "passkeys_left": reply.passkeys,
                "sessions_ended": reply.sessions_ended}

    def sign_out(self, person: str, tenant: str) -> dict:
        reply = invoke(self.channel, "capabilities", "SignOutPerson", cap.SignOutPersonRequest(
            actor=self.operator, person=cap.Person(actor_id=person, tenant_id=tenant)), timeout=30)
        return {"person": person, "tenant": tenant, "sessions_ended": reply.ended}


def run(args, address: str, cert_dir: Path, web_address: str) -> int:
    """`tessera persons …` against the broker at `address`: each answer printed in words, or with `--json` as
    the record it was printed from."""
    if args.action == "enroll":
        enrollment = enrollment_link(address, cert_dir, args.person, args.tenant, args.name or args.person,
                                     args.url or web_url(web_address), replace=args.replace)
        if args.json:
            print_json(enrollment.record())
        else:
            print(enrollment.about, file=sys.stderr)
            print(enrollment.link)
        return 0
    with People(address, cert_dir) as people:
        if args.action == "passkeys":
            record = people.passkeys(args.person, args.tenant)
        elif args.action == "sign-out":
            record = people.sign_out(args.person, args.tenant)
        else:
            record = people.revoke(args.person, args.tenant, args.credential)
    if args.json:
        print_json(record)
    else:
        print(_in_words(args.action, record))
    return 0


def _in_words(action: str, record: dict) -> str:
    who = f"{record['person']} (tenant {record['tenant']})"
    if action == "sign-out":
        return f"signed out {who}: {record['sessions_ended']} web session(s) ended"
    if action == "revoke":
        return (f"revoked; {record['person']} has {record['passkeys_left']} passkey(s) left; "
                f"{record['sessions_ended']} web session(s) ended")
    if not record["passkeys"]:
        return f"{who} has no passkey"
    return table([[p["credential_id"], p["aaguid"], human_time(p["registered_at"]),
                   human_time(p["last_used_at"]) if p["last_used_at"] else "never"]
                  for p in record["passkeys"]],
                 ["passkey", "authenticator model (AAGUID)", "registered (UTC)", "last decision (UTC)"])
