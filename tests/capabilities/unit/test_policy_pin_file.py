"""`tessera policy pin` reads the policy file as strictly as the broker does, before starting a broker."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cli.policy import _check_pin_arguments


def test_a_duplicate_key_in_the_policy_file_is_refused_with_its_line_before_any_broker(tmp_path):
    policy = tmp_path / "tools.yaml"
    policy.write_text("version: 1\nservers:\n  tickets:\n    transport: stdio\n    tools: {}\n"
                      "  tickets:\n    transport: stdio\n    tools: {}\n")
    args = SimpleNamespace(description=None, read=False, reviewer="rita", tool_ids=["tickets.close_ticket"])
    with pytest.raises(SystemExit) as refused:
        _check_pin_arguments(policy, args)
    assert "line 6: duplicate key 'tickets'" in str(refused.value)
