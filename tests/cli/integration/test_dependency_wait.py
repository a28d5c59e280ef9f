"""A service whose database does not answer yet stays alive and not ready, says so once, and
becomes ready when the database answers (how a pod behaves before PostgreSQL is up)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import sqlalchemy as sa
from grpc_health.v1 import health_pb2, health_pb2_grpc

from cli.launcher import free_ports
from shared.paths import REPO_ROOT
from shared.rpc.runtime import LIVENESS_SERVICE
from tests.fixtures.forwarder import TcpForwarder
from tests.fixtures.postgres import postgres_database
from tests.fixtures.waiting import wait_until


def _status(port: int, service: str = "") -> str:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                              timeout=2)
        except grpc.RpcError as exc:
            return exc.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def _waiting_host(cert_dir: Path, tmp_path: Path, url: sa.URL, db_port: int, health_port: int):
    """A host process (and its log) told to wait 120 s for its database, reached at `db_port` on loopback."""
    log = tmp_path / "host.log"
    env = {**os.environ, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_VAR_DIR": str(tmp_path),
           "TESSERA_HOST_PORT": str(free_ports(1)[0]), "TESSERA_HOST_HEALTH_PORT": str(health_port),
           "TESSERA_HOST_DEPENDENCY_WAIT_SECONDS": "120",
           "TESSERA_HOST_DATABASE_URL": url.set(host="127.0.0.1", port=db_port).render_as_string(
               hide_password=False)}
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "services.host"], cwd=REPO_ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    return process, log


def test_a_host_waits_not_ready_for_its_database_then_serves(request, cert_dir, tmp_path):
    url = sa.make_url(postgres_database(request, "wait"))
    db_port, health_port = free_ports(2)
    process, log = _waiting_host(cert_dir, tmp_path, url, db_port, health_port)
    forwarder = None
    try:
        # Nothing answers on db_port: alive, not ready, and said once.
        wait_until(lambda: _status(health_port, LIVENESS_SERVICE) == "SERVING", 60, what="the host's liveness",
                   detail=lambda: _status(health_port, LIVENESS_SERVICE))
        assert _status(health_port) == "NOT_SERVING"
        wait_until(lambda: "waiting for a dependency" in log.read_text(), 60,
                   what="the host saying it waits for its database", detail=log.read_text)
        assert process.poll() is None
        forwarder = TcpForwarder(db_port, (url.host or "127.0.0.1", url.port or 5432))
        wait_until(lambda: _status(health_port) == "SERVING", 60, what="the host ready once its database answers",
                   detail=lambda: _status(health_port))
        text = log.read_text()
        assert text.count("waiting for a dependency") == 1 and "dependency reachable" in text
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if forwarder:
            forwarder.close()


def test_liveness_answers_while_the_database_accepts_and_never_answers(request, cert_dir, tmp_path):
    """The build's database work runs off the event loop: a database that hangs (a frozen path) leaves the
    process alive to its liveness probe, not ready, waiting, and it serves once the path thaws."""
    url = sa.make_url(postgres_database(request, "hang"))
    db_port, health_port = free_ports(2)
    relay = TcpForwarder(db_port, (url.host or "127.0.0.1", url.port or 5432))
    relay.dropping.set()
    process, log = _waiting_host(cert_dir, tmp_path, url, db_port, health_port)
    try:
        wait_until(lambda: "waiting for a dependency" in log.read_text(), 60,
                   what="the host waiting for a database that never answers", detail=log.read_text)
        # Several liveness checks while connection attempts hang: every one answered.
        for _ in range(5):
            assert _status(health_port, LIVENESS_SERVICE) == "SERVING"
            assert _status(health_port) == "NOT_SERVING"
        relay.dropping.clear()
        wait_until(lambda: _status(health_port) == "SERVING", 60, what="the host ready once the path thaws",
                   detail=lambda: log.read_text()[-2000:])
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        relay.close(connections=True)


def test_without_a_wait_an_unreachable_database_stops_startup_with_one_line(cert_dir, tmp_path):
    (db_port,) = free_ports(1)
    env = {**os.environ, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_VAR_DIR": str(tmp_path),
           "TESSERA_HOST_PORT": "0",
           "TESSERA_HOST_DATABASE_URL": f"postgresql+psycopg://nobody@127.0.0.1:{db_port}/nothing"}
    result = subprocess.run([sys.executable, "-m", "services.host"], cwd=REPO_ROOT, env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith(
        "tessera-host: error: TESSERA_HOST_DATABASE_URL: cannot prepare the host database:")




def test_a_service_stopped_while_waiting_exits_cleanly(cert_dir, tmp_path):
    db_port, health_port = free_ports(2)
    log = tmp_path / "host.log"
    env = {**os.environ, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_VAR_DIR": str(tmp_path),
           "TESSERA_HOST_PORT": "0", "TESSERA_HOST_HEALTH_PORT": str(health_port),
           "TESSERA_HOST_DEPENDENCY_WAIT_SECONDS": "120",
           "TESSERA_HOST_DATABASE_URL": f"postgresql+psycopg://nobody@127.0.0.1:{db_port}/nothing"}
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "services.host"], cwd=REPO_ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "waiting for a dependency" in log.read_text(), 60,
                   what="the host saying it waits for its database", detail=log.read_text)
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert "stopped before it was ready" in log.read_text()
        assert _status(health_port) == "UNAVAILABLE"  # the health port went with it
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
