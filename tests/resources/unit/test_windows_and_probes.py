"""Grant-bound windows over pinned results, and the four bounded probes."""

from __future__ import annotations

import datetime as dt
import json
import secrets
import time

import grpc
import pytest

from services.resources.gateway import WindowAsk
from services.resources.query_compiler import OutputColumn
from shared.data.db import DATABASE_UNAVAILABLE
from shared.identity import tokens
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal, Unavailable
from tessera.common.v1 import common_pb2
from tessera.resources.v1 import resources_pb2
from tests.fixtures.waiting import wait_until
from tests.resources.conftest import Session, make_gateway


@pytest.fixture
def pinned(session):
    analysis = session.analyze({
        "mode": "records", "entity": session.entity("orders"),
        "fields": [{"id": "when", "field": session.field("orders", "ordered_at")},
                   {"id": "channel", "field": session.field("orders", "channel")},
                   {"id": "status", "field": session.field("orders", "status")}],
        "order_by": [{"output": "when"}]})
    return analysis.result


def grant(cert_dir, result, *, columns=("when", "channel"), audience="resources", lifetime=dt.timedelta(minutes=5),
          issued_ago=dt.timedelta(0), signer="host", version=None, max_rows=500, row=None):
    now = dt.datetime.now(dt.UTC) - issued_ago
    binding = common_pb2.TokenBinding(subject="surface-1/node-1", audience=audience, nonce=secrets.token_hex(8))
    binding.issued_at.FromDatetime(now)
    binding.expires_at.FromDatetime(now + lifetime)
    claims = common_pb2.WindowGrantClaims(
        binding=binding, grant_id=f"g-{secrets.token_hex(6)}", surface_id="surface-1", node_id="node-1",
        resource_id=result.resource_id, version_id=version or result.version_id, content_hash=result.content_hash,
        column_ids=list(columns), max_window_rows=max_rows)
    if row is not None:
        claims.row = row
    key = load_signing_key(signing_key_path(cert_dir, signer))
    return tokens.sign(key, tokens.PURPOSE_WINDOW_GRANT, claims)


def window_values(window) -> list[list]:
    """A window's rows as plain values, read back from their wire form."""
    return [[cell_value(cell) for cell in row.cells]
            for row in resources_pb2.ResolveWindowResponse.FromString(window.encoded_rows).rows]


def cell_value(cell):
    kind = cell.WhichOneof("value")
    if kind == "null_value":
        return None
    if kind == "timestamp_value":
        return cell.timestamp_value.ToDatetime().isoformat(timespec="seconds")
    return getattr(cell, kind)


def test_windows_page_through_the_pinned_rows(gateway, pinned, cert_dir):
    token = grant(cert_dir, pinned)
    first = gateway.window(gateway.open_grant(token), 0, 100, [])
    assert [c.id for c in first.columns] == ["when", "channel"]
    assert window_values(first) == [row[:2] for row in pinned.rows[:100]]
    page = gateway.window(gateway.open_grant(token), 100, 50, ["channel"])
    assert [c.id for c in page.columns] == ["channel"] and window_values(page) == [[row[1]] for row in
                                                                                    pinned.rows[100:150]]
    assert window_values(gateway.window(gateway.open_grant(token), len(pinned.rows) + 10, 10, [])) == []


def test_a_grant_for_one_cell_reads_that_row_only(gateway, pinned, cert_dir):
    """A figure's grant (FigureText, Metric) names its row: any other row is refused, not served."""
    token = grant(cert_dir, pinned, columns=("channel",), max_rows=1, row=7)
    assert window_values(gateway.window(gateway.open_grant(token), 7, 1, [])) == [[pinned.rows[7][1]]]
    for offset, limit, code, reason in ((8, 1, grpc.StatusCode.PERMISSION_DENIED, "WINDOW_OUTSIDE_GRANT"),
                                        (0, 1, grpc.StatusCode.PERMISSION_DENIED, "WINDOW_OUTSIDE_GRANT"),
                                        (7, 2, grpc.StatusCode.INVALID_ARGUMENT, "WINDOW_TOO_LARGE")):
        with pytest.raises(Refusal) as refused:
            gateway.window(gateway.open_grant(token), offset, limit, [])
        assert (status_of(refused.value).code, refused.value.reason) == (code, reason)


@pytest.mark.parametrize("case,reason,code", [
    ("expired", "GRANT_EXPIRED", grpc.StatusCode.PERMISSION_DENIED),
    ("too long-lived", "GRANT_LIFETIME_TOO_LONG", grpc.StatusCode.PERMISSION_DENIED),
    ("wrong audience", "GRANT_WRONG_AUDIENCE", grpc.StatusCode.PERMISSION_DENIED),
    ("not the host's key", "GRANT_UNKNOWN_KEY", grpc.StatusCode.PERMISSION_DENIED),
    ("tampered", "GRANT_BAD_SIGNATURE", grpc.StatusCode.PERMISSION_DENIED),
    ("other version", "GRANT_RESOURCE_MISMATCH", grpc.StatusCode.PERMISSION_DENIED),
    ("column not granted", "COLUMN_NOT_GRANTED", grpc.StatusCode.PERMISSION_DENIED),
    ("window too large", "WINDOW_TOO_LARGE", grpc.StatusCode.INVALID_ARGUMENT),
    ("over the grant's cap", "WINDOW_TOO_LARGE", grpc.StatusCode.INVALID_ARGUMENT),
    ("revoked", "GRANT_REVOKED", grpc.StatusCode.PERMISSION_DENIED),
])
def test_every_bad_grant_has_its_own_reason(gateway, pinned, cert_dir, case, reason, code):
    limit, projection = 10, []
    if case == "expired":
        token = grant(cert_dir, pinned, issued_ago=dt.timedelta(minutes=10))
    elif case == "too long-lived":
        token = grant(cert_dir, pinned, lifetime=dt.timedelta(hours=2))
    elif case == "wrong audience":
        token = grant(cert_dir, pinned, audience="capabilities")
    elif case == "not the host's key":
        token = grant(cert_dir, pinned, signer="resources")
    elif case == "tampered":
        token = grant(cert_dir, pinned)
        claims = common_pb2.WindowGrantClaims.FromString(token.claims)
        claims.column_ids.append("status")
        token.claims = claims.SerializeToString()
    elif case == "other version":
        token = grant(cert_dir, pinned, version="v1-0000000000000000")
    elif case == "column not granted":
        token, projection = grant(cert_dir, pinned), ["status"]
    elif case == "window too large":
        token, limit = grant(cert_dir, pinned, max_rows=5000), 1001
    elif case == "over the grant's cap":
        token, limit = grant(cert_dir, pinned, max_rows=20), 21
    else:
        token = grant(cert_dir, pinned)
        gateway.window(gateway.open_grant(token), 0, 1, [])
        assert gateway.revoke([token]) == 1
    with pytest.raises(Refusal) as refused:
        gateway.window(gateway.open_grant(token), 0, limit, projection)
    assert (status_of(refused.value).code, refused.value.reason) == (code, reason)


def test_a_result_store_that_does_not_answer_fails_the_whole_batch(gateway, pinned, cert_dir, monkeypatch):
    """A refused window is that window's answer inside the reply; a result store that is away is the call's failure
    (UNAVAILABLE, which the channel retries), never the same refusal repeated for every window asked."""
    asked = [WindowAsk(gateway.open_grant(grant(cert_dir, pinned)), 0, 10, []) for _ in range(3)]
    tried = []

    def away(resource_id):
        tried.append(resource_id)
        raise Unavailable(DATABASE_UNAVAILABLE, "the result store is not answering")

    monkeypatch.setattr(gateway.store, "get", away)
    with pytest.raises(Unavailable) as failed:
        gateway.windows(asked)
    assert failed.value.reason == DATABASE_UNAVAILABLE and len(tried) == 1  # stopped at the first window


def test_a_window_is_served_from_memory_only_once_everything_it_needs_is_held(warehouse, cert_dir, tmp_path):
    """from_memory (the servicer's try on the event loop) reads nothing: None until the grant's revocation answer,
    the result and the projection's rows are held here; then the same window as the full path, and refusals alike."""
    a, b = (make_gateway(warehouse, cert_dir, tmp_path) for _ in range(2))
    try:
        columns = [OutputColumn("channel", "Channel", "string", "dimension", "orders.channel"),
                   OutputColumn("units", "Units", "integer", "measure", "order_items.units")]
        pinned = a.store.pin("s-memory", "t-memory", columns, [["web", 3], ["store", None]], False)
        token = grant(cert_dir, pinned, columns=("channel", "units"))
        assert a.window(a.open_grant(token), 0, 2, [], from_memory=True) is None  # revocation not asked yet
        full = a.window(a.open_grant(token), 0, 2, [])
        assert a.window(a.open_grant(token), 0, 2, [], from_memory=True) == full
        assert window_values(full) == [["web", 3], ["store", None]]
        # That projection's rows: not encoded yet.
        assert a.window(a.open_grant(token), 0, 2, ["units"], from_memory=True) is None
        assert window_values(a.window(a.open_grant(token), 0, 2, ["units"])) == [[3], [None]]
        assert b.window(b.open_grant(token), 0, 2, [], from_memory=True) is None  # pinned on a: b must read it
        assert b.window(b.open_grant(token), 0, 2, []) == full
        assert b.window(b.open_grant(token), 0, 2, [], from_memory=True) == full
        with pytest.raises(Refusal) as refused:
            a.window(a.open_grant(token), 0, 3, ["status"], from_memory=True)
        assert refused.value.reason == "COLUMN_NOT_GRANTED"
        a.revoke([token])
        with pytest.raises(Refusal) as refused:
            a.window(a.open_grant(token), 0, 2, [], from_memory=True)
        assert refused.value.reason == "GRANT_REVOKED"
    finally:
        a.close()
        b.close()


def test_a_grant_revoked_on_one_replica_stops_reading_on_another_within_the_bound(warehouse, cert_dir, tmp_path):
    """Two gateways over one store: the one that revokes refuses at once; the other, which was reading with the
    grant, stops within `revocation_check_seconds` of the revocation."""
    bound = 0.5
    a, b = (make_gateway(warehouse, cert_dir, tmp_path, revocation_check_seconds=bound) for _ in range(2))
    try:
        columns = [OutputColumn("channel", "Channel", "string", "dimension", "orders.channel")]
        pinned = a.store.pin("s-revoke", "t-revoke", columns, [["web"], ["store"]], False)
        token = grant(cert_dir, pinned, columns=("channel",))
        assert window_values(a.window(a.open_grant(token), 0, 2, [])) == [["web"], ["store"]]
        revoked_at = time.monotonic()
        assert b.revoke([token]) == 1
        for replica in (b, a):
            refused_at = wait_until(lambda replica=replica: _revoked(replica, token), timeout=bound + 10,
                                    what="the revoked grant refused")
            assert refused_at - revoked_at < (0.0 if replica is b else bound) + 2.0
    finally:
        a.close()
        b.close()


def _revoked(gateway, token) -> float | None:
    """When the gateway refused the grant as revoked (None: it still reads)."""
    try:
        gateway.window(gateway.open_grant(token), 0, 1, [])
    except Refusal as refused:
        assert refused.reason == "GRANT_REVOKED"
        return time.monotonic()
    return None


def test_value_domain_is_bounded_and_only_for_bounded_values_fields(gateway, session):
    (values, truncated), remaining = gateway.probe(session.session_id, "probe-turn-1", "value-domain",
                                                   session.field("orders", "channel"), session.capability)
    assert values == ["marketplace", "phone", "store", "web"] and not truncated and remaining == 1
    (names, truncated), _ = gateway.probe(session.session_id, "probe-turn-2", "value-domain",
                                          session.field("products", "name"), session.capability)
    assert len(names) == 20 and truncated
    with pytest.raises(Refusal) as refused:
        gateway.probe(session.session_id, "probe-turn-3", "value-domain", session.field("order_items", "quantity"),
                      session.capability)
    assert refused.value.reason == "PROBE_NOT_ALLOWED"
    assert gateway.remaining(session.session_id, "probe-turn-3")[0] == 2  # a refused probe costs nothing


def test_at_most_two_probes_per_turn(gateway, session):
    field = session.field("orders", "status")
    for expected_remaining in (1, 0):
        _, remaining = gateway.probe(session.session_id, "budget-turn", "field-profile", field, session.capability)
        assert remaining == expected_remaining
    with pytest.raises(Refusal) as refused:
        gateway.probe(session.session_id, "budget-turn", "field-profile", field, session.capability)
    assert (status_of(refused.value).code, refused.value.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                                     "PROBE_BUDGET_EXHAUSTED")
    _, remaining = gateway.probe(session.session_id, "next-turn", "field-profile", field, session.capability)
    assert remaining == 1


def test_analyses_per_turn_are_budgeted_and_a_refused_draft_costs_nothing(warehouse, cert_dir, tmp_path, session):
    small = make_gateway(warehouse, cert_dir, tmp_path, analyses_per_turn=2)
    try:
        seen = Session(small)
        good = json.dumps({"mode": "aggregate", "measures": [{"id": "n", "metric": seen.metric("orders",
                                                                                                 "order_count")}]})
        bad = json.dumps({"mode": "aggregate", "measures": [{"id": "n", "metric": "met_aaaaaaaaaaaa"}]})
        with pytest.raises(Refusal) as refused:
            small.analyze(seen.session_id, "turn-a", bad, seen.capability)
        assert refused.value.reason == "UNKNOWN_ID", refused.value
        assert small.remaining(seen.session_id, "turn-a") == (2, 2)
        left = [small.analyze(seen.session_id, "turn-a", good, seen.capability).analyses_remaining for _ in "ab"]
        assert left == [1, 0]
        with pytest.raises(Refusal) as refused:
            small.analyze(seen.session_id, "turn-a", good, seen.capability)
        assert (status_of(refused.value).code, refused.value.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                                         "ANALYSIS_BUDGET_SPENT")
        assert refused.value.metadata["bound"] == "2" and refused.value.metadata["next_step"]
        assert small.analyze(seen.session_id, "turn-b", good, seen.capability).analyses_remaining == 1
    finally:
        small.close()


def test_profile_time_bounds_and_join_coverage(gateway, session, raw_engine):
    from tests.resources.unit.test_semantic_suite import raw_rows

    (total, nulls, distinct), _ = gateway.probe(session.session_id, "p1", "field-profile",
                                                session.field("orders", "channel"), session.capability)
    assert (total, nulls, distinct) == (raw_rows(raw_engine, "SELECT count(*) FROM orders")[0][0], 0, 4)
    (earliest, latest), _ = gateway.probe(session.session_id, "p1", "time-bounds",
                                          session.field("orders", "ordered_at"), session.capability)
    assert earliest.startswith("2021-") and latest.startswith("2025-")
    (rows, matched), _ = gateway.probe(session.session_id, "p2", "join-coverage",
                                       session.gateway.catalog.relationships["ticket_order"].id, session.capability)
    expected = raw_rows(raw_engine, "SELECT count(*), count(order_id) FROM support_tickets")[0]
    assert (rows, matched) == tuple(expected) and matched < rows


def test_value_match_finds_values_the_text_names_in_any_field_whatever_their_case(gateway, session, raw_engine):
    from tests.resources.unit.test_semantic_suite import raw_rows

    country = raw_rows(raw_engine, "SELECT country FROM regions ORDER BY region_id")[0][0]
    region = raw_rows(raw_engine, "SELECT name FROM regions WHERE name LIKE '% %' ORDER BY region_id")[0][0]
    narrow = session.gateway.capabilities.mint(session.gateway.catalog.fingerprint, session.session_id,
                                              [session.metric("order_items", "net_revenue")])
    capability = session.gateway.open_capability(narrow, session.session_id)
    text = f"net revenue in {country.lower()} and {region.upper()} for web orders?"
    (matches, truncated, token), remaining = gateway.probe(session.session_id, "match-1", "value-match", "",
                                                           capability, text)
    found = {(m.field.entity, m.field.name, m.value) for m in matches}
    assert {("regions", "country", country), ("regions", "name", region), ("orders", "channel", "web")} <= found
    assert not truncated and remaining == 1
    # "web" is a value of no other field; "net", "revenue", "in" are values of none
    assert all(value.lower() in text.lower() for _, _, value in found)
    # The entities whose values matched are now in scope, so a draft may filter on them.
    widened = session.gateway.open_capability(token, session.session_id)
    assert {session.field("regions", "country"), session.field("orders", "channel"),
            session.entity("regions")} <= widened.ids
    assert session.field("regions", "country") not in capability.ids
    # exactly what the probe showed: the matched fields and their entities, not the entities' other fields
    assert session.field("orders", "status") not in widened.ids
    assert session.metric("regions", "region_count") not in widened.ids


def test_value_match_on_one_field_and_its_refusals(gateway, session):
    (matches, _, _), _ = gateway.probe(session.session_id, "match-2", "value-match",
                                       session.field("orders", "channel"), session.capability, "Store or PHONE sales")
    assert sorted((m.value, m.matched_text) for m in matches) == [("phone", "phone"), ("store", "store")]
    (nothing, _, token), _ = gateway.probe(session.session_id, "match-3", "value-match", "", session.capability,
                                           "what about atlantis")
    assert nothing == [] and token == ""
    refusals = [
        (("value-match", "", ""), "PROBE_TEXT_INVALID"),
        (("value-match", session.field("order_items", "quantity"), "5"), "PROBE_NOT_ALLOWED"),
        (("value-match", session.field("orders", "ordered_at"), "2024"), "PROBE_NOT_ALLOWED"),
        (("field-profile", session.field("orders", "channel"), "web"), "PROBE_TEXT_UNEXPECTED"),
    ]
    for (kind, target, text), reason in refusals:
        with pytest.raises(Refusal) as refused:
            gateway.probe(session.session_id, "match-4", kind, target, session.capability, text)
        assert (status_of(refused.value).code, refused.value.reason) == (grpc.StatusCode.INVALID_ARGUMENT, reason)
    assert gateway.remaining(session.session_id, "match-4")[0] == 2  # refused before any work


def test_value_match_text_is_bound_not_spliced(gateway, session):
    hostile = "web' OR 1=1 -- ; DROP TABLE orders"
    (matches, _, _), _ = gateway.probe(session.session_id, "match-5", "value-match", "", session.capability, hostile)
    assert {m.value for m in matches} == {"web"}  # only the word that is a value


def test_value_match_lowers_letters_beyond_ascii_on_every_backend(gateway, session, raw_engine):
    from tests.resources.unit.test_semantic_suite import raw_rows

    accented = [name for (name,) in raw_rows(raw_engine, "SELECT name FROM regions") if not name.isascii()]
    assert accented, "the demo data has region names with letters beyond ASCII"
    for name in accented:
        for written in (name.lower(), name.upper(), name):
            (matches, _, _), _ = gateway.probe(session.session_id, f"accent-{written}", "value-match",
                                               session.field("regions", "name"), session.capability,
                                               f"revenue in {written}")
            assert [m.value for m in matches] == [name], written
