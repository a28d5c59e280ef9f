"""`tessera ask`: one question through the agent, as a person at the terminal sees it."""

from __future__ import annotations

import contextlib
import json
import secrets
import sys
import webbrowser
from dataclasses import dataclass
from pathlib import Path

import grpc

from cli.answer import AnswerPrinter, answer_blocks, read_answer
from cli.formats import terminal_locale
from cli.launcher import cli_credentials, web_url
from cli.output import TABLE_ROWS, paged
from cli.persons import OPERATOR, enrollment_link
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke, invoke_stream
from shared.rpc.errors import error_details
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2

# A single call to the host (open a session, read a revision): long enough for a busy deployment, where the
# first call also makes the TLS handshake; the turn itself has its own, longer bound.
CALL_SECONDS = 30.0
_STATUS = {agent_pb2.TOOL_STEP_STATUS_OK: "ok", agent_pb2.TOOL_STEP_STATUS_FAILED: "failed",
           agent_pb2.TOOL_STEP_STATUS_UNAVAILABLE: "unavailable", agent_pb2.TOOL_STEP_STATUS_CANCELLED: "cancelled",
           agent_pb2.TOOL_STEP_STATUS_AWAITING_APPROVAL: "waiting"}


# `tessera ask`'s exit status (the README's operator CLI): a script tells outcomes apart without reading text.
EXIT_ANSWERED, EXIT_FAILED, EXIT_REFUSED, EXIT_NEEDS_APPROVAL = 0, 1, 3, 4
_OUTCOMES = {common_pb2.TURN_OUTCOME_ANSWERED: "answered", common_pb2.TURN_OUTCOME_NOT_ANSWERABLE: "refused",
             common_pb2.TURN_OUTCOME_FAILED: "failed", common_pb2.TURN_OUTCOME_CANCELLED: "cancelled"}


@dataclass(frozen=True)
class Asked:
    """How a question ended: the turn's last event and the approvals it left waiting for a person."""

    done: agent_pb2.TurnDone
    approvals: tuple[str, ...] = ()
    web_surface: str = ""  # the session's name at web (its `?surface=`), where `--open` shows it

    @property
    def exit_status(self) -> int:
        if self.approvals:
            return EXIT_NEEDS_APPROVAL
        if self.done.outcome == common_pb2.TURN_OUTCOME_ANSWERED:
            return EXIT_ANSWERED
        return EXIT_REFUSED if self.done.outcome == common_pb2.TURN_OUTCOME_NOT_ANSWERABLE else EXIT_FAILED


def ask(addresses: dict[str, str], cert_dir: Path, question: str, web_url: str = "",
        conversation: Path | None = None, follow_up: bool = False, as_json: bool = False,
        rows: int = TABLE_ROWS) -> Asked:
    """Ask in a new session, or with `follow_up` in the session recorded in `conversation` (the last one
    asked in), so "now only web" is read against the questions before it. With `as_json` the answer goes
    to standard output as one JSON document and the progress to standard error."""
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), *OPERATOR)
    credentials = cli_credentials(cert_dir, "cli")
    with sync_channel(addresses["host"], credentials, "host") as host, \
            sync_channel(addresses["agent"], credentials, "agent") as agent:
        try:
            return _ask(host, agent, person, question, web_url, conversation, follow_up, as_json, rows)
        except _Refused as refused:  # said once, in words; the turn counts as failed
            print(f"tessera: error: {refused}", file=sys.stderr)
            if as_json:
                print(json.dumps({"question": question, "outcome": "failed", "exit_status": EXIT_FAILED,
                                  "error": str(refused)}))
            return Asked(agent_pb2.TurnDone(outcome=common_pb2.TURN_OUTCOME_FAILED))


class _Refused(Exception):
    """A call of `ask` that failed, as the person reads it (reason: sentence)."""


@contextlib.contextmanager
def _calling(service: str):
    """Calls to `service`: a failure becomes its reason and sentence, naming the service where nobody
    answered (shared.rpc.errors), never gRPC's own text."""
    try:
        yield
    except grpc.RpcError as exc:
        details = error_details(exc, service)
        raise _Refused(f"{details.reason}: {details.message}") from None


def _ask(host, agent, person, question: str, web_url: str, conversation: Path | None, follow_up: bool,
         as_json: bool, rows: int) -> Asked:
    def say(line: str = "") -> None:  # progress: beside the JSON, never inside it
        print(line, file=sys.stderr if as_json else sys.stdout, flush=True)

    with _calling("host"):
        session, web_surface = _session(host, person, conversation if follow_up else None)
    if conversation is not None:
        conversation.parent.mkdir(parents=True, exist_ok=True)
        conversation.write_text(json.dumps({"session_id": session.session_id, "surface_id": session.surface_id,
                                            "web_surface": web_surface}) + "\n")
    say(f"? {question}")
    say(f"  session {session.session_id}, surface {session.surface_id}")
    done, approvals = _turn(agent, person, session.session_id, question, say)
    say(f"= {done.answer}")
    for offered in done.suggested_questions:  # what it can answer instead, nearest first
        say(f"  you could ask: {offered}")
    document = None
    for revision_id in done.revision_ids:
        with _calling("host"):
            revision = invoke(host, "host", "GetRevision", host_pb2.GetRevisionRequest(
                actor=person, session_id=session.session_id, revision_id=revision_id),
                timeout=CALL_SECONDS).revision
        document = json.loads(revision.document_json)
        outline = ", ".join(f"{b['component']}" + (" (bound)" if any(
            isinstance(v, dict) and "resource" in v for v in b["data"].values()) else "")
            for b in document["blocks"] if b["component"] != "Column")
        say(f"  surface {revision.surface_id}: {outline}")
    answer = None
    if document is not None:  # the last revision is what the surface shows now
        answer = read_answer(host, person, session.session_id, session.surface_id, done.revision_ids[-1],
                             document, rows)
    asked = Asked(done, tuple(approvals), web_surface)
    if as_json:
        print(json.dumps(_record(question, session, asked, answer), indent=2))
        return asked
    if answer is not None:
        print(flush=True)
        printer = AnswerPrinter()
        with paged(printer.console):  # a long table scrolls in the person's pager, not off the screen
            printer.show(answer)
    if web_url and done.revision_ids:
        # The browser has a session of its own: this surface belongs to the operator's session.
        print(f"\n  the browser at {web_url} asks in a session of its own; `--open` shows this answer there")
    if conversation is not None:
        print("  (ask a follow-up in this session with: tessera ask --follow-up \"...\")")
    return asked


def _turn(agent, person, session_id: str, question: str, say) -> tuple[agent_pb2.TurnDone, list[str]]:
    """Run the turn, saying each step as it ends; its last event, and the approvals it left waiting."""
    done, approvals = agent_pb2.TurnDone(), []
    with _calling("agent"):
        for event in invoke_stream(agent, "agent", "StartTurn", agent_pb2.StartTurnRequest(
                actor=person, session_id=session_id, question=question,
                request_id=f"ask-{secrets.token_hex(6)}"), timeout=300):
            kind = event.WhichOneof("event")
            if kind == "tool_step" and event.tool_step.phase == agent_pb2.TOOL_STEP_PHASE_FINISHED:
                step = event.tool_step
                if step.status == agent_pb2.TOOL_STEP_STATUS_AWAITING_APPROVAL and step.approval_id:
                    approvals.append(step.approval_id)
                say(f"  · {step.tool:<24} {_STATUS.get(step.status, '?'):<8} "
                    f"{step.elapsed.ToMilliseconds():>5} ms  {step.summary}")
            elif kind == "surface_committed":
                say(f"  ✓ committed {event.surface_committed.revision_id}")
            elif kind == "error":
                say(f"  ✗ {event.error.reason}: {event.error.message}")
            elif kind == "degraded":
                say(f"  ! {event.degraded.tool} unavailable: {event.degraded.message}")
            elif kind == "done":
                done = event.done
    return done, approvals


def _record(question: str, session, asked: Asked, answer) -> dict:
    """`tessera ask --json`: what the person would see, as data."""
    done = asked.done
    return {"question": question, "outcome": _OUTCOMES.get(done.outcome, "failed"),
            "exit_status": asked.exit_status, "answer": done.answer,
            "suggested_questions": list(done.suggested_questions), "approvals": list(asked.approvals),
            "session_id": session.session_id, "surface_id": session.surface_id,
            "revision_ids": list(done.revision_ids), "degraded": done.degraded, "tainted": done.tainted,
            "blocks": answer_blocks(answer, terminal_locale()) if answer is not None else [],
            "problem": answer.problem if answer is not None else ""}


def _session(host, person, conversation: Path | None) -> tuple[host_pb2.OpenSessionResponse, str]:
    """The recorded session to continue, or a new one; and its name for web (empty for a conversation recorded
    before sessions had one). The host keys a session by its request id per person, so web finds this one again
    for the same person only (`?surface=terminal-…`)."""
    if conversation is not None and conversation.exists():
        recorded = json.loads(conversation.read_text())
        return host_pb2.OpenSessionResponse(session_id=recorded["session_id"], surface_id=recorded["surface_id"]), \
            recorded.get("web_surface", "")
    web_surface = f"terminal-{secrets.token_hex(6)}"
    return invoke(host, "host", "OpenSession", host_pb2.OpenSessionRequest(actor=person, request_id=web_surface),
                  timeout=CALL_SECONDS), web_surface


def open_in_browser(addresses: dict[str, str], cert_dir: Path, web_surface: str, as_json: bool) -> None:
    """The answer `tessera ask` gave, in the browser, for the same person: a one-time link that signs the browser
    in as the operator and lands on the session asked in (printed too: the browser may be on another machine)."""
    say = sys.stderr if as_json else sys.stdout  # (never inside the JSON document)
    if not web_surface:
        print("  (this conversation began before `--open` could show it; ask without --follow-up to open it)",
              file=say)
        return
    enrollment = enrollment_link(addresses["capabilities"], cert_dir, *OPERATOR, web_url(addresses["web"]),
                                 surface=web_surface)
    opened = webbrowser.open(enrollment.link)
    until = enrollment.expires_at.strftime("%H:%M:%S UTC")
    print(f"\n  {'opened' if opened else 'open'} this answer in the browser, signed in as the operator (the link "
          f"works once, until {until}):\n  {enrollment.link}", file=say, flush=True)
