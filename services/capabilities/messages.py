"""The wire messages built from the broker's records: receipts for callers, and the events the outbox sends
to the host. The store keeps plain values; these are made from them outside its transactions."""

from __future__ import annotations

from services.capabilities.store import Intent, OutboxEvent, receipt_fields
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2


def receipt(intent: Intent) -> common_pb2.Receipt:
    return _receipt(receipt_fields(intent))


def publish_request(event: OutboxEvent) -> host_pb2.PublishIntentEventRequest:
    """The host event an outbox row stands for (a row queued before migration 0007 holds it serialised)."""
    if event.body is None:
        return host_pb2.PublishIntentEventRequest.FromString(event.legacy_request)
    body, surface = event.body, event.body["surface"]
    request = host_pb2.PublishIntentEventRequest(
        session_id=body["session_id"], surface_id=surface["surface_id"], command_id=surface["command_id"],
        node_id=surface["node_id"], event_id=event.event_id)
    if "receipt" in body:
        request.receipt.CopyFrom(_receipt(body["receipt"]))
    else:
        asked = dict(body["approval_requested"])
        expires_at = asked.pop("expires_at")
        request.approval_requested.CopyFrom(host_pb2.ApprovalRequested(**asked))
        request.approval_requested.expires_at.FromNanoseconds(_nanoseconds(expires_at))
    return request


def _receipt(fields: dict) -> common_pb2.Receipt:
    fields = dict(fields)
    accepted_at, updated_at = fields.pop("accepted_at"), fields.pop("updated_at")
    result = common_pb2.Receipt(**fields)
    result.accepted_at.FromNanoseconds(_nanoseconds(accepted_at))
    result.updated_at.FromNanoseconds(_nanoseconds(updated_at))
    return result


def _nanoseconds(seconds: float) -> int:
    return int(seconds * 1e9)
