"""The authorization server's published signing keys, as the MCP front holds them (oauth.py checks tokens).

The key set is found through the server's RFC 8414 or OpenID discovery document and kept for an hour. A
token signed with a key id the set lacks may mean the server rotated its keys, so the set is fetched again;
but a stream of unverifiable tokens must not become a stream of requests to the server:

- at most one fetch begins per `refetch_seconds`, however many tokens ask; tokens that ask while a fetch
  is on its way wait for that one;
- a key id that a fetch begun after it was seen did not publish is refused without asking again for
  UNKNOWN_KID_SECONDS (at most MAX_UNKNOWN_KIDS of them are remembered, the oldest forgotten first).

A genuinely new key is therefore picked up by the first token signed with it once the bound allows.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from shared.logs import log

logger = logging.getLogger("tessera.mcp")
KEYS_SECONDS = 3600  # how long a fetched key set (and the discovery document naming it) is used
UNKNOWN_KID_SECONDS = 300
MAX_UNKNOWN_KIDS = 1024
FETCH_TIMEOUT_SECONDS = 10


def discovery_urls(issuer: str) -> list[str]:
    """Where the authorization server describes itself: RFC 8414 first, then OpenID Connect discovery."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return [f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{path}",
            f"{issuer.rstrip('/')}/.well-known/openid-configuration"]


def _publishes(keys: KeySet, kid: str | None) -> bool:
    try:
        keys.get_by_kid(kid)
    except JoseError:
        return False
    return True


class IssuerKeys:
    """The key set of one issuer, fetched within the bounds above."""

    def __init__(self, issuer: str, refetch_seconds: float, clock: Callable[[], float] = time.monotonic,
                 max_unknown_kids: int = MAX_UNKNOWN_KIDS) -> None:
        self.issuer = issuer
        self.refetch_seconds = refetch_seconds
        self._clock = clock
        self._max_unknown_kids = max_unknown_kids
        self._keys: KeySet | None = None
        self._keys_asked_at = -math.inf  # when the fetch that brought the current set began
        self._jwks_uri: str | None = None
        self._last_attempt = -math.inf  # when the latest fetch began, whether it worked or not
        self._fetching: asyncio.Task | None = None
        # SHA-256 of a key id (a token's header is the sender's to fill) -> refused without a fetch until then
        self._unknown: OrderedDict[bytes, float] = OrderedDict()

    async def current(self) -> KeySet | None:
        """The key set to check a token against: fetched first when there is none yet or it is old."""
        if self._keys is None or self._clock() - self._keys_asked_at > KEYS_SECONDS:
            await self._refresh()
        return self._keys

    async def with_key(self, kid: str | None) -> KeySet | None:
        """A key set that publishes `kid`, fetched anew if the bound allows; None when there is none."""
        digest = hashlib.sha256((kid or "").encode()).digest()
        asked = self._clock()
        if self._unknown.get(digest, -math.inf) > asked:
            return None
        await self._refresh()
        if self._keys is not None and _publishes(self._keys, kid):
            self._unknown.pop(digest, None)
            return self._keys
        if self._keys_asked_at >= asked:  # the server was asked after this key id was seen: it has no such key
            self._unknown[digest] = self._clock() + UNKNOWN_KID_SECONDS
            self._unknown.move_to_end(digest)
            while len(self._unknown) > self._max_unknown_kids:
                self._unknown.popitem(last=False)
        return None

    async def _refresh(self) -> None:
        """Join the fetch on its way, or begin one if none began within the bound; otherwise keep what we have."""
        if self._fetching is None:
            now = self._clock()
            if now - self._last_attempt < self.refetch_seconds:
                return
            self._last_attempt = now
            self._fetching = asyncio.ensure_future(self._fetch(now))
            self._fetching.add_done_callback(self._fetch_ended)
        # Shielded: a waiter whose request is cancelled does not cancel the fetch the others wait for.
        await asyncio.shield(self._fetching)

    def _fetch_ended(self, task: asyncio.Task) -> None:
        if self._fetching is task:
            self._fetching = None

    async def _fetch(self, asked_at: float) -> None:
        try:
            async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS, trust_env=False) as client:
                if self._jwks_uri is None or asked_at - self._keys_asked_at > KEYS_SECONDS:
                    self._jwks_uri = await self._discover(client)
                reply = await client.get(self._jwks_uri)
                reply.raise_for_status()
                keys = KeySet.import_key_set(reply.json())
        except (httpx.HTTPError, httpx.InvalidURL, LookupError, JoseError, ValueError, TypeError,
                AttributeError) as exc:
            self._jwks_uri = None  # perhaps it moved: read the discovery document again next time
            log(logger, logging.WARNING, "authorization server keys unavailable", error=type(exc).__name__)
            return
        self._keys, self._keys_asked_at = keys, asked_at

    async def _discover(self, client: httpx.AsyncClient) -> str:
        for url in discovery_urls(self.issuer):
            try:
                reply = await client.get(url)
                found = reply.json() if reply.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                continue
            if isinstance(found, dict) and found.get("issuer") == self.issuer \
                    and isinstance(found.get("jwks_uri"), str):
                return found["jwks_uri"]
        raise LookupError("the authorization server published no usable metadata")
