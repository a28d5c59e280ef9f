"""Every refusal a model can get teaches: a pointer and a next step (shared/rpc/next_steps.py).

The walk is over the source: every reason or finding code the services the model reaches define (the
gateway, the host's proposal path, the compiler, the agent, the MCP front, the tool bridge) is either
registered with its next step or listed as one no model receives, with why. Then each registered one is
raised as the services raise it and read as a model reads it: pointer present, next step present and
filled. tests/resources/unit/test_refusal_walk.py triggers the gateway's through real drafts and checks each
pointer lands on the offending part.
"""

from __future__ import annotations

import ast
import re

import pytest

from services.compiler.diagnostics import Finding
from shared.paths import REPO_ROOT
from shared.rpc.next_steps import NEXT_STEPS, NOT_FOR_MODELS, metadata
from shared.rpc.refusals import Invalid
from shared.tools.tool_results import refused

SOURCES = [*REPO_ROOT.glob("services/resources/*.py"), *REPO_ROOT.glob("services/compiler/*.py"),
           *REPO_ROOT.glob("services/agent/*.py"), *REPO_ROOT.glob("services/mcp/*.py"),
           REPO_ROOT / "services/host/commits.py", REPO_ROOT / "services/host/offers.py",
           REPO_ROOT / "shared/rpc/field_rules.py"]  # (the tool bridge is in services/agent)
# The calls that name a refusal's reason or a finding's code.
RAISERS = {"invalid", "_refuse", "_fan_out", "Finding", "reject", "_fail", "Diagnostic", "refused", "refusal",
           "TurnUnavailable", "Invalid", "Unavailable", "Denied", "Conflict", "NotFound", "Exhausted", "AlreadyExists",
           "Contended", "Unauthenticated", "TimedOut", "Unsupported", "TokenError", "ChatError", "TurnError", "wrong"}
REASON = re.compile(r"^([A-Z][A-Z0-9]*(_[A-Z0-9]+)+|[a-z]+\.[a-z][a-z-]+)$")


def _name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def defined_reasons() -> dict[str, str]:
    """Every reason or code literal a raising call names in the sources → where (file:line)."""
    found: dict[str, str] = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or _name(node) not in RAISERS:
                continue
            for value in [*node.args[:3], *(k.value for k in node.keywords if k.arg in ("reason", "code"))]:
                if isinstance(value, ast.Constant) and isinstance(value.value, str) and REASON.match(value.value):
                    found.setdefault(value.value, f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    return found


def test_every_reason_the_services_define_is_taught_or_says_why_no_model_gets_it():
    found = defined_reasons()
    assert len(found) > 80, "the walk must see the services' refusals"  # a scan that finds nothing proves nothing
    untaught = {reason: where for reason, where in found.items() if reason not in NEXT_STEPS | NOT_FOR_MODELS}
    assert not untaught, f"register a next step in shared/rpc/next_steps.py (or say why no model gets it): {untaught}"
    assert not set(NEXT_STEPS) & set(NOT_FOR_MODELS)
    assert all(why for why in NOT_FOR_MODELS.values())


# Metadata as each kind of raising site writes it (the keys templates may name).
TYPICAL = metadata("/measures/0/field", allowed=["a", "b"], bound=8, entity="ent_abcdefghijkl",
                   expected="a number", measure_entity="ent_abcdefghijkl")


@pytest.mark.parametrize("reason", sorted(r for r in NEXT_STEPS if "." not in r))
def test_each_registered_refusal_reaches_a_model_with_a_pointer_and_its_next_step(reason):
    error = Invalid(reason, "refused", TYPICAL)
    taught = refused("c1", "run_analysis", error.reason, error.message, error.metadata, "/draft").refusal()
    assert taught["pointer"] == "/draft/measures/0/field" and taught["error"] == reason
    assert taught["next_step"] and not re.search(r"\{\w+\}", taught["next_step"]), taught
    taught_whole = Invalid(reason, "refused").metadata
    whole_call = refused("c1", "run_analysis", reason, "refused", taught_whole, "/draft").refusal()
    assert whole_call["pointer"] == "" and whole_call["next_step"]  # about the call as a whole: ""


@pytest.mark.parametrize("code", sorted(r for r in NEXT_STEPS if "." in r))
def test_each_finding_reaches_a_model_with_its_next_step(code):
    found = Finding("contract", code, "wrong", "/blocks/0/data").to_proto()
    assert found.hint == NEXT_STEPS[code] and found.location == "/blocks/0/data"


# A refusal whose remedy is another tool's call names that tool: a model reading only the refusal knows what to
# call first (issue 43: outside models read no code).
REMEDY_TOOLS = {
    "CAPABILITY_MISSING": "inspect_current_context", "TURN_UNKNOWN": "inspect_current_context",
    "TURN_ENDED": "inspect_current_context", "CAPABILITY_EXPIRED": "inspect_catalog",
    "UNKNOWN_ID": "inspect_catalog", "WRONG_ID_KIND": "inspect_catalog", "PROBE_TARGET_MISSING": "inspect_catalog",
    "QUERY_TIMEOUT": "run_analysis", "SLICE_UNKNOWN": "present_ui", "BASE_REVISION_UNKNOWN": "present_ui",
    "PROPOSAL_ID_REUSED": "present_ui", "patch.no-base": "present_ui", "patch.base-invalid": "present_ui",
    "slice.not-frozen": "present_ui", "catalog.resource-not-offered": "run_analysis",
    "catalog.action-not-offered": "present_ui", "catalog.evidence-not-offered": "present_ui",
    "catalog.state-not-offered": "present_ui", "resource.column-not-offered": "present_ui",
}


@pytest.mark.parametrize(("reason", "tool"), sorted(REMEDY_TOOLS.items()))
def test_a_refusal_whose_remedy_is_another_call_names_the_tool(reason, tool):
    assert tool in NEXT_STEPS[reason], NEXT_STEPS[reason]
