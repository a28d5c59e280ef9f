"""Two broker replicas, real processes, one PostgreSQL database and one pin file, judging a tool server that
changes while they run. Skipped, visibly, without PostgreSQL.

What the code does, and what is asserted here:
- Each replica holds its own MCP client, and with a stdio server its own server process.
- Each replica surveys (fetches the tool list, hashes it, judges it against the pins) on its own: at start
  (warm-up), when a session starts on it (that session's first ListTools or CallTool there; later calls of
  the session reuse that view), on ReviewTools, and before it runs an approved mutation.
- Drift state is NOT shared through the database. A replica learns of drift only from a survey of its own;
  until then nothing tells it (the database gets one `tool-drift` audit alert per replica that saw it).
- Once a replica has seen a tool drift, it denies that tool in every session, also in sessions it surveyed
  before the change (mcp_gate.ToolGate: before that fix, such a session kept calling the changed tool).
- A drifted tool is refused the way the code base refuses any unusable tool to a model: CallTool answers OK
  with the `unavailable` outcome (availability DRIFTED, reason "DRIFT"), audited as `tool-refused`.
"""

from __future__ import annotations

import json
from collections import Counter

import yaml

from tessera.capabilities.v1 import capabilities_pb2 as cap
from tests.capabilities.integration.test_broker import person
from tests.capabilities.integration.test_broker_replicas import replicas  # noqa: F401  (fixture: replicas on one database)
from tests.capabilities.integration.test_tool_gate import call, world  # noqa: F401  (fixture: a pinned tool policy)
from tests.fixtures.race import query
from tests.fixtures.waiting import wait_until

AVAILABLE, DRIFTED = cap.TOOL_AVAILABILITY_AVAILABLE, cap.TOOL_AVAILABILITY_DRIFTED
DRIFT_TOOLS = {"drift.lookup", "drift.slow", "drift.crash", "drift.update"}


def _view(client, actor, session: str):
    """A session's tools as one replica offers them to a model: (degraded, {tool id: what the model sees})."""
    listed = client("agent", "ListTools", cap.ListToolsRequest(actor=actor, session_id=session), timeout=60)
    return listed.degraded, {t.tool_id: (t.availability, t.reason, t.description, t.risk, t.input_schema_json)
                             for t in listed.tools}


def _review(client, actor) -> list:
    reviewed = client("cli", "ReviewTools", cap.ReviewToolsRequest(actor=actor), timeout=60)
    return [(t.tool_id, t.availability, t.reason, _hashes(t.current), _hashes(t.pinned)) for t in reviewed.tools]


def _hashes(snapshot: cap.ToolSnapshot) -> tuple[str, str]:
    """What a pin fixes (the pinned snapshot also says who reviewed it, which the offer never does)."""
    return snapshot.description_sha256, snapshot.input_schema_sha256


def _server_log(path) -> list[dict]:
    """What the drift servers answered: one JSON line per tools/list and per `lookup` call."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _lists(path, parents) -> Counter:
    return Counter(e["parent"] for e in _server_log(path) if e["request"] == "tools/list" and e["parent"] in parents)


def _refused_for_drift(client, actor, session: str) -> bool:
    """A call of the changed tool through `client` is refused as drift: gRPC OK (a refusal the model is told
    about, as for any unusable tool; `call` raises on any other status) with the `unavailable` outcome."""
    reply = call(client, actor, session, "drift.lookup", {"term": "lamps"})
    return reply.WhichOneof("outcome") == "unavailable" and \
        (reply.unavailable.availability, reply.unavailable.reason) == (DRIFTED, "DRIFT")


def test_replicas_agree_on_an_unchanged_server_and_both_refuse_it_once_it_changed(replicas, world, cert_dir,  # noqa: F811
                                                                                  tmp_path):
    # In the drift server's data folder: the only one its box lets it read and write besides its code.
    switch, log = world["effects"].parent / "replicas-switch", world["effects"].parent / "replicas.jsonl"
    document = yaml.safe_load(world["policy"].read_text())  # pinned by `tessera policy pin`, as a person would
    drift = document["servers"]["drift"]
    drift["env"].update(DRIFT_SWITCH=str(switch), DRIFT_LOG=str(log))  # how it runs; the pins stay as reviewed
    # Unboxed, as a policy may say: the replicas are told apart by the pid of the broker that started each
    # server, which a box's PID namespace hides (the boxed drift server is tested in test_tool_gate.py).
    drift["sandbox"] = "none"
    policy = tmp_path / "tools.yaml"  # the one pin file of both replicas: the drift server only (a quick start)
    policy.write_text(yaml.safe_dump({"version": 1, "servers": {"drift": drift}}))
    start, broker_url, _ = replicas
    (a, a_set), (b, b_set) = start(2, TESSERA_CAPABILITIES_TOOLS_FILE=str(policy),
                                   TESSERA_CAPABILITIES_MCP_LOG_DIR=str(tmp_path))
    pid_a, pid_b = a_set.handles["capabilities"].pid, b_set.handles["capabilities"].pid
    alice = person(cert_dir)

    # 1. The server as reviewed: both replicas survey it and agree, and the pinned tool runs through either.
    before = [_view(client, alice, "ses_before") for client in (a, b)]
    assert before[0] == before[1]
    degraded, tools = before[0]
    assert not degraded and set(tools) == DRIFT_TOOLS and all(t[0] == AVAILABLE for t in tools.values())
    reviews = [_review(client, alice) for client in (a, b)]
    assert reviews[0] == reviews[1] and {r[0] for r in reviews[0]} == DRIFT_TOOLS
    assert all((availability, current) == (AVAILABLE, pinned) for _, availability, _, current, pinned in reviews[0])
    for client in (a, b):
        assert call(client, alice, "ses_before", "drift.lookup", {"term": "lamps"}).WhichOneof("outcome") == "content"
    # Each replica has its own server process, and each has surveyed three times (warm-up, session start,
    # ReviewTools): waited for, so the warm-up cannot land after the change below.
    wait_until(lambda: _lists(log, {pid_a, pid_b}) == {pid_a: 3, pid_b: 3}, 60, what="three surveys by each replica",
               detail=lambda: _lists(log, {pid_a, pid_b}))
    servers = {e["parent"]: e["pid"] for e in _server_log(log)}
    assert servers.keys() == {pid_a, pid_b} and servers[pid_a] != servers[pid_b]
    assert not query(broker_url, "SELECT 1 FROM audit_events WHERE kind = 'tool-drift'")

    # 2. The server changes `lookup` while both replicas run (for both server processes at once).
    switch.touch()
    # A surveys again (a session starts on it): drift, for the changed tool and the server's mutation …
    after_a = _view(a, alice, "ses_after_a")
    degraded, tools = after_a
    assert degraded and tools["drift.lookup"][:2] == (DRIFTED, "DRIFT")
    # Its unchanged reads stay; its mutation is refused with it (the server is not the one reviewed).
    assert all(tools[t][0] == AVAILABLE for t in DRIFT_TOOLS - {"drift.lookup", "drift.update"})
    assert tools["drift.update"][:2] == (DRIFTED, "SERVER_DRIFTED")
    # … and A refuses the changed tool in that session and in the one it surveyed before the change.
    assert _refused_for_drift(a, alice, "ses_after_a") and _refused_for_drift(a, alice, "ses_before")
    assert _view(a, alice, "ses_before") == after_a
    # B has not surveyed since: nothing told it (drift state is not shared), its earlier session's view is as
    # it was (no call made there: it would reach the changed tool) …
    assert _view(b, alice, "ses_before") == before[1]
    assert _lists(log, {pid_b}) == {pid_b: 3}
    # … until B surveys on its own (a session starts on it): the same verdict as A's, in every session of B's.
    assert _view(b, alice, "ses_after_b") == after_a
    assert _refused_for_drift(b, alice, "ses_after_b") and _refused_for_drift(b, alice, "ses_before")
    assert _view(b, alice, "ses_before") == after_a

    # No replica ever called the changed tool: the servers ran `lookup` twice, both times as reviewed.
    assert [(e["parent"], e["lookup"]) for e in _server_log(log) if e["request"] == "lookup"] in (
        [(pid_a, "reviewed"), (pid_b, "reviewed")], [(pid_b, "reviewed"), (pid_a, "reviewed")])
    refusals = query(broker_url, "SELECT detail_json FROM audit_events WHERE kind = 'tool-refused'")
    assert sorted(json.loads(d)["reason"] for (d,) in refusals) == ["DRIFT"] * 4
    # One alert per replica that saw the drift (each alerts once, whatever its number of surveys).
    def alerts():  # written behind the survey that found the drift
        found = query(broker_url, "SELECT detail_json FROM audit_events WHERE kind = 'tool-drift'")
        return [json.loads(d) for (d,) in found] if len(found) >= 2 else None

    assert wait_until(alerts, 60, what="an alert from each replica") == \
        [{"tool_id": "drift.lookup", "changed": "description"}] * 2
