"""The HostServer with real processes: sessions, slices, commits with compare-and-swap, the stream."""

from __future__ import annotations

import datetime as dt
import json
import secrets

import grpc
import pytest

from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from shared.rpc.errors import error_details
from shared.ui.slice import offer_tag
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tessera.resources.v1 import resources_pb2
from tests.fixtures.race import race
from tests.fixtures.ui import offered_ids
from tests.fixtures.waiting import wait_until


@pytest.fixture(scope="module")
def channels(running_set, credentials):
    opened = {}

    def channel(principal, service):
        if (principal, service) not in opened:
            opened[principal, service] = sync_channel(running_set.handles[service].address, credentials(principal),
                                                      service)
        return opened[principal, service]

    yield channel
    for ch in opened.values():
        ch.close()


def actor(cert_dir, name="alice", tenant="acme", edge="web", **kwargs):
    return assert_actor(load_signing_key(signing_key_path(cert_dir, edge)), name, tenant, **kwargs)


def call(channels, principal, method, request, service="host"):
    return invoke(channels(principal, service), service, method, request, timeout=30)


def refused(function) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as error:
        function()
    details = error_details(error.value)
    return details.code, details.reason


def open_session(channels, cert_dir, name="alice"):
    return call(channels, "web", "OpenSession", host_pb2.OpenSessionRequest(
        actor=actor(cert_dir, name), request_id=secrets.token_hex(4)))


def test_sessions_need_a_signed_actor_and_are_idempotent(channels, cert_dir):
    request = host_pb2.OpenSessionRequest(actor=actor(cert_dir), request_id="open-1")
    first = call(channels, "web", "OpenSession", request)
    assert first.session_id.startswith("ses_") and first.surface_id.startswith("srf_")
    assert call(channels, "web", "OpenSession", request).session_id == first.session_id
    forged = actor(cert_dir, edge="host")  # the host's key is not an edge key
    assert refused(lambda: call(channels, "web", "OpenSession", host_pb2.OpenSessionRequest(
        actor=forged, request_id="x"))) == (grpc.StatusCode.UNAUTHENTICATED, "ACTOR_UNKNOWN_SIGNER")
    expired = actor(cert_dir, lifetime=dt.timedelta(seconds=-1))
    assert refused(lambda: call(channels, "web", "OpenSession", host_pb2.OpenSessionRequest(
        actor=expired, request_id="x"))) == (grpc.StatusCode.UNAUTHENTICATED, "ACTOR_EXPIRED")
    assert refused(lambda: call(channels, "web", "OpenSession", host_pb2.OpenSessionRequest(request_id="x"))) == (
        grpc.StatusCode.UNAUTHENTICATED, "ACTOR_MISSING")


def test_turns_belong_to_the_session_owner(channels, cert_dir):
    session = open_session(channels, cert_dir)
    turn = call(channels, "agent", "BeginTurn", host_pb2.BeginTurnRequest(
        actor=actor(cert_dir), session_id=session.session_id, question="revenue?", request_id="t-1"))
    assert turn.surface_id == session.surface_id and turn.base_revision_id == ""
    assert refused(lambda: call(channels, "agent", "BeginTurn", host_pb2.BeginTurnRequest(
        actor=actor(cert_dir, "mallory"), session_id=session.session_id, question="x", request_id="t-2"))) == (
        grpc.StatusCode.PERMISSION_DENIED, "SESSION_NOT_YOURS")


def test_a_turns_stop_is_kept_for_the_replica_running_it_and_only_its_person_may_ask(channels, cert_dir):
    session = open_session(channels, cert_dir, "stopper")
    begin = host_pb2.BeginTurnRequest(actor=actor(cert_dir, "stopper"), session_id=session.session_id,
                                      question="revenue?", request_id="stop-1")
    turn, other = (call(channels, "agent", "BeginTurn", begin),
                   call(channels, "agent", "BeginTurn", host_pb2.BeginTurnRequest(
                       actor=actor(cert_dir, "stopper"), session_id=session.session_id, question="orders?",
                       request_id="stop-2")))
    ask = host_pb2.RequestTurnCancelRequest(actor=actor(cert_dir, "stopper"), turn_id=turn.turn_id)
    assert refused(lambda: call(channels, "agent", "RequestTurnCancel", host_pb2.RequestTurnCancelRequest(
        actor=actor(cert_dir, "mallory"), turn_id=turn.turn_id))) == (grpc.StatusCode.PERMISSION_DENIED,
                                                                       "TURN_NOT_YOURS")
    assert refused(lambda: call(channels, "agent", "RequestTurnCancel", host_pb2.RequestTurnCancelRequest(
        actor=actor(cert_dir, "stopper"), turn_id="trn_nobody"))) == (grpc.StatusCode.NOT_FOUND, "TURN_UNKNOWN")
    asked = host_pb2.CancelledTurnsRequest(turn_ids=[turn.turn_id, other.turn_id, "trn_nobody"])
    assert list(call(channels, "agent", "CancelledTurns", asked).turn_ids) == []  # mallory's ask kept nothing

    first = call(channels, "agent", "RequestTurnCancel", ask)
    assert first.running and call(channels, "agent", "RequestTurnCancel", ask) == first  # asked again: the same
    assert list(call(channels, "agent", "CancelledTurns", asked).turn_ids) == [turn.turn_id]
    # The replica running it stops it and records how it ended: no longer asked about, and the asker is told.
    call(channels, "agent", "FinishTurn", host_pb2.FinishTurnRequest(
        turn_id=turn.turn_id, outcome=common_pb2.TURN_OUTCOME_CANCELLED, answer="Stopped."))
    assert list(call(channels, "agent", "CancelledTurns", asked).turn_ids) == []
    ended = call(channels, "agent", "RequestTurnCancel", ask)
    assert (ended.running, ended.outcome) == (False, common_pb2.TURN_OUTCOME_CANCELLED)


@pytest.mark.parametrize("turn_ids", [[], [f"trn_{n}" for n in range(257)], ["x" * 129], [""]])
def test_asking_which_turns_to_stop_is_bounded(channels, turn_ids):
    assert refused(lambda: call(channels, "agent", "CancelledTurns", host_pb2.CancelledTurnsRequest(
        turn_ids=turn_ids))) == (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")


def test_a_turn_is_begun_with_the_sessions_earlier_questions_oldest_first(channels, cert_dir):
    session = open_session(channels, cert_dir, "follow")
    asked = [f"question {n}" for n in range(7)]
    replies = [call(channels, "agent", "BeginTurn", host_pb2.BeginTurnRequest(
        actor=actor(cert_dir, "follow"), session_id=session.session_id, question=q, request_id=f"r-{n}"))
        for n, q in enumerate(asked)]
    def earlier(reply) -> list[str]:
        return [t.question for t in reply.earlier_turns]

    assert earlier(replies[0]) == []
    assert earlier(replies[2]) == asked[:2]
    assert earlier(replies[6]) == asked[1:6]  # the last five
    assert [t.turn_id for t in replies[6].earlier_turns] == [r.turn_id for r in replies[1:6]]
    retried = call(channels, "agent", "BeginTurn", host_pb2.BeginTurnRequest(
        actor=actor(cert_dir, "follow"), session_id=session.session_id, question=asked[2], request_id="r-2"))
    assert retried.turn_id == replies[2].turn_id and earlier(retried) == asked[:2]
    other = open_session(channels, cert_dir, "someone-else")
    fresh = call(channels, "agent", "BeginTurn", host_pb2.BeginTurnRequest(
        actor=actor(cert_dir, "someone-else"), session_id=other.session_id, question="q", request_id="r-0"))
    assert earlier(fresh) == []  # another session's questions never leak in


def _turn_with_analysis(channels, cert_dir, name="alice"):
    session = open_session(channels, cert_dir, name)
    turn = call(channels, "agent", "BeginTurn", host_pb2.BeginTurnRequest(
        actor=actor(cert_dir, name), session_id=session.session_id, question="revenue by region",
        request_id=secrets.token_hex(4)))
    ref = resources_pb2.TurnRef(session_id=session.session_id, turn_id=turn.turn_id)
    context = call(channels, "agent", "InspectContext", resources_pb2.InspectContextRequest(turn=ref), "resources")
    catalog = call(channels, "agent", "InspectCatalog", resources_pb2.InspectCatalogRequest(
        turn=ref, question="net revenue by region", capability_token=context.capability_token), "resources")
    find = {item.label: (item.field_id if hasattr(item, "field_id") and item.field_id else item.metric_id)
            for e in catalog.entities for item in [*e.fields, *e.metrics]}
    draft = {"mode": "aggregate", "measures": [{"id": "revenue", "metric": find["Net revenue"]}],
             "dimensions": [{"id": "region", "field": find["Region name"]}]}
    analysis = call(channels, "agent", "Analyze", resources_pb2.AnalyzeRequest(
        turn=ref, draft_json=json.dumps(draft), capability_token=catalog.capability_token), "resources")
    return session, turn, analysis


def _proposal(view: dict, title="Revenue") -> dict:
    ids = {c["name"]: c["id"] for c in view["components"]}
    resource = {"ref": view["resources"][0]["id"], "offer": view["resources"][0]["offer"]}
    return {"version": 1, "id": "answer", "blocks": [
        {"id": "main", "component": ids["Column"], "data": {}, "children": ["title", "table"]},
        {"id": "title", "component": ids["Heading"], "data": {"text": title}},
        {"id": "table", "component": ids["DataTable"], "data": {"resource": resource,
                                                               "columns": ["region", "revenue"]}}]}


def test_freeze_commit_read_and_stream(channels, cert_dir):
    session, turn, analysis = _turn_with_analysis(channels, cert_dir)
    _, other_turn, other_analysis = _turn_with_analysis(channels, cert_dir)
    frozen = call(channels, "agent", "FreezeSlice", host_pb2.FreezeSliceRequest(
        turn_id=turn.turn_id, resource_offers=[analysis.offer, other_analysis.offer]))
    assert [d.code for d in frozen.diagnostics] == ["slice.offer-refused"]  # the other turn's offer
    view = json.loads(frozen.model_view_json)
    assert len(view["resources"]) == 1 and view["resources"][0]["offer"] == offer_tag(
        __import__("hashlib").sha256(analysis.offer.SerializeToString(deterministic=True)).hexdigest())
    schema = json.loads(frozen.present_ui_schema_json)
    assert schema["title"].endswith(f"({frozen.slice_id})")

    proposal = _proposal(view)
    submit = host_pb2.SubmitProposalRequest(turn_id=turn.turn_id, slice_hash=frozen.slice_hash,
                                            proposal_json=json.dumps(proposal), proposal_id="p-1")
    committed = call(channels, "agent", "SubmitProposal", submit)
    assert committed.outcome == host_pb2.PROPOSAL_OUTCOME_COMMITTED and committed.revision_id.startswith("rev_")
    again = call(channels, "agent", "SubmitProposal", submit)  # idempotent by proposal id
    assert again.revision_id == committed.revision_id

    revision = call(channels, "web", "GetRevision", host_pb2.GetRevisionRequest(
        actor=actor(cert_dir), session_id=session.session_id)).revision
    assert revision.revision_id == committed.revision_id and revision.content_hash == committed.content_hash
    document = json.loads(revision.document_json)
    assert {b["id"]: b["component"] for b in document["blocks"]} == {"main": "Column", "title": "Heading",
                                                                     "table": "DataTable"}

    stream = channels("web", "host").unary_stream(
        "/tessera.host.v1.HostService/Subscribe", request_serializer=host_pb2.SubscribeRequest.SerializeToString,
        response_deserializer=host_pb2.SubscribeResponse.FromString)
    call_ = stream(host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id), timeout=10)
    received = [next(call_).envelope for _ in range(3)]
    call_.cancel()
    assert [e.sequence for e in received] == [1, 2, 3]
    assert all(e.surface_id == session.surface_id and e.revision_id == committed.revision_id for e in received)
    kinds = [json.loads(e.a2ui.message_json) for e in received]
    assert "createSurface" in kinds[0] and "updateComponents" in kinds[1] and "updateDataModel" in kinds[2]
    resumed = stream(host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id,
                                               resume_after=host_pb2.Cursor(epoch=1, sequence=2)), timeout=10)
    assert next(resumed).envelope.sequence == 3
    resumed.cancel()
    # A subscriber that asks for batches gets the same envelopes, up to max_envelopes per reply.
    batched = stream(host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id,
                                               max_envelopes=2), timeout=10)
    replies = [next(batched) for _ in range(2)]
    batched.cancel()
    assert [[e.sequence for e in (r.envelope, *r.following)] for r in replies] == [[1, 2], [3]]
    assert [e for r in replies for e in (r.envelope, *r.following)] == received
    assert refused(lambda: next(stream(host_pb2.SubscribeRequest(
        actor=actor(cert_dir, "mallory"), session_id=session.session_id), timeout=10))) == (
        grpc.StatusCode.PERMISSION_DENIED, "SESSION_NOT_YOURS")


def test_a_watched_surface_gets_each_blocks_first_window_without_asking(channels, cert_dir):
    """Someone watches the surface: the revision lists the first windows before its blocks, then the host
    sends them unasked (a surface nobody watches here gets neither: see the test above)."""
    session, turn, analysis = _turn_with_analysis(channels, cert_dir)
    frozen = call(channels, "agent", "FreezeSlice", host_pb2.FreezeSliceRequest(
        turn_id=turn.turn_id, resource_offers=[analysis.offer]))
    view = json.loads(frozen.model_view_json)
    stream = channels("web", "host").unary_stream(
        "/tessera.host.v1.HostService/Subscribe", request_serializer=host_pb2.SubscribeRequest.SerializeToString,
        response_deserializer=host_pb2.SubscribeResponse.FromString)
    call_ = stream(host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id), timeout=10)
    # An event on the surface, read back on the stream: the subscription is in place before the commit.
    call(channels, "capabilities", "PublishIntentEvent", host_pb2.PublishIntentEventRequest(
        session_id=session.session_id, surface_id=session.surface_id, node_id="export", event_id="watching",
        approval_requested=host_pb2.ApprovalRequested(approval_id="apr_w", intent_id="int_w", action_id="x")))
    assert next(call_).envelope.WhichOneof("payload") == "approval_requested"
    call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json=json.dumps(_proposal(view)),
        proposal_id="watched"))
    messages = [json.loads(next(call_).envelope.a2ui.message_json) for _ in range(5)]
    call_.cancel()
    assert "createSurface" in messages[0] and "updateComponents" in messages[2]
    assert messages[1]["updateDataModel"] == {"surfaceId": session.surface_id, "path": "/firstWindows",
                                              "value": [f"{analysis.descriptor.resource_id}|table|/resource|0"]}
    window = messages[4]["updateDataModel"]
    assert window["path"] == f"/resources/{analysis.descriptor.resource_id}/window"
    assert (window["value"]["node"], window["value"]["prop"], window["value"]["offset"]) == ("table", "/resource", 0)
    assert len(window["value"]["rows"]) == min(window["value"]["totalRows"], 25)
    assert window["value"]["columns"] == ["region", "revenue"]


def test_parallel_proposals_on_one_base_commit_exactly_once(channels, cert_dir, running_set, credentials):
    session, turn, frozen, view, committed = _committed_surface(channels, cert_dir)
    base = committed.revision_id

    def submit(index: int) -> str:
        with sync_channel(running_set.handles["host"].address, credentials("agent"), "host") as channel:
            try:
                return invoke(channel, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
                    turn_id=turn.turn_id, slice_hash=frozen.slice_hash, expected_base_revision_id=base,
                    proposal_json=json.dumps(_proposal(view, f"Version {index}")), proposal_id=f"race-{index}"),
                    timeout=60).revision_id
            except grpc.RpcError as exc:
                return error_details(exc).reason

    outcomes = race(8, submit)
    winners = [o for o in outcomes if str(o).startswith("rev_")]
    assert len(winners) == 1 and outcomes.count("REVISION_CONFLICT") == 7, outcomes
    head = call(channels, "web", "GetRevision", host_pb2.GetRevisionRequest(
        actor=actor(cert_dir), session_id=session.session_id)).revision
    assert head.revision_id == winners[0] and head.parent_revision_id == base


def test_rejected_and_bad_proposals_commit_nothing(channels, cert_dir):
    session, turn, analysis = _turn_with_analysis(channels, cert_dir)
    frozen = call(channels, "agent", "FreezeSlice", host_pb2.FreezeSliceRequest(
        turn_id=turn.turn_id, resource_offers=[analysis.offer]))
    rejected = call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json="{not json", proposal_id="bad"))
    assert rejected.outcome == host_pb2.PROPOSAL_OUTCOME_REJECTED and not rejected.revision_id
    assert rejected.diagnostics[0].code == "proposal.not-json"
    assert refused(lambda: call(channels, "web", "GetRevision", host_pb2.GetRevisionRequest(
        actor=actor(cert_dir), session_id=session.session_id))) == (grpc.StatusCode.NOT_FOUND, "REVISION_UNKNOWN")
    cases = [
        (dict(slice_hash="0" * 64), (grpc.StatusCode.FAILED_PRECONDITION, "SLICE_UNKNOWN")),
        (dict(turn_id="trn_nope"), (grpc.StatusCode.NOT_FOUND, "TURN_UNKNOWN")),
        (dict(proposal_json="x" * 300_000), (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")),
        (dict(expected_base_revision_id="rev_missing"), (grpc.StatusCode.FAILED_PRECONDITION,
                                                         "BASE_REVISION_UNKNOWN")),
    ]
    for change, expected in cases:
        request = host_pb2.SubmitProposalRequest(turn_id=turn.turn_id, slice_hash=frozen.slice_hash,
                                                 proposal_json="{}", proposal_id="p")
        for key, value in change.items():
            setattr(request, key, value)
        assert refused(lambda request=request: call(channels, "agent", "SubmitProposal", request)) == expected


def _committed_surface(channels, cert_dir, name="alice"):
    session, turn, analysis = _turn_with_analysis(channels, cert_dir, name)
    frozen = call(channels, "agent", "FreezeSlice", host_pb2.FreezeSliceRequest(
        turn_id=turn.turn_id, resource_offers=[analysis.offer]))
    view = json.loads(frozen.model_view_json)
    committed = call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json=json.dumps(_proposal(view)),
        proposal_id="first"))
    return session, turn, frozen, view, committed


def _window_request(cert_dir, session, revision_id, command_id, **window):
    return host_pb2.SendCommandRequest(
        actor=actor(cert_dir), command_id=command_id, session_id=session.session_id, surface_id=session.surface_id,
        revision_id=revision_id, resource_window=host_pb2.ResourceWindowCommand(
            node_id=window.get("node_id", "table"), offset=0, limit=window.get("limit", 50),
            column_ids=window.get("column_ids", [])))


def _event_at(channels, cert_dir, session, cursor):
    stream = channels("web", "host").unary_stream(
        "/tessera.host.v1.HostService/Subscribe", request_serializer=host_pb2.SubscribeRequest.SerializeToString,
        response_deserializer=host_pb2.SubscribeResponse.FromString)
    call_ = stream(host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id,
                                             resume_after=host_pb2.Cursor(epoch=cursor.epoch,
                                                                          sequence=cursor.sequence - 1)), timeout=10)
    envelope = next(call_).envelope
    call_.cancel()
    return envelope


def test_windows_publish_rows_to_that_surface_only(channels, cert_dir, running_set, service_env, warehouse_url):
    import sqlalchemy as sa

    session, _, _, _, committed = _committed_surface(channels, cert_dir)
    request = _window_request(cert_dir, session, committed.revision_id, "win-1")
    reply = call(channels, "web", "SendCommand", request)
    envelope = _event_at(channels, cert_dir, session, reply.cursor)
    assert envelope.surface_id == session.surface_id and envelope.sequence == reply.cursor.sequence
    update = json.loads(envelope.a2ui.message_json)["updateDataModel"]
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        regions = {r[0] for r in connection.execute(sa.text("SELECT name FROM regions"))}
    engine.dispose()
    assert update["value"]["columns"] == ["region", "revenue"] and len(update["value"]["rows"]) == len(regions)
    assert {row[0] for row in update["value"]["rows"]} == regions

    # Rows exist only in that event: not in the revision, the stored slice, the other tables, or the logs.
    revision = call(channels, "web", "GetRevision", host_pb2.GetRevisionRequest(
        actor=actor(cert_dir), session_id=session.session_id)).revision
    host_db = sa.create_engine(service_env["TESSERA_HOST_DATABASE_URL"])
    with host_db.connect() as connection:
        # This session's rows only: other tests' people may type region names into their questions.
        mine = {"s": session.session_id, "f": session.surface_id}
        queries = ["SELECT * FROM revisions WHERE surface_id = :f",
                   "SELECT * FROM frozen_slices WHERE turn_id IN (SELECT turn_id FROM turns WHERE session_id = :s)",
                   "SELECT * FROM turns WHERE session_id = :s", "SELECT * FROM sessions WHERE session_id = :s",
                   "SELECT * FROM grants WHERE surface_id = :f", "SELECT * FROM session_commands WHERE session_id = :s"]
        stored = [str(v) for query in queries for row in connection.execute(sa.text(query), mine) for v in row]
        assert stored
    host_db.dispose()
    logs = running_set.handles["host"].log_path.read_text()
    for region in regions:
        assert region not in revision.document_json and region not in logs
        assert not [v for v in stored if region in v]

    again = call(channels, "web", "SendCommand", _window_request(cert_dir, session, committed.revision_id, "win-1"))
    assert again.replayed and again.cursor == reply.cursor
    assert refused(lambda: call(channels, "web", "SendCommand", _window_request(
        cert_dir, session, committed.revision_id, "win-1", limit=10))) == (grpc.StatusCode.ALREADY_EXISTS,
                                                                           "COMMAND_ID_REUSED")


def test_commands_are_bound_to_the_current_revision_and_the_session(channels, cert_dir):
    session, _, _, _, committed = _committed_surface(channels, cert_dir)
    other = open_session(channels, cert_dir, "bob")
    cases = [
        (_window_request(cert_dir, session, "rev_old", "c-1"), (grpc.StatusCode.FAILED_PRECONDITION,
                                                                "STALE_REVISION")),
        (_window_request(cert_dir, session, committed.revision_id, "c-2", node_id="title"),
         (grpc.StatusCode.INVALID_ARGUMENT, "NODE_NOT_BOUND")),
        (_window_request(cert_dir, session, committed.revision_id, "c-3", column_ids=["secret"]),
         (grpc.StatusCode.PERMISSION_DENIED, "COLUMN_NOT_BOUND")),
        (_window_request(cert_dir, session, committed.revision_id, "c-4", limit=5000),
         (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_INVALID")),
    ]
    foreign = _window_request(cert_dir, session, committed.revision_id, "c-5")
    foreign.session_id, foreign.surface_id = other.session_id, session.surface_id
    cases.append((foreign, (grpc.StatusCode.PERMISSION_DENIED, "SESSION_NOT_YOURS")))
    decision = host_pb2.SendCommandRequest(actor=actor(cert_dir), command_id="c-6", session_id=session.session_id,
                                           surface_id=session.surface_id, revision_id=committed.revision_id,
                                           approval_decision=host_pb2.ApprovalDecisionCommand(approval_id="a"))
    cases.append((decision, (grpc.StatusCode.NOT_FOUND, "APPROVAL_UNKNOWN")))  # relayed; the broker answers
    for request, expected in cases:
        assert refused(lambda request=request: call(channels, "web", "SendCommand", request)) == expected


def test_a_revision_that_drops_a_binding_revokes_its_grants(channels, cert_dir, service_env):
    import sqlalchemy as sa

    from tessera.common.v1 import common_pb2

    session, turn, frozen, view, committed = _committed_surface(channels, cert_dir)
    call(channels, "web", "SendCommand", _window_request(cert_dir, session, committed.revision_id, "grant-1"))
    host_db = sa.create_engine(service_env["TESSERA_HOST_DATABASE_URL"])
    with host_db.connect() as connection:
        token = connection.execute(sa.text("SELECT token FROM grants WHERE surface_id = :s"),
                                   {"s": session.surface_id}).scalar()
    grant = common_pb2.SignedToken.FromString(token)
    window = call(channels, "host", "ResolveWindow", resources_pb2.ResolveWindowRequest(grant=grant, limit=5),
                  "resources")
    assert len(window.rows) == 5
    proposal = {"version": 1, "patch": {"base_revision": committed.revision_id, "operations": [
        {"op": "remove-block", "id": "table"}]}}
    call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json=json.dumps(proposal),
        expected_base_revision_id=committed.revision_id, proposal_id="drop-table"))
    with host_db.connect() as connection:
        assert connection.execute(sa.text("SELECT revoked FROM grants WHERE surface_id = :s"),
                                  {"s": session.surface_id}).scalar()
    host_db.dispose()
    # The gateway is told behind the answer: it refuses the grant soon after (until then the window is served).
    def window_refused() -> tuple[grpc.StatusCode, str] | None:
        try:
            call(channels, "host", "ResolveWindow", resources_pb2.ResolveWindowRequest(grant=grant, limit=5),
                 "resources")
        except grpc.RpcError as exc:
            details = error_details(exc)
            return details.code, details.reason
        return None

    assert wait_until(window_refused, what="the gateway refusing a grant its revision dropped") == (
        grpc.StatusCode.PERMISSION_DENIED, "GRANT_REVOKED")


def test_an_earlier_answer_of_the_conversation_is_read_again_but_never_acted_on(channels, cert_dir):
    session, turn, frozen, view, committed = _committed_surface(channels, cert_dir)
    proposal = {"version": 1, "patch": {"base_revision": committed.revision_id, "operations": [
        {"op": "remove-block", "id": "table"}]}}
    newer = call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json=json.dumps(proposal),
        expected_base_revision_id=committed.revision_id, proposal_id="drop-table-again"))
    assert newer.revision_id and newer.revision_id != committed.revision_id
    # The conversation names the last revision the turn committed (of its two).
    listed = call(channels, "web", "ListTurns", host_pb2.ListTurnsRequest(actor=actor(cert_dir),
                                                                        session_id=session.session_id))
    assert [(t.turn_id, t.revision_id) for t in listed.turns] == [(turn.turn_id, newer.revision_id)]

    # As it was shown: its A2UI messages, the table among its blocks, and no rows in them.
    earlier = call(channels, "web", "GetRevision", host_pb2.GetRevisionRequest(
        actor=actor(cert_dir), session_id=session.session_id, revision_id=committed.revision_id)).revision
    messages = [json.loads(m) for m in earlier.a2ui_messages_json]
    assert [next(k for k in m if k != "version") for m in messages][:2] == ["createSurface", "updateComponents"]
    assert "table" in {c["id"] for c in messages[1]["updateComponents"]["components"]}
    assert not any(m.get("updateDataModel", {}).get("path", "").endswith("/window") for m in messages)

    # Its rows, under a fresh grant, onto this surface's stream: the head moved on, the table is the earlier one's.
    reply = call(channels, "web", "SendCommand", _window_request(cert_dir, session, committed.revision_id, "old-1"))
    update = json.loads(_event_at(channels, cert_dir, session, reply.cursor).a2ui.message_json)["updateDataModel"]
    assert update["value"]["node"] == "table" and update["value"]["rows"]

    # Read-only: a state write on it is refused, and another person's revision is no earlier answer of this one.
    write = host_pb2.SendCommandRequest(actor=actor(cert_dir), command_id="old-2", session_id=session.session_id,
                                        surface_id=session.surface_id, revision_id=committed.revision_id,
                                        state_write=host_pb2.StateWriteCommand(state_slice_id="s", value_json="1"))
    assert refused(lambda: call(channels, "web", "SendCommand", write)) == (grpc.StatusCode.FAILED_PRECONDITION,
                                                                             "STALE_REVISION")
    bob, _, _, _, bobs = _committed_surface(channels, cert_dir, "bob")
    assert refused(lambda: call(channels, "web", "SendCommand", _window_request(
        cert_dir, session, bobs.revision_id, "old-3"))) == (grpc.StatusCode.FAILED_PRECONDITION, "STALE_REVISION")


def test_the_broker_publishes_approvals_and_receipts_as_host_events(channels, cert_dir):
    from tessera.common.v1 import common_pb2

    session = open_session(channels, cert_dir)
    requested = call(channels, "capabilities", "PublishIntentEvent", host_pb2.PublishIntentEventRequest(
        session_id=session.session_id, surface_id=session.surface_id, node_id="export", event_id="e1",
        approval_requested=host_pb2.ApprovalRequested(approval_id="apr_1", intent_id="int_1", action_id="refund")))
    running = call(channels, "capabilities", "PublishIntentEvent", host_pb2.PublishIntentEventRequest(
        session_id=session.session_id, surface_id=session.surface_id, node_id="export", event_id="e2",
        receipt=common_pb2.Receipt(intent_id="int_1", status=common_pb2.INTENT_STATUS_RUNNING)))
    done = call(channels, "capabilities", "PublishIntentEvent", host_pb2.PublishIntentEventRequest(
        session_id=session.session_id, surface_id=session.surface_id, node_id="export", event_id="e3",
        receipt=common_pb2.Receipt(intent_id="int_1", status=common_pb2.INTENT_STATUS_SUCCEEDED)))
    assert (requested.cursor.sequence, running.cursor.sequence, done.cursor.sequence) == (1, 2, 3)
    resent = call(channels, "capabilities", "PublishIntentEvent", host_pb2.PublishIntentEventRequest(
        session_id=session.session_id, surface_id=session.surface_id, node_id="export", event_id="e3",
        receipt=common_pb2.Receipt(intent_id="int_1", status=common_pb2.INTENT_STATUS_SUCCEEDED)))
    assert resent.cursor.sequence == 3  # a re-sent event is published once
    kinds = [_event_at(channels, cert_dir, session, c.cursor).WhichOneof("payload")
             for c in (requested, running, done)]
    assert kinds == ["approval_requested", "action_status", "effect_receipt"]
    assert refused(lambda: call(channels, "capabilities", "PublishIntentEvent", host_pb2.PublishIntentEventRequest(
        session_id=session.session_id, surface_id="srf_other", event_id="e4",
        receipt=common_pb2.Receipt()))) == (
        grpc.StatusCode.NOT_FOUND, "SURFACE_UNKNOWN")


def test_a_commit_checks_the_slices_offers_again(channels, cert_dir, service_env):
    import sqlalchemy as sa

    _, turn, analysis = _turn_with_analysis(channels, cert_dir)
    _, _, foreign = _turn_with_analysis(channels, cert_dir)
    frozen = call(channels, "agent", "FreezeSlice", host_pb2.FreezeSliceRequest(
        turn_id=turn.turn_id, resource_offers=[analysis.offer]))
    host_db = sa.create_engine(service_env["TESSERA_HOST_DATABASE_URL"])
    with host_db.begin() as connection:  # as if the stored offer no longer verified (e.g. expired)
        connection.execute(sa.text("UPDATE frozen_slices SET offers = :o WHERE slice_hash = :h"), {
            "o": host_pb2.FreezeSliceRequest(resource_offers=[foreign.offer]).SerializeToString(),
            "h": frozen.slice_hash})
    host_db.dispose()
    assert refused(lambda: call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_id="late",
        proposal_json=json.dumps(_proposal(json.loads(frozen.model_view_json)))))) == (
        grpc.StatusCode.FAILED_PRECONDITION, "OFFER_EXPIRED")


def test_retries_and_rejections_keep_each_caller_apart(channels, cert_dir):
    """A rejected proposal blocks nothing, a reused proposal id is refused, identical slices and retry keys stay
    each caller's own, and a cursor ahead of the journal asks for a snapshot: each once failed or crossed a
    boundary."""
    # A rejected first proposal must not block the surface.
    session, turn, analysis = _turn_with_analysis(channels, cert_dir)
    frozen = call(channels, "agent", "FreezeSlice", host_pb2.FreezeSliceRequest(
        turn_id=turn.turn_id, resource_offers=[analysis.offer]))
    call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json="{", proposal_id="bad"))
    good = call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_id="good",
        proposal_json=json.dumps(_proposal(json.loads(frozen.model_view_json)))))
    assert good.outcome == host_pb2.PROPOSAL_OUTCOME_COMMITTED

    # The same proposal id with another proposal is refused, not answered with the old revision.
    assert refused(lambda: call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_id="good",
        proposal_json=json.dumps(_proposal(json.loads(frozen.model_view_json), "Other"))))) == (
        grpc.StatusCode.ALREADY_EXISTS, "PROPOSAL_ID_REUSED")

    # Two turns freezing identical slices (no offers) each keep their own.
    hashes = []
    for name in ("carol", "dave"):
        other = open_session(channels, cert_dir, name)
        other_turn = call(channels, "agent", "BeginTurn", host_pb2.BeginTurnRequest(
            actor=actor(cert_dir, name), session_id=other.session_id, question="q", request_id="t"))
        empty = call(channels, "agent", "FreezeSlice", host_pb2.FreezeSliceRequest(turn_id=other_turn.turn_id))
        view = json.loads(empty.model_view_json)
        ids = {c["name"]: c["id"] for c in view["components"]}
        reply = call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
            turn_id=other_turn.turn_id, slice_hash=empty.slice_hash, proposal_id="p", proposal_json=json.dumps(
                {"version": 1, "id": "x", "blocks": [{"id": "t", "component": ids["Text"], "data": {"text": "Hi"}}]})))
        assert reply.outcome == host_pb2.PROPOSAL_OUTCOME_COMMITTED
        hashes.append(empty.slice_hash)
    assert hashes[0] == hashes[1]

    # The same retry key in another tenant is another session.
    first = call(channels, "web", "OpenSession", host_pb2.OpenSessionRequest(
        actor=actor(cert_dir, "erin", "acme"), request_id="same-key"))
    second = call(channels, "web", "OpenSession", host_pb2.OpenSessionRequest(
        actor=actor(cert_dir, "erin", "evil"), request_id="same-key"))
    assert first.session_id != second.session_id

    # A cursor ahead of the journal is not silently accepted.
    stream = channels("web", "host").unary_stream(
        "/tessera.host.v1.HostService/Subscribe", request_serializer=host_pb2.SubscribeRequest.SerializeToString,
        response_deserializer=host_pb2.SubscribeResponse.FromString)
    ahead = stream(host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id,
                                             resume_after=host_pb2.Cursor(epoch=1, sequence=10_000)), timeout=10)
    assert next(ahead).envelope.WhichOneof("payload") == "snapshot_required"
    ahead.cancel()


def test_command_ids_are_scoped_to_their_session(channels, cert_dir):
    first, _, _, _, one = _committed_surface(channels, cert_dir)
    call(channels, "web", "SendCommand", _window_request(cert_dir, first, one.revision_id, "shared-id"))
    second, _, _, _, two = _committed_surface(channels, cert_dir)
    reply = call(channels, "web", "SendCommand", _window_request(cert_dir, second, two.revision_id, "shared-id"))
    assert not reply.replayed and second.session_id != first.session_id


def test_a_figure_or_a_metric_reads_its_one_cell_only(channels, cert_dir):
    """A FigureText's figures and a Metric are bound to one row: a command names which figure, and any
    other row or a longer window is refused before a grant is signed."""
    session, turn, analysis = _turn_with_analysis(channels, cert_dir)
    frozen = call(channels, "agent", "FreezeSlice", host_pb2.FreezeSliceRequest(
        turn_id=turn.turn_id, resource_offers=[analysis.offer]))
    ids, bound = offered_ids(frozen)
    proposal = {"version": 1, "id": "answer", "blocks": [
        {"id": "main", "component": ids["Column"], "data": {}, "children": ["words", "top"]},
        {"id": "words", "component": ids["FigureText"], "data": {
            "text": "{region} leads with {revenue}.", "figures": {
                "region": {"resource": bound, "row": 0, "column": "region"},
                "revenue": {"resource": bound, "row": 0, "column": "revenue"}}}},
        {"id": "top", "component": ids["Metric"], "data": {"label": "Second", "resource": bound,
                                                           "column": "revenue", "row": 1}}]}
    committed = call(channels, "agent", "SubmitProposal", host_pb2.SubmitProposalRequest(
        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json=json.dumps(proposal), proposal_id="f"))
    assert committed.outcome == host_pb2.PROPOSAL_OUTCOME_COMMITTED, committed.diagnostics

    def window(command_id, node, prop="", offset=0, limit=1):
        return host_pb2.SendCommandRequest(
            actor=actor(cert_dir), command_id=command_id, session_id=session.session_id,
            surface_id=session.surface_id, revision_id=committed.revision_id,
            resource_window=host_pb2.ResourceWindowCommand(node_id=node, prop=prop, offset=offset, limit=limit))

    assert refused(lambda: call(channels, "web", "SendCommand", window("w1", "words"))) == (
        grpc.StatusCode.INVALID_ARGUMENT, "BINDING_AMBIGUOUS")
    for request in (window("w2", "words", "/figures/region", offset=1), window("w3", "words", "/figures/region",
                                                                                  limit=2),
                    window("w4", "top", offset=0), window("w5", "top", offset=1, limit=25)):
        assert refused(lambda request=request: call(channels, "web", "SendCommand", request)) == (
            grpc.StatusCode.PERMISSION_DENIED, "WINDOW_OUTSIDE_BINDING")
    reply = call(channels, "web", "SendCommand", window("w6", "words", "/figures/revenue"))
    value = json.loads(_event_at(channels, cert_dir, session, reply.cursor).a2ui.message_json)["updateDataModel"]
    assert value["value"]["prop"] == "/figures/revenue" and value["value"]["columns"] == ["revenue"]
    assert len(value["value"]["rows"]) == 1
