"""`tessera up` / `tessera status` and process lifecycle, as a person runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest

from shared.identity.principals import PROCESS_NAMES
from shared.paths import REPO_ROOT
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tests.fixtures.waiting import wait_until

TESSERA = [sys.executable, "-m", "cli"]


def _env(cert_dir: Path, var_dir: Path) -> dict[str, str]:
    return {**os.environ, "TESSERA_CERT_DIR": str(cert_dir), "TESSERA_VAR_DIR": str(var_dir)}


def _wait_for_line(process: subprocess.Popen, needle: str, timeout: float = 120) -> list[str]:
    """The output up to the first line holding `needle`. Read on a thread: a blocked readline cannot time out."""
    seen: list[str] = []

    def read() -> None:
        for line in process.stdout:
            seen.append(line.rstrip())
            if needle in line:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)  # ends at the line, or at the end of the output
    if not any(needle in line for line in seen):
        raise AssertionError(f"never saw {needle!r} within {timeout:g} s; output: {seen}")
    return seen


def _pids(var_dir: Path) -> dict[str, int]:
    state = json.loads((var_dir / "run" / "services.json").read_text())
    return {p["name"]: p["pid"] for p in state["processes"]}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture
def up(cert_dir, tmp_path, service_env):
    var_dir = tmp_path / "var"
    process = subprocess.Popen(TESSERA + ["up", "--ephemeral-ports"], cwd=REPO_ROOT,
                               env={**_env(cert_dir, var_dir), **service_env, "TESSERA_VAR_DIR": str(var_dir)},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               stdin=subprocess.DEVNULL)
    try:
        table = _wait_for_line(process, "all services up")
        yield process, var_dir, table
    finally:
        # Stop `up` the way a person does, so it stops its children; then make sure of it.
        children = _pids(var_dir).values() if (var_dir / "run" / "services.json").exists() else []
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_up_reports_health_then_stops_everything_cleanly(up, cert_dir, signum):
    process, var_dir, table = up
    rows = [line for line in table if line.split() and line.split()[0] in PROCESS_NAMES]
    assert len(rows) == len(PROCESS_NAMES) and all(row.split()[-1] == "SERVING" for row in rows), table
    pids = _pids(var_dir)

    status = subprocess.run(TESSERA + ["status"], cwd=REPO_ROOT, env=_env(cert_dir, var_dir),
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.count("SERVING") == len(PROCESS_NAMES)

    process.send_signal(signum)
    rest = process.communicate(timeout=60)[0]
    assert process.returncode == 0, rest
    for name in pids:
        assert f"{name}" in rest
    exit_rows = rest.split("exit status", 1)[1]
    assert all(row.split()[-1] == "0" for row in exit_rows.strip().splitlines()[1:]), rest
    assert not any(_alive(pid) for pid in pids.values())
    assert not (var_dir / "run" / "services.json").exists()


def _status_rows(cert_dir: Path, var_dir: Path) -> dict[str, list[str]]:
    status = subprocess.run(TESSERA + ["status"], cwd=REPO_ROOT, env=_env(cert_dir, var_dir),
                            capture_output=True, text=True, timeout=60)
    services_table = status.stdout.split("\n\n", 1)[0]  # the tool servers' table follows after a blank line
    return {line.split()[0]: line.split() for line in services_table.splitlines()[2:] if line.strip()}


def test_up_restarts_a_crashed_service_and_keeps_the_rest(up, cert_dir):
    process, var_dir, _ = up
    before = _pids(var_dir)
    os.kill(before["compiler"], signal.SIGKILL)
    seen = _wait_for_line(process, "compiler is serving again")
    assert any("compiler exited unexpectedly (killed by SIGKILL" in line for line in seen), seen
    assert any("restarted compiler" in line for line in seen), seen
    after = _pids(var_dir)
    assert after["compiler"] != before["compiler"] and _alive(after["compiler"])
    assert {n: p for n, p in after.items() if n != "compiler"} == {
        n: p for n, p in before.items() if n != "compiler"}, "the other services kept running"
    rows = _status_rows(cert_dir, var_dir)
    # service, address, pid, health, uptime, restarts, version
    assert rows["compiler"][3] == "SERVING" and rows["compiler"][5] == "1", rows
    assert all(row[3] == "SERVING" and row[5] == "0" for name, row in rows.items() if name != "compiler"), rows
    log = (var_dir / "run" / "logs" / "compiler.log").read_text()
    assert log.count('"msg": "serving"') == 2, "the restarted process appends to the log of the one that died"


def test_a_service_that_keeps_failing_is_shown_failed_while_the_rest_serve_and_comes_back(up, cert_dir):
    process, var_dir, _ = up
    pids = _pids(var_dir)
    # Its certificate gone, the compiler cannot start again: every restart dies at once.
    certificate = var_dir / "run" / "identity" / "compiler" / "compiler.pem"
    kept, owner = certificate.read_bytes(), certificate.stat()
    certificate.unlink()
    os.kill(pids["compiler"], signal.SIGKILL)
    seen = _wait_for_line(process, "compiler keeps failing")
    failing = next(line for line in seen if "compiler keeps failing" in line)
    assert "compiler.pem" in failing, "the reason is the failing process's own last line"
    assert "the others keep serving" in failing, failing
    assert process.poll() is None, "up stopped the set over one service"
    rows = _status_rows(cert_dir, var_dir)
    assert rows["compiler"][3] == "FAILED", rows
    assert all(row[3] == "SERVING" for name, row in rows.items() if name != "compiler"), rows
    assert {n: p for n, p in _pids(var_dir).items() if n != "compiler"} == \
        {n: p for n, p in pids.items() if n != "compiler"}, "the others kept their processes"
    # The cause goes (the file back, its owner's as before): the next retry serves, without anyone's help.
    certificate.write_bytes(kept)
    os.chown(certificate, owner.st_uid, owner.st_gid)
    certificate.chmod(owner.st_mode & 0o777)
    _wait_for_line(process, "compiler is serving again", timeout=120)
    assert _status_rows(cert_dir, var_dir)["compiler"][3] == "SERVING"


def test_status_without_a_running_set(cert_dir, tmp_path):
    result = subprocess.run(TESSERA + ["status"], cwd=REPO_ROOT, env=_env(cert_dir, tmp_path),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "no running set" in result.stderr


def test_status_reports_a_dead_service(up, cert_dir):
    process, var_dir, _ = up
    pids = _pids(var_dir)
    # Stop `up` from reacting, so status sees the hole it would see after a crash.
    os.kill(process.pid, signal.SIGSTOP)
    try:
        os.kill(pids["resources"], signal.SIGKILL)
        wait_until(lambda: not _alive(pids["resources"]), 30, what="the killed resources process gone")
        result = subprocess.run(TESSERA + ["status"], cwd=REPO_ROOT, env=_env(cert_dir, var_dir),
                                capture_output=True, text=True, timeout=60)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    assert result.returncode == 1
    line = next(line for line in result.stdout.splitlines() if line.startswith("resources"))
    assert "NOT RUNNING" in line or "UNREACHABLE" in line


def test_access_logs_are_json_with_correlation_ids(running_set, credentials):
    with sync_channel(running_set.handles["host"].address, credentials("web"), "host") as channel:
        invoke(channel, "host", "GetInfo", timeout=5)
        rpc = channel.unary_unary("/tessera.host.v1.HostService/GetInfo")
        rpc(b"", timeout=5, metadata=[("x-request-id", "req-lifecycle-42")])
        with pytest.raises(grpc.RpcError):
            channel.unary_unary("/tessera.host.v1.HostService/FreezeSlice")(
                b"", timeout=5, metadata=[("x-request-id", "req-denied-43")])

    def entries_with_the_denied_call() -> list[dict] | None:
        # Only complete lines: the service may be mid-write of the next batch.
        complete = running_set.handles["host"].log_path.read_text().split("\n")[:-1]
        # gRPC's C core writes its own plain lines to the same stream (e.g. a handshake another test refused).
        entries = [json.loads(line) for line in complete if line.startswith("{")]
        return entries if any(e.get("request_id") == "req-denied-43" for e in entries) else None

    entries = wait_until(entries_with_the_denied_call, 30, what="the denied call's access-log line")
    allowed = next(e for e in entries if e.get("request_id") == "req-lifecycle-42")
    assert allowed["msg"] == "rpc" and allowed["code"] == "OK" and allowed["caller"] == "web"
    assert allowed["service"] == "host" and allowed["method"].endswith("/GetInfo")
    denied = next(e for e in entries if e.get("request_id") == "req-denied-43")
    assert denied["level"] == "warning" and denied["code"] == "PERMISSION_DENIED"


def test_up_refuses_broken_certificates_instead_of_replacing_them(cert_dir, tmp_path):
    import shutil

    certs = tmp_path / "certs"
    shutil.copytree(cert_dir, certs)
    (certs / "host.key").chmod(0o644)
    before = (certs / "ca.pem").read_bytes()
    result = subprocess.run(TESSERA + ["up", "--ephemeral-ports"], cwd=REPO_ROOT, env=_env(certs, tmp_path / "var"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "host.key" in result.stderr and "--force" in result.stderr
    assert (certs / "ca.pem").read_bytes() == before


def test_certs_creates_then_keeps_then_forces(tmp_path):
    directory = tmp_path / "fresh"

    def certs(*extra):
        return subprocess.run(TESSERA + ["certs", "--dir", str(directory), *extra], cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=60)

    assert "wrote a deployment CA" in certs().stdout
    ca = (directory / "ca.pem").read_bytes()
    assert "are valid" in certs().stdout and (directory / "ca.pem").read_bytes() == ca
    assert "wrote a deployment CA" in certs("--force").stdout and (directory / "ca.pem").read_bytes() != ca


def test_catalog_export_is_what_a2ui_tooling_loads(tmp_path):
    from a2ui.core import Catalog as A2uiCatalog

    out = tmp_path / "catalog.json"
    result = subprocess.run(TESSERA + ["catalog", "--out", str(out)], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    assert document["catalogId"].endswith("/tessera.data/v1/catalog.json")
    assert A2uiCatalog.from_json(document) is not None
