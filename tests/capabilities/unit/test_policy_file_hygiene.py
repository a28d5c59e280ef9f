"""Policy files as reviewed text (issue 19, part 4): a duplicate key is an error naming its line (not the last
one silently winning), two tools a model would call by one function name are refused at load, and
`tessera policy` works on the file the broker reads (TESSERA_CAPABILITIES_TOOLS_FILE)."""

from __future__ import annotations

import pytest
import yaml

from cli.main import build_parser
from services.capabilities.policy import ActionPolicy, PolicyError
from services.capabilities.tool_policy import ToolPolicy
from shared.paths import REPO_ROOT

SHIPPED_TOOLS = REPO_ROOT / "deploy" / "policy" / "tools.yaml"
SHIPPED_ACTIONS = REPO_ROOT / "deploy" / "policy" / "actions.yaml"


def _server(tools: dict) -> dict:
    return {"transport": "stdio", "command": ["{python}", "-m", "x"], "tools": {
        name: {"risk": "read", "description": "A tool."} for name in tools}}


def test_a_duplicate_key_in_a_policy_file_is_an_error_with_its_line(tmp_path):
    text = SHIPPED_TOOLS.read_text()
    duplicated = text.replace("        risk: read\n", "        risk: read\n        risk: mutate\n", 1)
    line = duplicated.splitlines().index("        risk: mutate") + 1
    (tmp_path / "tools.yaml").write_text(duplicated)
    with pytest.raises(PolicyError, match=rf"line {line}: duplicate key 'risk'"):
        ToolPolicy.load(tmp_path / "tools.yaml")
    actions = SHIPPED_ACTIONS.read_text().replace("    effect: reversible-write\n",
                                                  "    effect: reversible-write\n    effect: none\n", 1)
    (tmp_path / "actions.yaml").write_text(actions)
    with pytest.raises(PolicyError, match=r"line \d+: duplicate key 'effect'"):
        ActionPolicy.load(tmp_path / "actions.yaml")
    assert ToolPolicy.load(SHIPPED_TOOLS).policy.servers  # the shipped files have none


def test_two_tools_a_model_would_call_by_one_name_are_refused(tmp_path):
    path = tmp_path / "tools.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "servers": {"x": _server(["y__z"]), "x__y": _server(["z"])}}))
    with pytest.raises(PolicyError, match=r"'x\.y__z' and 'x__y\.z' are both called 'x__y__z'"):
        ToolPolicy.load(path)
    path.write_text(yaml.safe_dump({"version": 1, "servers": {"x": _server(["y__z"]), "x__w": _server(["z"])}}))
    assert set(ToolPolicy.load(path).policy.servers) == {"x", "x__w"}


def test_tessera_policy_works_on_the_file_the_broker_reads(monkeypatch, tmp_path):
    monkeypatch.setenv("TESSERA_CAPABILITIES_TOOLS_FILE", str(tmp_path / "ours.yaml"))
    assert build_parser().parse_args(["policy", "check"]).file == str(tmp_path / "ours.yaml")
    assert build_parser().parse_args(["policy", "--file", "other.yaml", "check"]).file == "other.yaml"
    monkeypatch.delenv("TESSERA_CAPABILITIES_TOOLS_FILE")
    assert build_parser().parse_args(["policy", "check"]).file == str(SHIPPED_TOOLS)
