"""`tessera dev actor PERSON --tenant T`: a short-lived actor assertion for local examples (the TypeScript client,
scripts against a set `tessera up` runs), printed as the base64 of a serialised tessera.common.v1.ActorAssertion.

It is signed with the operator CLI's key, so only the operator (who can read that key) can make one, and each one
made is recorded in the operator's audit file (var/audit/dev-actors.jsonl: who asked, for whom, until when, and
the assertion's nonce) before it is printed. For people, assertions come from web's sign-in, never from here.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import getpass
import json
import os
import sys
from pathlib import Path

from shared.identity.actors import assert_actor, valid_id
from shared.identity.certs import CredentialError, load_signing_key, signing_key_path
from shared.paths import var_dir
from tessera.common.v1 import common_pb2

DEFAULT_MINUTES, MAX_MINUTES = 15, 60


def add_parser(sub) -> argparse.ArgumentParser:
    dev = sub.add_parser("dev", help="helpers for local development against a running set")
    actions = dev.add_subparsers(dest="dev_command", required=True)
    actor = actions.add_parser("actor", help="print a short-lived actor assertion (base64) for local examples; "
                                             "operator only, recorded in var/audit/dev-actors.jsonl")
    actor.add_argument("person", help="the person's id (letters, digits and . _ @ | : -, at most 128)")
    actor.add_argument("--tenant", required=True, help="their tenant")
    actor.add_argument("--name", default="", help="the name a screen shows for them")
    actor.add_argument("--minutes", type=int, default=DEFAULT_MINUTES,
                       help=f"how long it is valid (1 to {MAX_MINUTES}, default {DEFAULT_MINUTES})")
    return dev


def audit_file() -> Path:
    return var_dir() / "audit" / "dev-actors.jsonl"


def run(args: argparse.Namespace, cert_dir: Path) -> int:
    if not (valid_id(args.person) and valid_id(args.tenant)):
        print("tessera: error: PERSON and --tenant: letters, digits and . _ @ | : - only, at most 128",
              file=sys.stderr)
        return 2
    if not 1 <= args.minutes <= MAX_MINUTES:
        print(f"tessera: error: --minutes: 1 to {MAX_MINUTES}", file=sys.stderr)
        return 2
    try:
        key = load_signing_key(signing_key_path(cert_dir, "cli"))
    except CredentialError as exc:
        print(f"tessera: error: only the operator can make an actor assertion: {exc}", file=sys.stderr)
        return 1
    assertion = assert_actor(key, args.person, args.tenant, args.name, dt.timedelta(minutes=args.minutes))
    claims = common_pb2.ActorClaims.FromString(assertion.signed.claims)
    expires = claims.binding.expires_at.ToDatetime(dt.UTC)
    try:
        _record(claims, expires)
    except OSError as exc:  # not recorded: not given
        print(f"tessera: error: cannot record it in {audit_file()}: {exc.strerror}", file=sys.stderr)
        return 1
    print(base64.b64encode(assertion.SerializeToString()).decode())
    print(f"an actor assertion for {args.person} (tenant {args.tenant}), valid until "
          f"{expires:%Y-%m-%d %H:%M:%S} UTC, for local examples only (TESSERA_ACTOR_ASSERTION)", file=sys.stderr)
    return 0


def _record(claims: common_pb2.ActorClaims, expires: dt.datetime) -> None:
    path = audit_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        by = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's user): its number
        by = f"uid {os.getuid()}"
    line = json.dumps({"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "by": by,
                       "actor_id": claims.actor_id, "tenant_id": claims.tenant_id,
                       "expires_at": expires.isoformat(timespec="seconds"), "nonce": claims.binding.nonce})
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a", encoding="utf-8") as audit:
        audit.write(line + "\n")
