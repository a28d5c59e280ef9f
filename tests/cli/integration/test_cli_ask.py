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

import httpx
import pytest

from cli.main import DEMO_QUESTIONS
from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.paths import REPO_ROOT
from tests.agent.integration.test_agent_turns import window
from tests.fixtures.golden.reference import expected_figures
from tests.fixtures.recovery import signed_in_cookie
from tests.fixtures.web_cookie import session_cookie_name

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
    # What was computed, once under the answer: every block of these answers shows the one result.
    assert out.count("computed: ") == 1 and re.search(r"^  computed: .*no filter", out, re.MULTILINE), out


def _run_ask(var_dir, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", "ask", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, env={"TESSERA_VAR_DIR": str(var_dir), "PATH": "/usr/bin:/bin",
                                                       **env})


def _tessera_ask(var_dir, *args: str, status: int = 0) -> str:
    shown = _run_ask(var_dir, *args)
    assert shown.returncode == status, shown.stderr
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
    fresh = _tessera_ask(var_dir, "now only web", status=3)  # without --follow-up: a new session, nothing to
    # lean on, so it cannot be answered as asked (exit status 3)
    assert re.search(r"session (\S+),", fresh).group(1) != session
    assert "you could ask: " in fresh


def test_ask_as_json_gives_the_figures_sql_gives_and_the_progress_apart(var_dir, warehouse_url):
    shown = _run_ask(var_dir, "--json", "--rows", "3", DEMO_QUESTIONS[0])
    assert shown.returncode == 0, shown.stderr
    answer = json.loads(shown.stdout)  # standard output is the JSON document alone
    assert "· run_analysis" in shown.stderr  # the progress, beside it
    assert answer["outcome"] == "answered" and answer["exit_status"] == 0 and answer["approvals"] == []
    expected = expected_figures(warehouse_url, {"metric": "net_revenue", "by": "region"}, region="")
    (table,) = [b for b in answer["blocks"] if b["kind"] == "table"]
    assert len(table["rows"]) == 3 and table["total_rows"] == len(expected)
    assert [c["label"] for c in table["columns"]] == ["Region name", "Net revenue"]
    ranked = sorted(expected, key=lambda k: -expected[k])[:3]
    assert [row[0] for row in table["rows"]] == ranked  # highest first, as computed
    assert all(abs(Decimal(str(row[1])) - expected[row[0]]) < Decimal("0.01") for row in table["rows"])
    assert table["computed"] and "Net revenue" in table["computed"]
    (sentence,) = [b for b in answer["blocks"] if b["kind"] == "sentence"]
    assert _money(expected[ranked[0]]) in sentence["text"]


def test_a_question_that_cannot_be_answered_exits_3_with_what_can_be(var_dir):
    shown = _run_ask(var_dir, "--json", "net revenue by weather in 2024")
    assert shown.returncode == 3, shown.stderr
    answer = json.loads(shown.stdout)
    assert answer["outcome"] == "refused" and answer["exit_status"] == 3 and answer["blocks"] == []
    assert "weather" in answer["answer"] and answer["suggested_questions"]


def test_rows_outside_what_one_window_holds_are_refused_before_anything_is_asked(var_dir):
    shown = _run_ask(var_dir, "--rows", "1001", DEMO_QUESTIONS[0])
    assert shown.returncode == 2 and "1 to 1000" in shown.stderr and shown.stdout == ""


def test_ask_open_shows_the_same_answer_in_the_browser_for_the_same_person_only(var_dir, running_set, tmp_path):
    browser = tmp_path / "browser.sh"  # the person's browser: it is handed the link ($BROWSER, as webbrowser reads)
    browser.write_text(f"#!/bin/sh\necho \"$1\" > {tmp_path / 'opened'}\n")
    browser.chmod(0o700)
    shown = _run_ask(var_dir, "--open", DEMO_QUESTIONS[2], BROWSER=str(browser))
    assert shown.returncode == 0, shown.stderr
    surface_id = re.search(r"session \S+, surface (\S+)", shown.stdout).group(1)
    link = (tmp_path / "opened").read_text().strip()
    web = running_set.handles["web"]
    found = re.fullmatch(rf"http://localhost:{web.port}/sign-in\?surface=(terminal-[0-9a-f]{{12}})#token=(\S+)", link)
    assert found and link in shown.stdout, link  # printed too: the browser may be on another machine
    surface, token = found.groups()
    base = f"http://{web.address}"
    with httpx.Client(base_url=base, headers={"Origin": base}, timeout=60) as operator:
        signed_in = operator.post("/api/sign-in/link", json={"token": token})
        assert signed_in.status_code == 200 and signed_in.json()["actor"] == "operator"
        assert operator.get("/api/session", params={"surface": surface}).json()["surface_id"] == surface_id
        assert operator.get("/api/session").json()["surface_id"] != surface_id  # the browser's own is another
        assert operator.post("/api/sign-in/link", json={"token": token}).json()["reason"] == "LINK_USED"
        refused = operator.get("/api/session", params={"surface": "terminal-xyz"})
        assert refused.status_code == 400 and refused.json()["reason"] == "SURFACE_UNKNOWN"
    theirs_signed_in = {session_cookie_name(base): signed_in_cookie(running_set)}  # the local person's own link
    with httpx.Client(base_url=base, headers={"Origin": base}, cookies=theirs_signed_in, timeout=60) as someone_else:
        theirs = someone_else.get("/api/session", params={"surface": surface}).json()
        assert theirs["actor"] == "local-user" and theirs["surface_id"] != surface_id
