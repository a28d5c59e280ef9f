"""`tessera approvals list|show|approve|reject` and `tessera audit`: a person at the terminal decides.

The CLI is a human-facing edge: it signs the operator's actor assertion with
its own key, and the broker checks it. A decision quotes the arguments hash
of the card it was shown, so what is approved is exactly what was displayed,
and is signed with the same key over a nonce the broker gave out for it
(shared/identity/decisions.py): the broker verifies that signature before anything
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
from rich.console import Console

from cli.launcher import cli_credentials
from cli.output import human_time, iso_time, paged, print_json, table
from cli.persons import OPERATOR
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.identity.decisions import signed_by_operator
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke, invoke_stream
from shared.rpc.errors import error_details
from shared.safety.printable import printable
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2

# A broker restarting under a decision is back within seconds: six attempts over about 15 s of waiting.
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
DECIDE_TIMEOUT_SECONDS = 30.0
# Refusals that mean "this approval was decided (or ended) already": the broker says how in ErrorInfo metadata.
SETTLED = frozenset({"APPROVAL_ALREADY_DECIDED", "DECISION_ID_CONFLICT", "APPROVAL_EXPIRED"})
# Refusals that mean "the policy does not let the operator key approve this": only the person's passkey can.
NOT_THIS_SIGNER = frozenset({"PASSKEY_REQUIRED", "OPERATOR_KEY_NOT_FOR_TENANT"})


class DecisionRefused(Exception):
    """A decision the broker did not take: its reason, and in words what the approval's outcome actually is."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason, self.message = reason, message


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


class ApprovalDesk:
    def __init__(self, address: str, cert_dir: Path) -> None:
        self.channel = sync_channel(address, cli_credentials(cert_dir, "cli"), "capabilities")
        self.key = load_signing_key(signing_key_path(cert_dir, "cli"))
        self.person = assert_actor(self.key, *OPERATOR)

    def close(self) -> None:
        self.channel.close()

    def call(self, method: str, request):
        return invoke(self.channel, "capabilities", method, request, timeout=60)

    def list(self, everything: bool) -> list[dict]:
        """The approvals waiting for a decision (with `everything`, decided and expired ones too)."""
        statuses = list(common_pb2.IntentStatus.values())[1:] if everything else []
        reply = self.call("ListApprovals", cap.ListApprovalsRequest(actor=self.person, statuses=statuses,
                                                                    page_size=100))
        return [{"approval_id": a.approval_id, "action": a.tool_id, "title": printable(a.title),
                 "status": _status(a.status), "requested_at": iso_time(a.requested_at.ToDatetime(dt.UTC)),
                 "expires_at": iso_time(a.expires_at.ToDatetime(dt.UTC))} for a in reply.approvals]

    def show(self, approval_id: str) -> dict:
        """The approval card, as data: what approving does in words, each change, who decided and how, and what
        the run read from outside before asking."""
        card = self.call("GetApproval", cap.GetApprovalRequest(actor=self.person, approval_id=approval_id)).card
        summary = card.summary
        return {"approval_id": summary.approval_id or approval_id, "title": printable(summary.title),
                "action": summary.tool_id, "risk": cap.ToolRisk.Name(summary.risk).removeprefix("TOOL_RISK_").lower(),
                "status": _status(summary.status), "dry_run": card.dry_run,
                "expires_at": iso_time(summary.expires_at.ToDatetime(dt.UTC)),
                "arguments_sha256": card.arguments_sha256,
                "changes": [{"entry": c.entry_id, "record": c.record, "field": c.field,
                             "before": _plain(c.before_json), "after": _plain(c.after_json),
                             "record_version": c.record_version} for c in card.changes],
                "arguments": json.loads(card.arguments_json or "{}") if not card.changes else None,
                "decided_by": card.decided_by, "signed_with": card.signed_with, "tainted": card.tainted,
                "flags": [{"rule": m.rule, "snippet": m.snippet, "source": m.source, "ref": m.ref}
                          for m in card.matches],
                "reads": [{"source": r.source, "ref": r.ref, "text": " ".join(r.text.split()), "clipped": r.clipped}
                          for r in card.recent_reads],
                "drifted_tools": list(card.drifted_tools)}

    def decide(self, approval_id: str, approve: bool, reason: str, entries: list[str]) -> dict:
        """Decide once, retrying with the same decision id; the receipt, or DecisionRefused saying how the
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
                raise DecisionRefused(details.reason, f"{details.message}\n{_settled(details.metadata)}") from None
            if details.reason in NOT_THIS_SIGNER:
                raise DecisionRefused(details.reason, f"{details.message}; decide {approval_id} in the browser "
                                                      "with the person's passkey") from None
            if exc.code() in RETRYABLE:
                raise DecisionRefused(
                    exc.code().name, f"the broker did not answer after {len(RETRY_DELAYS) + 1} attempts; the "
                                     f"decision may have been recorded: see `tessera approvals show {approval_id}`"
                ) from None
            raise
        receipt = reply.receipt
        return {"approval_id": approval_id, "intent_id": receipt.intent_id, "status": _status(receipt.status),
                "reason": receipt.reason}

    def audit(self):
        """The audit trail's records in order, each as the broker exported it (JSON text)."""
        for record in invoke_stream(self.channel, "capabilities", "ExportAudit",
                                    cap.ExportAuditRequest(actor=self.person), timeout=300):
            yield record.record_json


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
            return _audit(desk, args)
        if args.action == "list":
            listed = desk.list(args.all)
            if args.json:
                print_json(listed)
            else:
                print(_listing(listed, args.all))
        elif args.action == "show":
            card = desk.show(args.approval_id)
            if args.json:
                print_json(card)
            else:
                print(card_text(card))
        else:
            return _decide(desk, args)
    finally:
        desk.close()
    return 0


def _decide(desk: ApprovalDesk, args) -> int:
    try:
        receipt = desk.decide(args.approval_id, args.action == "approve", args.reason or "", args.entry or [])
    except DecisionRefused as refused:
        print(f"tessera: {refused}", file=sys.stderr)
        if args.json:
            print_json({"approval_id": args.approval_id, "error": {"reason": refused.reason,
                                                                   "message": refused.message}})
        return 1
    if args.json:
        print_json(receipt)
    else:
        print(f"{receipt['intent_id']}: {receipt['status']}" + (f" ({receipt['reason']})" if receipt["reason"] else ""))
    return 0


def _listing(approvals: list[dict], everything: bool) -> str:
    if not approvals:
        return "no approvals" if everything else "no approvals are waiting"
    return table([[a["approval_id"], a["title"] or a["action"], a["status"], human_time(a["requested_at"]),
                   human_time(a["expires_at"])] for a in approvals],
                 ["approval", "what approving does", "status", "requested (UTC)", "expires (UTC)"])


def card_text(card: dict) -> str:
    """The approval card at the terminal, from the same record `approvals show --json` prints."""
    lines = [card["title"] or card["action"],
             f"{card['action']}  [{card['risk']}]  {card['status']}{'  (dry run)' if card['dry_run'] else ''}",
             f"expires {human_time(card['expires_at'])} UTC; arguments sha256 {card['arguments_sha256']}"]
    if card["changes"]:  # each change in words, as the browser card shows it
        lines.append(table([[c["entry"], c["record"], f"{c['field']}: {c['before']} → {c['after']}",
                             c["record_version"]] for c in card["changes"]], ["entry", "record", "change", "version"]))
    else:
        lines.append(json.dumps(card["arguments"], indent=2))
    if card["signed_with"]:
        lines.append(f"decided by {card['decided_by']}, signed with {card['signed_with']}")
    if card["drifted_tools"]:
        lines.append(f"server changed since review ({', '.join(card['drifted_tools'])}): approving will not run this")
    if card["tainted"]:
        lines.append("tainted: this run read external content before asking")
    lines += [f"flagged: {f['rule']}: {f['snippet']!r} ({f['source']}, {f['ref']})" for f in card["flags"]]
    lines += [f"read: {r['source']} ({r['ref']}): {r['text'][:160]!r}{' (clipped)' if r['clipped'] else ''}"
              for r in card["reads"]]
    return "\n".join(lines)


def _audit(desk: ApprovalDesk, args) -> int:
    """The audit trail: JSONL to --out or with --json (each record as the broker exported it), else a table
    with times as people read them, through the pager at a terminal."""
    if args.out or args.json:
        target = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
        count = 0
        try:
            for record in desk.audit():
                target.write(record + "\n")
                count += 1
        finally:
            if args.out:
                target.close()
        print(f"{count} audit records", file=sys.stderr)
        return 0
    records = [json.loads(record) for record in desk.audit()]
    console = Console(highlight=False, soft_wrap=True)
    with paged(console):
        console.print(audit_table(records) if records else "the audit trail is empty", markup=False)
    return 0


def audit_table(records: list[dict]) -> str:
    """Each audit record on one line: when (UTC), what happened, who, about which intent or approval, and the
    rest of what was recorded."""
    return table([[human_time(r["at"]), r["kind"], r["actor_id"], r["intent_id"] or r["approval_id"],
                   _detail(r["detail"])] for r in records], ["when (UTC)", "what", "who", "about", "detail"])


def _detail(detail: dict) -> str:
    """`key=value`, each value as printable text and at most 60 characters (the JSON has it whole); a moment
    (`…_at`, epoch seconds in the record) as a UTC time."""
    def shown(key: str, value) -> str:
        if key.endswith("_at") and isinstance(value, int | float):
            return human_time(value)
        text = printable(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        return text if len(text) <= 60 else text[:59] + "…"

    return ", ".join(f"{key}={shown(key, value)}" for key, value in detail.items())
