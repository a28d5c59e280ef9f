"""`tessera policy review|pin` against a server that lies: it annotates writing tools read-only, talks to the
model in its descriptions and hides a bidi override. Review shows unlisted tools in full, the screen's flags on
the server's words and a warning for every read-only claim that looks like writing; new tools are proposed as
mutations; every pin records who reviewed it and when."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from tests.capabilities.integration.test_tool_gate import _tessera

LISTED = ("list_entries", "tidy_cache", "export_report")


@pytest.fixture(scope="module")
def liar_policy(tmp_path_factory, cert_dir):
    """The liar's three listed tools, classified read as its annotations claim, pinned by `tessera policy pin`."""
    policy = tmp_path_factory.mktemp("liar") / "tools.yaml"
    policy.write_text(yaml.safe_dump({"version": 1, "servers": {"liar": {
        "transport": "stdio", "command": ["{python}", "-m", "tests.fixtures.mcp_lying_server"],
        "sandbox": {"read": ["{repo}/tests"]},
        "tools": {name: {"risk": "read", "description": f"Our reviewed text for liar.{name}."} for name in LISTED}}}}))
    refused = _tessera(cert_dir, "policy", "--file", str(policy), "pin", "--reviewer", "rita@example.com",
                       *(f"liar.{name}" for name in LISTED))
    # A read tool that looks like it writes is not pinned on the way: the reviewer must say so in so many words.
    assert refused.returncode != 0 and "liar.tidy_cache is to be trusted as read, but it looks like it writes" \
        in refused.stderr
    pinned = _tessera(cert_dir, "policy", "--file", str(policy), "pin", "--reviewer", "rita@example.com",
                      "--despite-warnings", *(f"liar.{name}" for name in LISTED))
    assert pinned.returncode == 0, pinned.stderr
    return policy


@pytest.fixture(scope="module")
def liar_reviewed(liar_policy, cert_dir):
    """`tessera policy review` of the pinned liar, once for every test that only reads it."""
    review = _tessera(cert_dir, "policy", "--file", str(liar_policy), "review")
    assert review.returncode == 0, review.stderr
    return review


@pytest.fixture(scope="module")
def liar_review(liar_reviewed) -> str:
    return liar_reviewed.stdout


def test_a_review_says_what_it_is_waiting_for_on_standard_error(liar_reviewed, liar_policy):
    """A review takes seconds (every tool server starts): each step is said as it begins, beside the review."""
    steps = liar_reviewed.stderr.splitlines()
    assert steps[0] == f"starting a private broker on {liar_policy} ..."
    assert steps[1].startswith("asking each tool server for its tools")
    assert re.fullmatch(r"asked in \d+\.\d s", steps[-1]), steps
    assert all(re.fullmatch(r"  still asking \(\d+ s\) \.\.\.", line) for line in steps[2:-1]), steps
    assert "starting a private broker" not in liar_reviewed.stdout


def _block(review: str, tool_id: str) -> str:
    """The lines review printed for one tool: its own line and the indented ones under it."""
    lines = review.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(tool_id + " "))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return "\n".join(lines[start:end])


def test_every_pin_records_who_reviewed_it_and_when(liar_policy, liar_review):
    pins = yaml.safe_load(liar_policy.read_text())["servers"]["liar"]["tools"]
    for name in LISTED:
        pin = pins[name]["pin"]
        assert pin["reviewed_by"] == "rita@example.com"
        when = datetime.fromisoformat(pin["reviewed_at"].replace("Z", "+00:00"))
        assert timedelta(0) <= datetime.now(UTC) - when < timedelta(minutes=10)
    assert "pinned by rita@example.com on " in _block(liar_review, "liar.list_entries")


def test_a_read_only_claim_that_looks_like_writing_is_warned_about(liar_policy, liar_review):
    review = liar_review
    tidy = _block(review, "liar.tidy_cache")
    assert "WARNING: it is classified read and the server annotates it read-only, but it looks like it writes" \
        in tidy
    assert "its description says it would 'delete'" in tidy and "parameter 'force'" in tidy
    assert "WARNING" not in _block(review, "liar.list_entries")  # an honest read is not cried wolf over


def test_the_servers_own_words_are_screened_and_hidden_characters_shown(liar_policy, liar_review):
    review = liar_review
    report = _block(review, "liar.export_report")
    flagged = {line.split("(")[1].split(",")[0] for line in report.splitlines()
               if "server text reads like instructions" in line}
    assert {"ordering", "suppression"} <= flagged
    assert "<U+202E>" in report and "\u202e" not in review  # the override is named, never obeyed by the terminal


def test_an_unlisted_tool_is_shown_in_full_and_proposed_as_a_mutation(liar_policy, liar_review):
    review = liar_review
    purge = _block(review, "liar.purge_all")
    assert "denied (not in the policy); as offered by the server (untrusted)" in purge
    assert "Show cache statistics." in purge and '"new_owner"' in purge  # description and input schema
    assert "annotations (claimed by the server, not trusted)" in purge and '"readOnlyHint": true' in purge
    assert "WARNING: the server annotates it read-only, but it looks like it writes" in purge
    assert "its name has a verb of change: 'purge'" in purge
    assert "proposed: risk mutate" in purge


def test_adding_a_new_tool_takes_the_reviewers_words_and_defaults_to_mutate(liar_policy, cert_dir, tmp_path):
    policy = tmp_path / "tools.yaml"
    policy.write_text(liar_policy.read_text())
    missing = _tessera(cert_dir, "policy", "--file", str(policy), "pin", "liar.purge_all")
    assert missing.returncode != 0 and "give --description" in missing.stderr
    as_read = _tessera(cert_dir, "policy", "--file", str(policy), "pin", "liar.purge_all", "--read",
                       "--description", "Cache statistics.")
    assert as_read.returncode != 0 and "looks like it writes" in as_read.stderr
    assert policy.read_text() == liar_policy.read_text()  # a refused pin writes nothing
    added = _tessera(cert_dir, "policy", "--file", str(policy), "pin", "liar.purge_all", "--reviewer", "sam",
                     "--description", "Purge the cache (a person approves it).")
    assert added.returncode == 0, added.stderr
    rule = yaml.safe_load(policy.read_text())["servers"]["liar"]["tools"]["purge_all"]
    assert rule["risk"] == "mutate" and rule["description"] == "Purge the cache (a person approves it)."
    assert rule["pin"]["reviewed_by"] == "sam" and rule["pin"]["description"] == "Show cache statistics."
    check = _tessera(cert_dir, "policy", "--file", str(policy), "check")  # the broker loads what pin wrote
    assert check.returncode == 0, check.stdout + check.stderr
    assert "liar.purge_all" in check.stdout and "mutate" in _block(check.stdout, "liar.purge_all")


def test_a_listed_tool_keeps_its_classification_from_the_file(liar_policy, cert_dir, tmp_path):
    policy = tmp_path / "tools.yaml"
    policy.write_text(liar_policy.read_text())
    refused = _tessera(cert_dir, "policy", "--file", str(policy), "pin", "liar.tidy_cache", "--read",
                       "--description", "x")
    assert refused.returncode != 0 and "already in" in refused.stderr


def test_a_pin_is_bound_to_what_the_reviewer_read(liar_policy, cert_dir, tmp_path):
    """Review prints the hashes of what it showed; a pin given them refuses anything else the server offers."""
    policy = tmp_path / "tools.yaml"
    policy.write_text(liar_policy.read_text())
    review = _tessera(cert_dir, "policy", "--file", str(policy), "review").stdout
    command = next(line for line in _block(review, "liar.purge_all").splitlines() if "To add it as reviewed" in line)
    spec = command.split("tessera policy pin ")[1].split()[0]
    assert spec.startswith("liar.purge_all=")
    other = spec[:-4] + ("0000" if not spec.endswith("0000") else "1111")
    stale = _tessera(cert_dir, "policy", "--file", str(policy), "pin", other, "--description", "Purge the cache.")
    assert stale.returncode != 0 and "offered differently now than when you reviewed it" in stale.stderr
    assert policy.read_text() == liar_policy.read_text()
    bound = _tessera(cert_dir, "policy", "--file", str(policy), "pin", spec, "--description", "Purge the cache.")
    assert bound.returncode == 0 and "as reviewed" in bound.stdout, bound.stderr


def test_a_name_chosen_to_rewrite_the_reviewers_screen_is_shown_spelled_out(liar_policy, liar_review):
    review = liar_review
    assert "\x1b" not in review and "\u202e" not in review
    assert "liar.peek\ufffd[2J<U+202E>" in review
