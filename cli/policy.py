"""`tessera policy review|pin|check`: the person's side of the tool trust gate (§8).

The CLI holds no server credentials, so it asks a broker: it starts a private
capabilities process on the policy file, calls ReviewTools (the broker fetches
every tool list and hashes it, as at a session start) and stops it again.
`pin` rewrites the tool's `pin` block in the policy file with what the server
offers now — do it only after `review` showed the change and a person accepted it.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc
import yaml

from cli.launcher import ServiceSet, cli_credentials
from shared.data import strict_yaml
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke_future
from shared.safety.printable import revealed
from tessera.capabilities.v1 import capabilities_pb2 as cap

_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]*")  # as the policy names tools (tool_policy.py)
_STATES = {cap.TOOL_AVAILABILITY_AVAILABLE: "ok", cap.TOOL_AVAILABILITY_DENIED: "denied",
           cap.TOOL_AVAILABILITY_DRIFTED: "DRIFTED", cap.TOOL_AVAILABILITY_UNREACHABLE: "unreachable"}


# `policy review` waits for every tool server to start and answer (18 s is usual): it says so every few seconds.
PROGRESS_EVERY_SECONDS = 5.0


def fetch_review(policy_file: Path, cert_dir: Path, say=lambda line: None) -> cap.ReviewToolsResponse:
    """What each tool server in `policy_file` offers now, beside its pin, from a private broker; `say` hears
    each step as it begins and, while the servers are asked, how long it has been."""
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tessera-policy-") as scratch:
        broker = ServiceSet(cert_dir, Path(scratch), names=("capabilities",), ephemeral_ports=True, extra_env={
            "TESSERA_CAPABILITIES_TOOLS_FILE": str(policy_file),
            "TESSERA_CAPABILITIES_DATABASE_URL": f"sqlite:///{Path(scratch) / 'broker.sqlite'}",
            "TESSERA_CAPABILITIES_MCP_LOG_DIR": scratch,
            # Servers' {var} data folders in the scratch folder too: a review lists tools and must not create
            # or touch a server's real data (run as root, that belongs to the running broker's own user).
            "TESSERA_VAR_DIR": scratch,
            "TESSERA_HOST_ADDR": "127.0.0.1:9"})  # no host: a review publishes nothing
        say(f"starting a private broker on {policy_file} ...")
        broker.start()
        try:
            person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "operator", "local")
            address = broker.handles["capabilities"].address
            say(f"asking each tool server for its tools (each one starts, as at a session's start; "
                f"{time.monotonic() - began:.1f} s so far) ...")
            with sync_channel(address, cli_credentials(cert_dir, "cli"), "capabilities") as channel:
                review = waited_for(invoke_future(channel, "capabilities", "ReviewTools",
                                                  cap.ReviewToolsRequest(actor=person), timeout=120), say, began)
            say(f"asked in {time.monotonic() - began:.1f} s")
            return review
        finally:
            broker.stop()


def waited_for(call: grpc.Future, say, began: float, every: float = PROGRESS_EVERY_SECONDS):
    """`call`'s answer, saying every `every` seconds how long it has been since `began` (time.monotonic)."""
    try:
        while True:
            try:
                return call.result(timeout=every)
            except grpc.FutureTimeoutError:
                say(f"  still asking ({time.monotonic() - began:.0f} s) ...")
    finally:
        call.cancel()  # Ctrl-C: nothing is left waiting on the broker that is about to stop; a no-op once done


def _schema_text(snapshot: cap.ToolSnapshot) -> list[str]:
    return json.dumps(json.loads(snapshot.input_schema_json or "{}"), indent=2, sort_keys=True).splitlines()


def _prose(text: str) -> list[str]:
    """A server's text in lines of at most 58 characters, nothing cut off and nothing hidden."""
    return [chunk for line in revealed(text).splitlines() or [""]
            for chunk in (textwrap.wrap(line, 58, drop_whitespace=False, replace_whitespace=False) or [""])]


def _cut(lines: list[str]) -> list[str]:
    """Lines of at most 58 characters, a longer one continued on the next (nothing dropped)."""
    return [line[i:i + 58] for line in lines for i in range(0, max(len(line), 1), 58)]


def _side_by_side(label: str, old: list[str], new: list[str]) -> list[str]:
    old, new = _cut(old), _cut(new)
    lines = [f"  {label}:"]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes():
        left, right = old[i1:i2], new[j1:j2]
        for k in range(max(len(left), len(right))):
            a = left[k] if k < len(left) else ""
            b = right[k] if k < len(right) else ""
            marker = " " if tag == "equal" else "|"
            lines.append(f"    {a:<58} {marker} {b}")
    return lines


def _reviewed(snapshot: cap.ToolSnapshot) -> str:
    when = snapshot.reviewed_at.ToDatetime().strftime("%Y-%m-%d %H:%M UTC")
    return f"  pinned by {revealed(snapshot.reviewed_by)} on {when}"


def _warnings(tool: cap.ToolReview) -> list[str]:
    """What the server's own words and shape give away: instructions, and a read-only claim that looks false."""
    lines = [f"  ! server text reads like instructions ({m.rule}, {revealed(m.ref, False)}): "
             f"{revealed(m.snippet, False)}"
             for m in tool.server_text_matches]
    claims = []
    if tool.risk == cap.TOOL_RISK_READ:
        claims.append("it is classified read")
    if json.loads(tool.annotations_json or "{}").get("readOnlyHint") is True:
        claims.append("the server annotates it read-only")
    if tool.write_signals and claims:
        lines.append(f"  WARNING: {' and '.join(claims)}, but it looks like it writes:")
    elif tool.write_signals:
        lines.append("  signs that it writes:")
    lines += [f"    - {revealed(signal, False)}" for signal in tool.write_signals]
    if lines and tool.risk != cap.TOOL_RISK_UNSPECIFIED and tool.availability != cap.TOOL_AVAILABILITY_DRIFTED:
        # What the warnings are about, exactly as the server says it (a drift shows it side by side already).
        lines[:0] = ["  the server's description (untrusted):",
                     *(f"    {line}" for line in _prose(tool.current.description))]
    return lines


def _offered_in_full(tool: cap.ToolReview) -> list[str]:
    """An unlisted tool exactly as its server offers it: every word is the server's, none is trusted."""
    shown = revealed(tool.tool_id, False)  # the server chose this name: it may hold terminal escapes
    lines = [f"{shown:<28} {'-':<7} denied (not in the policy); as offered by the server (untrusted):",
             "  description:", *(f"    {line}" for line in _prose(tool.current.description)), "  input schema:"]
    lines += [f"    {line}" for line in _schema_text(tool.current)]
    lines.append(f"  annotations (claimed by the server, not trusted): {tool.annotations_json}")
    lines += _warnings(tool)
    lines.append(f"  proposed: risk mutate (a person approves every call). To add it as reviewed: tessera policy "
                 f"pin {shown}={_hashes(tool.current)} --description \"<what the model should read>\" [--read]")
    return lines


def describe(review: cap.ReviewToolsResponse) -> str:
    lines = []
    for tool in review.tools:
        state = _STATES.get(tool.availability, "?")
        risk = cap.ToolRisk.Name(tool.risk).removeprefix("TOOL_RISK_").lower()
        lines.append(f"{tool.tool_id:<28} {risk:<7} {state}{f' ({tool.reason})' if tool.reason else ''}")
        if tool.HasField("pinned"):
            lines.append(_reviewed(tool.pinned))
        if tool.availability == cap.TOOL_AVAILABILITY_DRIFTED or tool.reason == "NOT_REVIEWED":
            lines.append("  pinned (left) vs offered now (right):")
            lines += _side_by_side("description", _prose(tool.pinned.description),
                                   _prose(tool.current.description))
            lines += _side_by_side("input schema", _schema_text(tool.pinned), _schema_text(tool.current))
            lines.append(f"  annotations (not trusted): {tool.annotations_json}")
            if tool.current.description_sha256:
                lines.append(f"  to accept what is offered now: tessera policy pin {tool.tool_id}="
                             f"{_hashes(tool.current)}")
        lines += _warnings(tool)
    for tool in review.unlisted:
        lines += _offered_in_full(tool)
    shown = {tool.tool_id for tool in review.unlisted}
    for tool_id in review.unlisted_tool_ids:
        if tool_id not in shown:
            lines.append(f"{revealed(tool_id, False):<28} {'-':<7} denied (not in the policy; not shown in full: "
                         "too many unlisted tools)")
    return "\n".join(lines)


def _refuse_read_that_looks_like_writing(tool: cap.ToolReview, read: bool, despite_warnings: bool) -> None:
    if read and tool.write_signals and not despite_warnings:  # the reviewer's word against the evidence
        signals = "; ".join(revealed(signal, keep_newlines=False) for signal in tool.write_signals)
        raise SystemExit(f"tessera: error: {revealed(tool.tool_id, False)} is to be trusted as read, but it looks "
                         f"like it writes ({signals}). Classify it mutate, or pin with --despite-warnings after "
                         "checking the server's code")


def _new_rule(tool: cap.ToolReview, args) -> dict:
    """A tool the policy does not list yet: mutate unless the reviewer says read, in the reviewer's words."""
    name = tool.tool_id.partition(".")[2]
    if not _TOOL_NAME.fullmatch(name):
        raise SystemExit(f"tessera: error: {revealed(tool.tool_id, False)} cannot be listed: the policy names tools "
                         "in lower_snake_case, and this server's name for it is not")
    _refuse_read_that_looks_like_writing(tool, args.read, args.despite_warnings)
    return {"risk": "read" if args.read else "mutate", "description": args.description}


def _offered_as_reviewed(tool: cap.ToolReview, expected: str | None) -> None:
    """`expected` is what review printed (description and schema hash prefixes): a server that offers
    something else now than what the reviewer read is refused, never pinned."""
    if expected is None:
        return
    description, _, schema = expected.partition(":")
    offered = tool.current
    if len(description) < 12 or len(schema) < 12 or not offered.description_sha256.startswith(description) \
            or not offered.input_schema_sha256.startswith(schema):
        raise SystemExit(f"tessera: error: {tool.tool_id} is offered differently now than when you reviewed it "
                         f"({expected} reviewed, {_hashes(offered)} offered): review it again")


def _hashes(snapshot: cap.ToolSnapshot) -> str:
    return f"{snapshot.description_sha256[:12]}:{snapshot.input_schema_sha256[:12]}"


def _write_atomically(policy_file: Path, text: str) -> None:
    """The policy file is replaced whole or not at all: a broker never reads half a pin."""
    scratch = policy_file.with_name(f".{policy_file.name}.{os.getpid()}.tmp")
    scratch.write_text(text)
    os.replace(scratch, policy_file)


def pin(policy_file: Path, review: cap.ReviewToolsResponse, spec: str, args) -> str:
    """Write a tool's pin (and, for an unlisted tool, its rule) into the policy file, with who and when.
    `spec` is `server.tool`, or `server.tool=<description hash>:<schema hash>` as review printed it."""
    tool_id, _, expected = spec.partition("=")
    listed = next((t for t in review.tools if t.tool_id == tool_id), None)
    found = listed or next((t for t in review.unlisted if t.tool_id == tool_id), None)
    if found is None:
        raise SystemExit(f"tessera: error: no server in {policy_file} offers {revealed(tool_id, False)} now")
    if not found.current.description_sha256:
        raise SystemExit(f"tessera: error: {tool_id} is not offered by its server now ({found.reason}); "
                         "nothing to pin")
    _offered_as_reviewed(found, expected or None)  # the arguments were checked against the file (run)
    if listed is not None:  # classified read by hand in the file; a changed offer may now look like writing
        _refuse_read_that_looks_like_writing(listed, listed.risk == cap.TOOL_RISK_READ, args.despite_warnings)
    text = policy_file.read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    document = _policy_document(policy_file, text)
    server, _, tool = tool_id.partition(".")
    rules = document["servers"][server]["tools"]
    if listed is None:
        rules[tool] = _new_rule(found, args)
    rules[tool]["pin"] = {
        "description_sha256": found.current.description_sha256,
        "input_schema_sha256": found.current.input_schema_sha256,
        "description": found.current.description,
        "input_schema": json.loads(found.current.input_schema_json),
        "reviewed_by": args.reviewer,
        "reviewed_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    _write_atomically(policy_file, header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120))
    bound = "as reviewed" if expected else "as offered now (pass server.tool=<hashes> from review to bind a pin " \
                                           "to what you read)"
    return f"pinned {tool_id} ({rules[tool]['risk']}) for {args.reviewer}, {bound}: {_hashes(found.current)}"


def _policy_document(policy_file: Path, text: str):
    """The policy file's YAML read as strictly as the broker reads it: a duplicate key is an error, not a rule
    silently dropped when pin rewrites the file."""
    try:
        return strict_yaml.load(text)
    except strict_yaml.YamlProblem as exc:
        raise SystemExit(f"tessera: error: {policy_file}: {exc}") from None


def _check_pin_arguments(policy_file: Path, args) -> None:
    """What can be refused from the file alone, before a broker is started to ask the servers."""
    if args.description and len(args.tool_ids) > 1:
        raise SystemExit("tessera: error: --description names one tool's text; pin new tools one at a time")
    if not args.reviewer.strip() or len(args.reviewer) > 200:
        raise SystemExit("tessera: error: --reviewer: who reviewed the tool, 1-200 characters")
    servers = (_policy_document(policy_file, policy_file.read_text()) or {}).get("servers") or {}
    for spec in args.tool_ids:
        server, _, tool = spec.partition("=")[0].partition(".")
        listed = tool in ((servers.get(server) or {}).get("tools") or {})
        if listed and (args.description or args.read):
            raise SystemExit(f"tessera: error: {server}.{tool} is already in {policy_file}; change its risk or "
                             "description there")
        if not listed and not 1 <= len(args.description or "") <= 1000:
            raise SystemExit(f"tessera: error: {server}.{tool} is not in the policy; give --description "
                             "(1-1000 characters), the text the model will read instead of the server's")


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)  # beside the review, never inside it


def run(args, cert_dir: Path) -> int:
    policy_file = Path(args.file)
    if args.action == "pin":
        _check_pin_arguments(policy_file, args)
    review = fetch_review(policy_file, cert_dir, say=_progress)
    if args.action == "review":
        print(describe(review))
        return 0
    if args.action == "pin":
        for tool_id in args.tool_ids:
            print(pin(policy_file, review, tool_id, args))
        return 0
    problems = [t for t in review.tools if t.availability != cap.TOOL_AVAILABILITY_AVAILABLE]
    print(describe(review))
    if problems:
        print(f"tessera: policy check failed: {len(problems)} tool(s) not usable as reviewed "
              f"({', '.join(t.tool_id for t in problems)})", file=sys.stderr)
        return 1
    print(f"policy check passed: {len(review.tools)} tools match their pins", file=sys.stderr)
    return 0
