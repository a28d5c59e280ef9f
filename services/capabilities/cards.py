"""The approval card (§8): what a person sees before deciding, and the one-line summary of an approval."""

from __future__ import annotations

import json
from collections.abc import Callable

from services.capabilities.store import Intent
from services.capabilities.wording import Wording
from tessera.capabilities.v1 import capabilities_pb2

SHOWN_READS = 3


def card(approval, intent: Intent, dry_run: bool, reads: list, wording: Wording,
         from_tool_server: Callable[[str], bool], drifted_tools: list[str]) -> capabilities_pb2.ApprovalCard:
    """What a person sees before deciding (§8): what approving does in words, the exact arguments (a
    before/after diff for data changes, each record named), the run's taint and flags with each snippet and
    its source, the reads that led to the request (`shown_reads`), and the tools of the requested tool's
    server seen to drift. `reads` are the run's, newest first; `from_tool_server(source)` tells a tool server's
    answer from the run's own data."""
    arguments = intent.arguments
    changes = []
    for i, e in enumerate(arguments.get("entries", [])):
        record, field = wording.change(arguments.get("entity", ""), e)
        changes.append(capabilities_pb2.ArgumentChange(
            path=f"/entries/{i}/after", before_json=json.dumps(e["before"]), after_json=json.dumps(e["after"]),
            record_version=str(e["version"]), entry_id=e["entry_id"], record=record, field=field))
    # Every read counts for taint and flags, whenever its record landed: taint never relaxes, and a read's
    # time is its record's, written behind the reply and perhaps by another replica with its own clock.
    matches = [match for r in reads for match in _screen_matches(r)]
    shown = [capabilities_pb2.UntrustedContent(text=r.text[:2_000], source=r.source, ref=r.ref, clipped=r.clipped,
                                               matches=_screen_matches(r))
             for r in shown_reads(reads, approval.requested_at, from_tool_server)]
    result = capabilities_pb2.ApprovalCard(
        summary=summary(approval, intent, wording), effect=intent.effect, arguments_json=intent.arguments_json,
        arguments_sha256=intent.arguments_sha256, changes=changes, dry_run=dry_run or intent.dry_run,
        tainted=bool(reads), matches=matches, recent_reads=shown, decided_by=approval.decided_by or "",
        signed_with=approval.signed_with or "", drifted_tools=drifted_tools)
    result.summary.flagged = bool(matches)
    return result


def shown_reads(reads: list, requested_at: float, from_tool_server: Callable[[str], bool]) -> list:
    """The reads a card shows (given newest first): of those recorded by the time of the request, flagged ones
    first, then a tool server's text ahead of the run's own data, then the newest. Not simply the newest: reads
    after the request cannot have led to it, and harmless reads just before it must not push off the one that
    did. (A later read is not shown, but its flags are on the card with the rest.)"""
    before = [r for r in reads if r.at <= requested_at]
    ranked = sorted(before, key=lambda r: (not json.loads(r.matches_json), not from_tool_server(r.source)))
    return ranked[:SHOWN_READS]  # sorted() is stable: newest first within each rank


def summary(approval, intent: Intent, wording: Wording) -> capabilities_pb2.ApprovalSummary:
    result = capabilities_pb2.ApprovalSummary(
        approval_id=approval.approval_id, intent_id=intent.intent_id, tool_id=intent.action_id,
        risk=capabilities_pb2.TOOL_RISK_MUTATE, status=intent.status,
        title=wording.title(intent.action_id, intent.arguments))
    result.requested_at.FromNanoseconds(int(approval.requested_at * 1e9))
    result.expires_at.FromNanoseconds(int(approval.expires_at * 1e9))
    return result


def _screen_matches(read) -> list[capabilities_pb2.ScreenMatch]:
    """What the screen found in one recorded read."""
    return [capabilities_pb2.ScreenMatch(rule=m["rule"], snippet=m["snippet"], source=read.source, ref=m["ref"])
            for m in json.loads(read.matches_json)]
