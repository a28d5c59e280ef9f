"""Stopping a turn wherever it runs.

Each agent replica keeps its running turns in memory, and a CancelTurn may reach any replica. The one running
the turn stops it at once; any other records the request with the turn at the host (RequestTurnCancel) and
waits, a bounded time, for the turn to end, while every replica running turns asks the host a few times a
second which of them were asked to stop (CancelledTurns) and stops those.
"""

from __future__ import annotations

import asyncio
import logging
import time

import grpc

from services.agent.turn import RunningTurn
from shared.errors import TesseraError, error_details
from shared.logs import log
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2

logger = logging.getLogger("tessera.agent.cancels")
POLL_SECONDS = 0.25  # how often a replica running turns asks which to stop (a stop lands within about this)
WAIT_SECONDS = 10.0  # how long a CancelTurn that reached another replica waits for the turn to end
TURNS_PER_ASK = 256  # host.proto: CancelledTurns takes at most this many ids


def stop(turn: RunningTurn) -> None:
    turn.cancel_requested = True
    if turn.task is not None:
        turn.task.cancel()


def running_here(running: dict[str, RunningTurn], turn_id: str) -> RunningTurn | None:
    turn = running.get(turn_id)
    return turn if turn is not None and turn.task is not None and not turn.task.done() else None


async def cancel_elsewhere(host, request: agent_pb2.CancelTurnRequest,
                           wait_seconds: float = WAIT_SECONDS) -> agent_pb2.CancelTurnResponse:
    """The turn runs on another replica, or nowhere: ask the host to have it stopped, and answer once it ended."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            state = await host.RequestTurnCancel(host_pb2.RequestTurnCancelRequest(
                actor=request.actor, turn_id=request.turn_id), timeout=10)
        except grpc.aio.AioRpcError as exc:
            details = error_details(exc, "host")
            if details.reason == "TURN_UNKNOWN":
                return agent_pb2.CancelTurnResponse(cancelled=False)  # as for a turn that is not running
            raise TesseraError(exc.code(), details.reason, details.message, details.metadata) from None
        if not state.running:
            return agent_pb2.CancelTurnResponse(cancelled=state.outcome == common_pb2.TURN_OUTCOME_CANCELLED,
                                                outcome=state.outcome)
        if time.monotonic() >= deadline:
            raise TesseraError(grpc.StatusCode.UNAVAILABLE, "TURN_NOT_STOPPED",
                               f"the stop was recorded, but the turn has not ended in {wait_seconds:g} s: the agent "
                               "running it may have gone away; ask again to see whether it ended",
                               {"turn_id": request.turn_id})
        await asyncio.sleep(POLL_SECONDS)


async def stop_requested_turns(running: dict[str, RunningTurn], host) -> None:
    """Background work of a replica: stop the turns it runs that someone asked, at any replica, to stop."""
    while True:
        await asyncio.sleep(POLL_SECONDS)
        live = [turn_id for turn_id in list(running) if running_here(running, turn_id)]
        for start in range(0, len(live), TURNS_PER_ASK):
            try:
                asked = await host.CancelledTurns(host_pb2.CancelledTurnsRequest(
                    turn_ids=live[start:start + TURNS_PER_ASK]), timeout=5)
            except grpc.aio.AioRpcError as exc:  # asked again next round; a local CancelTurn still works
                log(logger, logging.WARNING, "cannot ask the host which turns to stop",
                    problem=error_details(exc, "host").message)
                break
            for turn_id in asked.turn_ids:
                turn = running_here(running, turn_id)
                if turn is not None:
                    log(logger, logging.INFO, "turn stopped: its stop was asked at another replica", turn_id=turn_id)
                    stop(turn)
