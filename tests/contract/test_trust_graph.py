"""Declared callers and the trust graph of the design (docs/architecture.md §2) are the same graph.

The design's table says, per service, who may call it ("is called by"); the protos' `callers` options say it
per RPC. A declaration outside the table is a design change and is made in the table first; an edge the
table names that no RPC declares is a table out of date.
"""

from __future__ import annotations

import re

from shared.identity.principals import PRINCIPAL_NAMES
from shared.paths import REPO_ROOT
from shared.rpc.authz import declared_callers
from shared.rpc.contracts import SERVICES


def designed_callers() -> dict[str, set[str]]:
    """Per service, the callers its row of §2's table names (what is in brackets says which RPCs)."""
    design = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = design[design.index("\n## 2. "):design.index("\n## 3. ")]
    table = {}
    for row in re.findall(r"^\| `(\w+)` \|(.*)\|\s*$", section, re.MULTILINE):
        called_by = re.sub(r"\([^)]*\)", "", row[1].split("|")[-1])
        table[row[0]] = {word for word in re.findall(r"\w+", called_by) if word in PRINCIPAL_NAMES}
    return table


MAY_CALL = designed_callers()
HUMAN_DECISIONS_ONLY = {"web", "cli"}


def test_declared_callers_and_the_designs_graph_are_the_same():
    """Every RPC's callers are inside its service's row of the table, and every caller a row names is declared by
    some RPC of that service."""
    assert set(SERVICES) <= set(MAY_CALL), "a service has no row in §2's table"
    outside, unused = [], []
    for name, (descriptor, _) in SERVICES.items():
        declared = set()
        for method in descriptor.methods:
            callers = set(declared_callers(method))
            declared |= callers
            if callers - MAY_CALL[name]:
                outside.append(f"{descriptor.full_name}/{method.name}: {sorted(callers - MAY_CALL[name])}")
        unused += [f"{name} ← {caller}" for caller in sorted(MAY_CALL[name] - declared)]
    assert not outside, f"declared outside the design's graph: {outside}"
    assert not unused, f"named by the design, declared by no RPC: {unused}"


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
