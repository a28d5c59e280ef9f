"""Every state of the answer page, at a desktop's width and a phone's, with no accessibility violation axe-core
finds (of any impact) and a screenshot of each: signed out, the empty page, a question being worked on (the
previous answer beside it), an answer as its chart appears and once drawn, an answer with no rows, a refusal, an
approval waiting and decided, and a question cancelled."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from shared.paths import REPO_ROOT
from tests.browser.conftest import screenshot
from tests.browser.test_browser import _card, ask

AXE = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"


pytestmark = pytest.mark.skipif(not AXE.exists(), reason="axe-core is not installed (make setup runs npm ci): the "
                                                         "page's states are not checked")


def violations(page) -> list[str]:
    """What axe-core finds wrong on the page as it is now, every impact, one line each."""
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:3]]}" for v in result["violations"]]


def checked(page, state: str, width: int) -> None:
    assert violations(page) == [], state
    assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{state}: wider than the screen"
    screenshot(page, f"state-{state}-{width}")


class HeldQuestions:
    """Questions sent to web wait here until let go: the page's state while a question is worked on stays on
    screen for as long as a test looks at it, whatever the machine's speed."""

    def __init__(self, page) -> None:
        self.held = []
        page.route("**/api/ask", self.hold)

    def hold(self, route) -> None:
        self.held.append(route)

    def wait(self, page) -> None:
        page.wait_for_function("document.querySelector('#cancel-button') && !document.querySelector("
                               "'#cancel-button').hidden", timeout=15_000)
        deadline = time.monotonic() + 15
        while not self.held:  # (the route's handler runs as Playwright reads the page's events)
            assert time.monotonic() < deadline, "the question never reached web"
            page.wait_for_timeout(50)

    def release(self) -> None:
        while self.held:
            self.held.pop().continue_()


@pytest.fixture(params=[1280, 390], ids=["desktop", "phone"])
def width(request) -> int:
    return request.param


def test_signed_out(browser, running_set, width):
    context = browser.new_context(base_url=f"http://localhost:{running_set.handles['web'].port}",
                                  viewport={"width": width, "height": 900}, bypass_csp=True)
    try:
        page = context.new_page()
        page.goto("/")
        expect(page.locator("#sign-in")).to_be_visible(timeout=15_000)
        assert page.locator("#oidc-sign-in").is_hidden()  # no sign-in of an organisation: no empty button
        checked(page, "signed-out", width)
    finally:
        context.close()


def test_every_state_of_an_answer(page, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.locator("#suggested-questions button").first.wait_for(timeout=15_000)
    page.click("#outline summary")  # what the data can answer, opened
    checked(page, "empty", width)

    ask(page, "What is our net revenue by region?")
    page.wait_for_selector("tessera-chart .chart[data-points]", timeout=30_000)
    assert violations(page) == [], "as the chart appears"
    page.wait_for_selector("tessera-chart[data-drawn]", timeout=15_000)
    page.wait_for_selector("tessera-data-table tbody tr", timeout=30_000)
    checked(page, "answered", width)

    held = HeldQuestions(page)
    page.fill("#question", "Show units sold by month")
    page.click("#ask-button")
    held.wait(page)
    expect(page.locator("#answer-state")).to_contain_text("below is your previous answer")
    checked(page, "working", width)
    page.click("#cancel-button")
    expect(page.locator("#refusal")).to_contain_text("You cancelled", timeout=15_000)
    held.release()
    checked(page, "cancelled", width)
    page.unroute("**/api/ask")

    ask(page, "Net revenue by month in 2019")
    expect(page.locator("#answer-state")).to_have_text("Answer to “Net revenue by month in 2019”", timeout=30_000)
    expect(page.locator("#refusal.offers")).to_be_visible()
    checked(page, "empty-answer", width)

    ask(page, "What is the weather on Mars?")
    expect(page.locator("#refusal")).to_contain_text("No answer to “What is the weather on Mars?”", timeout=30_000)
    checked(page, "refused", width)

    ask(page, "Flag order 1213 for review")
    page.click("tessera-action-button button")
    card = _card(page, "orders.flag_for_review")
    checked(page, "approval-waiting", width)
    card.locator("button.reject").click()
    card.locator(".receipt").wait_for(timeout=15_000)
    checked(page, "approval-decided", width)
