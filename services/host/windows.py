"""Windows of bound results (§5, §6): rows from the gateway, under a short-lived grant, onto the surface stream.

A person's screen asks for a window with a `resource-window` command (paging, another figure). When
someone watches the surface on this replica, the first window each bound block shows is sent by the host
itself right after the revision commits: the revision says which are coming (`/firstWindows`), so the
screen waits for them instead of asking, and the answer is complete one round trip sooner. Rows go to
the surface's stream only: never into revisions, documents, slices or logs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import secrets
from itertools import chain

import grpc

from services.host.bindings import Binding
from services.host.database import AsyncStore
from services.host.envelopes import data_model_update
from services.host.fanout import SurfaceFanout
from services.host.peers import Peers, peer
from services.host.store import NewEntry, Session
from shared.data.bounded_json import canonical
from shared.identity import tokens
from shared.rpc.field_rules import stated
from shared.rpc.refusals import Refusal, Unavailable
from shared.ui.windows import FIRST_WINDOWS_PATH, window_key, window_path
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tessera.resources.v1 import resources_pb2

logger = logging.getLogger("tessera.host")
GRANT_LIFETIME = dt.timedelta(minutes=5)  # the gateway takes up to 15 minutes (§5); a window asks for a fresh one
WINDOW_MAX_ROWS = stated(host_pb2.ResourceWindowCommand, "limit", "max")  # the contract's (host.proto)
WINDOWS_PER_CALL = stated(resources_pb2.ResolveWindowsRequest, "windows", "max_items")  # resources.proto
WINDOWS_REPLY_FULL = "WINDOWS_REPLY_FULL"  # a window the gateway's reply had no room for: ask again (resources.proto)
# Stands for a window's rows in its message until the message's text is made; then the rows' own text replaces it.
_ROWS_SLOT = "\x00rows"
_ROWS_SLOT_JSON = f'"rows":{canonical(_ROWS_SLOT)}'  # as the message's canonical text writes it


def first_windows(bound: list[Binding]) -> list[Binding]:
    return [b for b in bound if b.kind == "resource" and b.first_rows > 0]


def first_windows_message(surface_id: str, bound: list[Binding], allow_empty: bool = False) -> dict | None:
    """The data model entry that tells a screen which windows the host is about to send (a later one with
    fewer keys: those left out are not coming, the screen asks for them)."""
    coming = [window_key(b.resource_id, b.node, b.prop, b.first_offset) for b in first_windows(bound)]
    if not coming and not allow_empty:
        return None
    return {"version": "v0.9", "updateDataModel": {"surfaceId": surface_id, "path": FIRST_WINDOWS_PATH,
                                                    "value": coming}}


class Windows:
    def __init__(self, db: AsyncStore, fanout: SurfaceFanout, peers: Peers, grant_key) -> None:
        self._db = db
        self._fanout = fanout
        self._peers = peers
        self._grant_key = grant_key

    def _grant(self, session: Session, binding: Binding) -> tuple[common_pb2.SignedToken, dict]:
        """A signed grant for one bound resource, and the row that remembers it (for revocation)."""
        now = dt.datetime.now(dt.UTC)
        grant_id = f"grt_{secrets.token_hex(10)}"
        claims = common_pb2.WindowGrantClaims(
            binding=common_pb2.TokenBinding(subject=session.actor_id, audience="resources",
                                            nonce=secrets.token_hex(12)),
            grant_id=grant_id, surface_id=session.surface_id, node_id=binding.node,
            resource_id=binding.resource_id, version_id=binding.version_id, content_hash=binding.content_hash,
            column_ids=list(binding.columns), max_window_rows=1 if binding.row >= 0 else WINDOW_MAX_ROWS)
        if binding.row >= 0:  # a figure: its one cell
            claims.row = binding.row
        claims.binding.issued_at.FromDatetime(now)
        claims.binding.expires_at.FromDatetime(now + GRANT_LIFETIME)
        token = tokens.sign(self._grant_key, tokens.PURPOSE_WINDOW_GRANT, claims)
        return token, {"grant_id": grant_id, "surface_id": session.surface_id, "node_id": binding.node,
                       "resource_id": binding.resource_id, "token": token.SerializeToString(),
                       "expires_at": (now + GRANT_LIFETIME).timestamp()}

    async def _resolve(self, session: Session, binding: Binding, grant: common_pb2.SignedToken, offset: int,
                       limit: int, projection: list[str]) -> NewEntry:
        window = await peer("resources", self._peers.resources.ResolveWindow(
            _window_request(grant, offset, limit, projection), timeout=30))
        return _window_entry(session, binding, window)

    async def _resolve_first(self, session: Session, wanted: list[Binding],
                             grants: list[common_pb2.SignedToken]) -> list[NewEntry | str]:
        """The first windows, in as few calls as the gateway allows: each its journal entry, or why it was not read.
        Windows a full reply had no room for (WINDOWS_REPLY_FULL) are asked for again in the next call."""
        outcomes: dict[int, NewEntry | str] = {}
        pending = list(enumerate(zip(wanted, grants, strict=True)))
        while pending:
            batch, pending = pending[:WINDOWS_PER_CALL], pending[WINDOWS_PER_CALL:]
            try:
                later = await self._resolve_batch(session, batch, outcomes)
            except Exception as exc:
                if not outcomes:
                    raise  # nothing read: the caller tells the screen none are coming
                # Windows read by earlier calls still go out; those of this call and after are the screen's to ask.
                for index, _ in [*batch, *pending]:
                    outcomes[index] = f"not read: {exc}"
                break
            pending = later + pending
        return [outcomes[index] for index in range(len(wanted))]

    async def _resolve_batch(self, session: Session, batch: list, outcomes: dict[int, NewEntry | str]) -> list:
        """One ResolveWindows call: each answered window's outcome into `outcomes`; the windows the reply had no
        room for, to be asked for again."""
        reply = await peer("resources", self._peers.resources.ResolveWindows(resources_pb2.ResolveWindowsRequest(
            windows=[_window_request(grant, b.first_offset, b.first_rows, list(b.columns))
                     for _, (b, grant) in batch]), timeout=30))
        if len(reply.windows) != len(batch):
            raise Unavailable("PEER_REPLY_INVALID",
                              f"resources: {len(reply.windows)} window outcomes for {len(batch)} windows asked",
                              {"peer": "resources"})
        later = [asked for asked, outcome in zip(batch, reply.windows, strict=True)
                 if outcome.refused.reason == WINDOWS_REPLY_FULL]
        if len(later) == len(batch):  # the gateway answers at least one window a call: this one made no progress
            raise Unavailable("PEER_REPLY_INVALID",
                              "resources: a reply with no room for any window", {"peer": "resources"})
        for (index, (binding, _)), outcome in zip(batch, reply.windows, strict=True):
            if outcome.refused.reason != WINDOWS_REPLY_FULL:
                outcomes[index] = _first_window_entry(session, binding, outcome)
        return later

    async def _publish(self, session: Session, entries: list[NewEntry], revision_id: str = "",
                       grant_rows: list[dict] | None = None) -> tuple[int, int]:
        """Onto the surface's stream; with `revision_id`, only while that revision is still shown (and then with the
        `grant_rows` of the windows, remembered with them)."""
        if revision_id:
            appended = await self._db(self._db.store.append_events_at, session.surface_id, revision_id, entries,
                                      grant_rows)
            if appended is None:  # a newer revision is shown: its own first windows are on their way
                return 0, 0
        else:
            appended = await self._db(self._db.store.append_events, session.surface_id, entries)
        await self._fanout.published(session.surface_id, appended)
        return appended.epoch, appended.last

    async def send(self, session: Session, revision_id: str, binding: Binding, offset: int, limit: int,
                   projection: list[str]) -> tuple[int, int]:
        """One window a screen asked for; the journal position it was published at."""
        grant, row = self._grant(session, binding)
        await self._db(self._db.store.save_grants, revision_id, [row])
        entry = await self._resolve(session, binding, grant, offset, limit, projection)
        return await self._publish(session, [entry])

    async def send_first(self, session: Session, revision_id: str, bound: list[Binding]) -> None:
        """The first window of every bound block of a just-committed revision, read in one call and published in
        one journal append with the grants they were read under. A window that cannot be read is left to the
        screen, which asks for it itself."""
        wanted = first_windows(bound)
        if not wanted:
            return
        granted = [self._grant(session, b) for b in wanted]
        grants = [grant for grant, _ in granted]
        try:
            results = await self._resolve_first(session, wanted, grants)
        except asyncio.CancelledError:  # a newer revision of the surface: these grants were never kept; end them
            await asyncio.shield(self._revoke_unsent(grants))
            raise
        entries = [r for r in results if isinstance(r, NewEntry)]
        for why in (r for r in results if isinstance(r, str)):
            logger.warning("a first window was not sent (the screen asks for it itself): %s", why)
        if len(entries) < len(wanted):  # the screen stops waiting for those that are not coming
            entries.append(data_model_update(session.surface_id, first_windows_message(session.surface_id, [
                b for b, r in zip(wanted, results, strict=True) if isinstance(r, NewEntry)], allow_empty=True)))
        if await self._publish(session, entries, revision_id, [row for _, row in granted]) == (0, 0):
            # A newer revision is shown (it moved on here or on another replica): nothing was sent and the grants
            # were not kept, so they end at the gateway now.
            await self._revoke_unsent(grants)

    async def _revoke_unsent(self, grants: list[common_pb2.SignedToken]) -> None:
        try:
            await self._peers.resources.RevokeGrants(resources_pb2.RevokeGrantsRequest(grants=grants), timeout=10)
        except grpc.aio.AioRpcError as exc:  # they expire within minutes, and only this host held them
            logger.warning("could not revoke %d unsent first-window grants: %s", len(grants), exc.code().name)

    async def none_coming(self, session: Session, revision_id: str) -> None:
        """Sending the first windows failed as a whole: the screen asks for every window itself."""
        await self._publish(session, [data_model_update(
            session.surface_id, first_windows_message(session.surface_id, [], allow_empty=True))], revision_id)


def _window_request(grant: common_pb2.SignedToken, offset: int, limit: int,
                    projection: list[str]) -> resources_pb2.ResolveWindowRequest:
    return resources_pb2.ResolveWindowRequest(grant=grant, offset=offset, limit=limit, column_ids=projection,
                                              rows_as_json=True)


def _first_window_entry(session: Session, binding: Binding, outcome: resources_pb2.WindowOutcome) -> NewEntry | str:
    """A first window's journal entry, or why it is not sent (its refusal, or rows that fail the check)."""
    if outcome.HasField("refused"):
        return f"{outcome.refused.reason}: {outcome.refused.message}"
    try:
        return _window_entry(session, binding, outcome.window)
    except Refusal as exc:
        return str(exc)


def _window_entry(session: Session, binding: Binding, window: resources_pb2.ResolveWindowResponse) -> NewEntry:
    """The window as its journal entry. The gateway sends its rows as JSON already (encoded once per result): they
    are checked for shape, and set into the message's text as they came, never turned cell by cell."""
    columns = [c.column_id for c in window.columns]
    rows_json = _checked_rows(window.rows_json, len(columns))
    message = {"version": "v0.9", "updateDataModel": {
        "surfaceId": session.surface_id, "path": window_path(binding.resource_id),
        "value": {"node": binding.node, "prop": binding.prop, "offset": window.offset,
                  "totalRows": window.total_rows, "columns": columns, "rows": _ROWS_SLOT}}}
    text = canonical(message)
    if text.count(_ROWS_SLOT_JSON) != 1:  # the slot's text is structural: no string can hold it unescaped
        raise AssertionError("a window message without exactly one rows slot")
    return data_model_update(session.surface_id, message, text.replace(_ROWS_SLOT_JSON, f'"rows":{rows_json}'))


_CELL_TYPES = frozenset({str, int, float, bool, type(None)})  # json.loads makes exactly these, never subclasses


def _checked_rows(rows_json: bytes, width: int) -> str:
    """The gateway's rows as text, once they are seen to be a JSON array of rows `width` cells wide, each cell a
    string, number, boolean or null (what goes onto screens is never taken unread, even from a peer); a refusal
    naming the peer otherwise."""
    try:
        text = rows_json.decode()
        rows = json.loads(text, parse_constant=_not_json)  # NaN and Infinity are Python's, not JSON
    except ValueError:
        rows = None
    # Types and widths gathered by map() and set() rather than a Python test per cell: half the time of a window.
    if type(rows) is not list or set(map(type, rows)) - {list} or set(map(len, rows)) - {width} \
            or set(map(type, chain.from_iterable(rows))) - _CELL_TYPES:
        raise Unavailable("PEER_REPLY_INVALID",
                          f"resources: a window's rows are not an array of {width}-cell rows of plain values",
                          {"peer": "resources"})
    return text


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")
