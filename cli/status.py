"""`tessera status`: the set `tessera up` started, each process's health as records, printed as tables or as
one JSON document (`--json`) from the same records."""

from __future__ import annotations

import os
import time
from pathlib import Path

import grpc

from cli.launcher import ProcessHandle, check_health, cli_credentials
from cli.output import print_json, table
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import SERVICES, invoke
from tessera.capabilities.v1.capabilities_pb2 import (
    TOOL_SERVER_ISOLATION_NOT_STARTED,
    TOOL_SERVER_ISOLATION_UNBOXED,
    ToolServerIsolation,
)


def status_records(recorded: dict) -> dict:
    """What `status` reports of the recorded set: each process, and how the broker confines its tool servers
    (`tool_servers` is None when the broker could not say, with `tool_servers_unknown` saying why)."""
    credentials = cli_credentials(Path(recorded["cert_dir"]))
    services = [_process(entry, credentials) for entry in recorded["processes"]]
    report = {"healthy": all(s["health"] == "SERVING" for s in services), "services": services,
              "tool_servers": [], "tool_servers_unknown": ""}
    broker = next((e for e in recorded["processes"] if e["name"] == "capabilities"), None)
    if broker is not None and pid_alive(broker["pid"]):
        try:
            report["tool_servers"] = tool_servers(broker["address"], credentials)
        except grpc.RpcError as exc:
            report |= {"tool_servers": None, "tool_servers_unknown": f"the broker answered {exc.code().name}"}
    return report


def _process(entry: dict, credentials) -> dict:
    _, port = entry["address"].rsplit(":", 1)
    handle = ProcessHandle(entry["name"], int(port), Path(entry["log"]), Path())
    alive = pid_alive(entry["pid"])
    health = _health(entry, handle, credentials, alive)
    uptime = round(time.time() - entry["started_at"]) if alive and entry.get("started_at") else None
    return {"service": entry["name"], "address": entry["address"], "pid": entry["pid"], "health": health,
            "uptime_seconds": uptime, "restarts": entry.get("restarts", 0),
            "version": _version(handle, credentials) if health == "SERVING" else ""}


def print_status(report: dict, as_json: bool) -> None:
    if as_json:
        print_json(report)
        return
    print(table([[s["service"], s["address"], str(s["pid"]), s["health"],
                  "-" if s["uptime_seconds"] is None else duration(s["uptime_seconds"]), str(s["restarts"]),
                  s["version"]] for s in report["services"]],
                ["service", "address", "pid", "health", "uptime", "restarts", "version"]))
    if report["tool_servers"] is None:
        print(f"tool servers: unknown ({report['tool_servers_unknown']})")
    elif report["tool_servers"]:
        print()
        print_tool_servers(report["tool_servers"])


def _health(entry: dict, handle: ProcessHandle, credentials, alive: bool) -> str:
    """What `status` shows of one process: its health, or what the supervisor recorded when that says more
    (failed, hung and being restarted, restarting after a crash, waiting for its database, starting)."""
    state, reason = entry.get("state", ""), entry.get("reason", "")
    if state == "failed":
        return f"FAILED ({reason})"
    if state == "hung":
        return f"HUNG, being restarted ({reason})"
    if state == "restarting":
        return f"RESTARTING ({reason})"
    if not alive:
        return "NOT RUNNING"
    health = check_health(handle, credentials)
    if health != "SERVING" and state == "waiting":
        return f"WAITING ({reason})"
    if health.startswith("UNREACHABLE") and state == "starting":
        return "STARTING"
    return health


def tool_servers(address: str, credentials) -> list[dict]:
    """How the broker at `address` confines each tool server."""
    with sync_channel(address, credentials, "capabilities") as channel:
        servers = invoke(channel, "capabilities", "GetInfo", timeout=2).tool_servers
    return [{"name": s.name, "isolation": tool_server_isolation(s.isolation), "detail": s.detail} for s in servers]


def print_tool_servers(servers: list[dict]) -> None:
    """The tool servers' table; every unboxed or unstartable one called out beneath it."""
    print(table([[s["name"], s["isolation"], s["detail"]] for s in servers], ["tool server", "isolation", "detail"]))
    for server in servers:
        if server["isolation"] == _ISOLATION_WORDS[TOOL_SERVER_ISOLATION_UNBOXED]:
            print(f"warning: tool server {server['name']} runs unboxed: it can read whatever the broker's user can")
        elif server["isolation"] == _ISOLATION_WORDS[TOOL_SERVER_ISOLATION_NOT_STARTED]:
            print(f"warning: tool server {server['name']} is not started: {server['detail']}")


def tool_server_isolation(value: int) -> str:
    """`boxed`, `UNBOXED`, `NOT STARTED`, `remote`: the two that need a person's attention in capitals."""
    return _ISOLATION_WORDS.get(value) or ToolServerIsolation.Name(value).removeprefix(
        "TOOL_SERVER_ISOLATION_").lower()


_ISOLATION_WORDS = {TOOL_SERVER_ISOLATION_UNBOXED: "UNBOXED", TOOL_SERVER_ISOLATION_NOT_STARTED: "NOT STARTED"}


def duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _version(handle: ProcessHandle, credentials) -> str:
    if handle.name not in SERVICES:
        return ""
    with sync_channel(handle.address, credentials, handle.name) as channel:
        try:
            return invoke(channel, handle.name, "GetInfo", timeout=2).info.version
        except grpc.RpcError as exc:
            return f"? ({exc.code().name})"
