"""Value-match finds the value a person meant when they write its plural ("marketplaces") or misspell one word of
it ("stroe"), and says which of their words named it; a near spelling is marked approximate. The values a near
spelling is looked for among are read once per field and kept, and only for fields with few values."""

from __future__ import annotations

import pytest

from services.resources import probes
from shared.data.caches import SharedMemo, expiring
from tests.resources.conftest import Session


def value_match(session: Session, text: str, field: str = "") -> set[tuple[str, str, str, str, bool]]:
    (matches, truncated, _), _ = session.gateway.probe(session.session_id, session.turn_id, "value-match", field,
                                                       session.capability, text)
    assert not truncated
    return {(m.field.entity, m.field.name, m.value, m.matched_text, m.approximate) for m in matches}


@pytest.fixture
def fresh_spellings(session):
    """The gateway's memo of each field's few values, empty before the test and after it (a test that changes
    the cap leaves no memo read under it)."""
    session.gateway._spellings.clear()
    yield session.gateway._spellings
    session.gateway._spellings.clear()


def searched_fields(session: Session) -> int:
    """How many fields a value-match without a field searches: every bounded-values string field."""
    return sum(1 for entity in session.gateway.catalog.entities.values() for f in entity.fields.values()
               if f.spec.exposure == "bounded-values" and f.spec.type == "string")


def test_a_plural_names_the_singular_value_in_the_persons_own_words(session):
    found = value_match(session, "revenue from marketplaces and small businesses, and groceries")
    assert {("orders", "channel", "marketplace", "marketplaces", False),
            ("customers", "segment", "small_business", "small businesses", False),
            ("products", "category", "Grocery", "groceries", False)} <= found  # "ies" → "y"
    assert ("customers", "segment", "enterprise", "enterprises", False) in value_match(session, "enterprises")
    # a word the model declares still names its value first, as before
    assert value_match(session, "third-party marketplaces") == {
        ("orders", "channel", "marketplace", "third-party", False)}
    # only a value the data holds: "webs" names web, "atlantises" nothing
    assert value_match(session, "webs", session.field("orders", "channel")) == {
        ("orders", "channel", "web", "webs", False)}
    assert value_match(session, "atlantises") == set()


def test_words_that_name_a_value_as_said_are_not_read_as_a_plural_too(session):
    # "phones" is the Phones subcategory; it is not also the phone channel
    found = value_match(session, "revenue of phones")
    assert ("products", "subcategory", "Phones", "phones", False) in found
    assert not {value for _, _, value, _, _ in found} & {"phone"}
    assert ("orders", "channel", "phone", "phones", False) in value_match(
        session, "revenue of phones", session.field("orders", "channel"))  # where no value is "phones"


def test_a_near_spelling_names_a_value_and_is_marked_approximate(session):
    found = value_match(session, "Electroncs and Grocey sales in cananda through the stroe or the web")
    assert {("orders", "channel", "store", "stroe", True), ("regions", "country", "Canada", "cananda", True),
            ("products", "category", "Electronics", "electroncs", True),
            ("products", "category", "Grocery", "grocey", True),
            ("orders", "channel", "web", "web", False)} == found
    assert value_match(session, "tickets of urgnt priority", session.field("support_tickets", "priority")) == {
        ("support_tickets", "priority", "urgent", "urgnt", True)}
    assert ("regions", "name", "Québec", "quebec", True) in value_match(session, "revenue in quebec")
    # a near spelling of another word the model declares for a value held ("website" is web)
    assert value_match(session, "orders thru the webiste", session.field("orders", "channel")) == {
        ("orders", "channel", "web", "webiste", True)}
    # a slip in a value's plural ("grocries": Grocery)
    assert value_match(session, "revenu from grocries", session.field("products", "category")) == {
        ("products", "category", "Grocery", "grocries", True)}
    # two letters left out of a word of seven or more ("cancled" for cancelled)
    assert value_match(session, "orders cancled in 2023", session.field("orders", "status")) == {
        ("orders", "status", "cancelled", "cancled", True)}


def test_a_word_that_is_a_value_is_never_also_a_near_spelling_of_another(session):
    assert probes.near_spelling("phone", ("Phones",)) == "Phones"  # one letter from it, on its own
    found = value_match(session, "phone orders")
    assert ("orders", "channel", "phone", "phone", False) in found
    assert not any(value == "Phones" for _, _, value, _, _ in found)
    # nor is the value it names found again by a near spelling of another word
    assert value_match(session, "store or stroe", session.field("orders", "channel")) == {
        ("orders", "channel", "store", "store", False)}


def test_short_words_and_words_of_many_values_are_never_near_spellings(session):
    priority = session.field("support_tickets", "priority")
    assert probes.near_spelling("hig", ("high",)) == "high"  # near enough, but three letters: not looked for
    assert value_match(session, "hig priority", priority) == set()
    assert value_match(session, "higher priority", priority) == set()  # two letters more is not a misspelling
    # values of several words are not matched by a near spelling of one of them
    assert value_match(session, "revenue in brittish columbia or ontaro", session.field("regions", "name")) == {
        ("regions", "name", "Ontario", "ontaro", True)}


def test_a_field_with_more_values_than_the_cap_is_not_searched_for_near_spellings(session, fresh_spellings,
                                                                                     monkeypatch):
    products = session.gateway.catalog.entities["products"].fields
    assert session.gateway._few_values(products["name"]) is None  # 500 product names in the demo
    assert session.gateway._few_values(products["category"]) is not None
    country = session.field("regions", "country")
    countries = session.gateway._few_values(session.gateway.catalog.by_id[country])
    assert ("regions", "country", "Canada", "cananda", True) in value_match(session, "cananda", country)
    fresh_spellings.clear()
    monkeypatch.setattr(probes, "MAX_SPELLED_VALUES", len(countries) - 1)
    assert value_match(session, "revenue in cananda", country) == set()
    assert value_match(session, "revenue in canada", country) == {("regions", "country", "Canada", "canada", False)}


def test_a_fields_values_are_read_once_then_kept_for_a_while(session, fresh_spellings, statements, monkeypatch):
    def reads(text: str) -> int:
        before = len(statements)
        value_match(session, text)
        return sum(1 for sent in statements[before:] if sent.lstrip().upper().startswith("SELECT"))

    fields = searched_fields(session)
    assert reads("in canada or on the web") == fields  # no word left to look for a near spelling of: no read
    assert reads("revenue in cananda") == 2 * fields  # each field: its matches, and its few values
    assert reads("Electroncs through the stroe") == fields  # its matches only: the values are kept
    now = [0.0]
    monkeypatch.setattr(session.gateway, "_spellings", SharedMemo(expiring(64, 60.0, timer=lambda: now[0])))
    assert reads("stroe") == 2 * fields
    now[0] = 59.0
    assert reads("stroe") == fields
    now[0] = 61.0  # the values have expired: read again
    assert reads("stroe") == 2 * fields


def test_the_rules_for_plurals_and_edits():
    assert probes.singulars("small businesses") == ["small business", "small businesse"]
    assert probes.singulars("groceries") == ["grocery", "groceri", "grocerie"]
    assert probes.singulars("business") == probes.singulars("its") == probes.singulars("1s") == []
    assert [probes.edits(a, b) for a, b in [("stroe", "store"), ("cananda", "canada"), ("higher", "high"),
                                            ("store", "store"), ("ab", "ba"), ("", "web")]] == [1, 1, 2, 0, 1, 3]
    assert probes.near_spelling("refund", ("refunded",)) is None  # two letters short: another word
    assert probes.near_spelling("electrnoics", ("Electronics", "Electric")) == "Electronics"


def test_a_value_of_two_joined_names_is_named_by_its_first_alone_as_an_assumption(session):
    category = session.field("products", "category")
    assert value_match(session, "what about toys?", category) == {
        ("products", "category", "Toys & Games", "toys", True)}  # approximate: the answer says it assumed so
    assert value_match(session, "sports sales", category) == {
        ("products", "category", "Sports & Outdoors", "sports", True)}
    assert probes._heads(("Toys & Games", "Toys and Dolls", "Home & Kitchen", "TV & Audio")) == {
        "home": "Home & Kitchen"}  # one value each, four letters or more
