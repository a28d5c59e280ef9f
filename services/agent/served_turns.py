"""Turns of an outside agent's model (agent.ServeTools, for the MCP front).

The outside model calls the six data tools one at a time; each call goes through the same
`Turn` as the built-in model's: one bridge (duplicate ids, call limit, bounded JSON, schema
checks), the same turn state (capability token, offers, frozen slice, repairs) and the same
result shapes, so it sees exactly what the built-in model sees and nothing else. Calls run in
the order they arrive: the turn state is one conversation's, not a pool's.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from services.agent.contracts import CONTRACTS, TOOL_NAMES
from services.agent.peers import Peers
from services.agent.tools import TurnState, model_message
from services.agent.turn import ModelTranscript, Turn, begin_turn
from shared.data.bounded_json import canonical
from shared.identity.actors import ActorVerifier
from shared.rpc.refusals import Invalid
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2

# Only present_ui changes anything: it commits to the person's surface.
READ_ONLY_TOOLS = frozenset(TOOL_NAMES) - {"present_ui"}


def data_tools() -> list[agent_pb2.DataTool]:
    """The six tools as an outside model is offered them: our descriptions, input and output schemas."""
    return [agent_pb2.DataTool(name=name, description=contract.description,
                               input_schema_json=canonical(contract.input_schema),
                               output_schema_json=canonical(contract.output_schema),
                               read_only=name in READ_ONLY_TOOLS)
            for name, contract in CONTRACTS.items()]


async def serve_tools(requests: AsyncIterator[agent_pb2.ServeToolsRequest], actors: ActorVerifier, peers: Peers,
                      transcript: ModelTranscript) -> AsyncIterator[agent_pb2.ServeToolsResponse]:
    """Open the turn from the first request, answer each call, and end with `done` when the requests end."""
    opening = await anext(aiter(requests), None)
    if opening is None or opening.WhichOneof("request") != "open":
        raise Invalid("TURN_NOT_OPENED", "the first request of ServeTools opens the turn (open), and only the first")
    opened = opening.open
    actors.require(opened.actor)
    started_at = time.perf_counter()
    begun = await begin_turn(agent_pb2.StartTurnRequest(actor=opened.actor, session_id=opened.session_id,
                                                        question=opened.question, request_id=opened.request_id),
                             peers.host)
    turn = Turn(opened.question, begun, TurnState(opened.actor, opened.session_id, begun.turn_id,
                                                  begun.surface_id, begun.base_revision_id),
                peers, started_at, transcript)
    turn.use_data_tools_only()
    yield _event(turn.event(started=agent_pb2.TurnStarted(
        turn_id=begun.turn_id, surface_id=begun.surface_id, base_revision_id=begun.base_revision_id)))
    turn.transcript.record(begun.turn_id, "question", opened.question)
    try:
        async for request in requests:
            if request.WhichOneof("request") != "call":
                raise Invalid("TURN_ALREADY_OPEN", "the turn is open: every later request is a call")
            call = request.call
            result = await turn.call_raw(call.call_id, call.tool, call.arguments_json)
            while not turn.events.empty():  # its steps, commits and notices, in order, before its result
                yield _event(turn.events.get_nowait())
            yield agent_pb2.ServeToolsResponse(result=agent_pb2.ToolCallResult(
                call_id=call.call_id, ok=result.ok, model_message_json=model_message(result)))
    finally:  # whatever ends the turn, nothing more reaches a model and running calls stop
        turn.bridge.close()
    state = turn.state
    done = agent_pb2.TurnDone(
        outcome=common_pb2.TURN_OUTCOME_ANSWERED if state.revisions else common_pb2.TURN_OUTCOME_NOT_ANSWERABLE,
        revision_ids=state.revisions, degraded=bool(state.degraded), tainted=state.tainted, flagged=state.flagged,
        elapsed=turn.elapsed())
    await turn.record_end(done)
    yield _event(turn.event(done=done))


def _event(event: agent_pb2.StartTurnResponse) -> agent_pb2.ServeToolsResponse:
    return agent_pb2.ServeToolsResponse(turn_event=event)
