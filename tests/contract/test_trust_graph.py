"""Declared callers never exceed the trust graph of ARCHITECTURE.md §2.

The table below is §2's "is called by" column plus the operator CLI, plus
capabilities → host for receipt events (§2 "calls": host (receipt events)),
plus the MCP front (issue 21; its row is proposed for §2): it calls the agent
for the six data tools and the host for the person's session, nothing else.
A declaration outside it is a design change and must be made there first.
"""

from __future__ import annotations

from shared.authz import declared_callers
from shared.contracts import SERVICES

MAY_CALL = {
    "agent": {"web", "cli", "mcp"},
    "compiler": {"host", "cli"},
    "resources": {"agent", "host", "cli"},
    "capabilities": {"agent", "host", "web", "cli"},
    "host": {"agent", "web", "cli", "capabilities", "mcp"},
}

HUMAN_DECISIONS_ONLY = {"web", "cli"}


def test_declared_callers_stay_inside_the_trust_graph():
    violations = []
    for name, (descriptor, _) in SERVICES.items():
        for method in descriptor.methods:
            extra = set(declared_callers(method)) - MAY_CALL[name]
            if extra:
                violations.append(f"{descriptor.full_name}/{method.name}: {sorted(extra)}")
    assert not violations


def test_only_people_see_approvals_and_the_agent_never_decides():
    capabilities = SERVICES["capabilities"][0]
    for rpc in ("ListApprovals", "GetApproval"):
        assert set(declared_callers(capabilities.methods_by_name[rpc])) <= HUMAN_DECISIONS_ONLY
    # A decision comes from a person: directly from web/cli, or relayed by the host from the surface
    # (approval-decision command) with the person's own signed assertion, which the broker verifies.
    assert set(declared_callers(capabilities.methods_by_name["Decide"])) == HUMAN_DECISIONS_ONLY | {"host"}


def test_compiler_is_reached_only_through_the_host():
    compiler = SERVICES["compiler"][0]
    for rpc in ("Compile", "PresentUiSchema"):
        assert set(declared_callers(compiler.methods_by_name[rpc])) == {"host"}


def test_model_facing_data_rpcs_are_for_the_agent_and_windows_for_the_host():
    resources = SERVICES["resources"][0]
    for rpc in ("InspectContext", "InspectCatalog", "Describe", "Probe", "Analyze"):
        assert set(declared_callers(resources.methods_by_name[rpc])) == {"agent"}
    assert set(declared_callers(resources.methods_by_name["ResolveWindow"])) == {"host"}


def test_the_mcp_front_reaches_the_data_tools_and_the_persons_session_only():
    """The data tools at the agent; at the host the person's session, and for the answer frame (MCP Apps) its
    surface and the commands its blocks send. Never the gateway, the compiler or the broker."""
    reached = {(name, method.name) for name, (descriptor, _) in SERVICES.items() for method in descriptor.methods
               if "mcp" in declared_callers(method)}
    assert reached == {("agent", "ListDataTools"), ("agent", "ServeTools"), ("host", "OpenSession"),
                       ("host", "AuthorizeViewer"), ("host", "Subscribe"), ("host", "SendCommand"),
                       ("host", "GetRevision")}
    agent = SERVICES["agent"][0]
    assert list(declared_callers(agent.methods_by_name["ServeTools"])) == ["mcp"]  # no other edge runs outside turns


def test_web_sessions_are_opened_checked_and_ended_by_web_and_a_persons_all_ended_by_the_operator():
    capabilities = SERVICES["capabilities"][0]
    for rpc in ("OpenWebSession", "CheckWebSession", "EndWebSession"):  # a session secret is web's business only
        assert list(declared_callers(capabilities.methods_by_name[rpc])) == ["web"], rpc
    assert list(declared_callers(capabilities.methods_by_name["SignOutPerson"])) == ["cli"]
