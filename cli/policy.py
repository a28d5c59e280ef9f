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
import sys
import tempfile
from pathlib import Path

import yaml

from cli.launcher import ServiceSet, cli_credentials
from shared.actors import assert_actor
from shared.certs import load_signing_key, signing_key_path
from shared.channels import sync_channel
from shared.contracts import invoke
from tessera.capabilities.v1 import capabilities_pb2 as cap

_STATES = {cap.TOOL_AVAILABILITY_AVAILABLE: "ok", cap.TOOL_AVAILABILITY_DENIED: "denied",
           cap.TOOL_AVAILABILITY_DRIFTED: "DRIFTED", cap.TOOL_AVAILABILITY_UNREACHABLE: "unreachable"}


def fetch_review(policy_file: Path, cert_dir: Path) -> cap.ReviewToolsResponse:
    with tempfile.TemporaryDirectory(prefix="tessera-policy-") as scratch:
        broker = ServiceSet(cert_dir, Path(scratch), names=("capabilities",), ephemeral_ports=True, extra_env={
            "TESSERA_CAPABILITIES_TOOLS_FILE": str(policy_file),
            "TESSERA_CAPABILITIES_DATABASE_URL": f"sqlite:///{Path(scratch) / 'broker.sqlite'}",
            "TESSERA_CAPABILITIES_MCP_LOG_DIR": scratch,
            "TESSERA_HOST_ADDR": "127.0.0.1:9"})  # no host: a review publishes nothing
        broker.start()
        try:
            person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "operator", "local")
            address = broker.handles["capabilities"].address
            with sync_channel(address, cli_credentials(cert_dir, "cli"), "capabilities") as channel:
                return invoke(channel, "capabilities", "ReviewTools", cap.ReviewToolsRequest(actor=person),
                              timeout=120)
        finally:
            broker.stop()


def _schema_text(snapshot: cap.ToolSnapshot) -> list[str]:
    return json.dumps(json.loads(snapshot.input_schema_json or "{}"), indent=2, sort_keys=True).splitlines()


def _side_by_side(label: str, old: list[str], new: list[str]) -> list[str]:
    lines = [f"  {label}:"]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes():
        left, right = old[i1:i2], new[j1:j2]
        for k in range(max(len(left), len(right))):
            a = left[k] if k < len(left) else ""
            b = right[k] if k < len(right) else ""
            marker = " " if tag == "equal" else "|"
            lines.append(f"    {a[:58]:<58} {marker} {b[:58]}")
    return lines


def describe(review: cap.ReviewToolsResponse) -> str:
    lines = []
    for tool in review.tools:
        state = _STATES.get(tool.availability, "?")
        risk = cap.ToolRisk.Name(tool.risk).removeprefix("TOOL_RISK_").lower()
        lines.append(f"{tool.tool_id:<28} {risk:<7} {state}{f' ({tool.reason})' if tool.reason else ''}")
        if tool.availability == cap.TOOL_AVAILABILITY_DRIFTED or tool.reason == "NOT_REVIEWED":
            lines.append("  pinned (left) vs offered now (right):")
            lines += _side_by_side("description", [tool.pinned.description], [tool.current.description])
            lines += _side_by_side("input schema", _schema_text(tool.pinned), _schema_text(tool.current))
            lines.append(f"  annotations (not trusted): {tool.annotations_json}")
    for tool_id in review.unlisted_tool_ids:
        lines.append(f"{tool_id:<28} {'-':<7} denied (not in the policy)")
    return "\n".join(lines)


def pin(policy_file: Path, review: cap.ReviewToolsResponse, tool_id: str) -> str:
    found = next((t for t in review.tools if t.tool_id == tool_id), None)
    if found is None:
        raise SystemExit(f"tessera: error: {tool_id} is not in {policy_file}; add it there first")
    if not found.current.description_sha256:
        raise SystemExit(f"tessera: error: {tool_id} is not offered by its server now ({found.reason}); "
                         "nothing to pin")
    text = policy_file.read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    document = yaml.safe_load(text)
    server, _, tool = tool_id.partition(".")
    document["servers"][server]["tools"][tool]["pin"] = {
        "description_sha256": found.current.description_sha256,
        "input_schema_sha256": found.current.input_schema_sha256,
        "description": found.current.description,
        "input_schema": json.loads(found.current.input_schema_json)}
    policy_file.write_text(header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120))
    return (f"pinned {tool_id}: description {found.current.description_sha256[:12]}…, "
            f"input schema {found.current.input_schema_sha256[:12]}…")


def run(args, cert_dir: Path) -> int:
    policy_file = Path(args.file)
    review = fetch_review(policy_file, cert_dir)
    if args.action == "review":
        print(describe(review))
        return 0
    if args.action == "pin":
        for tool_id in args.tool_ids:
            print(pin(policy_file, review, tool_id))
        return 0
    problems = [t for t in review.tools if t.availability != cap.TOOL_AVAILABILITY_AVAILABLE]
    print(describe(review))
    if problems:
        print(f"tessera: policy check failed: {len(problems)} tool(s) not usable as reviewed "
              f"({', '.join(t.tool_id for t in problems)})", file=sys.stderr)
        return 1
    print(f"policy check passed: {len(review.tools)} tools match their pins", file=sys.stderr)
    return 0
