"""Host processes of their own: commands exactly once under racing retries (SQLite and PostgreSQL),
and several replicas on one PostgreSQL database (fan-out, kill -9, CAS across replicas)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import grpc
import pytest
import sqlalchemy as sa

from cli.launcher import ServiceSet, check_health, cli_credentials, free_ports, stop_together
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke, invoke_stream
from shared.rpc.errors import error_details
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tests.fixtures.forwarder import TcpForwarder
from tests.fixtures.postgres import BACKENDS, database_url, postgres_database
from tests.fixtures.race import query, race
from tests.fixtures.waiting import wait_until
from tests.host.integration.test_host import _committed_surface, _proposal, _window_request, actor

RACERS = 8


def _host_replicas(cert_dir, run_dir, running_set, service_env, urls: list[str], **settings: str) -> list[ServiceSet]:
    """One host process per database URL; the shared set's compiler, resources and broker."""
    peers = {f"TESSERA_{name.upper()}_ADDR": running_set.handles[name].address
             for name in ("compiler", "resources", "capabilities")}
    replicas = []
    try:
        for index, url in enumerate(urls):
            replica = ServiceSet(cert_dir, run_dir / f"host-{index}", names=("host",), ephemeral_ports=True,
                                 extra_env={**service_env, **peers, **settings, "TESSERA_HOST_DATABASE_URL": url})
            replica.start()
            replicas.append(replica)
    except BaseException:
        stop_together(replicas)
        raise
    return replicas


class Clients:
    """Channels by (principal, replica index); other services go to the shared set."""

    def __init__(self, replicas, running_set, credentials) -> None:
        self.replicas, self.running_set, self.credentials = replicas, running_set, credentials
        self.opened: dict = {}

    def address(self, service: str, replica: int) -> str:
        if service == "host":
            return self.replicas[replica].handles["host"].address
        return self.running_set.handles[service].address

    def channel(self, principal: str, service: str, replica: int = 0):
        key = (principal, service, replica)
        if key not in self.opened:
            self.opened[key] = sync_channel(self.address(service, replica), self.credentials(principal), service)
        return self.opened[key]

    def as_channels(self, replica: int = 0):
        return lambda principal, service: self.channel(principal, service, replica)

    def close(self) -> None:
        for channel in self.opened.values():
            channel.close()


@pytest.fixture
def hosts(cert_dir, tmp_path, running_set, credentials, service_env):
    """hosts(urls, **settings) -> Clients of one new host replica per URL; all stopped after the test."""
    started: list[Clients] = []

    def start(urls: list[str], **settings: str) -> Clients:
        replicas = _host_replicas(cert_dir, tmp_path / f"set-{len(started)}", running_set, service_env, urls,
                                  **settings)
        started.append(Clients(replicas, running_set, credentials))
        return started[-1]

    yield start
    for clients in started:
        clients.close()
    stop_together([replica for clients in started for replica in clients.replicas])


@pytest.fixture(params=BACKENDS)
def host_database_url(request, tmp_path):
    return database_url(request, tmp_path, "host")


@pytest.fixture
def pg_url(request):
    return postgres_database(request, "tessera_hosts")


def _committed(clients: Clients, cert_dir, replica: int = 0):
    """A session whose surface has a first revision, made through `replica`."""
    return _committed_surface(clients.as_channels(replica), cert_dir)


def _outcome(function):
    """`function`'s result, or the reason it was refused (racing callers that lose are refused)."""
    def run(index):
        try:
            return function(index)
        except grpc.RpcError as exc:
            return error_details(exc).reason
    return run


def _count(url: str, sql: str, **params) -> int:
    return query(url, sql, **params)[0][0]


def _notify(url: str, *payloads: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:  # delivered at commit
            for payload in payloads:
                connection.execute(sa.select(sa.func.pg_notify("tessera_surface", payload)))
    finally:
        engine.dispose()


def test_racing_retries_of_a_command_take_effect_once(host_database_url, cert_dir, hosts):
    """Two replicas (SQLite: two connections of one process) get the same window command at once."""
    clients = hosts([host_database_url] * (2 if host_database_url.startswith("postgresql") else 1))
    replicas = clients.replicas
    session, _, _, _, committed = _committed(clients, cert_dir)
    request = _window_request(cert_dir, session, committed.revision_id, "win-race")

    def send(index):
        with sync_channel(clients.address("host", index % len(replicas)), clients.credentials("web"), "host") as ch:
            return invoke(ch, "host", "SendCommand", request, timeout=60)

    replies = race(RACERS, _outcome(send))
    assert all(isinstance(r, host_pb2.SendCommandResponse) for r in replies), replies
    assert len({(r.cursor.epoch, r.cursor.sequence) for r in replies}) == 1
    assert sum(not r.replayed for r in replies) == 1  # one ran the command; the others read its reply
    # One grant signed, one window published: the handler ran once.
    assert _count(host_database_url, "SELECT count(*) FROM grants WHERE surface_id = :s", s=session.surface_id) == 1
    assert _count(host_database_url, "SELECT count(*) FROM surface_events WHERE surface_id = :s",
                  s=session.surface_id) == replies[0].cursor.sequence


def test_racing_resends_of_an_intent_event_publish_it_once(host_database_url, cert_dir, hosts):
    clients = hosts([host_database_url] * (2 if host_database_url.startswith("postgresql") else 1))
    replicas = clients.replicas
    session = invoke(clients.channel("web", "host"), "host", "OpenSession", host_pb2.OpenSessionRequest(
        actor=actor(cert_dir), request_id="race"))
    event = host_pb2.PublishIntentEventRequest(
        session_id=session.session_id, surface_id=session.surface_id, node_id="export", event_id="e-race",
        receipt=common_pb2.Receipt(intent_id="int_1", status=common_pb2.INTENT_STATUS_SUCCEEDED))

    def publish(index):
        with sync_channel(clients.address("host", index % len(replicas)), clients.credentials("capabilities"),
                          "host") as channel:
            return invoke(channel, "host", "PublishIntentEvent", event, timeout=60)

    replies = race(RACERS, _outcome(publish))
    assert {(r.cursor.epoch, r.cursor.sequence) for r in replies} == {(1, 1)}, replies
    assert _count(host_database_url, "SELECT count(*) FROM surface_events WHERE surface_id = :s",
                  s=session.surface_id) == 1


def _subscribe(clients: Clients, cert_dir, session, replica: int, after: host_pb2.Cursor | None = None,
               timeout: float = 60):
    request = host_pb2.SubscribeRequest(actor=actor(cert_dir), session_id=session.session_id)
    if after is not None:
        request.resume_after.CopyFrom(after)
    return invoke_stream(clients.channel("web", "host", replica), "host", "Subscribe", request, timeout=timeout)


class Reader(threading.Thread):
    """Reads a stream into `envelopes` (with arrival times) until it ends or fails."""

    def __init__(self, call) -> None:
        super().__init__(daemon=True)
        self.call, self.envelopes, self.arrived, self.error = call, [], [], None

    def run(self) -> None:
        try:
            for response in self.call:
                self.envelopes.append(response.envelope)
                self.arrived.append(time.monotonic())
        except grpc.RpcError as exc:
            self.error = exc

    def wait_for(self, sequence: int, timeout: float = 60) -> None:
        def reached() -> bool:
            running = self.is_alive()  # read first: a stream that ends after its last envelope has reached it
            if self.envelopes and self.envelopes[-1].sequence >= sequence:
                return True
            assert running, f"stream ended: {self.error}"
            return False

        wait_until(reached, timeout, what=f"sequence {sequence} on the stream",
                   detail=lambda: f"stream stopped at {[e.sequence for e in self.envelopes][-3:]}")


def _commit_chain(clients: Clients, cert_dir, turn, frozen, view, base: str, count: int, replica: int,
                  acknowledged: list, stop: threading.Event | None = None) -> None:
    """Commit `count` revisions one on another through `replica`; (revision, time sent) of each goes into
    `acknowledged` once the host answered."""
    with sync_channel(clients.address("host", replica), clients.credentials("agent"), "host") as channel:
        for index in range(count):
            if stop is not None and stop.is_set():
                return
            sent = time.monotonic()
            reply = invoke(channel, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
                turn_id=turn.turn_id, slice_hash=frozen.slice_hash, expected_base_revision_id=base,
                proposal_id=f"chain-{replica}-{index}", proposal_json=json.dumps(_proposal(view, f"V{index}"))),
                timeout=30)
            base = reply.revision_id
            acknowledged.append((base, sent))


def _marker(clients: Clients, session, replica: int, event_id: str) -> host_pb2.Cursor:
    """A host event appended after everything else: its cursor is the journal's end."""
    return invoke(clients.channel("capabilities", "host", replica), "host", "PublishIntentEvent",
                  host_pb2.PublishIntentEventRequest(
                      session_id=session.session_id, surface_id=session.surface_id, event_id=event_id,
                      receipt=common_pb2.Receipt(intent_id=event_id, status=common_pb2.INTENT_STATUS_RUNNING)),
                  timeout=30).cursor


def _assert_in_order_once(envelopes, last: int) -> None:
    """Every envelope up to `last`, in order, once (a revision's first windows may still follow it)."""
    sequences = [e.sequence for e in envelopes if e.sequence <= last]
    assert sequences == list(range(1, last + 1)), sequences


# No safety re-read within a test's time: every wake-up below must come from NOTIFY.
PUSH_ONLY = {"TESSERA_HOST_SAFETY_REREAD_SECONDS": "3600"}


def test_a_subscriber_on_b_sees_every_commit_made_through_a(pg_url, cert_dir, hosts):
    clients = hosts([pg_url] * 2, **PUSH_ONLY)
    session, turn, frozen, view, committed = _committed(clients, cert_dir, replica=0)
    reader = Reader(_subscribe(clients, cert_dir, session, replica=1))
    reader.start()
    reader.wait_for(3)  # the first revision, read from the journal
    # Unknown surfaces and empty payloads are ignored; an unreadable position of a watched surface makes B
    # read the journal (nothing new): none of it may cost an event or add one.
    _notify(pg_url, "srf_unknown 1 9", "", f"{session.surface_id} not-a-position")
    acknowledged: list = []
    _commit_chain(clients, cert_dir, turn, frozen, view, committed.revision_id, 15, 0, acknowledged)
    end = _marker(clients, session, 0, "end")
    reader.wait_for(end.sequence)
    reader.call.cancel()
    _assert_in_order_once(reader.envelopes, end.sequence)
    seen = [e.revision_id for e in reader.envelopes if e.revision_id]
    order = [r for i, r in enumerate(seen) if i == 0 or seen[i - 1] != r]
    assert order == [committed.revision_id] + [r for r, _ in acknowledged]
    first_seen = {}
    for envelope, arrived in zip(reader.envelopes, reader.arrived, strict=True):
        first_seen.setdefault(envelope.revision_id, arrived)
    lags = sorted(first_seen[r] - sent for r, sent in acknowledged)
    print(f"request on A -> delivery on B: p50 {lags[len(lags) // 2] * 1000:.1f} ms, max {lags[-1] * 1000:.1f} ms")


def test_kill_9_of_a_replica_mid_stream_the_subscriber_resumes_on_another(pg_url, cert_dir, hosts):
    clients = hosts([pg_url] * 2, **PUSH_ONLY)
    replicas = clients.replicas
    stop = threading.Event()
    try:
        session, turn, frozen, view, committed = _committed(clients, cert_dir, replica=1)
        first = Reader(_subscribe(clients, cert_dir, session, replica=0))
        first.start()
        acknowledged: list = []
        failures: list = []

        def write() -> None:
            try:
                _commit_chain(clients, cert_dir, turn, frozen, view, committed.revision_id, 200, 1, acknowledged,
                              stop)
            except Exception as exc:  # reported below, not lost in the thread
                failures.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        first.wait_for(12)  # the writer, on B, is well under way
        os.kill(replicas[0].handles["host"].pid, signal.SIGKILL)
        first.join(timeout=30)
        assert not first.is_alive() and first.error is not None  # A's stream ended with A
        assert first.error.code() == grpc.StatusCode.UNAVAILABLE, first.error
        received = list(first.envelopes)
        cursor = host_pb2.Cursor(epoch=received[-1].epoch, sequence=received[-1].sequence)
        second = Reader(_subscribe(clients, cert_dir, session, replica=1, after=cursor))
        second.start()
        wait_until(lambda: len(acknowledged) >= 20 or failures, 60, what="20 commits on B after A died")
        stop.set()
        writer.join(timeout=60)
        assert not writer.is_alive() and not failures, failures
        end = _marker(clients, session, 1, "end")
        second.wait_for(end.sequence)
        second.call.cancel()
        _assert_in_order_once(received + second.envelopes, end.sequence)
    finally:
        stop.set()


def test_commits_racing_on_two_replicas_against_one_base_win_once(pg_url, cert_dir, hosts):
    clients = hosts([pg_url] * 2)
    _, turn, frozen, view, committed = _committed(clients, cert_dir)
    base = committed.revision_id
    for round_ in range(2):  # the second round races on the winner of the first

        def submit(index, base=base, round_=round_):
            with sync_channel(clients.address("host", index % 2), clients.credentials("agent"), "host") as channel:
                return invoke(channel, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
                    turn_id=turn.turn_id, slice_hash=frozen.slice_hash, expected_base_revision_id=base,
                    proposal_id=f"race-{round_}-{index}", proposal_json=json.dumps(_proposal(view, f"R{index}"))),
                    timeout=60).revision_id

        outcomes = race(RACERS, _outcome(submit))
        winners = [o for o in outcomes if str(o).startswith("rev_")]
        assert len(winners) == 1 and outcomes.count("REVISION_CONFLICT") == RACERS - 1, outcomes
        base = winners[0]


def _cut(forwarder: TcpForwarder, database_url: str, application_name: str) -> None:
    """The database goes away for one replica: no new connections, and its open ones end."""
    forwarder.close()
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                       "WHERE application_name = :name"), {"name": application_name})
    finally:
        engine.dispose()


def _wait_health(replica: ServiceSet, expected: str, timeout: float = 60) -> None:
    credentials = cli_credentials(replica.cert_dir)
    wait_until(lambda: check_health(replica.handles["host"], credentials) == expected, timeout,
               what=f"the host's health becoming {expected}")


def test_a_replica_that_loses_its_database_refuses_then_rejoins_without_a_restart(
        request, pg_url, cert_dir, hosts):
    """Replica B reaches PostgreSQL through a relay the test cuts; A keeps committing meanwhile."""
    url = sa.make_url(pg_url)
    target, port = (url.host, url.port or 5432), free_ports(1)[0]
    forwarders = [TcpForwarder(port, target)]
    request.addfinalizer(lambda: forwarders[-1].close())
    through_relay = url.set(port=port, query={"application_name": "host-b"}).render_as_string(hide_password=False)
    clients = hosts([pg_url, through_relay], **PUSH_ONLY)
    replicas = clients.replicas
    session, turn, frozen, view, committed = _committed(clients, cert_dir, replica=0)
    reader = Reader(_subscribe(clients, cert_dir, session, replica=1, timeout=300))
    reader.start()
    reader.wait_for(3)
    _cut(forwarders[-1], pg_url, "host-b")
    _wait_health(replicas[1], "NOT_SERVING")
    open_again = host_pb2.OpenSessionRequest(actor=actor(cert_dir), request_id="during-outage")
    with pytest.raises(grpc.RpcError) as refused:
        invoke(clients.channel("web", "host", 1), "host", "OpenSession", open_again, timeout=30)
    details = error_details(refused.value)
    assert (details.code, details.reason) == (grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE")
    acknowledged: list = []  # committed on A while B cannot see the database
    _commit_chain(clients, cert_dir, turn, frozen, view, committed.revision_id, 3, 0, acknowledged)
    forwarders.append(TcpForwarder(port, target))  # the database is back, on the same address
    _wait_health(replicas[1], "SERVING")
    assert invoke(clients.channel("web", "host", 1), "host", "OpenSession", open_again, timeout=30).session_id
    # B re-read the surface when its LISTEN connection came back, and hears NOTIFY again.
    end = _marker(clients, session, 0, "end")
    reader.wait_for(end.sequence)
    reader.call.cancel()
    _assert_in_order_once(reader.envelopes, end.sequence)
