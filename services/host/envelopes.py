"""Journal entries: surface envelopes, built once their revision and position are known."""

from __future__ import annotations

import hashlib

from shared.bounded_json import canonical
from tessera.host.v1 import host_pb2


def envelope_builder(surface_id: str, payload_field: str, payload, payload_json: str):
    """A callable (revision_id, epoch, sequence) -> (payload hash, envelope bytes) for HostStore appends."""
    payload_hash = hashlib.sha256(payload_json.encode()).hexdigest()

    def build(revision_id: str, epoch: int, sequence: int) -> tuple[str, bytes]:
        envelope = host_pb2.SurfaceEnvelope(surface_id=surface_id, epoch=epoch, sequence=sequence,
                                            revision_id=revision_id, payload_hash=payload_hash)
        envelope.published_at.GetCurrentTime()
        getattr(envelope, payload_field).CopyFrom(payload)
        return payload_hash, envelope.SerializeToString()

    return build


def data_model_update(surface_id: str, message: dict):
    """An A2UI updateDataModel message (window rows, state) as a journal entry."""
    message_json = canonical(message)
    return envelope_builder(surface_id, "a2ui", host_pb2.A2uiMessage(
        kind=host_pb2.A2UI_MESSAGE_KIND_UPDATE_DATA_MODEL, message_json=message_json), message_json)
