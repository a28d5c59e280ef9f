"""The host on its own processes: PostgreSQL as its database, and a kill -9 in the middle of commits."""

from __future__ import annotations

import json
import os
import signal
import threading

import grpc
import pytest

from cli.launcher import ServiceSet
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from shared.rpc.errors import error_details
from tessera.host.v1 import host_pb2
from tests.fixtures.postgres import BACKENDS, database_url
from tests.fixtures.race import race
from tests.fixtures.waiting import wait_until
from tests.host.integration.test_host import _proposal, _turn_with_analysis, actor


@pytest.fixture(params=BACKENDS)
def own_host(request, cert_dir, tmp_path, running_set, service_env):
    """A compiler + host pair of its own (the shared set's resources sign the offers)."""
    url = database_url(request, tmp_path, "host")
    env = {**service_env, "TESSERA_HOST_DATABASE_URL": url,
           "TESSERA_RESOURCES_ADDR": running_set.handles["resources"].address}
    services = ServiceSet(cert_dir, tmp_path / "run", names=("compiler", "host"), ephemeral_ports=True,
                          extra_env=env)
    services.start()
    yield services
    services.stop()


def _channels(services, running_set, credentials):
    opened = {}

    def channel(principal, service):
        source = services if service in services.handles else running_set
        if (principal, service) not in opened:
            opened[principal, service] = sync_channel(source.handles[service].address, credentials(principal), service)
        return opened[principal, service]

    return channel, opened


def test_parallel_proposals_commit_once_on_each_database(own_host, running_set, credentials, cert_dir):
    channels, opened = _channels(own_host, running_set, credentials)
    try:
        _, turn, analysis = _turn_with_analysis(channels, cert_dir)
        frozen = invoke(channels("agent", "host"), "host", "FreezeSlice", host_pb2.FreezeSliceRequest(
            turn_id=turn.turn_id, resource_offers=[analysis.offer]))
        view = json.loads(frozen.model_view_json)

        def submit(index: int) -> str:
            with sync_channel(own_host.handles["host"].address, credentials("agent"), "host") as channel:
                try:
                    return invoke(channel, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
                        turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_id=f"first-{index}",
                        proposal_json=json.dumps(_proposal(view, f"V{index}"))), timeout=60).revision_id
                except grpc.RpcError as exc:
                    return error_details(exc).reason

        outcomes = race(6, submit)
        # No base: the first revision of a surface is itself a compare-and-swap (against "none").
        assert sum(str(o).startswith("rev_") for o in outcomes) == 1, outcomes
        assert outcomes.count("REVISION_CONFLICT") == 5, outcomes
    finally:
        for channel in opened.values():
            channel.close()


def test_acknowledged_commits_survive_kill_9_and_the_stream_resumes(cert_dir, tmp_path, running_set, credentials,
                                                                    service_env):
    env = {**service_env, "TESSERA_HOST_DATABASE_URL": f"sqlite:///{tmp_path / 'host.sqlite'}",
           "TESSERA_RESOURCES_ADDR": running_set.handles["resources"].address}
    services = ServiceSet(cert_dir, tmp_path / "run", names=("compiler", "host"), ephemeral_ports=True,
                          extra_env=env)
    services.start()
    channels, opened = _channels(services, running_set, credentials)
    acknowledged: list[str] = []
    try:
        session, turn, analysis = _turn_with_analysis(channels, cert_dir)
        frozen = invoke(channels("agent", "host"), "host", "FreezeSlice", host_pb2.FreezeSliceRequest(
            turn_id=turn.turn_id, resource_offers=[analysis.offer]))
        view = json.loads(frozen.model_view_json)
        stop = threading.Event()

        def commit_loop():
            base = ""
            with sync_channel(services.handles["host"].address, credentials("agent"), "host") as channel:
                for index in range(10_000):
                    if stop.is_set():
                        return
                    try:
                        reply = invoke(channel, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
                            turn_id=turn.turn_id, slice_hash=frozen.slice_hash, expected_base_revision_id=base,
                            proposal_id=f"c-{index}", proposal_json=json.dumps(_proposal(view, f"V{index}"))),
                            timeout=10)
                    except grpc.RpcError:
                        return  # the host is gone
                    base = reply.revision_id
                    acknowledged.append(base)

        writer = threading.Thread(target=commit_loop)
        writer.start()
        wait_until(lambda: len(acknowledged) >= 5 or not writer.is_alive(), 60,
                   what="five commits acknowledged before the kill")
        os.kill(services.handles["host"].pid, signal.SIGKILL)
        writer.join(timeout=30)
        stop.set()
        assert len(acknowledged) >= 5
        services.stop()
        opened.pop(("web", "host"), None)
        opened.pop(("agent", "host"), None)

        restarted = ServiceSet(cert_dir, tmp_path / "run2", names=("compiler", "host"), ephemeral_ports=True,
                               extra_env=env)
        restarted.start()
        try:
            with sync_channel(restarted.handles["host"].address, credentials("web"), "host") as web:
                head = invoke(web, "host", "GetRevision", host_pb2.GetRevisionRequest(
                    actor=actor(cert_dir), session_id=session.session_id)).revision
                # Every acknowledged commit is there; at most one more may have landed unacknowledged.
                chain, cursor = [], head
                while cursor.revision_id:
                    chain.append(cursor.revision_id)
                    if not cursor.parent_revision_id:
                        break
                    cursor = invoke(web, "host", "GetRevision", host_pb2.GetRevisionRequest(
                        actor=actor(cert_dir), session_id=session.session_id,
                        revision_id=cursor.parent_revision_id)).revision
                chain.reverse()
                assert chain[:len(acknowledged)] == acknowledged and len(chain) - len(acknowledged) <= 1
                stream = web.unary_stream("/tessera.host.v1.HostService/Subscribe",
                                          request_serializer=host_pb2.SubscribeRequest.SerializeToString,
                                          response_deserializer=host_pb2.SubscribeResponse.FromString)
                call = stream(host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id,
                                                        resume_after=host_pb2.Cursor(epoch=1, sequence=3)),
                              timeout=10)
                sequences = [next(call).envelope.sequence for _ in range(6)]
                call.cancel()
                assert sequences == [4, 5, 6, 7, 8, 9]  # exactly the events after the cursor, in order
        finally:
            restarted.stop()
    finally:
        for channel in opened.values():
            channel.close()
        services.stop()


def test_a_cursor_past_retention_gets_snapshot_required_and_a_snapshot(cert_dir, tmp_path, running_set,
                                                                       credentials, service_env):
    env = {**service_env, "TESSERA_HOST_DATABASE_URL": f"sqlite:///{tmp_path / 'host.sqlite'}",
           "TESSERA_HOST_JOURNAL_RETENTION": "12", "TESSERA_RESOURCES_ADDR": running_set.handles["resources"].address}
    services = ServiceSet(cert_dir, tmp_path / "run", names=("compiler", "host"), ephemeral_ports=True,
                          extra_env=env)
    services.start()
    channels, opened = _channels(services, running_set, credentials)
    try:
        session, turn, analysis = _turn_with_analysis(channels, cert_dir)
        agent = channels("agent", "host")
        frozen = invoke(agent, "host", "FreezeSlice", host_pb2.FreezeSliceRequest(
            turn_id=turn.turn_id, resource_offers=[analysis.offer]))
        committed = invoke(agent, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
            turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_id="p",
            proposal_json=json.dumps(_proposal(json.loads(frozen.model_view_json)))))
        stream = channels("web", "host").unary_stream(
            "/tessera.host.v1.HostService/Subscribe", request_serializer=host_pb2.SubscribeRequest.SerializeToString,
            response_deserializer=host_pb2.SubscribeResponse.FromString)
        live = stream(host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id), timeout=30)
        first = [next(live).envelope for _ in range(3)]
        assert [(e.epoch, e.sequence) for e in first] == [(1, 1), (1, 2), (1, 3)]
        for index in range(12):  # rejected proposals: host events that push the journal past retention
            invoke(agent, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
                turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json="{", proposal_id=f"bad-{index}"))
        seen = []
        while True:
            envelope = next(live).envelope
            seen.append(envelope)
            if envelope.WhichOneof("payload") == "snapshot_required":
                break
        assert envelope.epoch == 2
        snapshot = [next(live).envelope for _ in range(2)]
        live.cancel()
        assert all(e.epoch == 2 and e.revision_id == committed.revision_id for e in snapshot)
        assert "createSurface" in snapshot[0].a2ui.message_json and "updateComponents" in snapshot[1].a2ui.message_json
        resumed = stream(host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id,
                                                   resume_after=host_pb2.Cursor(epoch=1, sequence=3)), timeout=30)
        marker = next(resumed).envelope
        assert marker.WhichOneof("payload") == "snapshot_required" and marker.snapshot_required.epoch == 2
        assert next(resumed).envelope.sequence == 1  # the new epoch from its start: the snapshot
        resumed.cancel()
    finally:
        for channel in opened.values():
            channel.close()
        services.stop()
