"""Declared callers and the trust graph of the design (docs/architecture.md §2) are the same graph.

The design's table says, per service, who may call it ("is called by"); the protos' `callers` options say it
per RPC. A declaration outside the table is a design change and is made in the table first; an edge the
table names that no RPC declares is a table out of date.
"""

from __future__ import annotations

import re

from shared.authz import declared_callers
from shared.contracts import SERVICES
from shared.paths import REPO_ROOT

CALLERS = ("agent", "compiler", "resources", "capabilities", "host", "web", "cli", "mcp")


def designed_callers() -> dict[str, set[str]]:
    """Per service, the callers its row of §2's table names (what is in brackets says which RPCs)."""
    design = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = design[design.index("\n## 2. "):design.index("\n## 3. ")]
    table = {}
    for row in re.findall(r"^\| `(\w+)` \|(.*)\|\s*$", section, re.MULTILINE):
        called_by = re.sub(r"\([^)]*\)", "", row[1].split("|")[-1])
        table[row[0]] = {word for word in re.findall(r"\w+", called_by) if word in CALLERS}
    return table


MAY_CALL = designed_callers()


def test_the_designs_table_names_every_service_with_callers():
    assert set(SERVICES) <= set(MAY_CALL)
    assert MAY_CALL["agent"] == {"web", "cli", "mcp"}  # the reader of the table, checked on a known row


def test_every_edge_of_the_design_is_declared_by_some_rpc():
    declared = {name: {caller for method in descriptor.methods for caller in declared_callers(method)}
                for name, (descriptor, _) in SERVICES.items()}
    assert {name: MAY_CALL[name] for name in SERVICES} == declared


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
