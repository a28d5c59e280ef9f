"""Drift caught wherever it happens (§8): a tool server that comes back changed after a crash, or announces
a change while it runs (notifications/tools/list_changed), is denied in the session already running, with no
new session and before any call reaches it; an argument the pinned schema does not declare never reaches the
server, though that schema never said `additionalProperties: false`; a tool list too large to judge is denied
whole, with the reason, and does not hang the broker.

Every broker here runs our drift server (tests/fixtures/mcp_drift_server.py) pinned as reviewed by
`tessera policy pin` (the `world` fixture); its DRIFT_LOG shows what reached it."""

from __future__ import annotations

import contextlib
import json

import grpc
import pytest
import yaml

from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke_stream
from shared.rpc.errors import error_details
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.capabilities.integration.test_broker import Broker
from tests.capabilities.integration.test_tool_gate import _broker, alice, call, world  # noqa: F401  (fixtures)
from tests.fixtures.waiting import wait_until

AVAILABLE, DRIFTED, DENIED = cap.TOOL_AVAILABILITY_AVAILABLE, cap.TOOL_AVAILABILITY_DRIFTED, \
    cap.TOOL_AVAILABILITY_DENIED
DRIFT_TOOLS = {"drift.lookup", "drift.slow", "drift.crash", "drift.update"}


@contextlib.contextmanager
def _serving(world, cert_dir, running_set, credentials, run_dir, servers: dict):  # noqa: F811
    """A broker whose tool policy is `servers` (each a copy of the pinned drift server, under its env)."""
    policy = run_dir / "tools.yaml"
    run_dir.mkdir(parents=True, exist_ok=True)
    policy.write_text(yaml.safe_dump({"version": 1, "servers": servers}))
    processes = _broker(cert_dir, run_dir / "broker", running_set, policy)
    client = Broker(processes.handles["capabilities"].address, credentials)
    try:
        yield client
    finally:
        client.close()
        processes.stop()


def _drift_server(world, **env) -> dict:  # noqa: F811
    """The drift server as pinned by a person (pins unchanged), run with `env` added."""
    server = yaml.safe_load(world["policy"].read_text())["servers"]["drift"]
    server["env"].update(env)
    return server


def _drift_file(world, name: str):  # noqa: F811
    """A file the drift server is told about: in its data folder, the only one its box lets it write."""
    return world["effects"].parent / name


def _server_log(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _lookups(path) -> list[tuple[str, dict]]:
    """Every `lookup` call that reached a drift server: (reviewed/changed, its arguments)."""
    return [(e["lookup"], e["arguments"]) for e in _server_log(path) if e["request"] == "lookup"]


def _tools(client, actor, session: str) -> dict[str, tuple[int, str]]:
    listed = client("agent", "ListTools", cap.ListToolsRequest(actor=actor, session_id=session), timeout=60)
    return {t.tool_id: (t.availability, t.reason) for t in listed.tools}


def _audited(client, actor, kind: str) -> list[dict]:
    with sync_channel(client.address, client.credentials("cli"), "capabilities") as channel:
        records = [json.loads(r.record_json) for r in invoke_stream(
            channel, "capabilities", "ExportAudit", cap.ExportAuditRequest(actor=actor), timeout=30)]
    return [r["detail"] for r in records if r["kind"] == kind]


def _drift_alerts(client, actor) -> list[dict]:
    return _audited(client, actor, "tool-drift")


def _refused_as_drift(reply) -> bool:
    return reply.WhichOneof("outcome") == "unavailable" and \
        (reply.unavailable.availability, reply.unavailable.reason) == (DRIFTED, "DRIFT")


def test_a_server_that_restarts_changed_is_denied_in_the_running_session(world, cert_dir, running_set,  # noqa: F811
                                                                         credentials, alice, tmp_path):  # noqa: F811
    changed, log = _drift_file(world, "restarted-changed"), _drift_file(world, "restarted.jsonl")
    drift = _drift_server(world, DRIFT_CHANGED_IF=str(changed), DRIFT_WIDEN="1", DRIFT_LOG=str(log))
    with _serving(world, cert_dir, running_set, credentials, tmp_path, {"drift": drift}) as client:
        session = "ses_restarted"
        assert call(client, alice, session, "drift.lookup", {"term": "before"}).WhichOneof("outcome") == "content"
        changed.touch()  # from its next start the server offers `lookup` with other words and a `scope` parameter
        assert call(client, alice, session, "drift.crash", {}).unavailable.reason == "SERVER_FAILED"
        # The same session, no new survey: the reconnect listed the restarted server before anything else.
        assert _refused_as_drift(call(client, alice, session, "drift.lookup", {"term": "after"}))
        assert _refused_as_drift(call(client, alice, session, "drift.lookup", {"term": "after", "scope": "all"}))
        tools = _tools(client, alice, session)
        assert tools["drift.lookup"] == (DRIFTED, "DRIFT")
        # Its unchanged reads stay; its mutation is refused with it (the server is not the one reviewed).
        assert all(tools[t] == (AVAILABLE, "") for t in DRIFT_TOOLS - {"drift.lookup", "drift.update"})
        assert tools["drift.update"] == (DRIFTED, "SERVER_DRIFTED")
        assert wait_until(lambda: _drift_alerts(client, alice), 60, what="a drift alert") == [
            {"tool_id": "drift.lookup", "changed": "description and input schema"}]
        # Both refusals are in the audit trail: the one refused as it was about to go out, and the next.
        refusals = [r for r in _audited(client, alice, "tool-refused") if r["tool_id"] == "drift.lookup"]
        assert [r["reason"] for r in refusals] == ["DRIFT", "DRIFT"]

    entries = _server_log(log)
    restarted = [e for e in entries if e["start"] != entries[0]["start"]]
    assert restarted and restarted[0] == {**restarted[0], "request": "tools/list", "lookup": "changed"}
    # The changed `lookup` was never called, and nothing ever received the widened schema's `scope`.
    assert _lookups(log) == [("reviewed", {"term": "before"})]


def test_an_announced_change_is_denied_in_the_running_session(world, cert_dir, running_set, credentials,  # noqa: F811
                                                              alice, tmp_path):  # noqa: F811
    switch, log = _drift_file(world, "announced-switch"), _drift_file(world, "announced.jsonl")
    drift = _drift_server(world, DRIFT_SWITCH=str(switch), DRIFT_NOTIFY="1", DRIFT_WIDEN="1", DRIFT_LOG=str(log))
    with _serving(world, cert_dir, running_set, credentials, tmp_path, {"drift": drift}) as client:
        session = "ses_announced"
        assert call(client, alice, session, "drift.lookup", {"term": "before"}).WhichOneof("outcome") == "content"
        switch.touch()  # the server changes `lookup` by itself and announces it; nobody asks it anything
        # Listing the session's tools never lists the server again: only the announcement can change this.
        wait_until(lambda: _tools(client, alice, session)["drift.lookup"] == (DRIFTED, "DRIFT"), 60,
                   what="the announced change denied in the running session",
                   detail=lambda: _tools(client, alice, session)["drift.lookup"])
        assert _refused_as_drift(call(client, alice, session, "drift.lookup", {"term": "after", "scope": "all"}))
        assert _tools(client, alice, session)["drift.update"] == (DRIFTED, "SERVER_DRIFTED")
        assert _tools(client, alice, session)["drift.slow"] == (AVAILABLE, "")

    entries = _server_log(log)
    assert {e["start"] for e in entries} == {entries[0]["start"]}  # one server process: no restart involved
    announced = [e["request"] for e in entries].index("tools/list_changed")
    assert {"request": "tools/list", "lookup": "changed"}.items() <= entries[announced + 1].items()
    assert _lookups(log) == [("reviewed", {"term": "before"})]


def test_an_argument_the_pinned_schema_does_not_declare_never_reaches_the_server(world, cert_dir,  # noqa: F811
                                                                                   running_set, credentials,
                                                                                   alice, tmp_path):  # noqa: F811
    pinned = yaml.safe_load(world["policy"].read_text())["servers"]["drift"]["tools"]["lookup"]["pin"]
    assert "additionalProperties" not in json.dumps(pinned["input_schema"])  # as the server's SDK wrote it
    log = _drift_file(world, "unchanged.jsonl")
    drift = _drift_server(world, DRIFT_LOG=str(log))
    with _serving(world, cert_dir, running_set, credentials, tmp_path, {"drift": drift}) as client:
        with pytest.raises(grpc.RpcError) as error:
            call(client, alice, "ses_args", "drift.lookup", {"term": "lamps", "scope": "all"})
        details = error_details(error.value)
        assert (details.code, details.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "ARGUMENTS_INVALID")
        assert details.message.startswith("/scope: ")
        assert call(client, alice, "ses_args", "drift.lookup", {"term": "lamps"}).WhichOneof("outcome") == "content"
    assert _lookups(log) == [("reviewed", {"term": "lamps"})]


def test_a_tool_list_too_large_to_judge_is_denied_with_the_reason(world, cert_dir, running_set, credentials,  # noqa: F811
                                                                  alice, tmp_path):  # noqa: F811
    from services.capabilities.mcp_gate import MAX_DESCRIPTION_CHARS, MAX_TOOLS

    servers = {"crowded": _drift_server(world, DRIFT_MANY_TOOLS=str(MAX_TOOLS)),  # plus its own six tools
               "wordy": _drift_server(world, DRIFT_LONG_DESCRIPTION=str(MAX_DESCRIPTION_CHARS + 1)),
               "drift": _drift_server(world)}
    with _serving(world, cert_dir, running_set, credentials, tmp_path, servers) as client:
        tools = _tools(client, alice, "ses_bounds")
        assert {tools[f"crowded.{t.split('.')[1]}"] for t in DRIFT_TOOLS} == {(DENIED, "TOOL_LIST_TOO_LARGE")}
        assert {tools[f"wordy.{t.split('.')[1]}"] for t in DRIFT_TOOLS} == {(DENIED, "DESCRIPTION_TOO_LONG")}
        assert {tools[t] for t in DRIFT_TOOLS} == {(AVAILABLE, "")}  # a server within bounds is unaffected
        refused = call(client, alice, "ses_bounds", "crowded.lookup", {"term": "x"})
        assert (refused.unavailable.availability, refused.unavailable.reason) == (DENIED, "TOOL_LIST_TOO_LARGE")
        assert "TOOL_LIST_TOO_LARGE" in refused.unavailable.message
