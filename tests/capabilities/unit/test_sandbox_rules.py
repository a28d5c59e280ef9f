"""What a tool policy may say about a server's box, and what the box is made of (no box is started here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from services.capabilities import sandbox
from services.capabilities.tool_policy import SandboxRule, ServerRule, ToolPolicy

TOOLS = {"look": {"risk": "read", "description": "Look."}}


def _rule(**fields) -> ServerRule:
    return ServerRule.model_validate({"transport": "stdio", "command": ["{python}", "-m", "x"], "tools": TOOLS,
                                      **fields})


def test_a_stdio_server_is_boxed_unless_its_policy_says_none():
    assert _rule().sandbox == SandboxRule()
    assert _rule(sandbox="none").sandbox == "none"


def test_a_boxed_stdio_server_gets_no_network_and_the_refusal_says_what_to_do_instead():
    with pytest.raises(ValidationError, match="no network at all.*api.example.com.*transport: http"):
        _rule(sandbox={"network": ["api.example.com"]})


def test_box_paths_are_absolute_or_templated_and_http_servers_have_no_box():
    with pytest.raises(ValidationError, match="must be absolute"):
        _rule(sandbox={"read": ["relative/path"]})
    with pytest.raises(ValidationError, match="does not start an http server"):
        ServerRule.model_validate({"transport": "http", "url": "https://tools.example", "sandbox": "none",
                                   "tools": TOOLS})


def test_the_box_binds_only_what_was_declared_masks_the_var_folder_and_keeps_variables_off_the_command_line(
        tmp_path):
    var, keys = tmp_path / "var", tmp_path / "var" / "certs"
    box = ToolPolicy.box(_rule(sandbox={"read": [str(tmp_path)], "data": str(var / "tickets")}))
    hidden = sandbox.Hidden(var, (keys,))
    arguments = sandbox.bwrap_arguments([sys.executable, "-m", "x"], {"TOKEN": "s3cret"}, box, hidden)
    bound = {arguments[i + 2] for i, a in enumerate(arguments) if a in ("--ro-bind", "--bind")}
    assert str(tmp_path) in bound and str(var / "tickets") in bound and sys.prefix in bound
    assert str(Path.home()) not in bound and "/" not in bound and "/etc" not in bound
    # The var folder inside a read path is covered (keys with it) before the data folder is bound inside it.
    covered = [arguments[i + 1] for i, a in enumerate(arguments) if a == "--tmpfs"]
    assert {str(var), str(keys)} <= set(covered) and arguments.index(str(var)) < arguments.index("--bind")
    assert "--unshare-net" in arguments and "--die-with-parent" in arguments
    assert arguments[arguments.index("--setenv"):][:3] == ["--setenv", "TOKEN", "s3cret"]
    assert "-m" not in arguments  # the command follows bubblewrap's options on its own command line


def test_paths_that_lead_into_hidden_folders_are_caught_however_they_are_written(tmp_path):
    var, keys = tmp_path / "var", tmp_path / "home" / ".config" / "tessera"
    for folder in (var / "certs", keys, tmp_path / "code"):
        folder.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path)
    hidden = sandbox.Hidden(var, (var / "certs", keys))
    # A read path written through a link still has the hidden folders inside it covered, where the box sees them.
    arguments = sandbox.bwrap_arguments(["true"], {}, sandbox.Box((tmp_path / "link",)), hidden)
    covered = {arguments[i + 1] for i, a in enumerate(arguments) if a == "--tmpfs"}
    assert {str(tmp_path / "link" / "var"), str(tmp_path / "link" / "home" / ".config" / "tessera")} <= covered
    for box, why in ((sandbox.Box((tmp_path / "link" / "var" / "certs",)), "lies in"),
                     (sandbox.Box((tmp_path / "code" / ".." / "var",)), "lies in"),
                     (sandbox.Box((), tmp_path / "link"), "holds"),
                     (sandbox.Box((), keys / "data"), "a folder of keys"),
                     (sandbox.Box((tmp_path / "missing",)), "does not exist")):
        assert why in sandbox.problem(box, hidden), box
    assert sandbox.problem(sandbox.Box((tmp_path / "code",), var / "tickets"), hidden) == ""  # its own, in var
    with pytest.raises(ValidationError, match="without '..'"):
        _rule(sandbox={"read": ["{repo}/services/.."]})
