"""What an answer frame's read keeps of the person's surface journal (services/mcp/answer_app.Shown): its
revision's messages, windows of the results it binds whatever revision they were stamped with, and host events
about what its blocks started or stamped with its revision; nothing of another answer."""

from __future__ import annotations

from services.mcp.answer_app import Shown
from shared.data.caches import bounded_lru

SHOWN = Shown("rev_a", frozenset({"/resources/res_a"}))


def _a2ui(revision: str, message: dict) -> dict:
    return {"kind": "a2ui", "revision_id": revision, "message": message}


def _event(revision: str, kind: str, event: dict) -> dict:
    return {"kind": kind, "revision_id": revision, "event": event}


def test_a_frame_keeps_its_revision_and_its_results_windows_only():
    started = bounded_lru(8)
    window = {"updateDataModel": {"path": "/resources/res_a/window", "value": {"rows": []}}}
    assert SHOWN.keeps(_a2ui("rev_a", {"createSurface": {}}), started)
    assert not SHOWN.keeps(_a2ui("rev_b", {"createSurface": {}}), started)
    assert SHOWN.keeps(_a2ui("rev_b", window), started)  # read after a newer answer: stamped with it, still ours
    other = {"updateDataModel": {"path": "/resources/res_b/window", "value": {"rows": []}}}
    assert not SHOWN.keeps(_a2ui("rev_a", other), started)


def test_a_frame_keeps_host_events_about_what_it_started_or_stamped_with_its_revision():
    started = bounded_lru(8)
    started["int_1"] = None
    approval = {"intent_id": "int_2", "approval_id": "apr_2"}
    # Published before the command's reply named its intent: known by the revision it was stamped with.
    assert SHOWN.keeps(_event("rev_a", "approval_requested", approval), started)
    assert not SHOWN.keeps(_event("rev_b", "approval_requested", approval), started)  # another answer's
    # After a newer answer, an event about an intent this frame started is still its.
    assert SHOWN.keeps(_event("rev_b", "effect_receipt", {"receipt": {"intent_id": "int_1"}}), started)
    assert SHOWN.keeps({"kind": "snapshot_required", "revision_id": "", "event": {}}, started)
