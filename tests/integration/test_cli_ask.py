"""`tessera ask` as a person runs it: the CLI process against the running set, on the three demo
questions; each committed surface's bound rows are checked against figures computed with SQL here."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from types import SimpleNamespace

import pytest

from cli.main import DEMO_QUESTIONS
from shared.actors import assert_actor
from shared.certs import load_signing_key, signing_key_path
from shared.paths import REPO_ROOT
from tests.fixtures.golden.reference import expected_figures
from tests.integration.test_agent_turns import window

EXPECTED = {  # demo question → (figures to compute, the node that shows them)
    DEMO_QUESTIONS[0]: ({"metric": "net_revenue", "by": "region"}, "table"),
    DEMO_QUESTIONS[1]: ({"metric": "units_sold", "by": "month"}, "table"),
    DEMO_QUESTIONS[2]: ({"metric": "order_count"}, "figure"),
}


@pytest.fixture(scope="module")
def var_dir(running_set, tmp_path_factory):
    """What `tessera up` leaves behind: the run file the CLI reads to find the services."""
    directory = tmp_path_factory.mktemp("var")
    (directory / "run").mkdir()
    (directory / "run" / "services.json").write_text(json.dumps(running_set.state()))
    return directory


@pytest.mark.parametrize("question", DEMO_QUESTIONS)
def test_tessera_ask_commits_a_surface_with_the_numbers_sql_gives(question, var_dir, running_set, credentials,
                                                                   cert_dir, warehouse_url):
    shown = subprocess.run([sys.executable, "-m", "cli", "ask", question], cwd=REPO_ROOT, capture_output=True,
                           text=True, timeout=120, env={"TESSERA_VAR_DIR": str(var_dir), "PATH": "/usr/bin:/bin"})
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    steps = re.findall(r"^  · (\w+)\s+(\w+)", out, re.MULTILINE)
    assert ("run_analysis", "ok") in steps and ("present_ui", "ok") in steps  # each step printed as it ran
    session_id, surface_id = re.search(r"session (\S+), surface (\S+)", out).groups()
    (revision_id,) = re.findall(r"✓ committed (\S+)", out)
    outline = re.search(r"^  surface \S+: (.*)$", out, re.MULTILINE).group(1)
    expect, node = EXPECTED[question]
    assert ("Metric (bound)" if node == "figure" else "DataTable (bound)") in outline
    assert re.search(r"^= .+", out, re.MULTILINE)  # the answer

    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), "operator", "local", "Operator")
    rows = window(running_set, credentials, person, SimpleNamespace(session_id=session_id, surface_id=surface_id),
                  revision_id, node)
    expected = expected_figures(warehouse_url, expect, region="")
    got = {"all": Decimal(str(rows[0][0]))} if node == "figure" else {r[0]: Decimal(str(r[1])) for r in rows}
    assert got.keys() == expected.keys()
    assert all(abs(got[k] - expected[k]) < Decimal("0.01") for k in expected)
    assert_printed_figures(out, question, expected)


def _money(value: Decimal) -> str:
    return f"${value.quantize(Decimal('0.01'), ROUND_HALF_UP):,}"


def assert_printed_figures(out: str, question: str, expected: dict) -> None:
    """The terminal shows the figures SQL computes, formatted, with what was computed under them."""
    if question == DEMO_QUESTIONS[2]:  # a total: the sentence and the Metric state it
        count = f"{int(expected['all']):,}"
        assert re.search(rf"^  Number of orders: {count}\.$", out, re.MULTILINE), out
        assert re.search(rf"^  Number of orders: {count}$", out, re.MULTILINE), out
    elif question == DEMO_QUESTIONS[0]:  # highest first: the sentence names the top region, the table the rest
        ranked = sorted(expected, key=lambda k: -expected[k])
        top = ranked[0]
        assert f"  {top} has the highest net revenue: {_money(expected[top])}." in out, out
        for region in ranked[:10]:
            assert re.search(rf"^ {re.escape(region)}\s+{re.escape(_money(expected[region]))}\s*$", out,
                             re.MULTILINE), (region, out)
        assert f"rows 1–10 of {len(expected)}" in out
    else:  # a month series: months read as months
        months = sorted(expected)
        for month in months[:10]:
            label = dt.datetime.fromisoformat(month).strftime("%b %Y")
            assert re.search(rf"^ {label}\s+{int(expected[month]):,}\s*$", out, re.MULTILINE), (label, out)
    assert out.count("    computed: ") >= 2 and "no filter" in out


def _tessera_ask(var_dir, *args: str) -> str:
    shown = subprocess.run([sys.executable, "-m", "cli", "ask", *args], cwd=REPO_ROOT, capture_output=True,
                           text=True, timeout=120, env={"TESSERA_VAR_DIR": str(var_dir), "PATH": "/usr/bin:/bin"})
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_follow_up_at_the_terminal_is_read_against_the_question_before_it(var_dir, warehouse_url):
    first = _tessera_ask(var_dir, "Net revenue by region")
    follow = _tessera_ask(var_dir, "--follow-up", "now only web")
    session = re.search(r"session (\S+),", first).group(1)
    assert re.search(r"session (\S+),", follow).group(1) == session  # the same conversation
    answer = re.search(r"^= (.+)$", follow, re.MULTILINE).group(1)
    assert "net revenue by region name where sales channel is \u201cweb\u201d" in answer, answer
    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region", "where": {"channel": ["web"]}})
    top = max(expected, key=expected.get)
    assert f"  {top} has the highest net revenue where sales channel is \u201cweb\u201d: " \
           f"{_money(expected[top])}." in follow, follow
    fresh = _tessera_ask(var_dir, "now only web")  # without --follow-up: a new session, nothing to lean on
    assert re.search(r"session (\S+),", fresh).group(1) != session
    assert "you could ask: " in fresh
