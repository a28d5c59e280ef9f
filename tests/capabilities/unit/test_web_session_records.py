"""People's web sessions at the broker, on SQLite and PostgreSQL: opened with a secret kept only as its hash,
checked, ended by sign-out or by the operator for all of a person's sessions, expired, bounded and purged."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from services.capabilities import store as broker_store
from services.capabilities.passkey_store import PasskeyStore
from services.capabilities.web_session_store import (
    ENDED_KEPT_SECONDS,
    MAX_PER_PERSON,
    WebSessionRecord,
    WebSessionStore,
)
from services.capabilities.web_sessions import WebSessions, secret_hash
from shared.data import db
from shared.identity.actors import Actor
from shared.rpc.refusals import Invalid, NotFound, Refusal
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.fixtures.in_process import RULES
from tests.fixtures.postgres import BACKENDS, migrated_engine

ADA = Actor("ada", "acme", "Ada Lovelace", "web")
LINK, OIDC = cap.SIGN_IN_METHOD_LINK, cap.SIGN_IN_METHOD_OIDC


@pytest.fixture(params=BACKENDS)
def engine(request, tmp_path):
    with migrated_engine(request, tmp_path, "web_sessions", broker_store) as engine:
        yield engine


@pytest.fixture
def sessions(engine):
    return WebSessions(WebSessionStore(engine), lifetime_seconds=3600, people=PasskeyStore(engine))


def _refusal(call, *args):
    with pytest.raises(Refusal) as raised:
        call(*args)
    return raised.value.reason


def test_a_session_is_found_by_its_secret_and_the_database_never_holds_the_secret(engine, sessions):
    opened = sessions.open(ADA, OIDC)
    checked = sessions.check(opened.secret).session
    assert checked == opened.session
    assert (checked.person.actor_id, checked.person.tenant_id, checked.person.display_name) == \
        ("ada", "acme", "Ada Lovelace")
    assert checked.signed_in_with == OIDC
    lifetime = checked.expires_at.ToNanoseconds() - checked.created_at.ToNanoseconds()
    assert lifetime == pytest.approx(3600e9, abs=1e6)
    with engine.connect() as connection:
        stored = [tuple(row) for row in connection.execute(sa.select(broker_store.web_sessions)).all()]
    assert len(stored) == 1 and secret_hash(opened.secret) in stored[0]
    assert not any(opened.secret in str(value) for value in stored[0])
    # Every sign-in is a session of its own, with a secret and an id of its own.
    again = sessions.open(ADA, LINK)
    assert again.secret != opened.secret and again.session.session_id != opened.session.session_id


def test_signing_out_ends_that_session_only(sessions):
    first, second = sessions.open(ADA, LINK), sessions.open(ADA, LINK)
    reply, ended = sessions.end(first.secret)
    assert reply.ended and ended.session_id == first.session.session_id
    assert _refusal(sessions.check, first.secret) == "SESSION_ENDED"
    assert sessions.check(second.secret).session.session_id == second.session.session_id
    assert sessions.end(first.secret)[0].ended is False  # ending it again changes nothing


def test_the_operator_signs_a_person_out_of_every_session_in_their_tenant_only(sessions):
    mine = [sessions.open(ADA, LINK) for _ in range(3)]
    sessions.end(mine[0].secret)  # already ended: not counted again
    namesake = sessions.open(Actor("ada", "other-tenant", "Ada", "web"), LINK)
    colleague = sessions.open(Actor("grace", "acme", "Grace", "web"), LINK)
    assert sessions.sign_out(cap.Person(actor_id="ada", tenant_id="acme")).ended == 2
    assert [_refusal(sessions.check, s.secret) for s in mine] == ["SESSION_ENDED"] * 3
    assert sessions.check(namesake.secret).session.person.tenant_id == "other-tenant"
    assert sessions.check(colleague.secret).session.person.actor_id == "grace"
    assert sessions.sign_out(cap.Person(actor_id="ada", tenant_id="acme")).ended == 0
    # A person without a tenant never reaches it: the contract's rule refuses the request (rules.proto).
    with pytest.raises(Invalid) as refused:
        RULES.check("/tessera.capabilities.v1.CapabilityBrokerService/SignOutPerson",
                    cap.SignOutPersonRequest(person=cap.Person(actor_id="ada", tenant_id="")))
    assert refused.value.metadata["pointer"] == "/person/tenant_id"


def test_an_unknown_malformed_or_expired_secret_is_no_session(engine, sessions):
    assert _refusal(sessions.check, "x" * 43) == "SESSION_UNKNOWN"
    assert _refusal(sessions.check, "not a secret") == "SESSION_UNKNOWN"
    assert _refusal(sessions.check, "") == "SESSION_UNKNOWN"
    opened = sessions.open(ADA, LINK)
    with engine.begin() as connection:  # the sign-in's time ran out
        connection.execute(broker_store.web_sessions.update().values(expires_at=time.time() - 1))
    assert _refusal(sessions.check, opened.secret) == "SESSION_EXPIRED"
    assert sessions.end(opened.secret)[0].ended is False


def test_only_web_opens_sessions_and_only_by_a_known_method(sessions):
    assert _refusal(sessions.open, Actor("ada", "acme", "Ada", "cli"), LINK) == "SESSION_FROM_WEB_ONLY"
    assert _refusal(sessions.open, ADA, cap.SIGN_IN_METHOD_UNSPECIFIED) == "SESSION_REQUEST_INVALID"


def test_a_person_keeps_a_bounded_number_of_sessions_the_oldest_going_first(engine, sessions):
    first = sessions.open(ADA, LINK)
    others = [sessions.open(ADA, LINK) for _ in range(MAX_PER_PERSON - 1)]
    assert sessions.check(first.secret)  # exactly at the bound: all kept
    newest = sessions.open(ADA, LINK)
    assert _refusal(sessions.check, first.secret) == "SESSION_UNKNOWN"
    assert all(sessions.check(s.secret) for s in (*others, newest))
    with engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(broker_store.web_sessions)).scalar_one() \
            == MAX_PER_PERSON


def test_the_purge_removes_expired_and_long_ended_sessions_and_keeps_the_rest(engine):
    store, now = WebSessionStore(engine), time.time()

    def record(session_id: str, expires_at: float) -> WebSessionRecord:
        return WebSessionRecord(session_id, "acme", "ada", "Ada", "link", now - 10, expires_at, None)

    for session_id, expires_at in (("wss_open", now + 600), ("wss_expired", now - 1), ("wss_ended_long_ago", now + 600),
                                   ("wss_ended_now", now + 600)):
        store.open(record(session_id, expires_at), secret_hash(session_id))
    store.end(secret_hash("wss_ended_long_ago"), now - ENDED_KEPT_SECONDS - 1)
    store.end(secret_hash("wss_ended_now"), now)
    assert store.purge(now) == 2
    with engine.connect() as connection:
        left = set(connection.execute(sa.select(broker_store.web_sessions.c.session_id)).scalars())
    assert left == {"wss_open", "wss_ended_now"}  # an ended one still says "ended" for a while


def test_migration_0008_rolls_back_to_0007_and_forward_again(engine, sessions):
    sessions.open(ADA, LINK)
    db.downgrade(engine, broker_store.MIGRATIONS, "0007")  # what an operator rolling back runs
    assert "web_sessions" not in sa.inspect(engine).get_table_names()
    broker_store.migrate(engine)
    assert _refusal(sessions.check, "x" * 43) == "SESSION_UNKNOWN"  # the table is back, empty
    assert sessions.check(sessions.open(ADA, LINK).secret)


def _add_passkey(engine, credential_id: str, created_at: float, tenant_id: str = "acme", actor_id: str = "ada"):
    with engine.begin() as connection:
        connection.execute(broker_store.passkeys.insert().values(
            credential_id=credential_id, tenant_id=tenant_id, actor_id=actor_id, public_key=b"k", sign_count=0,
            aaguid="", created_at=created_at))


def test_every_sign_in_is_told_the_passkeys_added_since_the_previous_one_whichever_way_it_came(engine, sessions):
    _add_passkey(engine, "before-any-session", time.time() - 60)
    first = sessions.open(ADA, OIDC)  # no session on record: every passkey the person has is shown
    assert [p.credential_id for p in first.passkeys_added] == ["before-any-session"]
    opened_at = first.session.created_at.ToNanoseconds() / 1e9
    _add_passkey(engine, "added-later", opened_at + 1e-3)
    _add_passkey(engine, "someone-else", opened_at + 1e-3, actor_id="grace")
    second = sessions.open(ADA, LINK)
    assert [p.credential_id for p in second.passkeys_added] == ["added-later"]
    assert second.passkeys_added[0].created_at.ToNanoseconds() > 0
    assert not sessions.open(ADA, OIDC).passkeys_added  # nothing new since the second


def test_the_purge_keeps_each_persons_newest_session_so_the_next_sign_in_still_knows_the_previous(engine, sessions):
    _add_passkey(engine, "seen-at-the-first-sign-in", time.time() - 60)
    older, newest = sessions.open(ADA, OIDC), sessions.open(ADA, OIDC)
    store = WebSessionStore(engine)
    assert store.purge(time.time() + 2 * 3600) == 1  # both expired by then: the older goes, Ada's newest stays
    assert _refusal(sessions.check, older.secret) == "SESSION_UNKNOWN"
    with engine.connect() as connection:
        assert connection.execute(sa.select(broker_store.web_sessions.c.session_id)).scalars().all() == [
            newest.session.session_id]
    assert [p.credential_id for p in sessions.open(ADA, LINK).passkeys_added] == []  # not "all of them" again


def test_revoking_a_passkey_or_replacing_them_ends_the_persons_sessions_in_the_same_transaction(engine, sessions):
    people = PasskeyStore(engine)
    mine, colleague = [sessions.open(ADA, LINK) for _ in range(2)], sessions.open(Actor("grace", "acme", "G", "web"),
                                                                                  LINK)
    _add_passkey(engine, "lost-phone", time.time())
    with pytest.raises(NotFound):  # not hers: refused, and nothing ends
        people.revoke("acme", "ada", "no-such-key")
    assert sessions.check(mine[0].secret)
    assert people.revoke("acme", "ada", "lost-phone") == (0, 2)
    assert [_refusal(sessions.check, s.secret) for s in mine] == ["SESSION_ENDED"] * 2
    assert sessions.check(colleague.secret)  # nobody else's
    again = sessions.open(ADA, OIDC)
    _add_passkey(engine, "laptop", time.time())
    assert people.create_link("t" * 64, "acme", "ada", "Ada", "operator", time.time() + 600) == (1, [], 0)
    assert sessions.check(again.secret)  # a plain link changes no passkey: nothing ends
    assert people.create_link("u" * 64, "acme", "ada", "Ada", "operator", time.time() + 600,
                              replace=True) == (0, ["laptop"], 1)
    assert _refusal(sessions.check, again.secret) == "SESSION_ENDED"
