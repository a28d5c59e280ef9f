"""The browser's API at `web` (§2, §6, §8): transport glue between a person's browser and the services.

- `GET  /api/session`                 the person and their surface (opens the host session once);
- `POST /api/ask`                     a question; the turn's events as server-sent events;
- `GET  /api/surface/stream`          the trusted surface stream as server-sent events, resumable
                                      with `Last-Event-ID: <epoch>:<sequence>`;
- `POST /api/commands`                a revision-bound, idempotent command for the host;
- `GET  /api/turns[?before=<id>]`     the conversation so far, newest first (the host's ListTurns);
- `GET  /api/revisions/<id>`          an earlier answer as it was shown (its A2UI messages, no rows);
- `POST /api/turns/<id>/cancel`       stop a running turn (the agent's CancelTurn);
- `GET  /api/outline`                 what the data can answer (labels) and suggested questions;
- `GET  /api/approvals[/<id>]`        the person's approvals;
- `POST /api/approvals/<id>/challenge` a nonce to sign a decision with, and the person's passkeys;
- `POST /api/approvals/<id>/decision`  the decision with the passkey's assertion over its challenge
                                      (the broker verifies it: web only carries it);
- `POST /api/sign-in/link`            a one-time link's token: signs the person in, opens a passkey enrollment;
- `POST /api/passkeys`                the authenticator's registration, for the broker to verify and keep;
- `POST /api/sign-out`                ends the session at the broker, so on every replica.

Both event streams send an SSE comment when nothing else was sent for a while (keep-alive), so proxies
and load balancers that cut idle connections leave them open.

Web holds no data and decides nothing: it adds the person's signed assertion and
their session, forwards, and maps gRPC refusals to HTTP with the same reason.
It cannot approve either: an approval carries the person's passkey signature,
which only the broker verifies.
It keeps no state a replica would need from another: any request may go to any replica.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
from collections.abc import AsyncIterator, Callable

import grpc
from google.protobuf.json_format import MessageToDict
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.web.ai_sdk_chat import DONE as UI_MESSAGE_STREAM_DONE
from services.web.ai_sdk_chat import HEADERS as UI_MESSAGE_STREAM_HEADERS
from services.web.ai_sdk_chat import TurnParts, question_of, turn_parts
from services.web.bodies import OPTIONAL_PLAIN_ID, PLAIN_ID, QUESTION, AskBody, BodyInvalid, DecisionBody, checked, read
from services.web.session import Assertions, BrowserSession, Person, cookie_of
from services.web.session_records import SessionRecords, SessionRefused
from services.web.surface_feeds import SSE_BATCH, FeedResponse, SurfaceFeeds, ViewerKey
from shared.data.bounded_json import BoundedJsonError, Limits, parse
from shared.data.caches import bounded_lru
from shared.logs import log
from shared.rpc.errors import ErrorDetails, error_details
from shared.rpc.field_rules import stated
from shared.rpc.refusals import Refusal
from shared.ui.surface_envelopes import CursorInvalid, client_command, cursor_text, envelope_dict, parse_cursor
from tessera.agent.v1 import agent_pb2
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.common.v1 import common_pb2
from tessera.common.v1.common_pb2 import PasskeyAssertion
from tessera.host.v1 import host_pb2

logger = logging.getLogger("tessera.web")
# A cancel that reaches an agent replica not running the turn waits there for the turn to end (up to 15 s).
CANCEL_SECONDS = 20
APPROVALS_PAGE = stated(cap.ListApprovalsRequest, "page_size", "max")  # a person's approvals: the broker's most
MAX_REMEMBERED_SESSIONS = 10_000  # the least recently used are forgotten (and simply reopened at the host)
# The host session the MCP front commits outside agents' answers to, one per person (its link: /?surface=mcp).
OUTSIDE_AGENT_SESSION = "mcp"
# A session `tessera ask` opened for the operator (`--open`): the host keys it by this request id, per person, so
# a browser signed in as someone else never finds it.
TERMINAL_SESSION = re.compile(r"terminal-[0-9a-f]{12}")
BODY_LIMITS = Limits(max_raw_bytes=64 * 1024, max_values=2_000)
_HTTP = {grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.UNAUTHENTICATED: 401,
         grpc.StatusCode.PERMISSION_DENIED: 403, grpc.StatusCode.NOT_FOUND: 404,
         grpc.StatusCode.ALREADY_EXISTS: 409, grpc.StatusCode.ABORTED: 409,
         grpc.StatusCode.FAILED_PRECONDITION: 409, grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
         grpc.StatusCode.UNAVAILABLE: 503, grpc.StatusCode.DEADLINE_EXCEEDED: 504,
         # Web never cancels its own calls this way: the peer cancelled it because it is stopping.
         grpc.StatusCode.CANCELLED: 503}
_NOBODY_ANSWERED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)
# The broker's refusals of a decision on an approval that already ended; their ErrorInfo metadata says how.
_DECIDED_ALREADY = frozenset({"APPROVAL_ALREADY_DECIDED", "DECISION_ID_CONFLICT", "APPROVAL_EXPIRED",
                              "ASSERTION_REPLAYED"})
SSE_SEPARATOR = "\n"  # the page's reader (frontend/src/api.js) ends an event at a blank line of bare LFs
# Passkeys added since the previous sign-in, carried from a sign-in that redirects to the page's first
# /api/session (services/web/oidc.py): sealed by web, bound to the new session, shown once.
NOTICE_COOKIE, NOTICE_PURPOSE, NOTICE_SECONDS = "tessera_passkeys_added", "passkeys-added", 600
MAX_NOTICED, NOTICE_ID_CHARS = 20, 16  # the newest 20, each id as far as the page shows it (12 characters)


def _refused(exc: grpc.aio.AioRpcError, service: str | None = None) -> ApiError:
    """What the person is shown of a failed call to `service`: a service's own refusal as it gave it; a call
    that found no one answering (the peer is down or restarting) in plain words (shared.rpc.errors), never gRPC's
    socket-level text."""
    details = error_details(exc, service)
    return ApiError(_status(details), details.reason, details.message)


def _status(details: ErrorDetails) -> int:
    """A refusal's HTTP status by its code. A call no service explained is the gateway's failure, never the
    person's: 503/504 when nobody answered, 502 for the rest (a 401 or 403 there would read as "sign in")."""
    if details.from_peer or details.code in _NOBODY_ANSWERED:
        return _HTTP.get(details.code, 500)
    return 502


class ApiError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


def _as_dict(message) -> dict:
    return MessageToDict(message, preserving_proto_field_name=True)


def _cursor(text: str) -> host_pb2.Cursor:
    try:
        return parse_cursor(text)
    except CursorInvalid as exc:
        raise ApiError(400, "CURSOR_INVALID", str(exc)) from None


_B64URL = re.compile(r"[A-Za-z0-9_-]{0,8000}")


def _passkey_assertion(value) -> PasskeyAssertion | None:
    """The page's `navigator.credentials.get()` result (base64url fields), as the broker's message; web
    passes it on unchanged and cannot make one (only the person's authenticator can)."""
    if value is None:
        return None
    fields = ("id", "authenticator_data", "client_data_json", "signature", "user_handle")
    invalid = ApiError(400, "PASSKEY_INVALID", "passkey: id, authenticator_data, client_data_json and signature "
                                               "(and user_handle), each base64url")
    if not isinstance(value, dict) or not value.get("id") or not all(
            isinstance(value.get(f, ""), str) and _B64URL.fullmatch(value.get(f, "")) for f in fields):
        raise invalid

    def raw(field: str) -> bytes:
        text = value.get(field, "")
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

    try:
        return PasskeyAssertion(credential_id=value["id"], authenticator_data=raw("authenticator_data"),
                                client_data_json=raw("client_data_json"), signature=raw("signature"),
                                user_handle=raw("user_handle"))
    except ValueError:  # a length no base64 text has
        raise invalid from None


def _event(data: dict, event_id: str | None = None) -> ServerSentEvent:
    return ServerSentEvent(json.dumps(data, separators=(",", ":")), id=event_id or None, sep=SSE_SEPARATOR)


def _error_event(reason: str, message: str) -> ServerSentEvent:
    """What a stream says when it ends on a refusal: the reason and the person's words."""
    return _event({"error": {"reason": reason, "message": message}})


def _encoded_envelope(envelope: host_pb2.SurfaceEnvelope) -> bytes:
    return _event(envelope_dict(envelope), cursor_text(envelope)).encode()


def _encoded_refusal(exc: grpc.aio.AioRpcError) -> bytes:
    refused = _refused(exc, "host")
    return _error_event(refused.reason, refused.message).encode()


async def _once(event: ServerSentEvent) -> AsyncIterator[ServerSentEvent]:
    yield event


def _session_ended(refused: SessionRefused) -> list[ServerSentEvent]:
    return [_error_event(refused.reason, refused.message)]


def _ui_part(part: dict | str) -> ServerSentEvent:
    """A part of the AI SDK's UI message stream (an object, or the closing DONE) as one event."""
    return ServerSentEvent(part if isinstance(part, str) else json.dumps(part, separators=(",", ":")),
                           sep=SSE_SEPARATOR)


def _keepalive() -> ServerSentEvent:
    return ServerSentEvent(comment="keep-alive", sep=SSE_SEPARATOR)  # EventSource and the page's reader skip it


def event_stream(events: AsyncIterator, keepalive_seconds: float, headers: dict | None = None) -> EventSourceResponse:
    """`events` (ServerSentEvents, or bytes of several) as text/event-stream, with a keep-alive comment every
    `keepalive_seconds` so proxies keep the connection. When the browser leaves, `events` is cancelled where it
    waits, so its `finally` cancels the gRPC stream behind it."""
    return EventSourceResponse(events, ping=keepalive_seconds, sep=SSE_SEPARATOR, ping_message_factory=_keepalive,
                               headers=headers)


class WebApi:
    def __init__(self, host, agent, capabilities, sessions: SessionRecords, assertions: Assertions,
                 keepalive_seconds: float = 15.0, sign_in_hint: str = "sign in first",
                 secure_cookies: bool = False, oidc_login: dict | None = None,
                 viewer_access_seconds: float = 5.0, wake_interval: float = 0.05) -> None:
        self.host, self.agent, self.capabilities = host, agent, capabilities
        # One host stream per watched surface, whoever watches it here; each viewer's right is the host's answer.
        self.feeds = SurfaceFeeds(host, _encoded_envelope, _encoded_refusal, viewer_access_seconds,
                                  keepalive_seconds, _keepalive().encode(), wake_interval)
        self.sessions = sessions  # the person's session, recorded at the broker
        self.assertions = assertions
        self.keepalive_seconds = keepalive_seconds
        self.sign_in_hint = sign_in_hint  # how a person without a session signs in, in words
        self.secure_cookies = secure_cookies  # served over https: cookies never travel in the clear
        self.oidc_login = oidc_login  # {"url", "provider"} of the OpenID sign-in, when configured
        # browser session → its host session; on the event loop only (shared/data/caches.py)
        self._host_sessions = bounded_lru(MAX_REMEMBERED_SESSIONS)

    # --- plumbing -----------------------------------------------------------------------------------------

    async def _call(self, rpc, request, timeout: float = 60, service: str | None = None):
        """`rpc` of `service` (named to the person if it does not answer)."""
        try:
            return await rpc(request, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise _refused(exc, service) from None

    async def _body(self, request: Request) -> dict:
        """A same-origin JSON object, bounded before parsing."""
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host', '')}":
            raise ApiError(403, "CROSS_ORIGIN", "requests must come from this page")
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise ApiError(415, "JSON_REQUIRED", "send application/json")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > BODY_LIMITS.max_raw_bytes:
            raise ApiError(413, "BODY_TOO_LARGE", f"at most {BODY_LIMITS.max_raw_bytes} bytes")
        raw = b""
        async for chunk in request.stream():  # counted as it arrives: a missing or false length changes nothing
            raw += chunk
            if len(raw) > BODY_LIMITS.max_raw_bytes:
                raise ApiError(413, "BODY_TOO_LARGE", f"at most {BODY_LIMITS.max_raw_bytes} bytes")
        try:
            body = parse(raw.decode("utf-8", "strict"), BODY_LIMITS)
        except (BoundedJsonError, UnicodeDecodeError) as exc:
            raise ApiError(400, "BODY_INVALID", str(exc)[:300]) from None
        if not isinstance(body, dict):
            raise ApiError(400, "BODY_INVALID", "the body must be a JSON object")
        return body

    async def _host_session(self, browser: BrowserSession, surface: str = "") -> host_pb2.OpenSessionResponse:
        """The browser session's host session, the person's outside-agent session (`surface` "mcp", where the
        MCP front commits) or one the person asked in at the terminal (`surface` "terminal-…"): opened once
        (idempotently at the host, per person), then remembered."""
        # One conversation per sign-in: kept on reload. (One per person, across devices, would also make the
        # gateway's per-session analysis budget one per person: a decision for the team, see issue 41's note.)
        request_id = surface or f"web-{browser.session_id}"
        key = (browser.session_id, request_id)
        opened = self._host_sessions.get(key)
        if opened is None:
            opened = await self._call(self.host.OpenSession, host_pb2.OpenSessionRequest(
                actor=self.assertions.of(browser.person), request_id=request_id), timeout=10, service="host")
            self._host_sessions[key] = opened
        return opened

    async def signed_in(self, request: Request) -> BrowserSession:
        """The signed-in person of this request (their session is open at the broker), or 401 saying how to
        sign in (503 when the broker cannot tell)."""
        return await self.sessions.check(request.cookies.get(cookie_of(request)))

    async def _while_signed_in(self, request: Request, events: AsyncIterator,
                               ending: Callable[[SessionRefused], list] | None = None) -> AsyncIterator:
        """A stream's `events` while the request's session stays open. A stream outlives the request that opened
        it: when its session ends (signed out on any replica, ended by the operator, expired) the stream says so
        with the broker's reason (`ending`'s events; by default one error event) and closes, and `events` is
        closed where it waits (its `finally` cancels the call behind it)."""
        ended = asyncio.create_task(self.sessions.until_ended(request.cookies.get(cookie_of(request))))
        following = None
        try:
            while True:
                following = asyncio.ensure_future(anext(events))
                await asyncio.wait((following, ended), return_when=asyncio.FIRST_COMPLETED)
                if not following.done():  # the session ended first
                    break
                try:
                    yield following.result()
                except StopAsyncIteration:
                    return
            refused = ended.result()
            for event in (ending or _session_ended)(refused):
                yield event
        finally:
            ended.cancel()
            if following is not None and not following.done():  # stop `events` where it waits, then close it
                following.cancel()
                await asyncio.wait((following,))
            await events.aclose()

    async def _session(self, request: Request) -> tuple[BrowserSession, host_pb2.OpenSessionResponse]:
        browser = await self.signed_in(request)
        surface = request.query_params.get("surface", "")
        if surface not in ("", OUTSIDE_AGENT_SESSION) and not TERMINAL_SESSION.fullmatch(surface):
            raise ApiError(400, "SURFACE_UNKNOWN", f"surface: empty (this browser's), {OUTSIDE_AGENT_SESSION!r} "
                                                   "(what outside agents presented) or 'terminal-' and 12 hex "
                                                   "digits (an answer `tessera ask --open` showed)")
        return browser, await self._host_session(browser, surface)

    async def start_session(self, person: Person, via: str, request: Request, response: Response) -> BrowserSession:
        """Sign a person in on `response` to `request`: a new session at the broker and its cookie (never the old
        id again: every sign-in rotates it)."""
        browser, cookie, max_age = await self.sessions.open(person, via)
        response.set_cookie(cookie_of(request), cookie, max_age=max_age, httponly=True, samesite="strict", path="/",
                            secure=self.secure_cookies)
        if browser.passkeys_added and via != "link":  # a link's sign-in answers them in its own JSON
            # A sign-in that ends in a redirect (OpenID Connect) has no reply the page reads: the passkeys added
            # since the previous sign-in wait, sealed by web for this session, for the page's first /api/session.
            response.set_cookie(cookie_of(request, NOTICE_COOKIE), self.sessions.cookies.seal(NOTICE_PURPOSE, {
                "sid": browser.session_id,
                "added": [[p.credential_id[:NOTICE_ID_CHARS], p.created_at]
                          for p in browser.passkeys_added[-MAX_NOTICED:]]}),
                max_age=NOTICE_SECONDS, httponly=True, samesite="strict", path="/api/session",
                secure=self.secure_cookies)
        log(logger, logging.INFO, "signed in", person=person.actor_id, tenant=person.tenant_id, via=via)
        return browser

    # --- endpoints ----------------------------------------------------------------------------------------

    async def session(self, request: Request) -> Response:
        """Who you are and your surface; without a sign-in, 401 with how to sign in."""
        browser, opened = await self._session(request)
        person = browser.person
        reply = {"actor": person.actor_id, "tenant": person.tenant_id, "name": person.display_name,
                 "signed_in_with": browser.signed_in_with, "session_id": opened.session_id,
                 "surface_id": opened.surface_id}
        notice = request.cookies.get(cookie_of(request, NOTICE_COOKIE))
        if notice is None:
            return JSONResponse(reply)
        # Passkeys added since the previous sign-in, left by a sign-in that redirected here: shown once.
        fields = self.sessions.cookies.open(NOTICE_PURPOSE, notice, NOTICE_SECONDS)
        if fields and fields.get("sid") == browser.session_id and isinstance(fields.get("added"), list):
            reply["passkeys_added"] = [{"credential_id": str(p[0]), "created_at": str(p[1])}
                                       for p in fields["added"] if isinstance(p, list) and len(p) == 2]
        response = JSONResponse(reply)
        response.delete_cookie(cookie_of(request, NOTICE_COOKIE), path="/api/session", httponly=True, samesite="strict",
                               secure=self.secure_cookies)
        return response

    async def sign_in_with_link(self, request: Request) -> Response:
        """A one-time link's token (from the page's URL fragment): the broker says whom it is for, once; the
        person gets a new session and the registration options of a passkey enrollment."""
        body = await self._body(request)
        token = body.get("token")
        if not isinstance(token, str) or not 1 <= len(token) <= 200:
            raise ApiError(400, "TOKEN_INVALID", "token: the text after #token= in the link")
        redeemed = await self._call(self.capabilities.RedeemEnrollment, cap.RedeemEnrollmentRequest(token=token),
                                    timeout=15, service="capabilities")
        person = Person(redeemed.person.actor_id, redeemed.person.tenant_id, redeemed.person.display_name)
        if not person.valid():
            raise ApiError(502, "PERSON_INVALID", "the broker named a person web cannot hold in a session")
        shown = _as_dict(redeemed)
        signed_in = Response()  # the session's cookie, set before the reply's body (which needs the session)
        browser = await self.start_session(person, "link", request, signed_in)
        # Added since the previous sign-in by link (the broker's link records) or since the previous session of
        # any kind (its session records): both, once each.
        added = {p["credential_id"]: p for p in shown.get("passkeys_added", [])}
        for passkey in browser.passkeys_added:
            added.setdefault(passkey.credential_id, {"credential_id": passkey.credential_id,
                                                     "created_at": passkey.created_at})
        response = JSONResponse({
            "actor": person.actor_id, "tenant": person.tenant_id, "name": person.display_name,
            "passkeys": redeemed.passkeys, "enrollment": {
                "enrollment_id": redeemed.enrollment_id, "expires_at": shown["expires_at"],
                "options": json.loads(redeemed.registration_options_json),
                # A further passkey is confirmed by one of these (the broker refuses it otherwise).
                "existing_credential_ids": list(redeemed.existing_credential_ids)},
            # Passkeys added since the person's previous sign-in: the page tells them, so one they did not
            # add (someone holding a link made for them) does not go unnoticed.
            "passkeys_added": sorted(added.values(), key=lambda p: p["created_at"])})
        response.raw_headers.extend(h for h in signed_in.raw_headers if h[0] == b"set-cookie")
        return response

    async def sign_in_options(self, request: Request) -> Response:
        """How a person can sign in here: always a one-time link from the operator; the organisation's
        OpenID provider when one is configured."""
        return JSONResponse({"link": self.sign_in_hint, "oidc": self.oidc_login})

    async def register_passkey(self, request: Request) -> Response:
        """The authenticator's answer to the enrollment's options, for the broker to verify and keep."""
        body = await self._body(request)
        browser = await self.signed_in(request)
        enrollment_id, credential = body.get("enrollment_id"), body.get("credential")
        if not isinstance(enrollment_id, str) or not isinstance(credential, dict):
            raise ApiError(400, "PASSKEY_INVALID", "enrollment_id and credential (PublicKeyCredential.toJSON())")
        # An existing passkey's assertion over the enrollment, when the person has one; carried, never made here.
        registered = await self._call(self.capabilities.RegisterPasskey, cap.RegisterPasskeyRequest(
            actor=self.assertions.of(browser.person), enrollment_id=enrollment_id[:200],
            credential_json=json.dumps(credential), existing_passkey=_passkey_assertion(body.get("existing_passkey"))),
            timeout=15, service="capabilities")
        return JSONResponse(_as_dict(registered) | {"passkeys": registered.passkeys})

    async def sign_out(self, request: Request) -> Response:
        await self._body(request)  # same-origin JSON only, like every other change
        # Ended at the broker first: a cookie someone copied stops working on every replica, not only here.
        browser = await self.sessions.end(request.cookies.get(cookie_of(request)))
        if browser is not None:
            for key in [key for key in self._host_sessions if key[0] == browser.session_id]:
                del self._host_sessions[key]
        response = JSONResponse({"signed_out": True})
        response.delete_cookie(cookie_of(request), path="/", httponly=True, samesite="strict",
                               secure=self.secure_cookies)
        return response

    async def ask(self, request: Request) -> Response:
        """A turn lives as long as its ask stream, and that stream is not resumable: when the browser (or the
        replica serving it) goes away the agent cancels the turn. Nothing is lost by it: what the turn
        committed is on the surface, which the surface stream resumes on any replica from its cursor, and
        approvals it asked for stay listed; the page tells the person so and they can ask again."""
        asked = read(AskBody, await self._body(request))
        browser, session = await self._session(request)
        turn = agent_pb2.StartTurnRequest(
            actor=self.assertions.of(browser.person), session_id=session.session_id, question=asked.question,
            request_id=asked.request_id)

        async def events() -> AsyncIterator[ServerSentEvent]:
            # Started here, inside the stream, so its `finally` runs whenever the browser leaves.
            stream = self.agent.StartTurn(turn, timeout=300)
            try:
                async for event in stream:
                    yield _event(_as_dict(event))
            except grpc.aio.AioRpcError as exc:  # the turn could not run: say why, in the stream
                refused = _refused(exc, "agent")
                yield _error_event(refused.reason, refused.message)
            finally:
                stream.cancel()  # the browser went away: cancel the turn and its tool calls

        return event_stream(self._while_signed_in(request, events()), self.keepalive_seconds)

    async def chat(self, request: Request) -> Response:
        """A turn as the AI SDK's UI message stream, for apps built on `useChat` (ai_sdk_chat.py). Like
        /api/ask, the turn lives as long as the stream: a client that goes away (useChat's stop) cancels it."""
        body = await self._body(request)
        question = question_of(body)
        if question is None:
            raise ApiError(400, "QUESTION_INVALID", "messages: the last user message needs a text part")
        question = checked(QUESTION, question, "messages")
        browser, session = await self._session(request)
        actor = self.assertions.of(browser.person)
        surface = request.query_params.get("surface", "")
        parts = TurnParts(session.session_id, f"/?surface={surface}" if surface else "/")
        turn = agent_pb2.StartTurnRequest(actor=actor, session_id=session.session_id, question=question)
        subscribe = host_pb2.SubscribeRequest(actor=actor, session_id=session.session_id,
                                              surface_id=session.surface_id, max_envelopes=SSE_BATCH)

        async def events() -> AsyncIterator[ServerSentEvent]:
            async for part in turn_parts(self.agent, self.host, turn, subscribe, parts):
                yield _ui_part(part)

        def ending(refused: SessionRefused) -> list[ServerSentEvent]:  # the message ends as a failed turn's does
            return [_ui_part(part) for part in (parts.error(refused.reason, refused.message),
                                                parts.finish(common_pb2.TURN_OUTCOME_FAILED), UI_MESSAGE_STREAM_DONE)]

        return event_stream(self._while_signed_in(request, events(), ending), self.keepalive_seconds,
                            UI_MESSAGE_STREAM_HEADERS)

    async def outline(self, request: Request) -> Response:
        """What this data can answer, as labels, and questions to start with (the page's empty state)."""
        browser = await self.signed_in(request)
        described = await self._call(self.agent.Outline, agent_pb2.OutlineRequest(
            actor=self.assertions.of(browser.person)), timeout=15, service="agent")
        return JSONResponse({"dataset": described.dataset_label,
                             "suggested_questions": list(described.suggested_questions),
                             "entities": [{"label": e.label, "description": e.description,
                                           "measures": list(e.measures), "dimensions": list(e.dimensions)}
                                          for e in described.entities]})

    async def turns(self, request: Request) -> Response:
        """The conversation so far, newest first, a page at a time (`?before=<turn id>`, `?limit=`)."""
        before = checked(OPTIONAL_PLAIN_ID, request.query_params.get("before", ""), "before")
        limit = request.query_params.get("limit", "0")
        if not limit.isdigit() or len(limit) > 3:  # (its bound is the host's contract: FIELD_INVALID)
            raise ApiError(400, "LIMIT_INVALID", "limit: a whole number (none or 0: the host's default page)")
        browser, session = await self._session(request)
        listed = await self._call(self.host.ListTurns, host_pb2.ListTurnsRequest(
            actor=self.assertions.of(browser.person), session_id=session.session_id, limit=int(limit),
            before_turn_id=before), timeout=15, service="host")
        return JSONResponse({"turns": [_as_dict(t) for t in listed.turns], "next_before": listed.next_before_turn_id})

    async def revision(self, request: Request) -> Response:
        """An answer of the conversation as it was shown: its A2UI messages (no rows: its blocks ask for their
        windows, read-only, naming this revision)."""
        revision_id = checked(PLAIN_ID, request.path_params["revision_id"], "revision_id")
        browser, session = await self._session(request)
        revision = (await self._call(self.host.GetRevision, host_pb2.GetRevisionRequest(
            actor=self.assertions.of(browser.person), session_id=session.session_id, revision_id=revision_id),
            timeout=15, service="host")).revision
        return JSONResponse({"revision_id": revision.revision_id, "turn_id": revision.turn_id,
                             "messages": [json.loads(m) for m in revision.a2ui_messages_json]})

    async def cancel_turn(self, request: Request) -> Response:
        """The person's Cancel: the agent stops the turn; what it committed stays on the surface."""
        await self._body(request)  # same-origin JSON only, like every other change
        turn_id = checked(PLAIN_ID, request.path_params["turn_id"], "turn_id")
        browser = await self.signed_in(request)
        cancelled = await self._call(self.agent.CancelTurn, agent_pb2.CancelTurnRequest(
            actor=self.assertions.of(browser.person), turn_id=turn_id, reason="cancelled by the person"),
            timeout=CANCEL_SECONDS, service="agent")
        return JSONResponse(_as_dict(cancelled) | {"cancelled": cancelled.cancelled})

    async def surface_stream(self, request: Request) -> Response:
        # The cursor is the host's own (each event's `id:`), so any replica resumes it exactly: the host
        # replays what follows it, or says snapshot-required. EventSource's Last-Event-ID is newer than
        # the `?after=` the page opened the stream with, so it wins. Checked before anything else is done.
        last = request.headers.get("last-event-id") or request.query_params.get("after")
        resume_after = _cursor(last) if last else None
        browser, session = await self._session(request)
        if request.method == "HEAD":  # answered without a body: it watches nothing
            return Response(headers={"content-type": "text/event-stream; charset=utf-8"})
        person = browser.person
        key = ViewerKey(person.actor_id, person.tenant_id, session.session_id, session.surface_id)
        try:
            viewer = await self.feeds.join(key, lambda: self.assertions.of(person), resume_after)
        except grpc.aio.AioRpcError as exc:  # the host refused this viewer (or could not say): as a stream's error
            return event_stream(_once(_encoded_refusal(exc)), self.keepalive_seconds)
        cookie = request.cookies.get(cookie_of(request))

        async def until_ended() -> list[bytes]:
            return [event.encode() for event in _session_ended(await self.sessions.until_ended(cookie))]

        return FeedResponse(self.feeds, viewer, until_ended)

    async def command(self, request: Request) -> Response:
        try:
            command = client_command(await self._body(request))
        except Refusal as exc:
            raise ApiError(400, exc.reason, exc.message) from None
        browser, session = await self._session(request)
        command.actor.CopyFrom(self.assertions.of(browser.person))
        command.session_id, command.surface_id = session.session_id, session.surface_id
        reply = await self._call(self.host.SendCommand, command, service="host")
        return JSONResponse(_as_dict(reply))

    async def approvals(self, request: Request) -> Response:
        browser = await self.signed_in(request)
        listed = await self._call(self.capabilities.ListApprovals, cap.ListApprovalsRequest(
            actor=self.assertions.of(browser.person), page_size=APPROVALS_PAGE), service="capabilities")
        return JSONResponse(_as_dict(listed))

    async def approval(self, request: Request) -> Response:
        browser = await self.signed_in(request)
        card = await self._call(self.capabilities.GetApproval, cap.GetApprovalRequest(
            actor=self.assertions.of(browser.person), approval_id=request.path_params["approval_id"]),
            service="capabilities")
        return JSONResponse(_as_dict(card.card))

    async def begin_decision(self, request: Request) -> Response:
        """A nonce for signing one decision, and the person's passkeys to sign it with (none: enroll first)."""
        await self._body(request)
        browser = await self.signed_in(request)
        try:
            begun = await self.capabilities.BeginDecision(cap.BeginDecisionRequest(
                actor=self.assertions.of(browser.person), approval_id=request.path_params["approval_id"]),
                timeout=30)
        except grpc.aio.AioRpcError as exc:
            return _refused_decision(exc)
        return JSONResponse(_as_dict(begun) | {"credential_ids": list(begun.credential_ids),
                                               "enroll_hint": self.enroll_hint(browser.person)})

    def enroll_hint(self, person: Person) -> str:
        return (f"Approving needs a passkey, and you have none yet. Ask your operator for a one-time link: "
                f"tessera persons enroll {person.actor_id} --tenant {person.tenant_id}")

    async def decide(self, request: Request) -> Response:
        body = await self._body(request)
        browser = await self.signed_in(request)
        decision = read(DecisionBody, body)
        passkey = _passkey_assertion(body.get("passkey"))
        try:
            decided = await self.capabilities.Decide(cap.DecideRequest(
                actor=self.assertions.of(browser.person), approval_id=request.path_params["approval_id"],
                decision=cap.DECISION_APPROVE if decision.approve else cap.DECISION_REJECT,
                reason=decision.reason or "", arguments_sha256=decision.arguments_sha256,
                entries=[cap.EntryDecision(entry_id=e, decision=cap.DECISION_APPROVE) for e in decision.entries],
                decision_id=decision.decision_id, nonce=decision.nonce, passkey=passkey), timeout=60)
        except grpc.aio.AioRpcError as exc:
            return _refused_decision(exc)
        return JSONResponse(_as_dict(decided))

    async def report(self, request: Request) -> Response:
        """A problem the page ran into (a refused block, a window that failed): into web's log."""
        body = await self._body(request)
        await self.signed_in(request)
        log(logger, logging.WARNING, "browser reported a problem", kind=str(body.get("kind", ""))[:64],
            detail=str(body.get("detail", ""))[:500])
        return Response(status_code=204)

    def routes(self) -> list[Route]:
        return [Route("/api/session", self.session), Route("/api/ask", self.ask, methods=["POST"]),
                Route("/api/chat", self.chat, methods=["POST"]),
                Route("/api/surface/stream", self.surface_stream), Route("/api/commands", self.command,
                                                                         methods=["POST"]),
                Route("/api/turns", self.turns), Route("/api/revisions/{revision_id}", self.revision),
                Route("/api/turns/{turn_id}/cancel", self.cancel_turn, methods=["POST"]),
                Route("/api/outline", self.outline),
                Route("/api/approvals", self.approvals),
                Route("/api/approvals/{approval_id}", self.approval),
                Route("/api/approvals/{approval_id}/challenge", self.begin_decision, methods=["POST"]),
                Route("/api/approvals/{approval_id}/decision", self.decide, methods=["POST"]),
                Route("/api/sign-in/link", self.sign_in_with_link, methods=["POST"]),
                Route("/api/sign-in/options", self.sign_in_options),
                Route("/api/sign-out", self.sign_out, methods=["POST"]),
                Route("/api/passkeys", self.register_passkey, methods=["POST"]),
                Route("/api/report", self.report, methods=["POST"])]


def _refused_decision(exc: grpc.aio.AioRpcError) -> JSONResponse:
    """A refused decision (or challenge): for an approval that already ended, with how it ended (the page
    shows that outcome); anything else as the refusal it is."""
    details = error_details(exc, "capabilities")
    if details.reason in _DECIDED_ALREADY:
        return JSONResponse({"reason": details.reason, "message": details.message, "outcome": details.metadata},
                            status_code=_HTTP[exc.code()])
    raise ApiError(_status(details), details.reason, details.message) from None


async def api_error(request: Request, exc: ApiError) -> JSONResponse:
    return JSONResponse({"reason": exc.reason, "message": exc.message}, status_code=exc.status)


async def body_invalid(request: Request, exc: BodyInvalid) -> JSONResponse:
    """A value out of its contract's bounds, refused as the services refuse it: FIELD_INVALID, with where."""
    return JSONResponse({"reason": "FIELD_INVALID", "message": str(exc), "pointer": exc.pointer}, status_code=400)
