"""The browser experience in headless Chromium against the running set: questions become live surfaces
with the numbers SQL gives, tables page, buttons go through the approval card, injected text is flagged,
and a refused block becomes a placeholder (every state's accessibility: test_states.py)."""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal

import sqlalchemy as sa
from playwright.sync_api import expect

from shared.identity.actors import assert_actor
from shared.identity.certs import load_signing_key, signing_key_path
from shared.paths import REPO_ROOT
from shared.rpc.channels import sync_channel
from shared.rpc.contracts import invoke
from tessera.capabilities.v1 import capabilities_pb2 as cap
from tessera.host.v1 import host_pb2
from tests.browser.conftest import screenshot
from tests.capabilities.integration.test_broker import Broker
from tests.capabilities.integration.test_broker import order as review_status
from tests.fixtures.agent_commit import commit_as_agent
from tests.fixtures.golden.reference import expected_figures


def ask(page, question: str) -> None:
    page.fill("#question", question)
    page.click("#ask-button")
    page.wait_for_function("document.querySelector('#answer').textContent.length > 0", timeout=60_000)


def month_label(iso_day: str) -> str:
    return dt.date.fromisoformat(iso_day).strftime("%b %Y")


def table_rows(page) -> list[list[str]]:
    return page.locator("tessera-data-table tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent.trim()))")


def test_a_question_shows_a_chart_and_a_table_with_the_numbers_sql_gives(page, warehouse_url):
    ask(page, "Show units sold by month")
    page.wait_for_selector("tessera-chart svg", timeout=30_000)
    page.wait_for_selector("tessera-data-table tbody tr", timeout=30_000)
    # The month axis reads months, not timestamps.
    expect(page.locator("tessera-chart svg")).to_contain_text("Jan 2021", timeout=15_000)
    by_month = {key[:10]: value for key, value in
                expected_figures(warehouse_url, {"metric": "units_sold", "by": "month"}, "").items()}
    # Months read as months ("Jan 2021"), in time order, with the figures SQL gives.
    expected = {month_label(key): by_month[key] for key in by_month}
    months = [month_label(key) for key in sorted(by_month)]
    first = table_rows(page)
    assert [r[0] for r in first] == months[:25]
    assert all(Decimal(r[1].replace(",", "")) == expected[r[0]] for r in first)
    assert page.locator("tessera-data-table .pager [role=status]").inner_text().startswith("Rows 1–25 of 60")
    screenshot(page, "answer-chart-and-table")

    page.click("tessera-data-table button[aria-label='Next page']")
    expect(page.locator("tessera-data-table tbody tr td").first).to_have_text(months[25], timeout=15_000)
    second = table_rows(page)
    assert [r[0] for r in second] == months[25:50]
    assert all(Decimal(r[1].replace(",", "")) == expected[r[0]] for r in second)
    assert not page.problems


def _card(page, action: str, not_id: str = ""):
    """The newest open approval card for `action`, once loaded (cards of earlier requests may be on the page)."""
    selector = f"tessera-approval-card:not([approval-id='{not_id}'])" if not_id else "tessera-approval-card"
    open_card = page.locator(selector).filter(has=page.locator("button.reject")).filter(has_text=action).last
    open_card.wait_for(timeout=30_000)
    # From here on by its id: once decided it has no Reject button, and it is still the same card.
    return page.locator(f"tessera-approval-card[approval-id='{open_card.get_attribute('approval-id')}']")


def _reject_has_focus(page, card) -> None:
    page.wait_for_function("c => c.shadowRoot.activeElement && c.shadowRoot.activeElement.className === 'reject'",
                           arg=card.element_handle(), timeout=10_000)


def shown(locator) -> str:
    """The text a person sees in a component (it lives in the element's shadow root)."""
    return locator.evaluate("e => (e.shadowRoot || e).textContent.replace(/\\s+/g, ' ')")


def test_a_mutating_button_needs_the_person_reject_changes_nothing_approve_changes_once(page, warehouse_url):
    ask(page, "Flag order 1212 for review")
    page.click("tessera-action-button button")
    card = _card(page, "orders.flag_for_review")
    # In words: what it risks; the internal names (the action's id, record versions) only behind Details.
    assert card.locator("p.what").inner_text().split() == ["Approve", "this?", "Changes", "data"]
    assert card.locator("details.technical").get_attribute("open") is None
    assert "orders.flag_for_review" in card.locator("details.technical").text_content()
    assert [h.inner_text() for h in card.locator("thead th").all()] == ["record", "change"]
    assert card.locator("p.chip.tainted").count() == 0  # it read no outside text (only, at most, values of ours)
    _reject_has_focus(page, card)  # the safe choice is focused first
    # In words: what approving does, and the change with its record and field named.
    assert card.locator("h3").inner_text() == "Flag order 1212 for review"
    change = card.locator("tbody tr")
    assert change.locator("td").nth(0).inner_text() == "Order 1212"
    assert change.locator("td").nth(1).inner_text() == "Review status: none → flagged"
    screenshot(page, "approval-card")
    rejected_id = card.get_attribute("approval-id")
    card.locator("button.reject").click()
    card.locator(".receipt").wait_for(timeout=15_000)
    assert "rejected" in card.locator(".receipt").inner_text()
    assert review_status(warehouse_url, 1212) == ("none", 1)
    # The decided card left the waiting list, and the answer says what happened.
    assert page.locator(f"#approvals tessera-approval-card[approval-id='{rejected_id}']").count() == 0
    assert page.locator(f"#decided tessera-approval-card[approval-id='{rejected_id}']").count() == 1
    expect(page.locator("#answer")).to_have_text("You rejected “Flag order 1212 for review”; nothing was changed.")
    expect(page.locator("#receipts li.rejected").first).to_have_text("Flag order 1212 for review: rejected")
    expect(page.locator("tessera-action-button .status")).to_have_text("Rejected: nothing was changed")
    screenshot(page, "approval-rejected")

    page.click("tessera-action-button button")  # a new press is a new request
    card = _card(page, "orders.flag_for_review", not_id=rejected_id)
    card.locator("button.approve").click()
    card.locator(".receipt").wait_for(timeout=15_000)
    assert "succeeded" in card.locator(".receipt").inner_text()
    assert review_status(warehouse_url, 1212) == ("flagged", 2)  # exactly one effect
    page.wait_for_selector("#receipts li.succeeded", timeout=15_000)
    screenshot(page, "receipt")


def test_a_run_that_read_injected_text_shows_the_flag_with_its_source(page):
    ask(page, "What does ticket 4815 say?")
    assert "read like instructions" in page.inner_text("#answer")
    ask(page, "Open a ticket about the delivery address")
    card = _card(page, "tickets.create_ticket")
    text = shown(card)
    assert "Before asking, this run read text it did not write" in card.locator("p.chip.tainted").inner_text()
    assert "looks like instructions" in text and "tickets.get_ticket" in text and "ticket_id 4815, line 4" in text
    screenshot(page, "flagged-approval")
    card.locator("button.reject").click()  # leave nothing half-open for other tests
    card.locator(".receipt").wait_for(timeout=15_000)


def test_a_refused_block_shows_a_placeholder_while_the_rest_renders(page, running_set, credentials, cert_dir):
    session = page.evaluate("fetch('/api/session').then(r => r.json())")
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "web")), page.person, "local", "Local user")
    with sync_channel(running_set.handles["host"].address, credentials("agent"), "host") as host:
        turn = invoke(host, "host", "BeginTurn", host_pb2.BeginTurnRequest(
            actor=person, session_id=session["session_id"], question="a partly broken answer",
            request_id=secrets.token_hex(4)))
        frozen = invoke(host, "host", "FreezeSlice", host_pb2.FreezeSliceRequest(turn_id=turn.turn_id))
        ids = {c["name"]: c["id"] for c in json.loads(frozen.model_view_json)["components"]}
        proposal = {"version": 1, "id": "partial", "blocks": [
            {"id": "main", "component": ids["Column"], "data": {}, "children": ["title", "broken"]},
            {"id": "title", "component": ids["Heading"], "data": {"text": "Still here"}},
            {"id": "broken", "component": ids["Text"], "data": {"text": "x", "colour": "red"}}]}
        committed = invoke(host, "host", "SubmitProposal", host_pb2.SubmitProposalRequest(
            turn_id=turn.turn_id, slice_hash=frozen.slice_hash, proposal_json=json.dumps(proposal),
            expected_base_revision_id=turn.base_revision_id, proposal_id="partial"), timeout=30)
    assert committed.outcome == host_pb2.PROPOSAL_OUTCOME_COMMITTED_PARTIAL
    page.wait_for_selector("tessera-placeholder .placeholder", timeout=15_000)
    assert "Couldn't display one element" in shown(page.locator("tessera-placeholder"))
    assert page.locator("tessera-heading h2").inner_text() == "Still here"
    screenshot(page, "placeholder")


def test_everything_works_from_the_keyboard(page):
    page.focus("#question")
    page.keyboard.type("Show units sold by month")
    page.keyboard.press("Enter")  # the form submits without a mouse
    try:
        page.wait_for_function("document.querySelector('#answer').textContent.length > 0", timeout=60_000)
        page.wait_for_selector("tessera-data-table tbody tr", timeout=30_000)
    except Exception:  # keep what the page showed: the progress list says where it stopped
        screenshot(page, "keyboard-failure")
        raise AssertionError(page.inner_text("main")[:2000]) from None
    first = page.locator("tessera-data-table tbody tr td").first.inner_text()
    page.locator("tessera-data-table button[aria-label='Next page']").focus()
    page.keyboard.press("Enter")
    expect(page.locator("tessera-data-table tbody tr td").first).not_to_have_text(first, timeout=15_000)
    page.locator("tessera-data-table button[aria-label='Previous page']").focus()
    page.keyboard.press("Space")
    expect(page.locator("tessera-data-table tbody tr td").first).to_have_text(first, timeout=15_000)


def _press_for_a_new_card(page):
    """Press the answer's action button; the approval card that press caused, found by the approval id in the
    press's reply (cards of earlier, still pending requests of the same person are on the page too)."""
    def is_the_press(response) -> bool:  # not a table's window request that happens to answer meanwhile
        return response.url.endswith("/api/commands") and "action_trigger" in (response.request.post_data or "")

    with page.expect_response(is_the_press) as pressed:
        page.click("tessera-action-button button")
    reply = pressed.value.json()
    assert "receipt" in reply, reply
    approval_id = reply["receipt"]["approval_id"]
    card = page.locator(f"tessera-approval-card[approval-id='{approval_id}']")
    card.locator("button.reject").wait_for(timeout=30_000)
    return card


def test_a_decision_whose_answer_was_lost_is_retried_with_its_id_and_shows_what_happened(page, warehouse_url):
    """The approval goes through but its answer never reaches the page (the connection drops): the card retries
    with the same decision id, the broker answers with the recorded outcome, and the effect ran once."""
    ask(page, "Flag order 1214 for review")
    card = _press_for_a_new_card(page)
    sent = []

    def lose_the_first_answer(route):
        sent.append(route.request.post_data_json)
        if len(sent) == 1:
            route.fetch()  # it reaches web and the broker: decided, and the effect runs …
            route.abort("connectionreset")  # … but the page never hears back
        else:
            route.continue_()

    page.route("**/api/approvals/*/decision", lose_the_first_answer)
    card.locator("button.approve").click()
    card.locator(".receipt").wait_for(timeout=30_000)
    receipt = card.locator(".receipt").inner_text()
    assert "succeeded" in receipt and "had gone through" in receipt, receipt
    assert len(sent) == 2 and sent[0] == sent[1] and sent[0]["decision_id"].startswith("web-")
    assert review_status(warehouse_url, 1214) == ("flagged", 2)  # exactly one effect
    assert not page.problems


def test_a_card_decided_elsewhere_says_how_it_ended(page, running_set, credentials, cert_dir, warehouse_url):
    """Someone else approved first (the person at the operator's terminal): this card's Reject is refused, and
    the card shows the approval and its receipt instead of an error."""
    ask(page, "Flag order 1215 for review")
    card = _press_for_a_new_card(page)
    approval_id = card.get_attribute("approval-id")
    broker = Broker(running_set.handles["capabilities"].address, credentials)
    person = assert_actor(load_signing_key(signing_key_path(cert_dir, "cli")), page.person, "local")
    try:
        seen = broker("cli", "GetApproval", cap.GetApprovalRequest(actor=person, approval_id=approval_id)).card
        broker("cli", "Decide", cap.DecideRequest(  # signed with the CLI's key, as `tessera approvals approve`
            actor=person, approval_id=approval_id, decision=cap.DECISION_APPROVE,
            arguments_sha256=seen.arguments_sha256, decision_id="cli-elsewhere"))
    finally:
        broker.close()
    assert review_status(warehouse_url, 1215) == ("flagged", 2), card.locator(".receipt").all_inner_texts()
    card.locator("button.reject").click()
    card.locator(".receipt").wait_for(timeout=15_000)
    receipt = card.locator(".receipt").inner_text()
    assert "succeeded" in receipt and f"already approved by {page.person}" in receipt
    assert review_status(warehouse_url, 1215) == ("flagged", 2)  # the later Reject changed nothing
    page.reload()  # after a reload the decided card is with the decided ones, saying who decided it
    page.wait_for_selector("body[data-ready=true]", timeout=15_000)
    reloaded = page.locator(f"#decided tessera-approval-card[approval-id='{approval_id}']")
    reloaded.locator(".receipt").wait_for(timeout=15_000)
    assert f"Decided by {page.person}" in shown(reloaded) and "succeeded" in reloaded.locator(".receipt").inner_text()
    assert page.locator(f"#approvals tessera-approval-card[approval-id='{approval_id}']").count() == 0


def _net_revenue_metrics_under_a_heading(running_set, credentials, cert_dir, session: dict, heading: str,
                                         years: tuple[int | None, ...] = (None,)):
    """Commit, as the agent would, under `heading`, one Metric of net revenue per entry of `years`: the whole
    total for None, that year's for a year (each its own result, so each has the gateway's caption)."""
    distinct = list(dict.fromkeys(years))

    def drafts(metrics, fields):
        def draft(year):
            base = {"mode": "aggregate", "output": "scalar",
                    "measures": [{"id": "value", "metric": metrics["Net revenue"]}]}
            if year is None:
                return base
            at = fields["Order time"]
            return base | {"filter": {"all": [{"field": at, "op": "gte", "value": f"{year}-01-01"},
                                              {"field": at, "op": "lt", "value": f"{year + 1}-01-01"}]}}
        return [draft(year) for year in distinct]

    def blocks(ids, bound):
        results = dict(zip(distinct, bound, strict=True))
        figures = [{"id": f"figure{i}", "component": ids["Metric"], "data": {
            "label": f"Net revenue{'' if year is None else f' in {year}'}", "resource": results[year],
            "column": "value"}} for i, year in enumerate(years)]
        return [{"id": "main", "component": ids["Column"], "data": {},
                 "children": ["title", *(f["id"] for f in figures)]},
                {"id": "title", "component": ids["Heading"], "data": {"text": heading}}, *figures]

    commit_as_agent(running_set, credentials, cert_dir, session, heading, drafts, blocks)


def test_a_heading_that_claims_2025_sits_over_the_caption_of_what_was_computed(page, running_set, credentials,
                                                                              cert_dir):
    session = page.evaluate("fetch('/api/session').then(r => r.json())")
    _net_revenue_metrics_under_a_heading(running_set, credentials, cert_dir, session,
                                         "Net revenue in 2025")
    caption = page.locator("#answer-caption [data-caption]")  # drawn by the page, under the answer
    caption.wait_for(timeout=15_000)
    assert page.locator("tessera-heading h2").inner_text() == "Net revenue in 2025"  # the model's words stay
    text = caption.inner_text()
    # What was computed: no filter at all, over every year of orders, whatever the heading says.
    assert "Net revenue · no filter · Order time " in text and " 2021 – " in text
    assert page.locator("[data-caption]").count() == 1  # once, not again under the figure
    screenshot(page, "caption-under-a-claiming-heading")


def test_one_caption_per_answer_and_a_block_says_its_own_only_where_it_differs(page, running_set, credentials,
                                                                               cert_dir):
    session = page.evaluate("fetch('/api/session').then(r => r.json())")
    _net_revenue_metrics_under_a_heading(running_set, credentials, cert_dir, session,
                                         "Net revenue", years=(None, 2024, None))
    page.wait_for_selector("tessera-metric >> nth=2", timeout=15_000)
    shared = page.locator("#answer-caption [data-caption]")
    expect(shared).to_contain_text("Net revenue · no filter", timeout=15_000)  # the caption two of three share
    metrics = page.locator("tessera-metric")
    expect(metrics.nth(1).locator("[data-caption]")).to_contain_text("Order time 1 Jan 2024 – 31 Dec 2024",
                                                                     timeout=15_000)
    assert metrics.nth(0).locator("[data-caption]").count() == 0 and metrics.nth(2).locator(
        "[data-caption]").count() == 0
    assert page.locator("[data-caption]").count() == 2


def test_the_answer_states_the_figure_sql_gives_formatted_as_money(page, warehouse_url):
    ask(page, "What is our total net revenue?")
    figure = page.locator("tessera-figure-text [data-figure=value]")
    expect(figure).to_have_text(re.compile(r"^\$[\d,]+\.\d\d$"), timeout=30_000)
    total = expected_figures(warehouse_url, {"metric": "net_revenue"}, "")["all"]
    assert figure.inner_text() == f"${total.quantize(Decimal('0.01'), ROUND_HALF_UP):,}"
    assert page.locator("tessera-figure-text [data-answer]").inner_text().startswith("Net revenue: $")
    # The headline Metric shows the same figure in the same format, captioned by what was computed.
    expect(page.locator("tessera-metric .value")).to_have_text(figure.inner_text(), timeout=15_000)
    # Every block shows this one result: its caption is said once, under the answer.
    expect(page.locator("#answer-caption [data-caption]")).to_contain_text("no filter", timeout=15_000)
    assert page.locator("[data-caption]").count() == 1
    screenshot(page, "answer-sentence-with-figure")


def test_a_top_10_chart_draws_10_bars_and_a_rate_reads_as_a_percentage(page, warehouse_url):
    ask(page, "Show the top 10 products by net revenue")
    chart = page.locator("tessera-chart .chart[data-points]")
    chart.wait_for(timeout=30_000)
    assert chart.get_attribute("data-points") == "10"
    assert page.locator("tessera-chart [data-cap-note]").count() == 0  # the ten the result holds: none left out
    page.wait_for_selector("tessera-chart[data-drawn='10']", timeout=15_000)  # drawn after the words
    assert page.locator("tessera-chart svg path[d]").count() > 0
    screenshot(page, "top-10-chart")

    ask(page, "Show return rate by product category")
    page.wait_for_selector("tessera-data-table tbody tr", timeout=30_000)
    expected = _return_rates(warehouse_url)
    shown_rates = {row[0]: row[1] for row in table_rows(page)}
    assert shown_rates == {category: f"{rate * 100:.2f}%" for category, rate in expected.items()}
    screenshot(page, "rate-table")


def _return_rates(warehouse_url) -> dict[str, Decimal]:
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        sold = dict(connection.execute(sa.text(
            "SELECT p.category, sum(i.quantity) FROM order_items i JOIN products p ON p.product_id = i.product_id "
            "GROUP BY p.category")).all())
        returned = dict(connection.execute(sa.text(
            "SELECT p.category, sum(r.quantity) FROM returns r JOIN order_items i ON i.order_item_id = "
            "r.order_item_id JOIN products p ON p.product_id = i.product_id GROUP BY p.category")).all())
    engine.dispose()
    return {category: Decimal(returned.get(category) or 0) / Decimal(units) for category, units in sold.items()}


def test_the_empty_page_offers_questions_and_what_the_data_holds(page):
    suggestion = page.locator("#suggested-questions button").first
    suggestion.wait_for(timeout=15_000)
    page.click("#outline summary")
    assert "Net revenue" in page.locator("#outline-entries").inner_text()
    screenshot(page, "empty-state")
    question = suggestion.inner_text()
    suggestion.click()
    expect(page.locator("#answer-state")).to_have_text(f"Answer to “{question}”", timeout=30_000)
    page.wait_for_selector("tessera-figure-text [data-figure]", timeout=30_000)


def test_an_answer_with_nothing_to_show_says_why_and_offers_a_question_that_has_something(page, warehouse_url):
    engine = sa.create_engine(warehouse_url)
    with engine.connect() as connection:
        first, last = (dt.date.fromisoformat(str(v)[:10]) for v in connection.execute(sa.text(
            "SELECT min(ordered_at), max(ordered_at) FROM orders")).one())
    engine.dispose()
    ask(page, "Net revenue by month in 2019")
    expect(page.locator("#answer-state")).to_have_text("Answer to “Net revenue by month in 2019”", timeout=30_000)
    expect(page.locator("tessera-text")).to_contain_text(
        f"order time runs from {first:%B %Y} to {last:%B %Y} only", timeout=30_000)
    assert page.locator("#surface tessera-chart, #surface tessera-data-table").count() == 0  # nothing blank
    offered = page.locator("#refusal.offers .suggestions button").first
    assert offered.inner_text() == f"Net revenue by month in {last.year}"
    screenshot(page, "empty-result")
    offered.click()
    page.wait_for_selector("#surface tessera-chart svg", timeout=30_000)
    assert page.locator("#refusal").is_hidden()


def test_a_refusal_takes_the_answer_panel_and_the_old_answer_is_not_passed_off_as_it(page):
    ask(page, "What is the total number of orders?")
    page.wait_for_selector("tessera-metric .value", timeout=30_000)
    ask(page, "What is the weather on Mars?")
    refusal = page.locator("#refusal")
    expect(refusal).to_be_visible(timeout=30_000)
    assert refusal.inner_text().startswith("No answer to “What is the weather on Mars?”")
    assert "can't answer" in refusal.inner_text()
    assert page.locator("#surface").is_hidden()  # the previous answer is not shown under the refusal
    screenshot(page, "refusal-replaces-previous-answer")
    page.click("#show-previous")  # still there when asked for
    assert page.locator("#surface").is_visible()


def test_a_refusal_offers_questions_it_can_answer_and_one_click_asks_one(page):
    ask(page, "What is the weather on Mars?")
    offered = page.locator("#refusal .suggestions button")
    offered.first.wait_for(timeout=30_000)
    assert 1 <= offered.count() <= 3
    question = offered.first.inner_text()
    screenshot(page, "refusal-with-suggestions")
    offered.first.click()
    expect(page.locator("#answer-state")).to_have_text(f"Answer to \u201c{question}\u201d", timeout=30_000)


def test_a_follow_up_in_the_browser_is_read_against_the_question_before_it(page):
    ask(page, "Net revenue by region")
    page.wait_for_selector("tessera-figure-text [data-figure]", timeout=30_000)
    ask(page, "now only web")
    expect(page.locator("#answer-state")).to_have_text(
        "Answer to \u201cnow only web\u201d, a follow-up to \u201cNet revenue by region\u201d", timeout=30_000)
    sentence = page.locator("tessera-figure-text").first
    expect(sentence).to_contain_text("where sales channel is \u201cweb\u201d", timeout=30_000)
    screenshot(page, "follow-up")


def test_cancel_stops_a_question_that_is_still_running(page):
    page.route("**/api/ask", lambda route: None)  # the question never gets an answer
    page.fill("#question", "What is the total number of orders?")
    page.click("#ask-button")
    expect(page.locator("#answer-state")).to_contain_text("Working on", timeout=10_000)
    page.click("#cancel-button")
    expect(page.locator("#refusal")).to_contain_text("You cancelled “What is the total number of orders?”",
                                                     timeout=10_000)
    assert page.locator("#cancel-button").is_hidden() and page.locator("#ask-button").is_enabled()
    # The person's own choice: said plainly, in neutral colours, not as an error.
    assert page.locator("#progress-now").text_content() == "Cancelled."
    assert page.locator("#progress-now").get_attribute("class") == "cancelled"
    assert page.locator("#refusal").get_attribute("class") == "refusal cancelled"
    screenshot(page, "cancelled")


def test_progress_is_said_in_words_and_nothing_is_left_running(page):
    # Every line the page says while the question runs, as it says it.
    page.evaluate("""() => { window.said = []; new MutationObserver((records) => records.forEach((record) =>
        record.addedNodes.forEach((node) => window.said.push(node.textContent)))).observe(
        document.getElementById('progress-now'), { childList: true }); }""")
    ask(page, "What is our net revenue by region?")
    page.wait_for_selector("#ask-button:enabled", timeout=60_000)
    said = [line for line in page.evaluate("window.said") if line]
    assert "Running the analysis…" in said and "Drawing the answer…" in said, said
    assert not [line for line in said if "_" in line], "a tool's name in the words a person reads"
    assert page.locator("#progress-now").is_hidden()  # nothing left spinning once it ended
    log = page.locator("#progress-log")
    assert log.get_attribute("open") is None  # the technical log is there for the curious, closed
    assert re.fullmatch(r"Technical log \(\d+ steps, \d+\.\d s\)", log.locator("summary").text_content())
    assert "run_analysis: done" in log.locator("#progress").text_content()
    assert "run_analysis" not in page.locator("#progress-section").inner_text()


def test_an_answer_asked_at_the_terminal_opens_in_the_browser_for_the_operator(browser, running_set, tmp_path,
                                                                               warehouse_url):
    """`tessera ask --open`: the one-time link signs the browser in as the operator and lands on the session the
    question was asked in, showing its answer (and saying whose it is)."""
    state = tmp_path / "var"
    (state / "run").mkdir(parents=True)
    (state / "run" / "services.json").write_text(json.dumps(running_set.state()))
    opener = tmp_path / "browser.sh"
    opener.write_text(f"#!/bin/sh\necho \"$1\" > {tmp_path / 'link'}\n")
    opener.chmod(0o700)
    asked = subprocess.run([sys.executable, "-m", "cli", "ask", "--open", "What is the total number of orders?"],
                           cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                           env={"TESSERA_VAR_DIR": str(state), "PATH": "/usr/bin:/bin", "BROWSER": str(opener)})
    assert asked.returncode == 0, asked.stderr
    link = (tmp_path / "link").read_text().strip()
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(link)
        page.wait_for_selector("body[data-ready=true]", timeout=15_000)
        assert re.fullmatch(r"http://localhost:\d+/\?surface=terminal-[0-9a-f]{12}", page.url)  # token gone
        expect(page.locator("#who")).to_contain_text("Signed in as Operator · showing what you asked at the terminal")
        (orders,) = expected_figures(warehouse_url, {"metric": "order_count"}).values()
        expect(page.locator("#surface")).to_contain_text(f"{orders:,}", timeout=30_000)
    finally:
        context.close()
