"""`tessera` command line: certs, up, status, demo, seed."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path

import grpc

from cli.launcher import ProcessHandle, ServiceSet, StartupError, check_health, cli_credentials, web_url
from cli.output import TABLE_ROWS, print_json, table
from cli.process_users import OwnershipError
from cli.service_box import BoxUnavailable
from cli.supervisor import RestartPolicy, hang_seconds_from, run_until_stopped
from shared import __version__
from shared.config import CLIENT_TLS_NATIVE, DEFAULT_PORTS, ConfigError, client_tls_mode, peer_target
from shared.identity.certs import (
    CA_CERT_FILE,
    CA_KEY_FILE,
    CredentialError,
    add_server_names,
    ca_key_path,
    cert_path,
    issue_deployment,
    issue_token_keys,
    key_path,
    load_credentials,
    move_cli_files,
    private_dir,
    refuse_operator_folder,
    write_private,
)
from shared.identity.principals import PRINCIPAL_NAMES, IdentitySchemeError
from shared.identity.public_url import PUBLIC_URL_VARIABLE
from shared.paths import DATABASE_SIDE_FILES, REPO_ROOT, cert_dir, cli_dir, default_warehouse, var_dir


def _state_file() -> Path:
    return var_dir() / "run" / "services.json"


def certificate_problems(directory: Path) -> list[str]:
    problems = []
    for principal in PRINCIPAL_NAMES:
        try:
            load_credentials(principal, directory / CA_CERT_FILE, cert_path(directory, principal),
                             key_path(directory, principal))
        except CredentialError as exc:
            problems.append(str(exc))
    return problems


def _issue(directory: Path, spiffe_only: bool = False) -> None:
    written = issue_deployment(directory, spiffe_only=spiffe_only, cli_directory=cli_dir())
    print(f"wrote a deployment CA and {len(PRINCIPAL_NAMES)} identities to {directory}, the CLI's own keys to "
          f"{cli_dir()} ({len(written)} files, keys 0600)")


def _move_cli_keys(directory: Path) -> None:
    """Older versions kept the CLI's keys in var/certs, beside every service's: move them to the CLI's own
    folder. Only from that default place: a TESSERA_CERT_DIR the operator named is theirs to arrange."""
    if os.environ.get("TESSERA_CERT_DIR"):
        return
    moved = move_cli_files(directory, cli_dir())
    if moved:
        print(f"moved the CLI's keys ({', '.join(path.name for path in moved)}) from {directory} to {cli_dir()}, "
              "out of the services' var folder")


def ensure_certs(directory: Path) -> None:
    """For `up` and `demo`: create certificates on first use, never replace broken ones.

    Silently reissuing would hide a real problem (a key someone made
    world-readable, a certificate from another deployment) and invalidate
    every running peer; the person decides with `tessera certs --force`.
    """
    refuse_operator_folder(directory)
    if not (directory / CA_CERT_FILE).exists():
        _issue(directory)
        return
    _move_cli_keys(directory)
    problems = certificate_problems(directory)
    if problems:
        raise CredentialError(f"{problems[0]} (fix it, or reissue all with 'tessera certs --force')")
    if client_tls_mode() == CLIENT_TLS_NATIVE:
        reissued = add_server_names(directory)
        if reissued:
            print(f"reissued {', '.join(reissued)} from the same CA with the DNS names clients check "
                  "(an older version left them out)")
    legacy_ca_key = directory / CA_KEY_FILE
    if legacy_ca_key.exists() and not ca_key_path(directory).exists():
        # Older versions kept the CA key beside every other key: move it apart.
        private_dir(ca_key_path(directory).parent)
        legacy_ca_key.rename(ca_key_path(directory))
        print(f"moved the CA key to {ca_key_path(directory)}")
    private_dir(directory)
    added = issue_token_keys(directory)
    if added:
        print(f"added {len(added)} missing token keys to {directory}")


def cmd_certs(args: argparse.Namespace) -> int:
    directory = Path(args.dir) if args.dir else cert_dir()
    try:
        refuse_operator_folder(directory)
    except CredentialError as exc:
        print(f"tessera: error: {exc}", file=sys.stderr)
        return 2
    if not args.dir:
        _move_cli_keys(directory)
    problems = certificate_problems(directory)
    if not problems and not args.force:
        print(f"certificates in {directory} are valid; 'tessera certs --force' reissues them")
        return 0
    if problems and (directory / CA_CERT_FILE).exists():
        print(f"reissuing: {problems[0]}")
    _issue(directory, args.spiffe_only)
    return 0


def _print_set(services: ServiceSet) -> None:
    credentials = cli_credentials(services.cert_dir)
    rows = [[h.name, h.address, str(h.pid), str(os.getuid() if h.uid is None else h.uid),
             f"WAITING ({h.reason})" if h.state == "waiting" else check_health(h, credentials)]
            for h in services.handles.values()]
    print(table(rows, ["service", "address", "pid", "uid", "health"]))


def _as_root() -> bool:
    """Run as root, `up` and `demo` give each service a user of its own (§2)."""
    return os.geteuid() == 0


def _start(services: ServiceSet) -> int:
    """Start the set; a service waiting for its database counts as started (it serves once that answers)."""
    if services.separate_users:
        print("running as root: each service runs as a user of its own, in a box of its own", flush=True)
    try:
        services.start(allow_waiting=True)
    except (StartupError, BoxUnavailable, OwnershipError) as exc:
        print(f"tessera: error: {exc}", file=sys.stderr)
        print(f"logs: {services.run_dir / 'logs'}", file=sys.stderr)
        return 1
    for note in services.notes:
        print(f"tessera: warning: {note}", file=sys.stderr, flush=True)
    for handle in _waiting(services):
        print(f"{handle.name} is waiting for its database ({handle.reason}); it will serve once that answers",
              flush=True)
    return 0


def _waiting(services: ServiceSet) -> list[ProcessHandle]:
    return [h for h in services.handles.values() if h.state == "waiting"]


def _restart_policy() -> RestartPolicy | None:
    """The supervisor's policy, with the operator's TESSERA_HANG_SECONDS; None (said) when that is unusable."""
    try:
        return RestartPolicy(hang_seconds=hang_seconds_from(os.environ))
    except ValueError as exc:
        print(f"tessera: error: {exc}", file=sys.stderr)
        return None


def cmd_up(args: argparse.Namespace) -> int:
    policy = _restart_policy()
    if policy is None:
        return 2
    directory = cert_dir()
    ensure_certs(directory)
    services = ServiceSet(directory, var_dir() / "run", ephemeral_ports=args.ephemeral_ports,
                          separate_users=_as_root())
    _pin_passkey_origin(services)
    if _start(services):
        return 1
    state = _state_file()
    write_private(state, json.dumps(services.state(), indent=2).encode())
    _print_set(services)
    _print_sign_in(services, directory)
    waiting = _waiting(services)
    started = (f"all services started, {', '.join(h.name for h in waiting)} waiting for a database"
               if waiting else "all services up")
    print(f"\n{started}; logs in {services.run_dir / 'logs'}. A service that dies or hangs is restarted; "
          "Ctrl-C stops them all.", flush=True)
    run_until_stopped(services, state, policy, say=_say)
    print("stopping all services ...", flush=True)
    codes = services.stop()
    state.unlink(missing_ok=True)
    print(table([[n, str(c)] for n, c in codes.items()], ["service", "exit status"]))
    return 0


def _pin_passkey_origin(services: ServiceSet) -> None:
    """Passkey signatures count only from this web's own page (http://localhost:<its port>), not from any
    other local port, unless the operator configured the origins themselves."""
    setting = "TESSERA_CAPABILITIES_WEBAUTHN_ORIGINS"
    if setting not in os.environ:
        services.extra_env[setting] = json.dumps([web_url(services.handles["web"].address)])


def _print_sign_in(services: ServiceSet, directory: Path) -> None:
    """The local person's one-time sign-in link, on this terminal only (web lets no one in without one)."""
    from cli.persons import LOCAL_PERSON, enrollment_link

    if services.handles["capabilities"].state == "waiting":
        print(f"\nno sign-in link yet: the broker waits for its database; once it serves, "
              f"`tessera persons enroll {LOCAL_PERSON[0]}` makes one", flush=True)
        return
    try:
        enrollment = enrollment_link(services.handles["capabilities"].address, directory, *LOCAL_PERSON,
                                     web_url(services.handles["web"].address))
    except grpc.RpcError as exc:
        print(f"tessera: no sign-in link: the broker refused ({exc.code().name}); try "
              f"`tessera persons enroll {LOCAL_PERSON[0]}`", file=sys.stderr)
        return
    about = enrollment.about
    print(f"\n{about[0].upper()}{about[1:]}\n  {enrollment.link}\n"
          f"(another one: `tessera persons enroll {LOCAL_PERSON[0]}` while the services run)", flush=True)


def _say(line: str) -> None:
    print(line, flush=True)


def _running_set() -> dict | None:
    """What `tessera up` recorded of the running set, or None (said on stderr) when none runs."""
    state = _state_file()
    if not state.exists():
        print(f"tessera: no running set (no {state}); start one with 'tessera up'", file=sys.stderr)
        return None
    return json.loads(state.read_text())


def cmd_status(args: argparse.Namespace) -> int:
    from cli.status import print_status, status_records

    recorded = _running_set()
    if recorded is None:
        return 1
    report = status_records(recorded)
    print_status(report, args.json)
    return 0 if report["healthy"] else 1


DEMO_QUESTIONS = ("What is our net revenue by region?", "Show units sold by month",
                  "What is the total number of orders?")


def ensure_warehouse() -> None:
    """The demo needs data: seed the default warehouse once (about 10 s for 1M order items)."""
    if os.environ.get("TESSERA_RESOURCES_WAREHOUSE_URL"):
        return
    from cli.seed import SCHEMA_VERSION, default_url, schema_version, seed

    url = default_url()
    _move_loose_warehouse()
    if not Path(url.removeprefix("sqlite:///")).exists():
        print("seeding the demo warehouse (1,000,000 order items; once) ...", flush=True)
        print(seed(url, progress=sys.stderr.isatty()).summary(), flush=True)
    elif (found := schema_version(url)) != SCHEMA_VERSION:
        print(f"the demo warehouse has schema version {found}, this release needs {SCHEMA_VERSION}: "
              "seeding it again ...", flush=True)
        print(seed(url, progress=sys.stderr.isatty()).summary(), flush=True)


def _move_loose_warehouse() -> None:
    """Earlier releases seeded var/warehouse.sqlite; it now has a folder of its own (shared.paths): moved
    there once, so nothing is seeded again."""
    loose, placed = var_dir() / "warehouse.sqlite", default_warehouse()
    if loose.exists() and not placed.exists():
        private_dir(placed.parent)
        for suffix in ("", *DATABASE_SIDE_FILES):
            if (old := loose.with_name(loose.name + suffix)).exists():
                old.rename(placed.with_name(placed.name + suffix))
        print(f"moved the demo warehouse from {loose} to {placed}", flush=True)


def cmd_demo(args: argparse.Namespace) -> int:
    """Seed if needed, start everything, walk the data plane, show forbidden calls, stop."""
    from cli.demo import walk

    policy = _restart_policy()
    if policy is None:
        return 2
    directory = cert_dir()
    ensure_certs(directory)
    ensure_warehouse()
    services = ServiceSet(directory, var_dir() / "demo", ephemeral_ports=True, separate_users=_as_root())
    if _port_free(DEFAULT_PORTS["web"]):  # the UI where people expect it; any free port otherwise
        services.handles["web"].port = DEFAULT_PORTS["web"]
    _pin_passkey_origin(services)
    print("starting services ...", flush=True)
    if _start(services):
        return 1
    recorded = False
    try:
        _print_set(services)
        ok = walk(services, directory)
        from cli.ask import ask

        print("\nthree questions through the agent (the embedded planner):")
        addresses = {name: handle.address for name, handle in services.handles.items()}
        url = web_url(services.handles["web"].address) + "/"
        for question in DEMO_QUESTIONS:
            ok &= bool(ask(addresses, directory, question, url).done.revision_ids)
        print(f"\nthe UI is running at {url}")
        if ok and (args.keep or sys.stdin.isatty()):
            # Recorded like `tessera up`'s set, so `tessera approvals` and `tessera persons` reach it.
            write_private(_state_file(), json.dumps(services.state(), indent=2).encode())
            recorded = True
            _print_sign_in(services, directory)
            print("ask it anything there; Ctrl-C stops everything", flush=True)
            run_until_stopped(services, _state_file(), policy, say=_say)
    finally:
        if recorded:
            _state_file().unlink(missing_ok=True)
        print("\nstopping services ...", flush=True)
        codes = services.stop()
        print(table([[n, str(c)] for n, c in codes.items()], ["service", "exit status"]))
    if not ok:
        print("tessera: demo failed: see the output above", file=sys.stderr)
        return 1
    return 0


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the service itself will bind
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _rows(text: str) -> int:
    """`--rows`: how many rows of a table one window of the host brings (1-1000)."""
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rows from 1 to 1000")
    return int(text)


def _scale(text: str) -> int:
    from cli.seed import parse_scale

    try:
        return parse_scale(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_seed(args: argparse.Namespace) -> int:
    """Generate the deterministic demo warehouse and load it into --url."""
    from cli.seed import SeedError, seed  # SQLAlchemy and the drivers load only for this command

    try:
        result = seed(args.url, args.scale, args.seed, progress=not args.quiet,
                      password_file=Path(args.password_file) if args.password_file else None)
    except SeedError as exc:
        print(f"tessera: error: {exc}", file=sys.stderr)
        return 2
    print(result.summary())
    return 0


def cmd_catalog(args: argparse.Namespace) -> int:
    """Print (or write) a component catalog as an A2UI v0.9 catalog document."""
    from shared.ui.a2ui import catalog_document
    from shared.ui.contracts import DEFAULT_CATALOG, ContractError, load_catalog

    try:
        catalog = load_catalog(Path(args.dir) if args.dir else DEFAULT_CATALOG)
    except ContractError as exc:
        print(f"tessera: error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(catalog_document(catalog), indent=2, sort_keys=True) + "\n"
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {catalog.catalog_id} ({len(catalog.contracts)} components) to {args.out}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    """Ask one question through the running set (`tessera up`)."""
    from cli.ask import ask, open_in_browser

    recorded = _running_set()
    if recorded is None:
        return 1
    addresses = {p["name"]: p["address"] for p in recorded["processes"]}
    try:
        asked = ask(addresses, Path(recorded["cert_dir"]), args.question, web_url(addresses["web"]) + "/",
                    conversation=var_dir() / "run" / "conversation.json", follow_up=args.follow_up,
                    as_json=args.json, rows=args.rows)
        if args.open and asked.done.revision_ids:
            open_in_browser(addresses, Path(recorded["cert_dir"]), asked.web_surface, args.json)
    except grpc.RpcError as exc:
        return _refused(exc)
    return asked.exit_status


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the running set's data tools to one local MCP client on stdin/stdout (its configuration starts
    this command): the MCP front, under its own identity, acting for the local person named here."""
    from shared.identity.actors import valid_id
    from shared.identity.certs import export_identity

    if not (valid_id(args.person) and valid_id(args.tenant)):
        print("tessera: error: --person and --tenant: letters, digits and . _ @ | : - only, at most 128",
              file=sys.stderr)
        return 2
    recorded = _running_set()
    if recorded is None:
        return 1
    addresses = {p["name"]: p["address"] for p in recorded["processes"]}
    identity = export_identity(Path(recorded["cert_dir"]), "mcp", var_dir() / "run" / "identity-mcp-stdio")
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TESSERA_LOG_LEVEL") if name in os.environ}
    env.update({"TESSERA_CERT_DIR": str(identity), "TESSERA_AGENT_ADDR": addresses["agent"],
                "TESSERA_HOST_ADDR": addresses["host"], "TESSERA_MCP_STDIO_PERSON": args.person,
                "TESSERA_MCP_STDIO_TENANT": args.tenant, "TESSERA_MCP_WEB_URL": web_url(addresses["web"])})
    os.chdir(REPO_ROOT)
    # The front replaces this process: the client's pipes are its stdin and stdout, nothing else writes there.
    os.execve(sys.executable, [sys.executable, "-m", "services.mcp", "--stdio"], env)
    return 1  # not reached


def _refused(exc: grpc.RpcError, service: str | None = None, as_json: bool = False) -> int:
    """A service's refusal on the terminal, with its stable reason (a service nobody reached in words, never
    gRPC's text), and with `as_json` as the command's JSON document too; the command's exit status."""
    from shared.rpc.errors import error_details

    details = error_details(exc, service)
    print(f"tessera: error: {exc.code().name} {details.reason}: {details.message}", file=sys.stderr)
    if as_json:
        print_json({"error": {"code": exc.code().name, "reason": details.reason, "message": details.message}})
    return 1


def _running_address(name: str) -> tuple[str, Path] | None:
    """Where service `name` answers and the folder of the CLI's credentials: the address TESSERA_<NAME>_ADDR names
    (a deployment elsewhere, e.g. through kubectl port-forward, with TESSERA_CERT_DIR), else the set `tessera up`
    runs here. None, said on stderr, when there is neither."""
    variable = f"TESSERA_{name.upper()}_ADDR"
    if os.environ.get(variable):
        try:
            address = peer_target(name)
        except ConfigError as exc:
            print(f"tessera: error: {exc}", file=sys.stderr)
            return None
        print(f"tessera: {name} at {address} ({variable})", file=sys.stderr)  # not the local set, if one runs
        return address, cert_dir()
    recorded = _running_set()
    if recorded is None:
        return None
    addresses = {p["name"]: p["address"] for p in recorded["processes"]}
    return addresses[name], Path(recorded["cert_dir"])


def cmd_approvals(args: argparse.Namespace) -> int:
    """List, show and decide approvals (and export the audit trail) at the running broker."""
    from cli import approvals

    found = _running_address("capabilities")
    if found is None:
        return 1
    try:
        return approvals.run(*found, args)
    except grpc.RpcError as exc:
        return _refused(exc, "capabilities", args.json)


def cmd_policy(args: argparse.Namespace) -> int:
    """Review, pin and check the MCP tool policy against what the servers offer now."""
    from cli import policy

    directory = cert_dir()
    ensure_certs(directory)
    try:
        return policy.run(args, directory)
    except grpc.RpcError as exc:
        return _refused(exc)


def cmd_deploy(args: argparse.Namespace) -> int:
    """Render, check and feed the Kubernetes manifests (deploy/k8s)."""
    from cli import deploy

    directory = cert_dir()
    if args.action == "secrets" and not args.production:  # the local overlay's Secrets hold its certificates
        ensure_certs(directory)
    return deploy.run(args, directory)


def cmd_semantic(args: argparse.Namespace) -> int:
    """Draft a semantic model from a database, check one, or import another tool's semantic layer."""
    from cli import semantic

    return semantic.run(args)


def cmd_dev(args: argparse.Namespace) -> int:
    """A short-lived actor assertion for local examples, signed with the operator CLI's key (and recorded)."""
    from cli import dev_actor

    recorded = _running_set()
    if recorded is None:
        return 1
    return dev_actor.run(args, Path(recorded["cert_dir"]))


def cmd_persons(args: argparse.Namespace) -> int:
    """People's one-time sign-in links (printed here only), their passkeys and their web sessions."""
    from cli import persons

    found = _running_address("capabilities")
    if found is None:
        return 1
    web_address = ""
    if args.action == "enroll" and not args.url:  # the link people open: the public URL, else the running web
        args.url = os.environ.get(PUBLIC_URL_VARIABLE, "")
        if not args.url and os.environ.get("TESSERA_CAPABILITIES_ADDR"):  # a deployment elsewhere: its public URL
            print(f"tessera: error: the link needs the address people open: set {PUBLIC_URL_VARIABLE} (or --url)",
                  file=sys.stderr)
            return 2
        web = None if args.url else _running_address("web")
        if not args.url and web is None:
            return 1
        web_address = web[0] if web else ""
    try:
        return persons.run(args, *found, web_address)
    except grpc.RpcError as exc:
        return _refused(exc, "capabilities", args.json)


def _json_flag(parser: argparse.ArgumentParser, what: str = "print the answer as one JSON document") -> None:
    """`--json`, the same flag on every command that answers with data: `what` it prints then."""
    parser.add_argument("--json", action="store_true", help=what)


def _add_approval_parsers(sub) -> None:
    """The approval desk and the audit export, both answered by the broker."""
    desk = sub.add_parser("approvals", help="list, show, approve or reject pending approvals")
    desk_actions = desk.add_subparsers(dest="action", required=True)
    listing = desk_actions.add_parser("list", help="approvals waiting for a decision")
    listing.add_argument("--all", action="store_true", help="decided and expired ones too")
    _json_flag(listing, "print them as a JSON list")
    showing = desk_actions.add_parser("show", help="the approval card")
    showing.add_argument("approval_id")
    _json_flag(showing, "print the card as one JSON document")
    for verb in ("approve", "reject"):
        deciding = desk_actions.add_parser(verb, help=f"{verb} an approval (bound to the arguments shown)")
        deciding.add_argument("approval_id")
        _json_flag(deciding, "print the receipt (or the refusal) as one JSON document")
        deciding.add_argument("--reason", help="why (recorded in the audit trail)")
        if verb == "approve":
            deciding.add_argument("--entry", action="append",
                                  help="approve only this entry of a data change (repeatable)")
        else:
            deciding.set_defaults(entry=[])
    desk.set_defaults(run=cmd_approvals)
    persons = sub.add_parser("persons", help="sign-in links, passkeys and web sessions of people")
    person_actions = persons.add_subparsers(dest="action", required=True)
    enroll = person_actions.add_parser("enroll", help="print a one-time link that signs PERSON in and lets them "
                                                      "add a passkey (10 minutes, single use)")
    enroll.add_argument("person", help="the person's id, e.g. local-user or ada@example.com")
    enroll.add_argument("--tenant", default="local", help="their tenant (default: local)")
    enroll.add_argument("--name", help="their name as shown (default: the id)")
    enroll.add_argument("--url", help="web's address as the person opens it (default: the running web, on "
                                      "localhost)")
    enroll.add_argument("--replace", action="store_true",
                        help="revoke every passkey PERSON has now (a lost device; audited): without it, a person "
                             "who has a passkey adds another only by confirming it with one they have")
    _json_flag(enroll, "print the link, its expiry and what it did to PERSON's passkeys as one JSON document")
    listing = person_actions.add_parser("passkeys", help="the passkeys PERSON registered (model, when, last use)")
    listing.add_argument("person")
    listing.add_argument("--tenant", default="local", help="their tenant (default: local)")
    _json_flag(listing)
    revoke = person_actions.add_parser("revoke", help="remove one of PERSON's passkeys (a lost device)")
    revoke.add_argument("person")
    revoke.add_argument("credential", help="the passkey's id, as `tessera persons passkeys` lists it (one that "
                                           "begins with '-' goes after '--': revoke --tenant T -- PERSON ID)")
    revoke.add_argument("--tenant", default="local", help="their tenant (default: local)")
    _json_flag(revoke)
    sign_out = person_actions.add_parser("sign-out", help="end every web session PERSON has open (on every web "
                                                          "replica within seconds)")
    sign_out.add_argument("person")
    sign_out.add_argument("--tenant", default="local", help="their tenant (default: local)")
    _json_flag(sign_out)
    persons.set_defaults(run=cmd_persons)
    audit = sub.add_parser("audit", help="the broker's audit trail: a table with times in UTC (paged at a "
                                         "terminal), or JSONL")
    audit.add_argument("--out", help="export it to this file as JSONL")
    _json_flag(audit, "print it as JSONL, one record per line, as the broker exported it")
    audit.set_defaults(run=cmd_approvals)


def _add_ask_parser(sub) -> None:
    """Asking one question at the terminal: in words, as JSON, or shown in the browser too."""
    ask_parser = sub.add_parser("ask", help="ask a question through the running services")
    ask_parser.add_argument("question")
    ask_parser.add_argument("--follow-up", action="store_true",
                            help="ask in the session of the last question, so 'now only web' or 'and last year?' "
                                 "is read against it")
    _json_flag(ask_parser, "print the answer as one JSON document (progress goes to standard error)")
    ask_parser.add_argument("--open", action="store_true",
                            help="show the answer in the browser too, signed in as the operator with a one-time "
                                 "link (printed as well)")
    ask_parser.add_argument("--rows", type=_rows, default=TABLE_ROWS, metavar="N",
                            help="rows of each table to show (1-1000, default 10)")
    ask_parser.set_defaults(run=cmd_ask)


def _add_policy_parser(sub) -> None:
    """Reviewing and pinning the MCP tool policy."""
    tools = sub.add_parser("policy", help="review, pin or check the MCP tool policy (deploy/policy/tools.yaml)")
    # The file the broker reads: `pin` must rewrite that one, not the shipped copy.
    tools.add_argument("--file", default=os.environ.get("TESSERA_CAPABILITIES_TOOLS_FILE") or str(
        Path(__file__).resolve().parents[1] / "deploy" / "policy" / "tools.yaml"),
                       help="the policy file (default: $TESSERA_CAPABILITIES_TOOLS_FILE, else "
                            "deploy/policy/tools.yaml)")
    tool_actions = tools.add_subparsers(dest="action", required=True)
    tool_actions.add_parser("review", help="each tool as pinned and as offered now, side by side when changed")
    pin = tool_actions.add_parser("pin", help="pin tools to what their servers offer now (after review), recording "
                                               "who reviewed them and when")
    pin.add_argument("tool_ids", nargs="+", metavar="server.tool[=HASHES]",
                     help="HASHES as review printed them: the pin is refused if the server offers anything else now")
    pin.add_argument("--reviewer", default=os.environ.get("TESSERA_REVIEWER") or getpass.getuser(),
                     help="who reviewed the tools (default: $TESSERA_REVIEWER, else your login name)")
    pin.add_argument("--description", help="a tool not in the policy yet: the text the model reads instead of "
                                           "the server's")
    pin.add_argument("--read", action="store_true", help="a tool not in the policy yet: classify it read "
                                                         "(default: mutate, so a person approves every call)")
    pin.add_argument("--despite-warnings", action="store_true",
                     help="pin a tool as read even though it looks like it writes")
    tool_actions.add_parser("check", help="exit non-zero if any tool drifted, is unreviewed or unreachable")
    tools.set_defaults(run=cmd_policy)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tessera", description="Operate a Tessera deployment.",
        epilog="`tessera ask` exits 0 when answered, 3 when the question cannot be answered as asked, 4 when an "
               "action waits for a person's approval, 1 on any other failure (README: The operator CLI).")
    parser.add_argument("--version", action="version", version=f"tessera {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    certs = sub.add_parser("certs", help="create the deployment CA and one identity per service")
    certs.add_argument("--dir", help="output directory (default: $TESSERA_CERT_DIR or var/certs); the CLI's own "
                                     "keys go to $XDG_CONFIG_HOME/tessera (default ~/.config/tessera)")
    certs.add_argument("--force", action="store_true", help="reissue even if the current ones are valid")
    certs.add_argument("--spiffe-only", action="store_true",
                       help="the SPIFFE URI SAN alone, no DNS/IP names (as identity providers that issue URI-only "
                            "certificates do); clients then need TESSERA_CLIENT_TLS=spiffe-bridge")
    certs.set_defaults(run=cmd_certs)
    up = sub.add_parser("up", help="start all services, wait for health, stop on Ctrl-C")
    up.add_argument("--ephemeral-ports", action="store_true", help="let the OS pick free ports")
    up.set_defaults(run=cmd_up)
    status = sub.add_parser("status", help="report the set started by 'tessera up'")
    _json_flag(status, "print the report as one JSON document")
    status.set_defaults(run=cmd_status)
    demo = sub.add_parser("demo", help="start all, show health and an allowed and a forbidden call, stop")
    demo.add_argument("--keep", action="store_true",
                      help="keep the services and the UI running until Ctrl-C (the default at a terminal)")
    demo.set_defaults(run=cmd_demo)
    seed = sub.add_parser("seed", help="generate the deterministic demo retail warehouse and load it")
    seed.add_argument("--url", help="sqlite:///PATH, postgresql+psycopg://USER@HOST:PORT/DB or duckdb:///PATH "
                                    "(default: sqlite:///$TESSERA_VAR_DIR/warehouse/warehouse.sqlite)")
    seed.add_argument("--scale", type=_scale, default="1m",
                      help="order items: 100k, 1m (default), 10m or a number such as 20000")
    seed.add_argument("--seed", type=int, default=7, help="random seed (default 7); same seed, same data")
    seed.add_argument("--quiet", action="store_true", help="no progress bars")
    seed.add_argument("--password-file", help="read the URL user's password from this file (first line)")
    seed.set_defaults(run=cmd_seed)
    _add_ask_parser(sub)
    mcp = sub.add_parser("mcp", help="serve the data tools to a local MCP client over stdio (put this command in "
                                     "its configuration); needs 'tessera up'")
    mcp.add_argument("--person", default="operator", help="whom the front acts for (default: operator)")
    mcp.add_argument("--tenant", default="local", help="their tenant (default: local)")
    mcp.set_defaults(run=cmd_mcp)
    _add_approval_parsers(sub)
    _add_policy_parser(sub)
    catalog = sub.add_parser("catalog", help="export the component catalog as an A2UI v0.9 catalog document")
    catalog.add_argument("--dir", help="catalog directory (default: the built-in tessera.data/v1)")
    catalog.add_argument("--out", help="write to this file instead of standard output")
    catalog.set_defaults(run=cmd_catalog)
    from cli.deploy import add_parser as add_deploy_parser

    add_deploy_parser(sub).set_defaults(run=cmd_deploy)
    from cli.semantic import add_parser as add_semantic_parser

    add_semantic_parser(sub).set_defaults(run=cmd_semantic)
    from cli.dev_actor import add_parser as add_dev_parser

    add_dev_parser(sub).set_defaults(run=cmd_dev)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (CredentialError, IdentitySchemeError) as exc:
        print(f"tessera: error: {exc}", file=sys.stderr)
        return 2
