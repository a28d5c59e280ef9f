"""`tessera ask`'s exit status tells a script how the question ended, without reading the text."""

from __future__ import annotations

import re

import pytest

from cli.ask import EXIT_ANSWERED, EXIT_FAILED, EXIT_NEEDS_APPROVAL, EXIT_REFUSED, Asked
from cli.main import build_parser
from shared.paths import REPO_ROOT
from tessera.agent.v1 import agent_pb2
from tessera.common.v1 import common_pb2


@pytest.mark.parametrize(("outcome", "approvals", "status"), [
    (common_pb2.TURN_OUTCOME_ANSWERED, (), EXIT_ANSWERED),
    (common_pb2.TURN_OUTCOME_NOT_ANSWERABLE, (), EXIT_REFUSED),
    (common_pb2.TURN_OUTCOME_FAILED, (), EXIT_FAILED),
    (common_pb2.TURN_OUTCOME_CANCELLED, (), EXIT_FAILED),
    (common_pb2.TURN_OUTCOME_UNSPECIFIED, (), EXIT_FAILED),  # a stream that ended without its last event
    (common_pb2.TURN_OUTCOME_ANSWERED, ("apv_1",), EXIT_NEEDS_APPROVAL),  # a person must act before it is done
])
def test_each_way_a_question_ends_has_its_own_exit_status(outcome, approvals, status):
    assert Asked(agent_pb2.TurnDone(outcome=outcome), approvals).exit_status == status


def test_the_statuses_are_the_ones_the_readme_and_help_document():
    readme = (REPO_ROOT / "README.md").read_text()
    said = re.search(r"Exit status: \*\*(\d)\*\* answered, \*\*(\d)\*\* it cannot be answered as asked.*?"
                     r"\*\*(\d)\*\* an action waits for a person's approval.*?\*\*(\d)\*\* any other failure", readme)
    assert said and tuple(map(int, said.groups())) == (EXIT_ANSWERED, EXIT_REFUSED, EXIT_NEEDS_APPROVAL, EXIT_FAILED)
    helped = build_parser().epilog
    assert f"exits {EXIT_ANSWERED} when answered, {EXIT_REFUSED} when" in helped
    assert f"{EXIT_NEEDS_APPROVAL} when an action waits" in helped and f"{EXIT_FAILED} on any other" in helped
