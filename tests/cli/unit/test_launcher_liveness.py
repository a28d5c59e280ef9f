"""The launcher's side of waiting and liveness: whose last log line is quoted, the dependency wait the
launcher sets, waiting files, start() with and without allow_waiting, the liveness check of HTTP processes,
the hang bound's setting, and what `tessera status` shows of what the supervisor recorded."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import shutil
import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

from cli import launcher
from cli import main as cli_main
from cli import status as cli_status
from cli.launcher import DEFAULT_DEPENDENCY_WAIT_SECONDS, ProcessHandle, ServiceSet, StartupError, check_liveness
from cli.supervisor import CREDENTIALS_RELOAD_SECONDS, CheckingCredentials, RestartPolicy, hang_seconds_from
from shared.identity.certs import cert_path, key_path, private_dir


class FakePopen:
    """A started service that writes `lines` to its log (and, if `waiting`, a waiting file) and keeps running
    until it is ended."""

    lines: list[str] = []
    waiting: str | None = None
    next_pid = 40000

    def __init__(self, program, cwd, env, stdout, **kwargs) -> None:
        FakePopen.next_pid += 1
        self.pid, self.env, self.returncode = FakePopen.next_pid, env, None
        stdout.write("".join(f"{line}\n" for line in self.lines).encode())
        stdout.flush()
        name = program[-1].removeprefix("services.")
        if self.waiting is not None:
            ready = Path(env[f"TESSERA_{name.upper()}_READY_FILE"])
            ready.with_name("waiting.json").write_text(json.dumps(
                {"pid": self.pid, "problem": self.waiting, "since": time.time(), "beat": time.time()}))

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout=None) -> int:
        return self.returncode

    def kill(self) -> None:
        self.returncode = -9


@pytest.fixture
def fake_services(monkeypatch, tmp_path):
    """A ServiceSet whose processes are FakePopen, with no certificates needed."""
    monkeypatch.setattr(launcher.subprocess, "Popen", FakePopen)
    monkeypatch.setattr(launcher, "cli_credentials", lambda directory: None)
    monkeypatch.setattr(launcher, "export_identity", lambda *args: None)
    monkeypatch.setattr(FakePopen, "lines", [])
    monkeypatch.setattr(FakePopen, "waiting", None)

    def end(handle: ProcessHandle, signum: int) -> None:  # never a real pid
        handle.process.returncode = -signum

    monkeypatch.setattr(ProcessHandle, "send", end)
    services = ServiceSet(tmp_path / "certs", tmp_path / "run", names=("host",), ephemeral_ports=True)
    for folder in (services.run_dir, services.handles["host"].log_path.parent,
                   services.handles["host"].ready_file.parent):
        private_dir(folder)
    return services


def test_the_last_log_line_after_a_restart_is_the_new_process_s_only(fake_services):
    host = fake_services.handles["host"]
    FakePopen.lines = ["serving", "tessera-host: error: the first process's cause"]
    fake_services._spawn(host, truncate_log=True)
    assert host.last_log_line() == "tessera-host: error: the first process's cause"
    host.process.returncode = -9
    FakePopen.lines = []
    fake_services.restart("host")
    assert host.last_log_line() == "", "the new process said nothing: not the old one's words"
    with open(host.log_path, "a") as log_file:
        log_file.write("tessera-host: error: the second process's cause\n\n")
    assert host.last_log_line() == "tessera-host: error: the second process's cause"
    assert "the first process's cause" in host.log_path.read_text(), "the log keeps the earlier crash"


def test_the_launcher_lets_services_wait_for_their_database_unless_the_operator_says(fake_services, monkeypatch):
    host = fake_services.handles["host"]
    assert fake_services._env(host)["TESSERA_HOST_DEPENDENCY_WAIT_SECONDS"] == str(DEFAULT_DEPENDENCY_WAIT_SECONDS)
    monkeypatch.setenv("TESSERA_HOST_DEPENDENCY_WAIT_SECONDS", "0")
    assert fake_services._env(host)["TESSERA_HOST_DEPENDENCY_WAIT_SECONDS"] == "0"
    fake_services.extra_env["TESSERA_HOST_DEPENDENCY_WAIT_SECONDS"] = "45"
    assert fake_services._env(host)["TESSERA_HOST_DEPENDENCY_WAIT_SECONDS"] == "45"


def test_the_mcp_front_links_people_to_web_on_the_name_its_cookie_is_set_for(tmp_path, monkeypatch):
    monkeypatch.delenv("TESSERA_MCP_WEB_URL", raising=False)
    services = ServiceSet(tmp_path / "certs", tmp_path / "run", names=("web", "mcp"), ephemeral_ports=True)
    services.handles["web"].port = 18080
    assert services._env(services.handles["mcp"])["TESSERA_MCP_WEB_URL"] == "http://localhost:18080"
    assert launcher.web_url("127.0.0.1:18080") == launcher.web_url("[::1]:18080") == "http://localhost:18080"
    assert launcher.web_url("tessera.example.com:443") == "http://tessera.example.com:443"
    monkeypatch.setenv("TESSERA_MCP_WEB_URL", "https://tessera.example.com")  # the operator's own wins
    assert services._env(services.handles["mcp"])["TESSERA_MCP_WEB_URL"] == "https://tessera.example.com"


def test_a_waiting_file_counts_only_while_it_beats_and_only_for_the_current_process(tmp_path):
    handle = ProcessHandle("host", 1, tmp_path / "host.log", tmp_path / "ready.json", pid=321)
    assert handle.waiting() is None, "no file"

    def write(**fields) -> None:
        handle.waiting_file.write_text(json.dumps({"pid": 321, "problem": "connection refused", "since": 100.0,
                                                   "beat": 110.0, **fields}))

    write()
    found = handle.waiting(now=112.0)
    assert found is not None and (found.problem, found.since, found.beat) == ("connection refused", 100.0, 110.0)
    assert handle.waiting(now=110.0 + launcher.WAITING_STALE_SECONDS + 0.1) is None, "its beats stopped"
    write(pid=322)
    assert handle.waiting(now=112.0) is None, "another process's"
    handle.waiting_file.write_text('{"pid": 321, "problem"')
    assert handle.waiting(now=112.0) is None, "half written"


def test_a_new_process_starts_without_its_predecessor_s_waiting_file(fake_services):
    host = fake_services.handles["host"]
    host.waiting_file.write_text(json.dumps({"pid": 1, "problem": "old", "since": 0, "beat": time.time()}))
    fake_services._spawn(host, truncate_log=True)
    assert not host.waiting_file.exists()


def test_start_counts_a_waiting_process_as_started_only_when_allowed(fake_services):
    FakePopen.waiting = "TESSERA_HOST_DATABASE_URL: connection refused"
    with pytest.raises(StartupError, match=r"start-up timeout: host \(waiting: TESSERA_HOST_DATABASE_URL: "
                                           r"connection refused\)"):
        fake_services.start(timeout=0.2)
    host = fake_services.handles["host"]
    assert host.process.returncode is not None, "a failed start stops the set"
    fake_services.start(allow_waiting=True)
    assert (host.state, host.reason) == ("waiting", "TESSERA_HOST_DATABASE_URL: connection refused")
    recorded = fake_services.state()["processes"][0]
    assert (recorded["state"], recorded["reason"]) == ("waiting", "TESSERA_HOST_DATABASE_URL: connection refused")
    fake_services.stop()


class _Replies(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(503)  # alive, not ready
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_an_http_process_is_alive_when_it_answers_at_all(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Replies)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        web = ProcessHandle("web", server.server_address[1], tmp_path / "web.log", tmp_path / "ready.json")
        assert check_liveness(web, None, timeout=5) is None
    finally:
        server.shutdown()
        server.server_close()
    assert check_liveness(web, None, timeout=5), "nothing listens: the reason why"


def test_a_grpc_process_is_not_checked_without_credentials(tmp_path):
    host = ProcessHandle("host", 1, tmp_path / "host.log", tmp_path / "ready.json")
    assert check_liveness(host, None) is None


def test_the_hang_bound_comes_from_the_environment_and_is_checked():
    assert hang_seconds_from({}) == RestartPolicy().hang_seconds == 20
    assert hang_seconds_from({"TESSERA_HANG_SECONDS": " 45.5 "}) == 45.5
    assert hang_seconds_from({"TESSERA_HANG_SECONDS": "4"}) == 4  # one check and its deadline
    for wrong in ("soon", "0", "-3", "nan", "inf", "1"):  # 1 s: one slow answer would be a "hang"
        with pytest.raises(ValueError, match="TESSERA_HANG_SECONDS must be a number of seconds, at least 4"):
            hang_seconds_from({"TESSERA_HANG_SECONDS": wrong})


def test_up_refuses_an_unusable_hang_bound_before_starting_anything(monkeypatch, capsys):
    monkeypatch.setenv("TESSERA_HANG_SECONDS", "soon")
    monkeypatch.setattr(cli_main, "ensure_certs", lambda directory: pytest.fail("started"))
    assert cli_main.main(["up"]) == 2
    assert "TESSERA_HANG_SECONDS must be a number of seconds, at least 4" in capsys.readouterr().err


def test_status_shows_what_the_supervisor_recorded(monkeypatch, tmp_path):
    monkeypatch.setattr(cli_status, "check_health", lambda handle, credentials: "UNREACHABLE (UNAVAILABLE)")
    handle = ProcessHandle("host", 1, tmp_path / "host.log", Path())

    def shown(state: str, alive: bool = True, reason: str = "why") -> str:
        return cli_status._health({"state": state, "reason": reason}, handle, None, alive)

    assert shown("waiting", reason="connection refused") == "WAITING (connection refused)"
    assert shown("failed", alive=False) == "FAILED (why)"
    assert shown("hung") == "HUNG, being restarted (why)"
    assert shown("restarting", alive=False) == "RESTARTING (why)"
    assert shown("starting") == "STARTING"
    assert shown("serving") == "UNREACHABLE (UNAVAILABLE)", "a serving one that does not answer says so"
    assert shown("serving", alive=False) == "NOT RUNNING"
    assert cli_status._health({}, handle, None, True) == "UNREACHABLE (UNAVAILABLE)", "a set recorded before states"


def _serve_tls(listener: socket.socket, context: ssl.SSLContext | None, stop: threading.Event) -> None:
    """Accept connections: with `context`, complete a TLS handshake on each; without, never say a word."""
    held = []
    listener.settimeout(0.1)
    while not stop.is_set():
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:  # the test closed the listener
            break
        held.append(connection)
        if context is not None:
            try:
                held.append(context.wrap_socket(connection, server_side=True))
            except (OSError, ssl.SSLError):
                pass
    for connection in held:
        connection.close()


@pytest.fixture
def listener():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    stop = threading.Event()
    yield sock, stop
    stop.set()
    sock.close()


def test_a_grpc_process_that_never_answers_is_silent(listener, credentials, tmp_path):
    sock, stop = listener
    threading.Thread(target=_serve_tls, args=(sock, None, stop), daemon=True).start()  # as a stopped process
    host = ProcessHandle("host", sock.getsockname()[1], tmp_path / "host.log", tmp_path / "ready.json")
    why = check_liveness(host, credentials("cli"), timeout=1)
    assert why is not None and "DEADLINE_EXCEEDED" in why


def test_a_grpc_process_that_refuses_the_handshake_answered(listener, credentials, other_ca_dir, tmp_path):
    """A live process showing a certificate of another deployment (or refusing the CLI's): not hung, so not
    ended; whatever is wrong with the certificates a restart would not mend."""
    sock, stop = listener
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path(other_ca_dir, "host"), key_path(other_ca_dir, "host"))
    context.set_alpn_protocols(["h2"])
    threading.Thread(target=_serve_tls, args=(sock, context, stop), daemon=True).start()
    host = ProcessHandle("host", sock.getsockname()[1], tmp_path / "host.log", tmp_path / "ready.json")
    assert check_liveness(host, credentials("cli"), timeout=5) is None


def test_a_grpc_process_with_nothing_listening_is_silent(credentials, tmp_path):
    (port,) = launcher.free_ports(1)
    host = ProcessHandle("host", port, tmp_path / "host.log", tmp_path / "ready.json")
    assert check_liveness(host, credentials("cli"), timeout=5) == "UNREACHABLE (UNAVAILABLE)"


def test_the_liveness_checks_certificate_is_read_again_and_its_absence_or_expiry_said_once(cert_dir, tmp_path):
    """Without a usable CLI certificate gRPC hang checks are off, said once; a certificate put back (or renewed)
    is used at the next reading, and that is said too."""
    directory = tmp_path / "certs"
    shutil.copytree(cert_dir, directory)
    certificate = cert_path(directory, "cli")
    kept = certificate.read_bytes()
    now = [0.0]
    wall = [dt.datetime.now(dt.UTC)]
    lines: list[str] = []
    credentials = CheckingCredentials(directory, lines.append, clock=lambda: now[0], wall=lambda: wall[0])
    assert credentials.current() is not None and lines == []
    certificate.unlink()
    assert credentials.current() is not None, "read again only after CREDENTIALS_RELOAD_SECONDS"
    for _ in range(3):
        now[0] += CREDENTIALS_RELOAD_SECONDS
        assert credentials.current() is None
    assert len(lines) == 1 and "cannot check the gRPC services' liveness" in lines[0], lines
    certificate.write_bytes(kept)
    now[0] += CREDENTIALS_RELOAD_SECONDS
    assert credentials.current() is not None
    assert lines[-1].startswith("tessera: the CLI's certificate is usable again"), lines
    wall[0] += dt.timedelta(days=3650)  # long past any certificate `tessera certs` issues
    now[0] += CREDENTIALS_RELOAD_SECONDS
    assert credentials.current() is None
    assert "the CLI's certificate expired at" in lines[-1] and len(lines) == 3, lines
