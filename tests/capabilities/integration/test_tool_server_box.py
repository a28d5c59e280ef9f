"""Outside tool servers run boxed (§8): a compromised stdio server, started exactly as the broker starts
one (its environment, its working directory, its box), tries what an attacker would next to a running
set: read every key and database, read other processes' environments, reach every service port, the
database server and unix sockets. The same probe unboxed (`sandbox: none`) reads and reaches them, so the
probe itself is not what fails."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest

from cli.status import print_tool_servers, tool_servers
from services.capabilities import sandbox
from services.capabilities.mcp_gate import Listing, ServerConnection, ToolCallFailed, result_text
from services.capabilities.tool_policy import ToolPolicy, ToolPolicyFile
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke, invoke_stream
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.capabilities.integration.test_broker import Broker
from tests.capabilities.integration.test_tool_gate import _broker
from tests.fixtures.waiting import wait_until

pytestmark = pytest.mark.skipif(bool(sandbox.unavailable()), reason=f"no box here: {sandbox.unavailable()}")

PROBE_MODULE = "tests.fixtures.mcp_probe_server"
# What python itself or bubblewrap set in a process's environment, beside the policy's variables.
SET_BY_THE_RUNTIME = {"PWD", "LC_CTYPE"}


def _policy(data: Path, boxed: bool) -> ToolPolicy:
    server = {"transport": "stdio", "command": ["{python}", "-m", PROBE_MODULE],
              "env": {"PROBE_SETTING": "declared"},
              "credential_env": {"PROBE_TOKEN": "TESSERA_CAPABILITIES_PROBE_TOKEN"},
              "sandbox": {"read": ["{repo}/tests"], "data": str(data)} if boxed else "none",
              "tools": {"probe": {"risk": "read", "description": "Try what a compromised server would."}}}
    return ToolPolicy(ToolPolicyFile.model_validate({"version": 1, "servers": {"probe": server}}), "test", data)


def _probe(policy: ToolPolicy, log_dir: Path, arguments: dict) -> dict:
    """One `probe` call through the broker's own connection code (so through its launch and its box);
    the connection is closed before this returns."""
    async def run() -> dict:
        connection = ServerConnection("probe", policy.policy.servers["probe"], policy, log_dir,
                                      lambda tools, complete, number: Listing({}, []))
        try:
            result = await connection.call("probe", arguments, lambda: None)
        finally:
            await connection.close()
        return json.loads(result_text(result))
    return asyncio.run(run())


def _servers_running() -> list[int]:
    """Host pids of probe servers (boxed or not) still alive."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if PROBE_MODULE.encode() in cmdline:
            found.append(int(pid))
    return found


def _secret_files(cert_dir: Path, service_env: dict[str, str]) -> list[str]:
    """Every key and certificate file, every service database and everything under the set's var folder."""
    files = [p for p in cert_dir.rglob("*") if p.is_file()]
    files += [p for p in Path(service_env["TESSERA_VAR_DIR"]).rglob("*") if p.is_file()]
    files += [Path(url.removeprefix("sqlite:///")) for name, url in service_env.items()
              if name.endswith(("_URL", "_STORE_URL")) and url.startswith("sqlite:///")]
    return sorted({str(p) for p in files})


@pytest.fixture
def listeners(tmp_path_factory):
    """A unix socket where the bridge keeps its sockets, and an abstract one: the box must reach neither."""
    folder = Path("/tmp") / f"tessera-spiffe-probe-{os.getpid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    path_socket, abstract = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    path_socket.bind(str(folder / "1.sock"))
    abstract.bind(f"\0tessera-probe-{os.getpid()}")
    for listener in (path_socket, abstract):
        listener.listen()
    yield [f"unix:{folder / '1.sock'}", f"unix:@tessera-probe-{os.getpid()}"]
    for listener in (path_socket, abstract):
        listener.close()
    (folder / "1.sock").unlink()
    folder.rmdir()


@pytest.fixture
def targets(running_set, cert_dir, service_env, listeners) -> dict:
    pids = [h.pid for h in running_set.handles.values()]
    return {"read": _secret_files(cert_dir, service_env) + [f"/proc/{pid}/environ" for pid in pids],
            "connect": [h.address for h in running_set.handles.values()] + ["127.0.0.1:5432"] + listeners}


@pytest.fixture
def broker_secrets(monkeypatch):
    """A credential of the probe's (declared) and one of another server's (not): both in the broker's
    environment, as on a real broker."""
    monkeypatch.setenv("TESSERA_CAPABILITIES_PROBE_TOKEN", "probe-token")
    monkeypatch.setenv("TESSERA_CAPABILITIES_OTHER_TOKEN", "another-servers-token")


def test_a_boxed_server_reads_no_key_database_or_environment_and_reaches_no_service(
        tmp_path, targets, broker_secrets):
    data = tmp_path / "probe-data"
    seen = _probe(_policy(data, boxed=True), tmp_path, {**targets, "write": [str(data), str(Path.cwd() / "tests")]})

    assert seen["read"] and all(outcome != "READ" for outcome in seen["read"].values()), seen["read"]
    assert all(outcome != "CONNECTED" for outcome in seen["connect"].values()), seen["connect"]
    # Exactly its declared variables: no broker secret, no other server's credential, not even PATH or HOME.
    assert {k: v for k, v in seen["env"].items() if k not in SET_BY_THE_RUNTIME} == \
        {"PROBE_SETTING": "declared", "PROBE_TOKEN": "probe-token"}
    # Its own PID namespace: the only other process it sees is the box's pid 1, which holds no environment.
    assert max(seen["pids"]) < 10 and set(seen["environments"].values()) <= {""}, seen["environments"]
    assert seen["bridge_sockets"] == []
    assert seen["cwd"] == str(data) and (data.stat().st_mode & 0o777) == 0o700
    assert seen["write"] == {str(data): "WRITTEN", str(Path.cwd() / "tests"): "OSError"}
    assert seen["keyring"] in ("EPERM", "not tried")  # the seccomp filter
    wait_until(lambda: not _servers_running(), 30, what="the boxed server ending with its connection")


def test_the_same_probe_unboxed_reads_and_reaches_them(tmp_path, targets, broker_secrets):
    """The control: the probe finds what the box hides when its policy says `sandbox: none`."""
    seen = _probe(_policy(tmp_path / "probe-data", boxed=False), tmp_path, {**targets, "write": []})
    assert any(outcome == "READ" for path, outcome in seen["read"].items() if path.endswith(".key"))
    assert any(outcome == "CONNECTED" for outcome in seen["connect"].values())
    assert "PATH" in seen["env"] and max(seen["pids"]) > 10 and seen["keyring"] != "EPERM"
    wait_until(lambda: not _servers_running(), 30, what="the unboxed server ending with its connection")


def test_a_server_that_must_be_boxed_is_not_started_where_no_box_can_be_made(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    sandbox.unavailable.cache_clear()
    try:
        with pytest.raises(ToolCallFailed) as refused:
            _probe(_policy(tmp_path / "probe-data", boxed=True), tmp_path, {"read": [], "connect": [], "write": []})
    finally:
        sandbox.unavailable.cache_clear()
    assert refused.value.reason == "SANDBOX_UNAVAILABLE" and not refused.value.sent
    assert "bubblewrap (bwrap) is not installed" in str(refused.value)
    assert not _servers_running()


def test_status_and_the_audit_show_every_unboxed_server(tmp_path, cert_dir, running_set, credentials, capsys):
    time_server = {"transport": "stdio", "command": ["{python}", "-m", "mcp_server_time"],
                   "tools": {"get_current_time": {"risk": "read", "description": "The time."}}}
    policy = tmp_path / "tools.yaml"
    policy.write_text(json.dumps({"version": 1, "servers": {  # JSON is YAML
        "boxed": time_server, "loose": {**time_server, "sandbox": "none"}}}))
    processes = _broker(cert_dir, tmp_path / "broker", running_set, policy)
    address = processes.handles["capabilities"].address
    client = Broker(address, credentials)
    operator = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "ops", "acme")
    try:
        with sync_channel(address, credentials("cli"), "capabilities") as channel:
            info = invoke(channel, "capabilities", "GetInfo", cap.GetInfoRequest(), timeout=30)
            assert [(s.name, s.isolation) for s in info.tool_servers] == [
                ("boxed", cap.TOOL_SERVER_ISOLATION_BOXED), ("loose", cap.TOOL_SERVER_ISOLATION_UNBOXED)]
            client("agent", "ListTools", cap.ListToolsRequest(actor=operator, session_id="ses_box"), timeout=60)
            audited = [json.loads(r.record_json) for r in invoke_stream(
                channel, "capabilities", "ExportAudit", cap.ExportAuditRequest(actor=operator), timeout=30)]
        assert [r["detail"] for r in audited if r["kind"] == "tool-server-unboxed"] == [{"server": "loose"}]
        print_tool_servers(tool_servers(address, credentials("cli")))
        shown = capsys.readouterr().out
        assert "boxed" in shown and "warning: tool server loose runs unboxed" in shown
        assert "tool server boxed runs unboxed" not in shown
    finally:
        client.close()
        processes.stop()
