"""Stopping a turn wherever it runs.

Each agent replica keeps its running turns in memory, and a CancelTurn may reach any replica. The one running
the turn stops it at once; any other records the request with the turn at the host (RequestTurnCancel) and
waits, within its caller's deadline, for the turn to end, while every replica running turns asks the host a few
times a second which of them were asked to stop (CancelledTurns, which also tells the host they still run) and
stops those. A turn no replica reports is answered at once: nothing runs it.
"""

from __future__ import annotations

import asyncio
import logging
import time

import grpc

from services.agent.turn import RunningTurn
from shared.logs import log
from shared.rpc.errors import error_details, relayed
from shared.rpc.field_rules import stated
from shared.rpc.refusals import Unavailable
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2

logger = logging.getLogger("tessera.agent.cancels")
POLL_SECONDS = 0.25  # how often a replica running turns asks which to stop (a stop lands within about this)
# How long a CancelTurn that reached another replica waits for the turn to end (less, when its caller's deadline is
# nearer): a stopping turn first withdraws what it asked people to approve (up to 10 s).
WAIT_SECONDS = 15.0
DEADLINE_MARGIN_SECONDS = 1.0  # the answer must reach the caller before its deadline does
TURNS_PER_ASK = stated(host_pb2.CancelledTurnsRequest, "turn_ids", "max_items")  # the host's bound (host.proto)


def stop(turn: RunningTurn) -> None:
    turn.cancel_requested = True
    if turn.task is not None:
        turn.task.cancel()


def running_here(running: dict[str, RunningTurn], turn_id: str) -> RunningTurn | None:
    turn = running.get(turn_id)
    return turn if turn is not None and turn.task is not None and not turn.task.done() else None


async def cancel_elsewhere(host, request: agent_pb2.CancelTurnRequest,
                           wait_seconds: float = WAIT_SECONDS) -> agent_pb2.CancelTurnResponse:
    """The turn runs on another replica, or nowhere: ask the host to have it stopped, and answer once it ended
    (or at once, when no replica runs it)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            state = await host.RequestTurnCancel(host_pb2.RequestTurnCancelRequest(
                actor=request.actor, turn_id=request.turn_id),
                timeout=max(0.5, min(10.0, deadline - time.monotonic())))
        except grpc.aio.AioRpcError as exc:
            if error_details(exc, "host").reason == "TURN_UNKNOWN":
                return agent_pb2.CancelTurnResponse(cancelled=False)  # as for a turn that is not running
            raise relayed(exc, "host") from None
        if not state.running:
            return agent_pb2.CancelTurnResponse(cancelled=state.outcome == common_pb2.TURN_OUTCOME_CANCELLED,
                                                outcome=state.outcome)
        if time.monotonic() >= deadline:
            raise Unavailable("TURN_NOT_STOPPED",
                              f"the stop was recorded and the turn is still stopping after {wait_seconds:g} s; ask "
                              "again to see whether it ended", {"turn_id": request.turn_id})
        await asyncio.sleep(POLL_SECONDS)


def wait_within(remaining: float | None) -> float:
    """How long to wait for a turn to end, given the caller's time left (None: no deadline)."""
    return WAIT_SECONDS if remaining is None else max(0.0, min(WAIT_SECONDS, remaining - DEADLINE_MARGIN_SECONDS))


async def stop_requested_turns(running: dict[str, RunningTurn], host) -> None:
    """Background work of a replica: stop the turns it runs that someone asked, at any replica, to stop."""
    failing = False  # one log line per outage, not four a second
    while True:
        await asyncio.sleep(POLL_SECONDS)
        live = [turn_id for turn_id in list(running) if running_here(running, turn_id)]
        try:
            for start in range(0, len(live), TURNS_PER_ASK):
                asked = await host.CancelledTurns(host_pb2.CancelledTurnsRequest(
                    turn_ids=live[start:start + TURNS_PER_ASK]), timeout=5)
                for turn_id in asked.turn_ids:
                    turn = running_here(running, turn_id)
                    if turn is not None:
                        log(logger, logging.INFO, "turn stopped: its stop was asked at another replica",
                            turn_id=turn_id)
                        stop(turn)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - asked again next round; a stop asked here still works meanwhile
            if not failing:
                problem = error_details(exc, "host").message if isinstance(exc, grpc.RpcError) else repr(exc)
                log(logger, logging.WARNING, "cannot ask the host which turns to stop; asking again",
                    problem=problem)
            failing = True
            continue
        if failing:
            log(logger, logging.INFO, "the host answers again which turns to stop")
        failing = False
