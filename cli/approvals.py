"""`tessera approvals list|show|approve|reject` and `tessera audit`: a person at the terminal decides.

The CLI is a human-facing edge: it signs the operator's actor assertion with
its own key, and the broker checks it. A decision quotes the arguments hash
of the card it was shown, so what is approved is exactly what was displayed,
and is signed with the same key over a nonce the broker gave out for it
(shared/decisions.py): the broker verifies that signature before anything
runs, and records which key signed.
Each `approve`/`reject` carries one decision id, sent unchanged on every retry
of a call that found the broker down or slow: the broker answers a retry of a
decision it already recorded with that decision's outcome, and the effect runs
at most once.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc

from cli.launcher import cli_credentials
from cli.output import table
from shared.actors import assert_actor
from shared.certs import load_signing_key, signing_key_path
from shared.channels import sync_channel
from shared.contracts import invoke, invoke_stream
from shared.decisions import signed_by_operator
from shared.errors import error_details
from shared.printable import printable
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2

OPERATOR = ("operator", "local", "Operator")
# A broker restarting under a decision is back within seconds: six attempts over about 15 s of waiting.
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
DECIDE_TIMEOUT_SECONDS = 30.0
# Refusals that mean "this approval was decided (or ended) already": the broker says how in ErrorInfo metadata.
SETTLED = frozenset({"APPROVAL_ALREADY_DECIDED", "DECISION_ID_CONFLICT", "APPROVAL_EXPIRED"})
# Refusals that mean "the policy does not let the operator key approve this": only the person's passkey can.
NOT_THIS_SIGNER = frozenset({"PASSKEY_REQUIRED", "OPERATOR_KEY_NOT_FOR_TENANT"})


class DecisionRefused(Exception):
    """A decision the broker did not take, with what the approval's outcome actually is."""


def retrying(call: Callable[[], object], delays=RETRY_DELAYS, sleep: Callable[[float], None] = time.sleep):
    """`call()`, again after each delay while the broker is unreachable or slow; other errors at once.

    Only safe for reads and for a Decide that carries its decision id (the broker replays it)."""
    for delay in (*delays, None):
        try:
            return call()
        except grpc.RpcError as exc:
            if delay is None or exc.code() not in RETRYABLE:
                raise
            sleep(delay)
    raise AssertionError("unreachable")


def _status(value: int) -> str:
    return common_pb2.IntentStatus.Name(value).removeprefix("INTENT_STATUS_").lower().replace("_", "-")


def _plain(value_json: str) -> str:
    """A before/after value as a person reads it: text without JSON quotes, null as (empty)."""
    try:
        value = json.loads(value_json)
    except ValueError:
        return value_json
    if value in (None, ""):
        return "(empty)"
    return printable(value if isinstance(value, str) else json.dumps(value))


def _when(timestamp) -> str:
    return timestamp.ToDatetime(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


class ApprovalDesk:
    def __init__(self, address: str, cert_dir: Path) -> None:
        self.channel = sync_channel(address, cli_credentials(cert_dir, "cli"), "capabilities")
        self.key = load_signing_key(signing_key_path(cert_dir, "cli"))
        self.person = assert_actor(self.key, *OPERATOR)

    def close(self) -> None:
        self.channel.close()

    def call(self, method: str, request):
        return invoke(self.channel, "capabilities", method, request, timeout=60)

    def list(self, everything: bool) -> str:
        statuses = list(common_pb2.IntentStatus.values())[1:] if everything else []
        reply = self.call("ListApprovals", cap.ListApprovalsRequest(actor=self.person, statuses=statuses,
                                                                    page_size=100))
        if not reply.approvals:
            return "no approvals are waiting" if not everything else "no approvals"
        return table([[a.approval_id, a.tool_id, _status(a.status), _when(a.requested_at), _when(a.expires_at)]
                      for a in reply.approvals], ["approval", "action", "status", "requested (UTC)",
                                                  "expires (UTC)"])

    def show(self, approval_id: str) -> str:
        card = self.call("GetApproval", cap.GetApprovalRequest(actor=self.person, approval_id=approval_id)).card
        risk = cap.ToolRisk.Name(card.summary.risk).removeprefix("TOOL_RISK_").lower()
        lines = [printable(card.summary.title or card.summary.tool_id),
                 f"{card.summary.tool_id}  [{risk}]  {_status(card.summary.status)}"
                 f"{'  (dry run)' if card.dry_run else ''}",
                 f"expires {_when(card.summary.expires_at)} UTC; arguments sha256 {card.arguments_sha256}"]
        if card.changes:  # each change in words, as the browser card shows it
            lines.append(table([[c.entry_id, c.record, f"{c.field}: {_plain(c.before_json)} → {_plain(c.after_json)}",
                                 c.record_version] for c in card.changes],
                               ["entry", "record", "change", "version"]))
        else:
            lines.append(json.dumps(json.loads(card.arguments_json), indent=2))
        if card.signed_with:
            lines.append(f"decided by {card.decided_by}, signed with {card.signed_with}")
        if card.tainted:
            lines.append("tainted: this run read external content before asking")
        for match in card.matches:
            lines.append(f"flagged: {match.rule}: {match.snippet!r} ({match.source}, {match.ref})")
        for read in card.recent_reads:
            text = " ".join(read.text.split())
            lines.append(f"read: {read.source} ({read.ref}): {text[:160]!r}{' (clipped)' if read.clipped else ''}")
        return "\n".join(lines)

    def decide(self, approval_id: str, approve: bool, reason: str, entries: list[str]) -> str:
        """Decide once, retrying with the same decision id; the receipt line, or DecisionRefused saying how the
        approval actually ended."""
        # Quote the hash of the card as it is now: if the arguments changed, the broker refuses.
        card = retrying(lambda: self.call("GetApproval", cap.GetApprovalRequest(
            actor=self.person, approval_id=approval_id))).card
        request = cap.DecideRequest(
            actor=self.person, approval_id=approval_id, reason=reason, arguments_sha256=card.arguments_sha256,
            decision=cap.DECISION_APPROVE if approve else cap.DECISION_REJECT,
            entries=[cap.EntryDecision(entry_id=e, decision=cap.DECISION_APPROVE) for e in entries],
            decision_id=f"cli-{secrets.token_hex(16)}")
        try:
            # Signed with this CLI's own key over the broker's nonce: the broker verifies the signature, so
            # nothing that carries a decision can change it. Retries resend this same signed request.
            # Sent even where BeginDecision says the operator key is not accepted: the broker then refuses it
            # with its precise reason (PASSKEY_REQUIRED, OPERATOR_KEY_NOT_FOR_TENANT) and puts it on the record.
            begun = retrying(lambda: self.call("BeginDecision", cap.BeginDecisionRequest(
                actor=self.person, approval_id=approval_id)))
            request = signed_by_operator(request, begun.nonce, self.key)
            reply = retrying(lambda: invoke(self.channel, "capabilities", "Decide", request,
                                            timeout=DECIDE_TIMEOUT_SECONDS))
        except grpc.RpcError as exc:
            details = error_details(exc, "capabilities")
            if details.reason in SETTLED:
                raise DecisionRefused(f"{details.reason}: {details.message}\n{_settled(details.metadata)}") from None
            if details.reason in NOT_THIS_SIGNER:
                raise DecisionRefused(f"{details.reason}: {details.message}; decide {approval_id} in the browser "
                                      "with the person's passkey") from None
            if exc.code() in RETRYABLE:
                raise DecisionRefused(
                    f"{exc.code().name}: the broker did not answer after {len(RETRY_DELAYS) + 1} attempts; the "
                    f"decision may have been recorded: see `tessera approvals show {approval_id}`") from None
            raise
        receipt = reply.receipt
        tail = f" ({receipt.reason})" if receipt.reason else ""
        return f"{receipt.intent_id}: {_status(receipt.status)}{tail}"

    def export_audit(self, out) -> int:
        count = 0
        for record in invoke_stream(self.channel, "capabilities", "ExportAudit",
                                    cap.ExportAuditRequest(actor=self.person), timeout=300):
            out.write(record.record_json + "\n")
            count += 1
        return count


def _settled(outcome: dict[str, str]) -> str:
    """How a decided approval ended, from the refusal's metadata, e.g. "approved by operator at …; int_…:
    succeeded"."""
    state = outcome.get("approval_state", "decided")
    who = f" by {outcome['decided_by']}" if outcome.get("decided_by") else ""
    when = f" at {outcome['decided_at']}" if outcome.get("decided_at") else ""
    status = outcome.get("intent_status", "")
    result = f"; {outcome.get('intent_id', '')}: {_status(common_pb2.IntentStatus.Value(status))}" \
        if status in common_pb2.IntentStatus.keys() else ""
    reason = f" ({outcome['intent_reason']})" if outcome.get("intent_reason") and result else ""
    return f"the approval was {state}{who}{when}{result}{reason}"


def run(address: str, cert_dir: Path, args) -> int:
    desk = ApprovalDesk(address, cert_dir)
    try:
        if args.command == "audit":
            target = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
            try:
                count = desk.export_audit(target)
            finally:
                if args.out:
                    target.close()
            print(f"{count} audit records", file=sys.stderr)
        elif args.action == "list":
            print(desk.list(args.all))
        elif args.action == "show":
            print(desk.show(args.approval_id))
        else:
            try:
                print(desk.decide(args.approval_id, args.action == "approve", args.reason or "", args.entry or []))
            except DecisionRefused as refused:
                print(f"tessera: {refused}", file=sys.stderr)
                return 1
    finally:
        desk.close()
    return 0
