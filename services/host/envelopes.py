"""Journal entries: surface envelopes built before their place in the journal is known.

The store appends an entry without reading it, and gives it its place (epoch, sequence, revision) in the
transaction that appends it. The envelope a subscriber gets is the stored one with that place written in
(`positioned`). Each entry also says what a snapshot keeps of it (`snapshot_key`), so compacting a journal
needs no reading of envelopes either.
"""

from __future__ import annotations

import hashlib
import json

from services.host.store import JournalEntry, NewEntry
from shared.data.bounded_json import canonical
from shared.ui.windows import FIRST_WINDOWS_PATH
from tessera.host.v1 import host_pb2


def journal_entry(surface_id: str, payload_field: str, payload, payload_json: str,
                  snapshot_key: str | None = None) -> NewEntry:
    """An entry carrying `payload` in the envelope's `payload_field`; hashed over `payload_json`."""
    payload_hash = hashlib.sha256(payload_json.encode()).hexdigest()
    envelope = host_pb2.SurfaceEnvelope(surface_id=surface_id, payload_hash=payload_hash)
    envelope.published_at.GetCurrentTime()
    getattr(envelope, payload_field).CopyFrom(payload)
    return NewEntry(payload_hash, envelope.SerializeToString(), snapshot_key)


def a2ui_message(surface_id: str, kind: int, message: dict, message_json: str) -> NewEntry:
    """A compiled revision's A2UI message (`message` is `message_json` read)."""
    return journal_entry(surface_id, "a2ui", host_pb2.A2uiMessage(kind=kind, message_json=message_json),
                         message_json, snapshot_key("a2ui", message))


def data_model_update(surface_id: str, message: dict, message_json: str | None = None) -> NewEntry:
    """An A2UI updateDataModel message (window rows, state) as a journal entry; `message_json` is its canonical
    text when the caller made it already."""
    message_json = canonical(message) if message_json is None else message_json
    return journal_entry(surface_id, "a2ui", host_pb2.A2uiMessage(
        kind=host_pb2.A2UI_MESSAGE_KIND_UPDATE_DATA_MODEL, message_json=message_json), message_json,
        snapshot_key("a2ui", message))


def snapshot_key(payload_field: str, message: dict | None) -> str | None:
    """What a snapshot of the journal keeps of an entry: None, nothing; "", the entry; a path, the last entry
    that writes it. A snapshot is the revision's A2UI messages and state: never host events, window rows,
    nor the list of first windows on their way (a screen that starts from a snapshot asks for its windows)."""
    if payload_field != "a2ui":
        return None
    update = (message or {}).get("updateDataModel")
    if update is None:
        return ""
    path = str(update.get("path", ""))
    if path.endswith("/window") or path == FIRST_WINDOWS_PATH:
        return None
    return path or "/"


def snapshot_key_of(envelope: host_pb2.SurfaceEnvelope) -> str | None:
    """`snapshot_key` of an envelope already stored (the migration that added the key reads old rows)."""
    field = envelope.WhichOneof("payload")
    message = json.loads(envelope.a2ui.message_json) if field == "a2ui" else None
    return snapshot_key(field or "", message)


def positioned(entry: JournalEntry) -> host_pb2.SurfaceEnvelope:
    """The envelope of a journal entry, with its place written in."""
    envelope = host_pb2.SurfaceEnvelope.FromString(entry.envelope)
    envelope.epoch, envelope.sequence, envelope.revision_id = entry.epoch, entry.sequence, entry.revision_id
    return envelope
