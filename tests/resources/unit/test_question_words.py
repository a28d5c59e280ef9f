"""The semantic model's words for how people ask: the event that dates a row brings its entity and date into a
catalog slice, and a value-match finds a value by another word for it or with spaces for its underscores,
saying which words named it."""

from __future__ import annotations

from tests.resources.conftest import Session


def slice_of(session: Session, question: str) -> dict[str, list[str]]:
    """Entity name → its listed field names (matched first), for a question."""
    found, _ = session.gateway.inspect(question, session.empty)
    return {entity.name: [f.name for f in fields] for entity, fields, _ in found}


def value_match(session: Session, text: str, field: str = ""):
    (matches, truncated, token), _ = session.gateway.probe(session.session_id, session.turn_id, "value-match", field,
                                                           session.capability, text)
    assert not truncated
    return {(m.field.entity, m.field.name, m.value, m.matched_text) for m in matches}, token


def test_an_event_verb_brings_the_entity_and_its_date_into_the_slice(session):
    # No label or synonym of Customer or its fields says "signed": only the signup date's event verbs do.
    found = slice_of(session, "how many signed up in 2024")
    assert list(found) == ["customers"]
    assert found["customers"][0] == "signup_date"
    tickets = slice_of(session, "tickets raised by priority")
    assert tickets["support_tickets"][0] == "opened_at"
    assert slice_of(session, "products sent back")["returns"][0] == "returned_at"


def test_an_event_verb_is_a_phrase_not_a_bag_of_words(session):
    assert slice_of(session, "how many went up") == {}  # "up" alone is no event
    assert slice_of(session, "how many signed, and up to when") != slice_of(session, "how many signed up")


def test_value_match_finds_values_by_the_other_words_the_model_declares(session):
    found, token = value_match(session, "Online orders from SMBs, and critical tickets resolved in store")
    assert {("orders", "channel", "web", "online"), ("customers", "segment", "small_business", "smbs"),
            ("support_tickets", "priority", "urgent", "critical"), ("support_tickets", "status", "solved", "resolved"),
            ("orders", "channel", "store", "in store")} <= found
    widened = session.gateway.open_capability(token, session.session_id)
    assert {session.field("orders", "channel"), session.field("customers", "segment")} <= widened.ids
    # the fullest words that named a value; named by its own word and another, the other is returned (a reader
    # finds the value's own word anyway: "third-party marketplace" leaves nothing unexplained)
    assert ("orders", "channel", "store", "in store") in value_match(session, "bought in store")[0]
    assert value_match(session, "web or online", session.field("orders", "channel"))[0] == {
        ("orders", "channel", "web", "online")}
    assert value_match(session, "web", session.field("orders", "channel"))[0] == {("orders", "channel", "web", "web")}


def test_value_match_reads_underscores_and_hyphens_in_a_value_as_spaces(session, supply):
    # "small-business" is not one of the segment's declared words: the stored value small_business itself is read
    found, _ = value_match(session, "net revenue from small-business customers")
    assert ("customers", "segment", "small_business", "small-business") in found
    # the supply model declares no words for values: "1-URGENT" and "4-NOT SPECIFIED" read with spaces
    found, _ = value_match(supply, "orders of 1 urgent or 4 not specified priority")
    assert {("orders", "priority", "1-URGENT", "1 urgent"),
            ("orders", "priority", "4-NOT SPECIFIED", "4 not specified")} <= found


def test_value_match_still_takes_only_whole_words(session):
    found, _ = value_match(session, "onlineshop smbsomething small_businessman in-stores")
    assert found == set()
    # a plural of the stored value is its own word, not a longer one ("in-stores": declared words are as written)
    found, _ = value_match(session, "small_businesses in-stores")
    assert found == {("customers", "segment", "small_business", "small_businesses")}
