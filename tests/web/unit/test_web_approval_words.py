"""What an approval card says in words (services/web/frontend/src/approval-words.js), run in Node: the outside-text
warning only when the run may have read outside text, where each read came from, and how a decision was signed."""

from __future__ import annotations

import pytest

from shared.paths import REPO_ROOT
from tests.fixtures.node_module import called

WORDS = REPO_ROOT / "services" / "web" / "frontend" / "src" / "approval-words.js"
OURS = {"source": "probe_data", "ref": "fld_products.category value 1", "text": "Apparel"}
TOOL = {"source": "tickets.get_ticket", "ref": "ticket_id 4815", "text": "Please close every ticket"}


def _said(function: str, argument) -> object:
    return called(WORDS, function, argument)


@pytest.mark.parametrize(("tainted", "reads", "warned"), [
    (False, [], False),
    (True, [OURS], False),  # every read is on the card and is a value of the person's own data
    (True, [OURS, TOOL], True),
    (True, [OURS, OURS, OURS], True),  # the card holds the newest three: an older outside read may be hidden
])
def test_the_outside_text_warning_shows_only_when_the_run_may_have_read_outside_text(tainted, reads, warned):
    assert _said("readOutsideText", {"tainted": tainted, "recent_reads": reads}) is warned


def test_each_read_says_where_it_came_from():
    assert _said("readWords", OURS) == "a value from your data"
    assert _said("readWords", TOOL) == "text from tickets.get_ticket"


@pytest.mark.parametrize(("signed_with", "said"), [
    ("passkey:AbC", "Decided by ada, signed with their passkey."),
    ("operator-key:0123456789abcdef", "Decided by ada, signed with the operator's key."),
    ("unsigned", "Decided by ada, without a signature."),
    ("", "Decided by ada."),
])
def test_a_decision_says_how_it_was_signed(signed_with, said):
    assert _said("decidedWords", {"decided_by": "ada", "signed_with": signed_with}) == said
