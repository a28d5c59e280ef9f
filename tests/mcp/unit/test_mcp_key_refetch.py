"""Unverifiable tokens do not make the MCP front flood the authorization server with key fetches.

A real authorization server on a local port counts every request for its discovery document and key set;
the front's clock is the test's, so "once the bound allows" needs no waiting.
"""

from __future__ import annotations

import asyncio

import pytest

from services.mcp.issuer_keys import UNKNOWN_KID_SECONDS, IssuerKeys
from services.mcp.oauth import JwtAccessTokens, TokenPolicy
from tests.fixtures.authorization_server import AuthorizationServer, serving_authorization_server

RESOURCE = "http://127.0.0.1:8090/mcp"
REFETCH_SECONDS = 60
BAD_TOKENS = 50


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def issuer():
    with serving_authorization_server() as server:
        yield server


def front(server: AuthorizationServer, clock: Clock, refetch_seconds: float = REFETCH_SECONDS,
          **bounds) -> JwtAccessTokens:
    policy = TokenPolicy(server.issuer, RESOURCE, ("tessera.data",), "sub", "tenant", "", "name")
    return JwtAccessTokens(policy, IssuerKeys(server.issuer, refetch_seconds, clock, **bounds))


def good_token(server: AuthorizationServer, subject: str = "ada") -> str:
    return server.token(audience=RESOURCE, subject=subject)


def tokens_with_unknown_kids(server: AuthorizationServer, count: int = BAD_TOKENS, prefix: str = "forged") -> list[str]:
    return [server.token(audience=RESOURCE, subject="mallory", key=server.new_key(f"{prefix}-{n}"))
            for n in range(count)]


def fetches(server: AuthorizationServer) -> int:
    """Outbound requests the front made to the authorization server (discovery document and key set)."""
    return sum(server.requests.values())


def test_fifty_tokens_with_unknown_key_ids_cost_one_refetch(issuer):
    clock = Clock()
    tokens = front(issuer, clock)

    async def scenario():
        assert (await tokens.verify_token(good_token(issuer))).subject == "ada"
        warmed = fetches(issuer)
        assert warmed == 2  # the discovery document, then the key set
        clock.now += REFETCH_SECONDS  # the keys are old enough that an unknown key id may refetch them
        refused = [await tokens.verify_token(bad) for bad in tokens_with_unknown_kids(issuer)]
        return warmed, refused

    warmed, refused = asyncio.run(scenario())
    assert refused == [None] * BAD_TOKENS
    assert fetches(issuer) - warmed == 1  # the first unknown key id refetched the key set; the bound held the rest
    assert issuer.requests["/jwks"] == 2


def test_concurrent_tokens_with_unknown_key_ids_share_one_fetch(issuer):
    tokens = front(issuer, Clock())

    async def scenario():
        # A cold front: nobody has fetched the keys yet, and fifty unverifiable tokens arrive at once.
        return await asyncio.gather(*(tokens.verify_token(bad) for bad in tokens_with_unknown_kids(issuer)))

    assert asyncio.run(scenario()) == [None] * BAD_TOKENS
    assert dict(issuer.requests) == {"/.well-known/oauth-authorization-server": 1, "/jwks": 1}


def test_a_rotated_key_is_accepted_once_the_bound_allows(issuer):
    clock = Clock()
    tokens = front(issuer, clock)

    async def scenario():
        assert await tokens.verify_token(good_token(issuer)) is not None
        assert await tokens.verify_token(tokens_with_unknown_kids(issuer, 1)[0]) is None  # spends the refetch
        issuer.rotate("test-2")
        rotated = good_token(issuer, "grace")
        before = issuer.requests["/jwks"]
        clock.now += REFETCH_SECONDS / 2
        assert await tokens.verify_token(rotated) is None  # within the bound: not fetched, not accepted yet
        assert issuer.requests["/jwks"] == before
        clock.now += REFETCH_SECONDS / 2 + 1
        accepted = await tokens.verify_token(rotated)
        assert accepted is not None and accepted.subject == "grace"
        assert issuer.requests["/jwks"] == before + 1
        # From now on the new key is in hand: its tokens cost no fetch at all.
        assert await tokens.verify_token(good_token(issuer, "hopper")) is not None
        assert issuer.requests["/jwks"] == before + 1

    asyncio.run(scenario())


def test_an_unknown_key_id_is_remembered_and_forgotten_after_its_time(issuer):
    clock = Clock()
    tokens = front(issuer, clock, refetch_seconds=1)
    forged = tokens_with_unknown_kids(issuer, 1)[0]

    async def scenario():
        assert await tokens.verify_token(good_token(issuer)) is not None
        assert await tokens.verify_token(forged) is None
        after_first = issuer.requests["/jwks"]
        clock.now += 2  # the refetch bound has passed, but this key id is known not to exist
        assert await tokens.verify_token(forged) is None
        assert issuer.requests["/jwks"] == after_first
        clock.now += UNKNOWN_KID_SECONDS  # forgotten: the server is asked once more
        assert await tokens.verify_token(forged) is None
        assert issuer.requests["/jwks"] == after_first + 1

    asyncio.run(scenario())


def test_the_memory_of_unknown_key_ids_is_bounded(issuer):
    clock = Clock()
    tokens = front(issuer, clock, refetch_seconds=1, max_unknown_kids=3)
    forged = tokens_with_unknown_kids(issuer, 5)

    async def scenario():
        for token in forged:
            clock.now += 2  # each may refetch, so each key id is found unknown and remembered
            assert await tokens.verify_token(token) is None
        asked = issuer.requests["/jwks"]
        clock.now += 2
        assert await tokens.verify_token(forged[-1]) is None  # still remembered: no fetch
        assert issuer.requests["/jwks"] == asked
        clock.now += 2
        assert await tokens.verify_token(forged[0]) is None  # the oldest was forgotten: fetched again
        assert issuer.requests["/jwks"] == asked + 1

    asyncio.run(scenario())
