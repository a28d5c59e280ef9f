"""The first windows of a revision go onto the stream only while that revision is shown, and their grants
end when a newer one came first (SQLite and PostgreSQL); a snapshot after compaction does not promise
windows it no longer holds."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from services.host import store as host_store
from services.host.bindings import Binding
from services.host.database import AsyncStore
from services.host.envelopes import data_model_update, positioned
from services.host.store import HostStore, Session
from services.host.windows import Windows
from shared.data.bounded_json import canonical
from shared.rpc.refusals import Refusal, Unavailable
from shared.ui.windows import FIRST_WINDOWS_PATH
from tessera.common.v1 import common_pb2
from tessera.resources.v1 import resources_pb2
from tests.fixtures.postgres import BACKENDS, migrated_engine


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    with migrated_engine(request, tmp_path, "host_first_windows", host_store) as engine:
        yield HostStore(engine)


def _message(path: str, value) -> dict:
    return {"version": "v0.9", "updateDataModel": {"surfaceId": "srf_a", "path": path, "value": value}}


def _commit(store: HostStore, base: str | None, proposal: str, *messages: dict) -> str:
    return store.commit(surface_id="srf_a", expected_base=base, turn_id="trn_1", proposal_id=proposal,
                        content_hash=proposal, document_json="{}", diagnostics=b"[]",
                        events=[data_model_update("srf_a", m) for m in messages]).revision_id


def _paths(store: HostStore) -> list[str]:
    envelopes = [positioned(e) for e in store.events_after("srf_a", 1, 0)]
    return [json.loads(e.a2ui.message_json)["updateDataModel"]["path"] for e in envelopes]


def test_first_windows_of_a_revision_no_longer_shown_are_not_published(store):
    first = _commit(store, None, "p1", _message(FIRST_WINDOWS_PATH, ["res_1|table|/resource|0"]))
    window = [data_model_update("srf_a", _message("/resources/res_1/window", {"node": "table", "rows": [[1]]}))]
    assert store.append_events_at("srf_a", first, window) is not None  # still shown: published
    second = _commit(store, first, "p2", _message("/resources/res_2", {}))
    # A late first window of the first revision (its answer was slower than the next commit) is dropped.
    assert store.append_events_at("srf_a", first, window) is None
    assert _paths(store) == [FIRST_WINDOWS_PATH, "/resources/res_1/window", "/resources/res_2"]
    assert store.head("srf_a") == second


def test_a_snapshot_keeps_neither_rows_nor_the_promise_of_them(store):
    revision = _commit(store, None, "p1", _message(FIRST_WINDOWS_PATH, ["res_1|table|/resource|0"]),
                       _message("/resources/res_1", {"rowCount": 1}))
    store.append_events_at("srf_a", revision, [data_model_update("srf_a", _message(
        "/resources/res_1/window", {"node": "table", "rows": [[1]]}))])
    epoch, last = store.compact("srf_a", 1)
    envelopes = [positioned(e) for e in store.events_after("srf_a", epoch, 0)]
    paths = [json.loads(e.a2ui.message_json)["updateDataModel"]["path"] for e in envelopes]
    assert paths == ["/resources/res_1"] and last == 1


def test_the_grants_of_first_windows_are_kept_exactly_when_the_windows_go_out(store):
    first = _commit(store, None, "p1", _message("/resources/res_1", {}))
    rows = [{"grant_id": f"grt_{i}", "surface_id": "srf_a", "node_id": "table", "resource_id": "res_1",
             "token": b"t", "expires_at": 9e9} for i in range(2)]
    window = [data_model_update("srf_a", _message("/resources/res_1/window", {"node": "table", "rows": [[1]]}))]
    assert store.append_events_at("srf_a", first, window, rows) is not None
    second = _commit(store, first, "p2", _message("/resources/res_2", {}))
    assert store.append_events_at("srf_a", first, window, [{**rows[0], "grant_id": "grt_late"}]) is None
    with store.engine.connect() as connection:
        kept = connection.exec_driver_sql("SELECT grant_id, revision_id FROM grants ORDER BY grant_id").all()
    assert [tuple(row) for row in kept] == [("grt_0", first), ("grt_1", first)] and second != first


class _QuietFanout:
    async def published(self, surface_id, appended):
        pass


def _send_first(store, gateway, revision: str, tables: list[Binding], fanout=None) -> Exception | None:
    """Windows.send_first of `tables` against `gateway` (a stub of the resources peer); what it raised, if anything."""
    pool = ThreadPoolExecutor(max_workers=2)
    windows = Windows(AsyncStore(store, pool), fanout or _QuietFanout(), SimpleNamespace(resources=gateway),
                      ed25519.Ed25519PrivateKey.generate())
    try:
        asyncio.run(windows.send_first(Session("ses_1", "srf_a", "alice", "acme", 0.0), revision, tables))
    except Exception as exc:  # noqa: BLE001 - the caller looks at it
        return exc
    finally:
        pool.shutdown()
    return None


def _published_after_the_revision(store) -> list[str]:
    return [positioned(e).a2ui.message_json for e in store.events_after("srf_a", 1, 0)][1:]


def test_first_windows_overtaken_by_a_newer_revision_are_not_sent_and_their_grants_end(store):
    """The race itself: the next revision commits while the first windows of this one are being read."""
    first = _commit(store, None, "p1", _message("/resources/res_1", {}))
    revoked_at_gateway = []

    class Gateway:
        async def ResolveWindows(self, request, timeout):  # noqa: N802 - the stub's name
            _commit(store, first, "p2", _message("/resources/res_2", {}))  # overtaken meanwhile
            return resources_pb2.ResolveWindowsResponse(windows=[resources_pb2.WindowOutcome(
                window=resources_pb2.ResolveWindowResponse(resource_id="res_1", offset=0, total_rows=0,
                                                           rows_json=b"[]"))])

        async def RevokeGrants(self, request, timeout):  # noqa: N802
            revoked_at_gateway.extend(request.grants)
            return resources_pb2.RevokeGrantsResponse(revoked=len(request.grants))

    class Fanout:
        async def published(self, surface_id, appended):
            raise AssertionError("nothing is published for a revision no longer shown")

    table = Binding(node="table", prop="/resource", kind="resource", resource_id="res_1", version_id="v",
                    content_hash="c", columns=("region",), first_rows=25)
    assert _send_first(store, Gateway(), first, [table], Fanout()) is None
    assert _paths(store) == ["/resources/res_1", "/resources/res_2"]  # no window of the first revision
    assert len(revoked_at_gateway) == 1  # its grant ends at the gateway, and was never kept as live here
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT count(*) FROM grants").scalar() == 0


def _send_first_with(store, rows_json: bytes) -> tuple[list[dict], list, list[str]]:
    """send_first of one bound table whose window the gateway answers with `rows_json`: the messages published
    after the revision, what the gateway was asked, and the messages' texts."""
    revision = _commit(store, None, "p1", _message("/resources/res_1", {}))
    asked = []

    class Gateway:
        async def ResolveWindows(self, request, timeout):  # noqa: N802 - the stub's name
            asked.extend(request.windows)
            return resources_pb2.ResolveWindowsResponse(windows=[resources_pb2.WindowOutcome(
                window=resources_pb2.ResolveWindowResponse(
                    resource_id="res_1", offset=0, total_rows=2, rows_json=rows_json,
                    columns=[common_pb2.ColumnDescriptor(column_id=c) for c in ("region", "revenue")]))])

    table = Binding(node="table", prop="/resource", kind="resource", resource_id="res_1", version_id="v",
                    content_hash="c", columns=("region", "revenue"), first_rows=25)
    assert _send_first(store, Gateway(), revision, [table]) is None
    texts = _published_after_the_revision(store)
    return [json.loads(text) for text in texts], asked, texts


def test_a_window_goes_out_with_the_gateways_json_rows_as_one_canonical_message(store):
    rows = [["Zürich \"Nord\"", 1.5], [None, 1e300]]
    messages, asked, texts = _send_first_with(store, canonical(rows).encode())
    assert [request.rows_as_json for request in asked] == [True]
    assert texts == [canonical(messages[0])]  # the rows set in as text: the message is still canonical
    assert messages[0]["updateDataModel"]["value"] == {"node": "table", "prop": "/resource", "offset": 0,
                                                       "totalRows": 2, "columns": ["region", "revenue"],
                                                       "rows": rows}


@pytest.mark.parametrize("rows_json", [b"", b"{}", b"[[1]]", b"[[1, 2], 3]", b"[[1, 2]", b"\xff", b'[[1, {"a": 2}]]',
                                       b"[[1, [2]]]", b"[[1, NaN]]", b"[[Infinity, 2]]", b'[[1, 2], "ab"]',
                                       b'[[1, 2], {"a": 1, "b": 2}]', b"[[1, 2], [3]]", b"[[1, 2], [3, 4, 5]]"])
def test_rows_that_are_not_an_array_of_rows_as_wide_as_the_columns_are_not_published(store, rows_json):
    messages, _, _ = _send_first_with(store, rows_json)
    # The window is not sent; the screen is told it is not coming (it asks for it itself).
    assert messages == [_message(FIRST_WINDOWS_PATH, [])]


def _send_first_answered(store, count: int, answer) -> tuple[list[dict], list[int], Exception | None]:
    """send_first of `count` bound tables, each window answered by `answer(index, request)` (a WindowOutcome, or
    None for none); the messages published after the revision, how many windows each call asked for, and what
    send_first raised."""
    revision = _commit(store, None, "p1", _message("/resources/res_1", {}))
    calls = []

    class Gateway:
        async def ResolveWindows(self, request, timeout):  # noqa: N802 - the stub's name
            base = sum(calls)
            calls.append(len(request.windows))
            return resources_pb2.ResolveWindowsResponse(
                windows=[o for i, r in enumerate(request.windows) if (o := answer(base + i, r)) is not None])

    tables = [Binding(node=f"table{i}", prop="/resource", kind="resource", resource_id=f"res_{i}", version_id="v",
                      content_hash="c", columns=("region",), first_rows=25) for i in range(count)]
    raised = _send_first(store, Gateway(), revision, tables)
    return [json.loads(text) for text in _published_after_the_revision(store)], calls, raised


def _window(index: int, request) -> resources_pb2.WindowOutcome:
    return resources_pb2.WindowOutcome(window=resources_pb2.ResolveWindowResponse(
        resource_id=f"res_{index}", total_rows=1, rows_json=b'[["north"]]',
        columns=[common_pb2.ColumnDescriptor(column_id="region")]))


def test_the_first_windows_go_in_one_call_and_a_refused_one_is_left_to_the_screen(store):
    def answer(index, request):
        if index == 1:
            return resources_pb2.WindowOutcome(refused=resources_pb2.WindowRefusal(
                code=7, reason="GRANT_REVOKED", message="this window grant was revoked by the host"))
        return _window(index, request)

    messages, calls, raised = _send_first_answered(store, 3, answer)
    assert calls == [3] and raised is None
    nodes = [m["updateDataModel"]["value"]["node"] for m in messages[:-1]]
    assert nodes == ["table0", "table2"]
    # The screen stops waiting for the refused one: the promise now names only those sent.
    assert messages[-1] == _message(FIRST_WINDOWS_PATH, ["res_0|table0|/resource|0", "res_2|table2|/resource|0"])


def test_more_first_windows_than_one_call_takes_go_in_several(store):
    messages, calls, raised = _send_first_answered(store, 70, _window)
    assert calls == [64, 6] and raised is None and len(messages) == 70


def test_a_reply_with_another_number_of_outcomes_sends_nothing(store):
    messages, _, raised = _send_first_answered(store, 2, lambda index, request: _window(index, request)
                                               if index == 0 else None)
    # Nothing is published; the caller (Commits) tells the screen none are coming and it asks for them itself.
    assert isinstance(raised, Refusal) and raised.reason == "PEER_REPLY_INVALID" and messages == []


def _full(index: int, request) -> resources_pb2.WindowOutcome:
    return resources_pb2.WindowOutcome(refused=resources_pb2.WindowRefusal(
        code=8, reason="WINDOWS_REPLY_FULL", message="this reply has no room for this window"))


def test_windows_a_full_reply_had_no_room_for_are_asked_again(store):
    """A gateway whose replies hold two windows each: every window still goes out, once, in the blocks' order."""
    revision = _commit(store, None, "p1", _message("/resources/res_1", {}))
    calls = []

    class Gateway:
        async def ResolveWindows(self, request, timeout):  # noqa: N802 - the stub's name
            calls.append([w.grant for w in request.windows])
            return resources_pb2.ResolveWindowsResponse(windows=[
                _window(0, w) if position < 2 else _full(0, w) for position, w in enumerate(request.windows)])

    tables = [Binding(node=f"table{i}", prop="/resource", kind="resource", resource_id=f"res_{i}", version_id="v",
                      content_hash="c", columns=("region",), first_rows=25) for i in range(5)]
    assert _send_first(store, Gateway(), revision, tables) is None
    assert [len(grants) for grants in calls] == [5, 3, 1]
    assert calls[1] == calls[0][2:] and calls[2] == calls[1][2:]  # the same grants, asked again
    messages = [json.loads(text) for text in _published_after_the_revision(store)]
    assert [m["updateDataModel"]["value"]["node"] for m in messages] == [f"table{i}" for i in range(5)]


def test_a_reply_with_no_room_for_any_window_sends_nothing(store):
    messages, calls, raised = _send_first_answered(store, 3, _full)
    assert isinstance(raised, Refusal) and raised.reason == "PEER_REPLY_INVALID" and calls == [3]
    assert messages == []


def test_windows_read_before_a_later_call_failed_still_go_out(store):
    revision = _commit(store, None, "p1", _message("/resources/res_1", {}))
    calls = []

    class Gateway:
        async def ResolveWindows(self, request, timeout):  # noqa: N802 - the stub's name
            calls.append(len(request.windows))
            if len(calls) > 1:
                raise Unavailable("SERVICE_UNAVAILABLE", "resources: not answering")
            return resources_pb2.ResolveWindowsResponse(windows=[
                _window(0, w) if position < 2 else _full(0, w) for position, w in enumerate(request.windows)])

    tables = [Binding(node=f"table{i}", prop="/resource", kind="resource", resource_id=f"res_{i}", version_id="v",
                      content_hash="c", columns=("region",), first_rows=25) for i in range(4)]
    assert _send_first(store, Gateway(), revision, tables) is None and calls == [4, 2]
    messages = [json.loads(text) for text in _published_after_the_revision(store)]
    assert [m["updateDataModel"]["value"]["node"] for m in messages[:2]] == ["table0", "table1"]
    # The screen stops waiting for the two that were not read, and asks for them itself.
    assert messages[2] == _message(FIRST_WINDOWS_PATH, ["res_0|table0|/resource|0", "res_1|table1|/resource|0"])


def test_first_windows_cancelled_by_a_newer_revision_end_their_grants(store):
    revision = _commit(store, None, "p1", _message("/resources/res_1", {}))
    revoked, sent, reading = [], [], asyncio.Event()

    class Gateway:
        async def ResolveWindows(self, request, timeout):  # noqa: N802 - the stub's name
            sent.extend(window.grant for window in request.windows)
            reading.set()
            await asyncio.sleep(3600)  # still reading when the newer revision cancels the send

        async def RevokeGrants(self, request, timeout):  # noqa: N802
            revoked.extend(request.grants)
            return resources_pb2.RevokeGrantsResponse(revoked=len(request.grants))

    pool = ThreadPoolExecutor(max_workers=2)
    windows = Windows(AsyncStore(store, pool), _QuietFanout(), SimpleNamespace(resources=Gateway()),
                      ed25519.Ed25519PrivateKey.generate())
    table = Binding(node="table", prop="/resource", kind="resource", resource_id="res_1", version_id="v",
                    content_hash="c", columns=("region",), first_rows=25)

    async def scenario() -> None:
        task = asyncio.create_task(windows.send_first(Session("ses_1", "srf_a", "alice", "acme", 0.0), revision,
                                                      [table]))
        await reading.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(scenario())
    finally:
        pool.shutdown()
    assert len(sent) == 1 and list(revoked) == sent  # the grant the cancelled read was made under ends
